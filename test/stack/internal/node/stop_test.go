package node_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/node"
)

// envStopChild makes TestNodeRunsAPodAndLeavesNothing, run as
// TestStoppedMidTestLeavesNothing's child, wait for the stop once its Pod
// runs (waitForTheStop).
const envStopChild = "CROWSNEST_NODE_STOP_CHILD"

// stopLine starts the line the child prints when its Pod runs: what the
// parent needs to count what the stop left.
const stopLine = "stop me: "

// TestStoppedMidTestLeavesNothing stops this package's own test binary as
// a CI run stops the suites: SIGTERM to the whole process group while a
// real node runs a Pod, the reader of the binary's output (go test) gone
// first. Then it counts what is left on the host: the node's processes
// and shims, mounts, bridge, veths, cached CNI results and the test's state
// directory. Before the node's tests took their teardown from
// teardown.ForTest (deferred stops only, which no signal runs) the stop
// left the Pod's shim and containers, the kubelet's volume mounts, the
// bridge and its veth, and the CNI results; this test removes such
// leftovers itself after reporting them.
func TestStoppedMidTestLeavesNothing(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through make, which builds bin/k8s")
	}
	if os.Getenv(envStopChild) != "" {
		t.Skip("the child runs TestNodeRunsAPodAndLeavesNothing only")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNodeRunsAPodAndLeavesNothing$", "-test.v")
	cmd.Env = append(os.Environ(), envStopChild+"=1")
	// A process group of its own, signalled whole, as .ci/run signals
	// the session of the suites it stops.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	_ = w.Close()
	if err != nil {
		_ = out.Close()
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// The child's output until its Pod runs (bounded: it exits by itself
	// 4 minutes in at the latest, and the pipe then ends).
	var state, nodeDir string
	var netw *node.Network
	var log strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, stopLine); ok {
			state, nodeDir, netw, err = parseStopLine(rest)
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		log.WriteString(line + "\n")
	}
	if netw == nil {
		_ = out.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err := <-exited
		t.Fatalf("the child ended (%v) before its Pod ran:\n%s", err, log.String())
	}
	_ = out.Close() // go test is gone first
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-exited:
	case <-time.After(2 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-exited
		t.Errorf("the child was still running 2 minutes after SIGTERM")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Errorf("child ended with %v, want a non-zero exit", err)
	} else if ws := exit.Sys().(syscall.WaitStatus); ws.Signaled() || ws.ExitStatus() != 1 {
		t.Errorf("child exit %v, want status 1 after its teardown", ws)
	}

	left := Leftovers(t, nodeDir, netw.Bridge, nil, netw.Subnet, netw.ServiceCIDR)
	if _, err := os.Stat(state); err == nil {
		left = append(left, "path "+state)
	}
	if results, _ := netw.Sweep(); len(results) > 0 {
		left = append(left, fmt.Sprintf("CNI results %v", results))
	}
	for _, l := range left {
		t.Errorf("left behind: %s", l)
	}
	if len(left) > 0 {
		reap(t, state, nodeDir, netw)
	}
}

// waitForTheStop is the child's side: it tells the parent what it runs,
// then waits for the SIGTERM (the test fails if none comes).
func waitForTheStop(state, nodeDir string, netw *node.Network) {
	fmt.Printf("%s%s %s %d\n", stopLine, state, nodeDir, netw.Index)
	time.Sleep(90 * time.Second)
	fmt.Println("no SIGTERM came within 90 s")
	os.Exit(3)
}

func parseStopLine(s string) (state, nodeDir string, netw *node.Network, err error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return "", "", nil, fmt.Errorf("stop line %q: want state, node dir and network index", s)
	}
	i, err := strconv.Atoi(f[2])
	if err != nil {
		return "", "", nil, fmt.Errorf("stop line %q: network index: %w", s, err)
	}
	if i < 0 || i > 127 {
		return "", "", nil, fmt.Errorf("stop line %q: network index %d out of range", s, i)
	}
	// The same addresses node.SetupNetwork gives index i.
	netw = &node.Network{Index: i, Bridge: "crowsnest" + f[2],
		Subnet:      &net.IPNet{IP: net.IPv4(10, 213, byte(i), 0).To4(), Mask: net.CIDRMask(24, 32)},
		ServiceCIDR: &net.IPNet{IP: net.IPv4(10, 213, byte(128+i), 0).To4(), Mask: net.CIDRMask(24, 32)}}
	return f[0], f[1], netw, nil
}

// reap removes what a stopped child left (only after the test has failed
// on it): every process whose command line names its state directory
// (the shims, and what they run), the mounts under the node's directory,
// the bridge, and the state directory.
func reap(t *testing.T, state, nodeDir string, netw *node.Network) {
	// SIGKILL until none is left (bounded: a shim exits at once).
	for range 50 {
		killed := 0
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), state) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				killed++
			}
		}
		if killed == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	mps, _ := node.MountsUnder(nodeDir)
	for i := len(mps) - 1; i >= 0; i-- {
		if err := syscall.Unmount(mps[i], syscall.MNT_DETACH); err != nil {
			t.Logf("reap: unmount %s: %v", mps[i], err)
		}
	}
	if err := exec.Command("ip", "link", "del", netw.Bridge).Run(); err != nil {
		t.Logf("reap: delete bridge %s: %v", netw.Bridge, err)
	}
	_, _ = netw.Sweep()
	if err := os.RemoveAll(state); err != nil {
		t.Logf("reap: %v", err)
	}
}
