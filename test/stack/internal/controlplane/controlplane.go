package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// Options configure the control plane.
type Options struct {
	AssetsDir string   // kube-apiserver, etcd, kube-controller-manager, kube-scheduler
	Kwok      string   // path of the kwok binary
	CRDDirs   []string // CustomResourceDefinitions to install
	StateDir  string   // kubeconfig, logs, stages
	Nodes     int      // fake kwok Nodes (none: 0)
	// Address, when set, is where kube-apiserver listens and what it
	// advertises (the kubernetes Service's endpoint): an address the real
	// node's Pods reach. Its certificate then also names ServiceIP (the
	// kubernetes Service's ClusterIP) and the Service's DNS names. Nil:
	// loopback, reachable from the host only.
	Address, ServiceIP net.IP
	// ControllerIdentities runs kube-controller-manager as a cluster's does:
	// as user system:kube-controller-manager, each controller with its own
	// ServiceAccount's token (--use-service-account-credentials), so the
	// Job controller creates Pods as kube-system/job-controller, which
	// admission policies (the chart's) name. Otherwise every controller
	// acts as the cluster admin.
	ControllerIdentities bool
	// APIServerArgs are extra kube-apiserver flags (name → value), e.g.
	// how it reaches a real node's kubelet.
	APIServerArgs map[string]string
}

// ContextName is the one context of the admin kubeconfig (Kubeconfig):
// a fixed name that tools recognise, e.g. the Tiltfile allows it.
const ContextName = "crowsnest-stack"

// ControlPlane is a running control plane.
type ControlPlane struct {
	Config     *rest.Config // cluster-admin
	Kubeconfig string       // path of a cluster-admin kubeconfig file
	Client     kubernetes.Interface
	Nodes      []string

	env          *envtest.Environment
	stateDir     string
	removeAssets func()
	procs        []*proc.Process
}

// KwokNodeAnnotation marks the Nodes kwok manages (value "fake").
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// AddUser writes a kubeconfig for a client-certificate user (e.g. a
// kubelet's system:node:<name> in group system:nodes) and returns its path.
func (cp *ControlPlane) AddUser(name string, groups []string, file string) (string, error) {
	u, err := cp.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", fmt.Errorf("create user %s: %w", name, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("render kubeconfig of %s: %w", name, err)
	}
	path := filepath.Join(cp.stateDir, file)
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// Start brings the control plane up and waits for the fake Nodes to be Ready.
func Start(ctx context.Context, o Options) (_ *ControlPlane, err error) {
	if err := os.MkdirAll(o.StateDir, 0o750); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: o.AssetsDir,
		CRDDirectoryPaths:     o.CRDDirs,
		ErrorIfCRDPathMissing: true,
	}
	// envtest turns the ServiceAccount admission plugin off; a real cluster
	// has it (it sets serviceAccountName, which projected tokens need).
	api := env.ControlPlane.GetAPIServer().Configure()
	api.Disable("disable-admission-plugins")
	// As in a cluster: kubelets are authorized by the Node authorizer and
	// held to their own Node and Pods by NodeRestriction.
	api.Set("authorization-mode", "Node,RBAC")
	api.Set("enable-admission-plugins", "NodeRestriction")
	for k, v := range o.APIServerArgs {
		api.Set(k, v)
	}
	if o.Address != nil {
		if err := serveOn(env, filepath.Join(o.StateDir, "apiserver"), o.Address, o.ServiceIP); err != nil {
			return nil, err
		}
	}
	// etcd and kube-apiserver die with this process, even one killed by
	// `go test -timeout` before it could stop them.
	removeAssets, err := kubetest.DieWithParent(env, o.AssetsDir, o.StateDir)
	if err != nil {
		return nil, err
	}
	cfg, err := env.Start()
	if err != nil {
		removeAssets()
		return nil, fmt.Errorf("start etcd and kube-apiserver: %w", err)
	}
	// cp, not the named result: an error return sets the result to nil
	// before this deferred Stop runs, and what was started must still stop.
	cp := &ControlPlane{Config: cfg, env: env, removeAssets: removeAssets, stateDir: o.StateDir}
	defer func() {
		if err != nil {
			_ = cp.Stop()
		}
	}()
	user, err := env.AddUser(envtest.User{Name: "crowsnest-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("create admin user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("render kubeconfig: %w", err)
	}
	if kc, err = renameContext(kc, ContextName); err != nil {
		return nil, err
	}
	cp.Kubeconfig = filepath.Join(o.StateDir, "kubeconfig")
	if err := os.WriteFile(cp.Kubeconfig, kc, 0o600); err != nil {
		return nil, fmt.Errorf("write kubeconfig: %w", err)
	}
	cp.Config = user.Config()
	// The imageID writer acts for every kwok Node at once, like
	// many kubelets: client-go's default 5 QPS would throttle them.
	cp.Config.QPS, cp.Config.Burst = 200, 400
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return nil, err
	}
	if err := cp.startComponents(ctx, o); err != nil {
		return nil, err
	}
	if err := cp.createNodes(ctx, o.Nodes); err != nil {
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) startComponents(ctx context.Context, o Options) error {
	logs := o.StateDir
	kcmPort, err := proc.FreePort()
	if err != nil {
		return err
	}
	kcmConfig, ownCredentials := cp.Kubeconfig, "false"
	if o.ControllerIdentities {
		if kcmConfig, err = cp.AddUser("system:kube-controller-manager", nil, "kube-controller-manager.kubeconfig"); err != nil {
			return err
		}
		ownCredentials = "true"
	}
	kcm, err := proc.Start(proc.Spec{Name: "kube-controller-manager", LogDir: logs,
		Binary: filepath.Join(o.AssetsDir, "kube-controller-manager"),
		Args: []string{
			"--kubeconfig=" + kcmConfig,
			// Projected tokens come from TokenRequest; no legacy token Secrets.
			"--controllers=*,-serviceaccount-token",
			"--use-service-account-credentials=" + ownCredentials,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(kcmPort),
			"--concurrent-job-syncs=20",
			"--kube-api-qps=200", "--kube-api-burst=400",
		}})
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, kcm)
	schedPort, err := proc.FreePort()
	if err != nil {
		return err
	}
	sched, err := proc.Start(proc.Spec{Name: "kube-scheduler", LogDir: logs,
		Binary: filepath.Join(o.AssetsDir, "kube-scheduler"),
		Args: []string{
			"--kubeconfig=" + cp.Kubeconfig, "--leader-elect=false",
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(schedPort),
			"--kube-api-qps=200", "--kube-api-burst=400",
		}})
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, sched)
	stages, err := writeStages(o.StateDir)
	if err != nil {
		return err
	}
	kwokPort, err := proc.FreePort()
	if err != nil {
		return err
	}
	kwok, err := proc.Start(proc.Spec{Name: "kwok", LogDir: logs, Binary: o.Kwok,
		Args: []string{
			"--kubeconfig=" + cp.Kubeconfig,
			// Only kwok's own Nodes (and their Pods): the real node's Pods
			// are the kubelet's.
			"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
			"--config=" + stages,
			"--server-address=127.0.0.1:" + strconv.Itoa(kwokPort),
			"--node-ip=127.0.0.1",
		}})
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, kwok)
	return nil
}

// createNodes registers the fake Nodes and waits until kwok marks them Ready.
func (cp *ControlPlane) createNodes(ctx context.Context, n int) error {
	for i := range n {
		name := fmt.Sprintf("kwok-node-%d", i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
			Labels:      map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok"},
		}}
		if _, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", name, err)
		}
		cp.Nodes = append(cp.Nodes, name)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, name := range cp.Nodes {
		for {
			node, err := cp.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err == nil && nodeReady(node) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s not Ready after 60s (is kwok running? see kwok.log): %w", name, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Stop ends kwok, the scheduler, the controller manager, then the API
// server and etcd (whose temp dirs envtest removes).
func (cp *ControlPlane) Stop() error {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		_ = cp.procs[i].Stop(5 * time.Second)
	}
	cp.procs = nil
	if cp.env == nil {
		return nil
	}
	err := cp.env.Stop()
	cp.env = nil
	cp.removeAssets()
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// renameContext returns kubeconfig kc with its current context, cluster
// and user all called name.
func renameContext(kc []byte, name string) ([]byte, error) {
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		return nil, fmt.Errorf("parse kubeconfig: %w", err)
	}
	cur, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("kubeconfig: no current context %q", cfg.CurrentContext)
	}
	cluster, user := cfg.Clusters[cur.Cluster], cfg.AuthInfos[cur.AuthInfo]
	if cluster == nil || user == nil {
		return nil, fmt.Errorf("kubeconfig: context %q lacks its cluster or user", cfg.CurrentContext)
	}
	cfg.Contexts = map[string]*clientcmdapi.Context{name: {Cluster: name, AuthInfo: name}}
	cfg.Clusters = map[string]*clientcmdapi.Cluster{name: cluster}
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{name: user}
	cfg.CurrentContext = name
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("write kubeconfig: %w", err)
	}
	return out, nil
}
