package scanner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crowsnest-dev/crowsnest/operator/internal/bus"
	"github.com/crowsnest-dev/crowsnest/operator/internal/controller"
	"github.com/crowsnest-dev/crowsnest/operator/internal/resultsclient"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

// The controller tests run on a real kube-apiserver and etcd (envtest), a
// REAL results-api (resultsapitest: its binary on Postgres) and an
// embedded JetStream server. envtest has no kubelet and no Job controller,
// so the tests play them: they set Pod status imageIDs through the status
// subresource and mark Jobs complete or failed.

var (
	restConfig *rest.Config
	scheme     *runtime.Scheme
	k8s        client.Client
	nsCounter  atomic.Int64
)

func TestMain(m *testing.M) {
	var err error
	if scheme, err = controller.NewScheme(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if os.Getenv("CROWSNEST_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	cfg, stop, err := kubetest.Start(kubetest.WithCRDs(filepath.Join("..", "..", "..", "config", "crd", "bases")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	restConfig = cfg
	restConfig.QPS, restConfig.Burst = 500, 1000
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := pgtest.Main(m)
	if err := stop(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		fmt.Fprintln(os.Stderr, "stop control plane:", err)
	}
	os.Exit(code)
}

// testOptions are short waits so tests see retries within seconds.
func testOptions() Options {
	return Options{
		GrypeImage: "anchore/grype:v0.121.2", UploaderImage: "ghcr.io/crowsnest-dev/uploader:test", UploaderAPIURL: "http://results-api:8080",
		JobTTL: 2 * time.Hour, RetryBase: 2 * time.Second, RetryMax: 10 * time.Second,
		LookupRetry: 200 * time.Millisecond, PublishRetry: 300 * time.Millisecond, Workers: 2,
	}
}

// operator is a running manager with the Scanner controller, wired by Setup
// as cmd/main.go wires it.
type operator struct {
	mgr    ctrl.Manager
	cancel context.CancelFunc
	done   chan error
}

// startOperator runs an operator that watches ns only, or
// opts.WatchNamespaces when set, as the suite's admin user.
func startOperator(t testing.TB, ns, apiURL, natsURL string, opts Options, mods ...func(*Deps)) *operator {
	t.Helper()
	if len(opts.WatchNamespaces) == 0 {
		opts.WatchNamespaces = []string{ns}
	}
	return startOperatorAs(t, restConfig, opts.WatchNamespaces, apiURL, natsURL, opts, mods...)
}

// startOperatorAs runs an operator with the identity of cfg and a cache of
// cacheNamespaces (cmd/main.go caches opts.WatchNamespaces).
func startOperatorAs(t testing.TB, cfg *rest.Config, cacheNamespaces []string, apiURL, natsURL string, opts Options, mods ...func(*Deps)) *operator {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Cache: CacheOptions(cacheNamespaces...),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	lookups, err := resultsclient.New(resultsclient.Options{BaseURL: apiURL, CacheTTL: 500 * time.Millisecond, Timeout: 2 * time.Second, Observe: ObserveLookup})
	if err != nil {
		t.Fatal(err)
	}
	deps := Deps{Lookup: lookups, Options: opts}
	if natsURL != "" {
		js, err := bus.Connect(natsURL, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(js.Close)
		deps.Publisher, deps.Deletions = js, js
	}
	for _, m := range mods {
		m(&deps)
	}
	if err := Setup(mgr, deps); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{mgr: mgr, cancel: cancel, done: make(chan error, 1)}
	go func() { op.done <- mgr.Start(ctx) }()
	t.Cleanup(op.stop)
	return op
}

func (o *operator) stop() {
	o.cancel()
	select {
	case err := <-o.done:
		if err != nil {
			fmt.Fprintln(os.Stderr, "operator stopped with:", err)
		}
		o.done <- err // a second stop returns at once
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "operator did not stop within 30s")
	}
}

// newNamespace creates a fresh namespace for one test.
func newNamespace(t testing.TB) string {
	t.Helper()
	return labelledNamespace(t, nil)
}

// labelledNamespace creates a fresh namespace with labels.
func labelledNamespace(t testing.TB, labels map[string]string) string {
	t.Helper()
	ns := fmt.Sprintf("t%d-%d", time.Now().UnixNano()%100000, nsCounter.Add(1))
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// eventually polls fn until it returns nil or the deadline passes.
func eventually(t testing.TB, timeout time.Duration, what string, fn func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := fn()
		if err == nil {
			if d := time.Since(start); d > time.Second {
				t.Logf("%s: took %v", what, d.Round(time.Millisecond))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %v: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// consistently checks that fn keeps returning nil for d.
func consistently(t testing.TB, d time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
