package clusterscanner

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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/crowsnest-dev/crowsnest/operator/internal/controller"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
)

// The ClusterScanner tests run on a real kube-apiserver and etcd (envtest)
// with the operator's CRDs. envtest has no garbage collector and no
// Scanner controller runs here: the tests write what those would.

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
	code := m.Run()
	if err := stop(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		fmt.Fprintln(os.Stderr, "stop control plane:", err)
	}
	os.Exit(code)
}

// runManager starts mgr and stops it when the test ends.
func runManager(t testing.TB, mgr ctrl.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager stopped with: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("manager did not stop within 30s")
		}
	})
}

// newNamespace creates a fresh namespace for one test.
func newNamespace(t testing.TB) string {
	t.Helper()
	ns := fmt.Sprintf("c%d-%d", time.Now().UnixNano()%100000, nsCounter.Add(1))
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// eventually polls fn until it returns nil or the deadline passes.
func eventually(t testing.TB, timeout time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
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
