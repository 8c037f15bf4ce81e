package node_test

import (
	"bufio"
	"errors"
	"fmt"
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
// and shims, its containers' processes and cgroups, mounts, bridge, veths,
// cached CNI results and the test's state directory. Before the node's
// tests took their teardown from teardown.ForTest (deferred stops only,
// which no signal runs) the stop left the Pod's shim and its containers
// running (reparented to init, holding the Pod's network namespace and so
// its veth), their cgroups, the kubelet's volume mounts, the bridge and
// the CNI results; this test removes such leftovers itself after reporting
// them.
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
	// The containers the node runs now: their processes and cgroups
	// must be gone too (a shim killed without its containers leaves
	// them running, reparented, holding the Pod's network namespace).
	containers := node.ContainerIDs(nodeDir)
	if len(containers) == 0 {
		t.Error("no container runs on the node: the check below could not see one")
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
	procs, cgroups := containersLeft(containers)
	for _, p := range procs {
		left = append(left, fmt.Sprintf("container process %d", p))
	}
	for _, c := range cgroups {
		left = append(left, "cgroup "+c)
	}
	if results, _ := netw.Sweep(); len(results) > 0 {
		left = append(left, fmt.Sprintf("CNI results %v", results))
	}
	for _, l := range left {
		t.Errorf("left behind: %s", l)
	}
	if len(left) > 0 {
		reap(t, state, nodeDir, netw, containers)
	}
}

// containersLeft lists the processes still in the cgroups of containers
// ids and those cgroups' folders.
func containersLeft(ids []string) (procs []int, cgroups []string) {
	return node.ContainerProcesses(ids), node.ContainerCgroups(ids)
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
	return f[0], f[1], node.NetworkAt(i), nil
}

// reap removes what a stopped child left (only after the test has failed
// on it): every process whose command line names its state directory
// (the shims, and what they run), the mounts under the node's directory,
// the bridge, and the state directory.
func reap(t *testing.T, state, nodeDir string, netw *node.Network, containers []string) {
	// SIGKILL until none is left (bounded: a shim exits at once), the
	// containers' processes with them.
	for range 50 {
		procs, _ := containersLeft(containers)
		for _, pid := range procs {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		named := processesWhose("cmdline", func(cmdline string) bool { return strings.Contains(cmdline, state) })
		for _, pid := range named {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(procs)+len(named) == 0 {
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
	_, cgroups := containersLeft(containers)
	for _, c := range cgroups {
		if err := os.Remove(c); err != nil {
			t.Logf("reap: %v", err)
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
