package node_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/node"
)

// TestBridgeKeepsItsAddress plays the Pods of a wave of scans: a veth with
// an address lower than the bridge's joins it, then leaves. A bridge whose
// address the kernel assigned takes the lowest of its ports' addresses
// each time, and Pods that resolved the gateway before lose it for up to
// 45 s (the wave test's "dial tcp 10.213.0.1: i/o timeout"); the node's
// bridge must keep the address it was given.
func TestBridgeKeepsItsAddress(t *testing.T) {
	netw, err := node.SetupNetwork()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := netw.Close(); err != nil {
			t.Error(err)
		}
	}()
	want := netw.BridgeMAC()
	check := func(when string) {
		t.Helper()
		got, err := net.InterfaceByName(netw.Bridge)
		if err != nil {
			t.Fatal(err)
		}
		if got.HardwareAddr.String() != want.String() {
			t.Errorf("%s: bridge %s has address %s, want %s", when, netw.Bridge, got.HardwareAddr, want)
		}
		kind, err := os.ReadFile(filepath.Join("/sys/class/net", netw.Bridge, "addr_assign_type"))
		if err != nil {
			t.Fatal(err)
		}
		if k := strings.TrimSpace(string(kind)); k != "3" { // NET_ADDR_SET: the kernel keeps it
			t.Errorf("%s: bridge %s address assign type %s, want 3 (set)", when, netw.Bridge, k)
		}
	}
	check("new bridge")

	host, peer := "cnbt"+strconv.Itoa(netw.Index), "cnbtp"+strconv.Itoa(netw.Index)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	_ = exec.Command("ip", "link", "del", host).Run() // left by a killed run
	ip("link", "add", host, "address", "02:00:00:00:00:01", "type", "veth", "peer", "name", peer)
	defer func() { _ = exec.Command("ip", "link", "del", host).Run() }()
	ip("link", "set", host, "master", netw.Bridge)
	ip("link", "set", host, "up")
	check("a port with a lower address joined")
	ip("link", "del", host)
	check("the port left")
}

// TestSetupSweepsAKilledStacksCNIResults plays a stack killed while its
// Pods ran: libcni's cached results of one of its sandboxes stay in
// /var/lib/cni/results, under the network's name and under containerd's
// loopback network. The next stack on that network index must remove both
// (under the index's lock nobody else uses the network), or the node's
// teardown check counts them as its own; another sandbox's loopback result
// (another stack's Pod) stays.
func TestSetupSweepsAKilledStacksCNIResults(t *testing.T) {
	first, err := node.SetupNetwork()
	if err != nil {
		t.Fatal(err)
	}
	index := first.Index
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	const dir = "/var/lib/cni/results"
	var created []string
	for _, d := range []string{"/var/lib/cni", dir} {
		if _, err := os.Stat(d); err != nil {
			created = append(created, d)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	const sandbox, other = "4f1c8a7e2b9d0c3e5f6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a", "9a8b7c6d5e4f30211a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081"
	stale := []string{filepath.Join(dir, first.Name()+"-"+sandbox+"-eth0"), filepath.Join(dir, "cni-loopback-"+sandbox+"-lo")}
	kept := filepath.Join(dir, "cni-loopback-"+other+"-lo")
	for _, p := range append(stale, kept) {
		if err := os.WriteFile(p, []byte(`{"cniVersion":"1.0.0"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, p := range append(stale, kept) {
			_ = os.Remove(p)
		}
		for i := len(created) - 1; i >= 0; i-- {
			_ = os.Remove(created[i])
		}
	})

	second, err := node.SetupNetwork()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Close() }()
	if second.Index != index {
		t.Fatalf("network index %d was taken by another stack between two setups (got %d); run the node tests alone (make e2e runs one package at a time)", index, second.Index)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the killed stack's CNI result %s is still there after SetupNetwork (stat: %v)", p, err)
		}
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("another sandbox's loopback result %s was removed: %v", kept, err)
	}
}
