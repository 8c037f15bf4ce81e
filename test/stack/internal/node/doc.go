// Package node runs one real Kubernetes node for the local stack: containerd
// (Debian's, with runc and the CNI plugins) with its own root, state and
// socket under the stack's state directory, a kubelet built from the pinned
// Kubernetes module, and a CNI bridge with its own Pod subnet. Scan Pods run
// there as real containers, from images the stack's registry serves, with
// the projected, Pod-bound service-account tokens a kubelet mounts.
//
// Everything it starts it removes again on Stop, on every exit path: Pod
// sandboxes (and with them their containers, network namespaces and veths)
// through containerd's CRI API, the containerd shims, every mount under its
// directory, and the bridge. A stack killed with SIGKILL cannot clean up
// after itself; the next SetupNetwork sweeps what such a stack left behind
// (Sweep).
//
// What this machine needs (DESIGN.md, "A real node runs here"): root,
// containerd, runc and containernetworking-plugins from Debian, cgroups v1
// (cgroupsPerQOS off, cgroupfs driver) and no CAP_SYS_RESOURCE
// (restrict_oom_score_adj).
package node
