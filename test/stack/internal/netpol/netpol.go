package netpol

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/hostlock"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// User is kube-router's identity; Grant gives it what its informers read.
const User = "crowsnest:kube-router"

// ErrBusy: another stack on this machine runs kube-router now.
var ErrBusy = errors.New("another stack on this machine enforces NetworkPolicies (kube-router's chains and ipsets are machine-wide)")

// lockFile is beside kube-proxy's and the node networks' locks.
var lockFile = filepath.Join(hostlock.Dir, "kube-router")

// Config describes the enforcer of one node.
type Config struct {
	Binary     string // kube-router (hack/tools.sh kube-router)
	LogDir     string // kube-router.log
	Kubeconfig string // User's credentials
	// NodeName is the real node's Node: kube-router enforces the policies of
	// the Pods whose hostIP is that Node's InternalIP.
	NodeName string
	// ServiceCIDR is the API server's --service-cluster-ip-range (traffic
	// to a ClusterIP is judged after kube-proxy translated it).
	ServiceCIDR *net.IPNet
	Verbosity   int
	// WaitForLock: while another stack holds the lock, wait this long for it
	// before Start returns ErrBusy (0: not at all).
	WaitForLock time.Duration
}

// Enforcer is a running kube-router firewall holding the machine's lock.
type Enforcer struct {
	c    Config
	p    *proc.Process
	lock *hostlock.Lock
}

// args are kube-router's flags: the firewall alone, IPv4, no health or
// metrics listener (its health server binds every address).
func args(c Config) []string {
	return []string{"--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
		"--kubeconfig=" + c.Kubeconfig, "--hostname-override=" + c.NodeName,
		"--service-cluster-ip-range=" + c.ServiceCIDR.String(), "--enable-ipv4=true", "--enable-ipv6=false",
		"--health-port=0", "--metrics-port=0", "--v=" + strconv.Itoa(c.Verbosity)}
}

// Start takes the machine's lock, sweeps what a killed enforcer left, runs
// kube-router and waits until its top-level chains are in place. On error
// everything is undone.
func Start(ctx context.Context, c Config) (_ *Enforcer, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("kube-router needs root (it writes the host's iptables rules and ipsets)")
	}
	lock, err := hostlock.Take(ctx, lockFile, c.WaitForLock)
	if errors.Is(err, hostlock.ErrBusy) {
		return nil, fmt.Errorf("%w: %w", ErrBusy, err)
	}
	if err != nil {
		return nil, fmt.Errorf("kube-router lock: %w", err)
	}
	e := &Enforcer{c: c, lock: lock}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
		}
	}()
	// We hold the lock: any chain or set of kube-router's is a killed one's.
	if err := cleanup(); err != nil {
		return nil, fmt.Errorf("sweep a previous kube-router's rules: %w", err)
	}
	p, err := proc.Start(proc.Spec{Name: "kube-router", LogDir: c.LogDir, Binary: c.Binary, Args: args(c)})
	if err != nil {
		return nil, err
	}
	e.p = p
	ready := func(context.Context) error {
		dump, err := output("iptables-save", "-t", "filter")
		if err != nil {
			return err
		}
		chains, jumps := inDump(dump)
		if !containsAll(chains, "KUBE-ROUTER-INPUT", "KUBE-ROUTER-FORWARD", "KUBE-ROUTER-OUTPUT", "KUBE-NWPLCY-DEFAULT") || len(jumps) < len(builtinChains) {
			return fmt.Errorf("kube-router's top-level chains are not all there yet (chains %v, jumps %d)", chains, len(jumps))
		}
		return nil
	}
	if err := p.WaitReady(ctx, 60*time.Second, ready); err != nil {
		return nil, fmt.Errorf("kube-router: %w", err)
	}
	return e, nil
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// Stop ends kube-router, removes its chains, jumps and sets, checks that
// none is left, and releases the lock.
func (e *Enforcer) Stop() error {
	var errs []error
	if e.p != nil {
		errs = append(errs, e.p.Stop(10*time.Second))
		e.p = nil
	}
	if e.lock == nil {
		return errors.Join(errs...)
	}
	errs = append(errs, cleanup())
	if left, err := Leftovers(); err != nil {
		errs = append(errs, err)
	} else if len(left) > 0 {
		errs = append(errs, fmt.Errorf("kube-router rules left after cleanup: %v", left))
	}
	e.lock.Release()
	e.lock = nil
	return errors.Join(errs...)
}

// Grant gives User read access to what kube-router's informers list and
// watch (its firewall reads Pods, Namespaces, NetworkPolicies and its Node;
// the shared informer factory also starts Services, Endpoints and
// EndpointSlices) and nothing else.
func Grant(ctx context.Context, c kubernetes.Interface) error {
	read := []string{"get", "list", "watch"}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: User},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods", "namespaces", "nodes", "services", "endpoints"}, Verbs: read},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: read},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
		},
	}
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRole %s: %w", User, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: User},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: User},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: User}},
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", User, err)
	}
	return nil
}
