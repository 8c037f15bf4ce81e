package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// Config describes the node.
type Config struct {
	Dir        string // everything the node keeps: containerd's root and state, the kubelet's root, Pod logs
	LogDir     string // containerd.log and kubelet.log
	Name       string // the Node's name
	Kubelet    string // kubelet binary
	Containerd string // containerd binary (Debian's /usr/bin/containerd)
	Kubeconfig string // the kubelet's credentials: user system:node:<Name> in group system:nodes
	Network    *Network
	PKI        *PKI
	// SandboxImage is CRI's pause image; it must be pullable from one of
	// HTTPRegistries (the stack's registry).
	SandboxImage   string
	HTTPRegistries []string // host:port of registries containerd pulls from over plain HTTP
	Labels         map[string]string
	Taints         []corev1.Taint
	// ClusterDNS is the kubelet's clusterDNS (the stack's CoreDNS), under
	// ClusterDomain; empty: Pods get no nameserver at all.
	ClusterDNS    []string
	ClusterDomain string
	Client        kubernetes.Interface // waits for the Node to be Ready
	Verbosity     int                  // kubelet --v
	Log           *slog.Logger
}

// Node is a running kubelet with containerd.
type Node struct {
	c           Config
	KubeletPort int

	containerd *proc.Process
	kubelet    *proc.Process
	cri        *grpc.ClientConn
	runtime    criv1.RuntimeServiceClient
	// created are the host paths outside Dir that the kubelet, containerd
	// and CNI hard-code and that did not exist before Start.
	created []string
}

// hostPaths are the places outside Dir that the kubelet (its device
// plugin socket), CNI (its result cache) and containerd (its shim sockets)
// use whatever they are told; Stop removes those this node created, files
// first, then the folders, each only when empty.
var hostPaths = []string{
	"/var/lib/kubelet/device-plugins/kubelet.sock", "/var/lib/kubelet/device-plugins", "/var/lib/kubelet",
	"/var/lib/cni/results", "/var/lib/cni", "/run/containerd/s", "/run/containerd",
}

// Start runs containerd, then the kubelet, and waits until the Node is
// Ready. On error everything started is stopped and removed again.
func Start(ctx context.Context, c Config) (_ *Node, err error) {
	if os.Geteuid() != 0 {
		return nil, errNotRoot
	}
	if c.Containerd == "" {
		c.Containerd = "/usr/bin/containerd"
	}
	if c.Name == "" {
		c.Name = "crowsnest-node"
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	for _, bin := range []string{c.Containerd, "/usr/bin/runc", "/usr/bin/containerd-shim-runc-v2", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/loopback"} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("the real node needs %s (apt-get install containerd runc containernetworking-plugins; make demo installs them): %w", bin, err)
		}
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, err
	}
	n := &Node{c: c}
	for _, p := range hostPaths {
		if _, err := os.Lstat(p); err != nil {
			n.created = append(n.created, p)
		}
	}
	defer func() {
		if err != nil {
			_ = n.Stop()
		}
	}()
	if err := n.startContainerd(ctx); err != nil {
		return nil, err
	}
	if err := n.startKubelet(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// Name is the Node's name.
func (n *Node) Name() string { return n.c.Name }

// ContainerdSocket is containerd's address (for ctr).
func (n *Node) ContainerdSocket() string { return socketPath(n.containerdDir()) }

// KillContainer sends SIGKILL to a container's task through containerd,
// as the kernel's OOM killer or a crashing runtime would end it.
// containerID is the Pod status's containerd://<id>, or the bare id.
func (n *Node) KillContainer(ctx context.Context, containerID string) error {
	id := strings.TrimPrefix(containerID, "containerd://")
	out, err := exec.CommandContext(ctx, "ctr", "--address", n.ContainerdSocket(), "--namespace", "k8s.io", "tasks", "kill", "--signal", "SIGKILL", id).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr tasks kill %s: %w: %s", id, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Stop stops the kubelet, removes every Pod sandbox through CRI, stops
// containerd, ends any shim that outlived it and any container process
// left in the node's containers' cgroups (removing those cgroups), unmounts
// what is mounted under the node's directory and removes it. The network (bridge) is the
// caller's to close, after Stop.
func (n *Node) Stop() error {
	var errs []error
	if n.kubelet != nil {
		errs = append(errs, n.kubelet.Stop(10*time.Second))
		n.kubelet = nil
	}
	if n.runtime != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		errs = append(errs, n.removeSandboxes(ctx))
		cancel()
	}
	if n.cri != nil {
		_ = n.cri.Close()
		n.cri, n.runtime = nil, nil
	}
	if n.containerd != nil {
		errs = append(errs, n.containerd.Stop(10*time.Second))
		n.containerd = nil
	}
	// The shims' bundles name every container containerd created, also
	// one whose creation was under way when the kubelet stopped: what the
	// sandboxes' removal above did not end goes now, with its cgroups.
	errs = append(errs, killShims(n.ContainerdSocket()), killContainers(ContainerIDs(n.c.Dir), 10*time.Second), unmountUnder(n.c.Dir))
	// Each sandbox removed above was torn down by a CNI DEL, which drops
	// its cached result; one still cached belongs to a sandbox containerd
	// did not list or tear down. Its network namespace and veth are gone
	// with the containers, so the entry is stale: removed, and reported.
	if n.c.Network != nil {
		left, err := n.c.Network.Sweep()
		errs = append(errs, err)
		if len(left) > 0 {
			errs = append(errs, fmt.Errorf("removed the CNI results of %d sandboxes containerd did not tear down: %v", len(left), left))
		}
	}
	if err := os.RemoveAll(n.c.Dir); err != nil {
		errs = append(errs, fmt.Errorf("remove node dir: %w", err))
	}
	for _, p := range n.created {
		// Not empty: another node on this machine (another stack) uses it.
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// killShims ends the containerd-shim-runc-v2 processes of the containerd at
// address (a shim outlives containerd by design, and its containers with it).
func killShims(address string) error {
	pids, err := processesWithArg("containerd-shim", address)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// A shim exits on its own once containerd and its tasks are gone; wait
	// until every one has (killed or not), so nothing outlives Stop.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, err := processesWithArg("containerd-shim", address)
		if err != nil || len(left) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("containerd shims still running 10s after SIGKILL: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesWithArg lists the processes whose command line has comm in its
// first word and arg as one of its words.
func processesWithArg(comm, arg string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		words := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if !strings.Contains(filepath.Base(words[0]), comm) {
			continue
		}
		for _, w := range words[1:] {
			if w == arg || strings.TrimPrefix(w, "unix://") == arg {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}

// MountsUnder lists the mount points at or below dir, deepest first.
func MountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, sc.Err()
}

// unmountUnder unmounts everything mounted at or below dir (the kubelet
// bind-mounts its root onto itself; Pod volumes, netns files and container
// root filesystems are mounts too), deepest first, lazily as a last resort.
func unmountUnder(dir string) error {
	var errs []error
	for range 3 {
		mps, err := MountsUnder(dir)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return nil
		}
		errs = errs[:0]
		for _, mp := range mps {
			if err := syscall.Unmount(mp, 0); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
					errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
				}
			}
		}
	}
	if mps, _ := MountsUnder(dir); len(mps) > 0 {
		errs = append(errs, fmt.Errorf("still mounted under %s: %s", dir, strings.Join(mps, ", ")))
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
