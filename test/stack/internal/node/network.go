package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// maxNetworks bounds how many stacks with a real node run at once on one
// machine (each holds one bridge and one /24).
const maxNetworks = 16

// lockDir holds one lock file per network index; a stack holds its lock
// for as long as it runs, so two stacks never share a bridge.
var lockDir = filepath.Join(os.TempDir(), "crowsnest-node-locks")

// Network is one stack's Pod network: a Linux bridge with the gateway
// address of a /24 that no other stack on the machine uses. The stack's
// services listen on Gateway, the one host address Pods can reach.
type Network struct {
	Index   int
	Bridge  string     // crowsnest<Index>
	Subnet  *net.IPNet // 10.213.<Index>.0/24
	Gateway net.IP     // 10.213.<Index>.1, on the bridge
	// ServiceCIDR is the stack's --service-cluster-ip-range,
	// 10.213.<128+Index>.0/24: ClusterIPs (and kube-proxy's rules) stay
	// inside the 10.213.0.0/16 the stacks own, one /24 per stack.
	ServiceCIDR *net.IPNet

	lock *os.File
}

// SetupNetwork takes the first free network index, removes what a killed
// stack may have left on it (its bridge, and its CNI results: Sweep), and
// creates the bridge with its gateway address.
func SetupNetwork() (*Network, error) {
	if err := os.MkdirAll(lockDir, 0o700); err != nil {
		return nil, fmt.Errorf("node network locks: %w", err)
	}
	for i := range maxNetworks {
		f, err := os.OpenFile(filepath.Join(lockDir, strconv.Itoa(i)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = f.Close()
			continue
		}
		n := NetworkAt(i)
		n.lock = f
		if _, err := n.Sweep(); err != nil {
			_ = n.Close()
			return nil, err
		}
		if err := n.create(); err != nil {
			_ = n.Close()
			return nil, err
		}
		return n, nil
	}
	return nil, fmt.Errorf("no free node network: %d stacks with a real node already run here", maxNetworks)
}

// NetworkAt is network index i's names and addresses (what SetupNetwork
// takes, without its lock or its bridge): for a check of what a stack on
// index i left behind.
func NetworkAt(i int) *Network {
	return &Network{Index: i, Bridge: "crowsnest" + strconv.Itoa(i),
		Gateway:     net.IPv4(10, 213, byte(i), 1).To4(),
		Subnet:      &net.IPNet{IP: net.IPv4(10, 213, byte(i), 0).To4(), Mask: net.CIDRMask(24, 32)},
		ServiceCIDR: &net.IPNet{IP: net.IPv4(10, 213, byte(128+i), 0).To4(), Mask: net.CIDRMask(24, 32)}}
}

func (n *Network) create() error {
	// A bridge of this index that exists now belongs to a stack that died
	// without cleaning up (we hold the index's lock).
	_ = run("ip", "link", "del", n.Bridge)
	if err := run("ip", "link", "add", n.Bridge, "type", "bridge"); err != nil {
		return fmt.Errorf("create bridge %s: %w", n.Bridge, err)
	}
	// A bridge whose address nobody set takes the lowest address among its
	// ports, so it changes whenever a Pod's veth with a lower one joins or
	// the lowest one leaves. A Pod that resolved the gateway before such a
	// change sends to the old address until its neighbour entry expires
	// (15–45 s): its connections to the stack's services time out, and
	// with Pods coming and going during a wave of scans one in 40 failed
	// that way ("dial tcp 10.213.0.1: i/o timeout"). An address set by
	// hand is kept, as Docker does for docker0.
	if err := run("ip", "link", "set", n.Bridge, "address", n.BridgeMAC().String()); err != nil {
		return fmt.Errorf("set the address of bridge %s: %w", n.Bridge, err)
	}
	ones, _ := n.Subnet.Mask.Size()
	if err := run("ip", "addr", "add", fmt.Sprintf("%s/%d", n.Gateway, ones), "dev", n.Bridge); err != nil {
		return fmt.Errorf("address bridge %s: %w", n.Bridge, err)
	}
	if err := run("ip", "link", "set", n.Bridge, "up"); err != nil {
		return fmt.Errorf("bring up bridge %s: %w", n.Bridge, err)
	}
	return nil
}

// BridgeMAC is the bridge's own hardware address, derived from the gateway
// as kubenet did: 0a:58 (locally administered, unicast), then the four
// bytes of the IPv4 address, so no two stacks' bridges share one.
func (n *Network) BridgeMAC() net.HardwareAddr {
	return append(net.HardwareAddr{0x0a, 0x58}, n.Gateway.To4()...)
}

// Close deletes the bridge (its veths are gone with their Pods' network
// namespaces) and releases the index.
func (n *Network) Close() error {
	var err error
	if n.Bridge != "" && linkExists(n.Bridge) {
		err = run("ip", "link", "del", n.Bridge)
	}
	if n.lock != nil {
		_ = n.lock.Close()
		n.lock = nil
	}
	return err
}

// cniResults is libcni's cache of each attachment's result (containerd's
// CRI plugin keeps it there whatever the node's own directories are): one
// file per Pod sandbox and network, <network name>-<sandbox id>-<ifname>,
// removed by the CNI DEL that tears the sandbox's network down.
const cniResults = "/var/lib/cni/results"

// Name is the network's name in its CNI configuration, crowsnest-<Index>.
func (n *Network) Name() string { return "crowsnest-" + strconv.Itoa(n.Index) }

// loopbackNetwork is the network containerd's CRI plugin attaches every
// sandbox to besides the node's own (its lo): its results are cached as
// cni-loopback-<sandbox id>-lo, beside the node network's.
const loopbackNetwork = "cni-loopback"

// Sweep removes the cached CNI results of this network, and the loopback
// results of the same sandboxes, and returns their paths. Under the
// index's lock no other stack's Pods are on this network, so every entry
// left is stale: one that a stack killed before it tore its Pods down left
// (SetupNetwork sweeps), or one whose sandbox containerd did not tear down
// before it stopped (Node.Stop sweeps and reports them in its error). A
// loopback result names only its sandbox, shared by every stack's
// containerd here: it is removed only for a sandbox of this network.
func (n *Network) Sweep() ([]string, error) {
	left, err := filepath.Glob(filepath.Join(cniResults, n.Name()+"-*"))
	if err != nil {
		return nil, err
	}
	for _, p := range left {
		// <network>-<sandbox id>-<ifname>; a sandbox id has no '-'.
		id := strings.TrimPrefix(filepath.Base(p), n.Name()+"-")
		if i := strings.LastIndexByte(id, '-'); i > 0 {
			lo, err := filepath.Glob(filepath.Join(cniResults, loopbackNetwork+"-"+id[:i]+"-*"))
			if err != nil {
				return nil, err
			}
			left = append(left, lo...)
		}
	}
	var errs []error
	for _, p := range left {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return left, errors.Join(errs...)
}

// OthersRunning tells whether another stack on this machine holds a node
// network now (the host paths the kubelet, CNI and containerd hard-code are
// then shared with it).
func OthersRunning() bool {
	for i := range maxNetworks {
		f, err := os.OpenFile(filepath.Join(lockDir, strconv.Itoa(i)), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		_ = f.Close() // releases the lock if we took it
		if err != nil {
			return true
		}
	}
	return false
}

// CNIConfig is the conflist containerd's CRI plugin uses: the bridge, with
// host-local addresses kept under dir (not /var/lib/cni). No masquerading
// and no default route: Pods reach their subnet (the host's gateway
// address among it) and, through the gateway, the Service CIDR, where
// kube-proxy's rules take over.
func (n *Network) CNIConfig(ipamDir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": %q,
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": %q}],
        "dataDir": %q
      }
    }
  ]
}
`, n.Name(), n.Bridge, n.Subnet.String(), n.Gateway.String(), n.ServiceCIDR.String(), ipamDir)
}

// ServiceIP is the n-th address of ServiceCIDR: 1 is the kubernetes
// Service's (the API server takes the first), 10 kube-dns's, as kubeadm
// numbers them.
func (n *Network) ServiceIP(i byte) net.IP {
	ip := n.ServiceCIDR.IP.To4()
	return net.IPv4(ip[0], ip[1], ip[2], i).To4()
}

func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// run runs a command and returns its output in the error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// errNotRoot explains the one requirement a user can fix.
var errNotRoot = errors.New("the real node needs root (containerd, runc, a kubelet and a network bridge)")
