package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/client"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/clusterdns"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/controlplane"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/kubeproxy"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/netpol"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/node"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proxy"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/services"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/teardown"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// TokenAudience is the audience of the scan Pods' projected token.
const TokenAudience = "crowsnest-results-api"

// Stack is a running local Crowsnest.
type Stack struct {
	Options  Options
	Cluster  *controlplane.ControlPlane
	Registry *registry.Registry
	Client   client.Client
	NATS     *services.NATS
	Postgres *services.Postgres
	// APIs are the results-api replicas (Options.APIReplicas), all on one
	// database and NATS; API is the first. Front is the one address in
	// front of them all (a Service's stand-in): the operator, scan Pods,
	// the dashboard and the tests use URL().
	APIs     []*services.ResultsAPI
	API      *services.ResultsAPI
	Front    *proxy.Proxy
	PodFront *proxy.Proxy
	Operator *services.Operator
	Matcher  *services.Matcher
	// Network is the real node's Pod network (its gateway is HostIP), Node
	// the node: containerd and a kubelet that run the scan Pods.
	Network *node.Network
	Node    *node.Node
	// DNS is the cluster DNS (CoreDNS on the gateway, the kubelet's
	// clusterDNS); KubeProxy routes the Service CIDR
	// (Network.ServiceCIDR) from the node's Pods, nil when another stack on
	// this machine runs kube-proxy.
	DNS       *clusterdns.Server
	KubeProxy *kubeproxy.KubeProxy
	// NetPol enforces NetworkPolicies on the real node
	// (Options.NetworkPolicies), nil otherwise.
	NetPol *netpol.Enforcer
	// UploaderImage and GrypeImage are the scan Jobs' images, built by make
	// images and served by Registry.
	UploaderImage, GrypeImage string
	// Images are the project images pushed to Registry (name → reference;
	// the two above in a full stack, ChartImages with Options.Chart).
	Images map[string]string
	// DBMirrorURL serves the offline Grype DB in Grype's listing format
	// (<url>/v6/latest.json) on the gateway (Options.Chart): the matcher's
	// upstream where there is no internet.
	DBMirrorURL string
	// Notifier sends what it notifies (high and critical, every namespace)
	// to Notifications, a webhook receiver in the stack.
	Notifier      *services.Notifier
	Notifications *services.Sink
	// operatorTokenFile holds the operator's lookup token (read auth
	// kubernetes).
	operatorTokenFile string
	WriteToken        string
	Log               *slog.Logger

	pki        *node.PKI
	pauseImage string
	pauseBin   string // the pause program (PushRunnableAlpine)
	// The DB mirror's folder (chart mode) and how many DBs it has served.
	mirrorDir       atomic.Pointer[string]
	mirrorN         int
	mirrorDownloads atomic.Int64

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closers   []func()
	ownDir    bool
	closeOnce sync.Once
}

// Start brings the stack up in dependency order. On error everything
// started so far is stopped again.
func Start(ctx context.Context, o Options, log *slog.Logger) (_ *Stack, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if m := o.missing(); len(m) > 0 {
		return nil, fmt.Errorf("missing binaries (run `make demo`, which builds them): %s", strings.Join(m, ", "))
	}
	teardown.OutliveOutputReader()
	s := &Stack{Options: o, Log: log}
	if s.Options.StateDir == "" {
		if s.Options.StateDir, err = os.MkdirTemp("", "crowsnest-stack-"); err != nil {
			return nil, err
		}
		s.ownDir = true
	} else if err := os.MkdirAll(s.Options.StateDir, 0o750); err != nil {
		return nil, fmt.Errorf("create state dir %s: %w", s.Options.StateDir, err)
	}
	bg, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	var early <-chan backends
	if !o.ClusterOnly && !o.Chart { // the chart brings its own NATS; its Postgres listens for Pods
		early = s.startBackends(ctx)
	}
	err = s.startCluster(ctx, bg)
	if early != nil {
		if jerr := s.joinBackends(early); err == nil {
			err = jerr
		}
	}
	if err != nil {
		return nil, err
	}
	switch {
	case o.Chart:
		if err := s.startChartCluster(ctx, bg); err != nil {
			return nil, err
		}
	case !o.ClusterOnly:
		if err := s.startServices(ctx, bg); err != nil {
			return nil, err
		}
	}
	if o.Demo {
		refOf := func(name string) (string, bool) {
			img, ok := s.Registry.Lookup(name)
			return img.Ref(), ok
		}
		if err := workload.CreateDemo(ctx, s.Client, refOf); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Stack) startCluster(ctx, bg context.Context) error {
	o := s.Options
	cpo := controlplane.Options{
		AssetsDir: o.Bin.KubeAssets, Kwok: o.Bin.Kwok, StateDir: s.Options.StateDir, Nodes: o.Nodes,
		CRDDirs: []string{filepath.Join(o.Root, "operator", "config", "crd", "bases")},
	}
	if o.Chart {
		cpo.CRDDirs = nil // the chart installs them
		// The chart's admission policy admits scan Pods from the Job
		// controller's own identity only.
		cpo.ControllerIdentities = true
	}
	if !o.ClusterOnly {
		var err error
		if cpo.APIServerArgs, err = s.startNetwork(); err != nil {
			return err
		}
		// kube-apiserver on the gateway: the kubernetes Service routes the
		// node's Pods to it (in-cluster clients, the chart's components).
		cpo.Address, cpo.ServiceIP = s.Network.Gateway, s.Network.ServiceIP(1)
	}
	s.Log.Info("starting control plane", "nodes", o.Nodes)
	// The Go demo binary builds while the control plane starts.
	type built struct {
		bin string
		err error
	}
	goDemo := make(chan built, 1)
	go func() {
		bin, err := buildGoDemo(ctx, o.Root, s.Options.StateDir)
		goDemo <- built{bin, err}
	}()
	cp, err := controlplane.Start(ctx, cpo)
	demo := <-goDemo
	if err != nil {
		return err
	}
	s.Cluster = cp
	s.closers = append(s.closers, func() { _ = cp.Stop() })
	if s.Client, err = workload.NewClient(cp.Config); err != nil {
		return err
	}
	if demo.err != nil {
		if o.RequireGoDemo {
			return fmt.Errorf("build the Go demo image: %w", demo.err)
		}
		s.Log.Warn("the Go demo image is left out", "error", demo.err)
	}
	images, err := registry.DemoImages(demo.bin)
	if err != nil {
		return err
	}
	reg, err := registry.Start(ctx, s.hostAddr(o.RegistryAddr), images, s.Log.With("component", "registry"))
	if err != nil {
		return err
	}
	s.Registry = reg
	s.closers = append(s.closers, func() { _ = reg.Close() })
	w := &workload.ImageIDWriter{Client: cp.Client, Resolve: reg.ResolveID, Log: s.Log, Written: o.OnImageID, SkipNode: NodeName}
	s.goRun(bg, "imageID writer", w.Run)
	return nil
}

func (s *Stack) startServices(ctx, bg context.Context) error {
	o := s.Options
	logs := s.Options.StateDir
	s.WriteToken = randomToken()
	if err := s.startNode(ctx, []string{"uploader", "grype"}); err != nil {
		return err
	}
	if err := s.startAPIs(ctx); err != nil {
		return err
	}
	if err := s.startMatcher(ctx, bg); err != nil {
		return err
	}
	if err := s.setupReadAuth(ctx, bg); err != nil {
		return err
	}
	// Scan Pods run on the real node from the project's images; they get an
	// empty DB cache (their emptyDir) and the matcher's URL from their Job
	// (GRYPE_DB_UPDATE_URL): each scan downloads the DB from the matcher,
	// and Grype pulls the scanned image from the stack's registry (plain
	// HTTP: --insecure-registries), as in a cluster.
	s.Operator = &services.Operator{TokenFile: s.operatorTokenFile, Binary: o.Bin.Operator, LogDir: logs, Kubeconfig: s.Cluster.Kubeconfig,
		ResultsAPIURL: s.URL(), UploaderAPIURL: s.PodURL(), NATSURL: s.NATS.URL(), NATSPasswordFile: s.NATS.PasswordFile(eventsv1.UserOperator), UploaderImage: s.UploaderImage, GrypeImage: s.GrypeImage,
		RetryBackoff: o.RetryBackoff, JobTTL: o.JobTTL,
		ExtraArgs: append([]string{"--scan-service-account=" + workload.ScanServiceAccount, "--vulndb-url=" + s.Matcher.VulnDBURL(),
			"--insecure-registries=" + s.Registry.Host, "--stuck-grace=" + o.StuckGrace.String()}, ScanPodPlacement()...)}
	if err := s.Operator.Start(ctx); err != nil {
		return err
	}
	s.closers = append(s.closers, s.Operator.Stop)
	return s.startNotifier(ctx)
}

// startNotifier runs the notifier, as another tool on the public events,
// with the stack's webhook receiver.
func (s *Stack) startNotifier(ctx context.Context) error {
	sink, err := services.StartSink()
	if err != nil {
		return err
	}
	s.Notifications = sink
	s.closers = append(s.closers, sink.Close)
	n := &services.Notifier{Binary: s.Options.Bin.Notifier, LogDir: s.Options.StateDir, StateDir: s.Options.StateDir,
		NATSURL: s.NATS.URL(), NATSPasswordFile: s.NATS.PasswordFile(eventsv1.UserNotifier), DashboardURL: s.URL(), Sink: sink}
	if err := n.Start(ctx); err != nil {
		return err
	}
	s.Notifier = n
	s.closers = append(s.closers, n.Stop)
	return nil
}

// startAPIs starts the results-api replicas one after another (the first
// migrates the database) and the front proxy on Options.APIAddr.
func (s *Stack) startAPIs(ctx context.Context) error {
	o := s.Options
	logs := o.StateDir
	var backends []string
	for i := range o.APIReplicas {
		port, err := freePort()
		if err != nil {
			return err
		}
		name := "results-api"
		if i > 0 {
			name = fmt.Sprintf("results-api-%d", i)
		}
		api := &services.ResultsAPI{Name: name, Binary: o.Bin.ResultsAPI, LogDir: logs, StateDir: logs, Listen: fmt.Sprintf("127.0.0.1:%d", port),
			DatabaseURL: s.Postgres.URL, NATSURL: s.NATS.URL(), NATSPasswordFile: s.NATS.PasswordFile(eventsv1.UserResultsAPI), WriteToken: s.WriteToken}
		if ui := filepath.Join(o.Root, "web", "dist"); fileExists(filepath.Join(ui, "index.html")) {
			// Serve the freshest dashboard build (make build-web also embeds it).
			api.ExtraArgs = append(api.ExtraArgs, "--ui-dir="+ui)
		}
		// Scan Pods present the projected service-account tokens their
		// kubelet mounts; results-api checks them with TokenReview against
		// this control plane.
		allowed := []string{workload.Namespace + "/*"}
		for _, ns := range o.Namespaces {
			allowed = append(allowed, ns+"/*")
		}
		api.ReadAuth = o.ReadAuth
		api.ExtraArgs = append(api.ExtraArgs, "--auth-mode=tokenreview", "--kubeconfig="+s.Cluster.Kubeconfig,
			"--token-audience="+TokenAudience, "--allowed-service-accounts="+strings.Join(allowed, ","),
			"--scan-service-account="+workload.ScanServiceAccount, "--rematch-service-accounts="+MatcherNamespace+"/"+MatcherServiceAccount)
		if err := api.Start(ctx); err != nil {
			return err
		}
		s.closers = append(s.closers, api.Stop)
		s.APIs = append(s.APIs, api)
		backends = append(backends, api.Listen)
	}
	s.API = s.APIs[0]
	front, err := proxy.Start(o.APIAddr, backends)
	if err != nil {
		return fmt.Errorf("results-api front: %w", err)
	}
	s.Front = front
	s.closers = append(s.closers, front.Close)
	// What a Service is to Pods: the same replicas at an address the
	// node's Pods can reach.
	podFront, err := proxy.Start(s.hostAddr(""), backends)
	if err != nil {
		return fmt.Errorf("results-api front for Pods: %w", err)
	}
	s.PodFront = podFront
	s.closers = append(s.closers, podFront.Close)
	return nil
}

// PodURL is results-api's address for the real node's Pods (the scan Pods'
// uploader): the same replicas, on the node network's gateway.
func (s *Stack) PodURL() string { return "http://" + s.PodFront.Addr() }

// URL is results-api's address for everyone: the front in front of every
// replica.
func (s *Stack) URL() string { return "http://" + s.Front.Addr() }

func (s *Stack) goRun(ctx context.Context, name string, run func(context.Context) error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.Log.Error(name+" stopped", "error", err)
		}
	}()
}

// Close stops everything in reverse order and removes the temp state. A
// second call (CloseOnSignal's beside the test's own) waits for the first.
func (s *Stack) Close() { s.closeOnce.Do(s.close) }

// CloseOnSignal closes the stack and exits with status 1 when SIGTERM or
// SIGINT arrives, so that a test run stopped from outside (.ci/run ending
// early while the end-to-end suites run beside make test) still removes
// the node's containers, mounts and network links instead of leaving them
// to the next stack's sweep. stop ends the watch; call it after Close, so
// that a signal while the stack closes waits for that close.
func (s *Stack) CloseOnSignal() (stop func()) { return teardown.OnSignal(s.Close) }

func (s *Stack) close() {
	if s.cancel != nil {
		s.cancel()
	}
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
	s.wg.Wait()
	if s.ownDir {
		_ = os.RemoveAll(s.Options.StateDir)
	}
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
