package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
)

// syncBuffer is a log sink the test can read while the operator writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}

// TestRunServesProbesAndMetrics starts the whole binary's wiring on a real
// API server (envtest) with leader election, then stops it.
func TestRunServesProbesAndMetrics(t *testing.T) {
	cfg := kubetest.StartT(t, kubetest.WithCRDs(filepath.Join("..", "config", "crd", "bases")))
	_, natsURL := natstest.StartT(t)
	probe, metrics := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var logs syncBuffer
	go func() {
		done <- run(ctx, []string{
			"--results-api-url=http://127.0.0.1:1", "--uploader-image=u", "--nats-url=" + natsURL,
			"--health-probe-bind-address=" + probe, "--metrics-bind-address=" + metrics,
			"--leader-elect", "--leader-election-namespace=default",
		}, func(string) string { return "" }, &logs, func() (*rest.Config, error) { return cfg, nil })
	}()
	client := &http.Client{Timeout: time.Second}
	get := func(url string) error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
		}
		return nil
	}
	// The controller's series appear once leader election is won and the
	// controller has started, which can lag readiness on a loaded machine:
	// poll for them within the deadline.
	metricsReady := func() error {
		if err := get("http://" + probe + "/readyz"); err != nil {
			return err
		}
		resp, err := client.Get("http://" + metrics + "/metrics")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		for _, series := range []string{"crowsnest_operator_jobs_created_total", "controller_runtime_reconcile_total"} {
			if !bytes.Contains(body, []byte(series)) {
				return fmt.Errorf("metrics lack %s:\n%.500s", series, body)
			}
		}
		return nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := metricsReady()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("operator not serving probes and metrics: %v\n%s", err, logs.String())
		}
		select {
		case err := <-done:
			t.Fatalf("run returned before serving: %v\n%s", err, logs.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("operator did not stop within 30s")
	}
}
