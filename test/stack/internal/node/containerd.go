package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// containerdConfig renders containerd's config: every path under dir, CRI
// with the local pause image, plain HTTP to the stack's registry, and what
// this VM needs (restrict_oom_score_adj: no CAP_SYS_RESOURCE here).
func containerdConfig(dir, sandboxImage string, httpRegistries []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), socketPath(dir), filepath.Join(dir, "opt"),
		sandboxImage, filepath.Join(dir, "net.d"), filepath.Join(dir, "runc"))
	for _, r := range httpRegistries {
		fmt.Fprintf(&b, `  [plugins."io.containerd.grpc.v1.cri".registry.mirrors.%q]
    endpoint = [%q]
`, r, "http://"+r)
	}
	return b.String()
}

func socketPath(dir string) string { return filepath.Join(dir, "containerd.sock") }

// startContainerd writes the config and the CNI conflist, starts
// containerd and waits until its CRI service answers.
func (n *Node) startContainerd(ctx context.Context) error {
	dir := n.containerdDir()
	for _, d := range []string{dir, filepath.Join(dir, "net.d")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(dir, n.c.SandboxImage, n.c.HTTPRegistries)), 0o600); err != nil {
		return err
	}
	conflist := filepath.Join(dir, "net.d", "10-crowsnest.conflist")
	if err := os.WriteFile(conflist, []byte(n.c.Network.CNIConfig(filepath.Join(dir, "ipam"))), 0o600); err != nil {
		return err
	}
	p, err := proc.Start(proc.Spec{Name: "containerd", LogDir: n.c.LogDir, Binary: n.c.Containerd, Args: []string{"--config", cfg}})
	if err != nil {
		return err
	}
	n.containerd = p
	conn, err := grpc.NewClient("unix://"+socketPath(dir), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("containerd CRI client: %w", err)
	}
	n.cri = conn
	n.runtime = criv1.NewRuntimeServiceClient(conn)
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := n.runtime.Status(cctx, &criv1.StatusRequest{})
		cancel()
		if err == nil && runtimeReady(st) {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("containerd exited while starting: %w\n%s", p.Err(), proc.LogTail(p.Log, 10))
		default:
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("the runtime reports not ready")
			}
			return fmt.Errorf("containerd's CRI not ready after 30s: %w\n%s", err, proc.LogTail(p.Log, 10))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func runtimeReady(st *criv1.StatusResponse) bool {
	for _, c := range st.GetStatus().GetConditions() {
		if c.Type == criv1.RuntimeReady {
			return c.Status
		}
	}
	return false
}

// removeSandboxes stops and removes every Pod sandbox through CRI: their
// containers are killed, their network namespaces and veths torn down by
// CNI, their IP addresses released.
func (n *Node) removeSandboxes(ctx context.Context) error {
	if n.runtime == nil {
		return nil
	}
	list, err := n.runtime.ListPodSandbox(ctx, &criv1.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	var firstErr error
	for _, sb := range list.Items {
		if _, err := n.runtime.StopPodSandbox(ctx, &criv1.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("stop sandbox %s: %w", sb.Metadata.GetName(), err)
		}
		if _, err := n.runtime.RemovePodSandbox(ctx, &criv1.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("remove sandbox %s: %w", sb.Metadata.GetName(), err)
		}
	}
	return firstErr
}

func (n *Node) containerdDir() string { return filepath.Join(n.c.Dir, "containerd") }
