package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

func runProbeCmd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	code := run(context.Background(), append([]string{"probe"}, args...), func(string) string { return "" }, &stderr)
	return code, stderr.String()
}

// TestProbeRealResultsAPI: the helm test Pod's check against a real
// results-api (real router and store on a throwaway Postgres): /readyz
// passes; while the API is down the probe retries and passes once it is
// back; a path that answers 404 fails with exit 5.
func TestProbeRealResultsAPI(t *testing.T) {
	srv := resultsapitest.Start(t)
	if code, logs := runProbeCmd(t, "--deadline=20s", srv.URL+"/readyz", srv.URL+"/healthz"); code != scan.ExitOK || strings.Count(logs, `"probe passed"`) != 2 {
		t.Fatalf("exit %d, want 0 with two passes: %s", code, logs)
	}

	srv.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(time.Second)
		srv.Restart()
	}()
	code, logs := runProbeCmd(t, "--deadline=30s", "--interval=200ms", srv.URL+"/readyz")
	<-done
	if code != scan.ExitOK || !strings.Contains(logs, `"probe passed"`) || strings.Contains(logs, `"attempts":1,`) {
		t.Errorf("API back after a second: exit %d, want 0 after several attempts: %s", code, logs)
	}

	code, logs = runProbeCmd(t, "--deadline=1s", "--interval=200ms", srv.URL+"/readyz", srv.URL+"/no-such-endpoint")
	if code != scan.ExitUnreachable || !strings.Contains(logs, `"status":404`) || !strings.Contains(logs, `"probe passed"`) {
		t.Errorf("one URL answers 404: exit %d, want %d naming the status: %s", code, scan.ExitUnreachable, logs)
	}
}

// TestProbeFailures: 503 until the deadline, redirects and bad arguments.
func TestProbeFailures(t *testing.T) {
	unready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "readyz check failed", http.StatusServiceUnavailable)
	}))
	defer unready.Close()
	redirect := httptest.NewServer(http.RedirectHandler(unready.URL, http.StatusFound))
	defer redirect.Close()

	start := time.Now()
	code, logs := runProbeCmd(t, "--deadline=700ms", "--interval=100ms", unready.URL+"/readyz")
	if code != scan.ExitUnreachable || !strings.Contains(logs, "readyz check failed") {
		t.Errorf("503: exit %d, want %d with the body: %s", code, scan.ExitUnreachable, logs)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("probe took %v past a 700ms deadline", d)
	}
	// The deadline cuts an attempt short (here: every attempt after the
	// first hangs): the failure still reports the last answer, not only
	// "context deadline exceeded".
	var calls atomic.Int32
	hangs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) > 1 {
			<-r.Context().Done()
			return
		}
		http.Error(w, "readyz check failed", http.StatusServiceUnavailable)
	}))
	defer hangs.Close()
	if code, logs := runProbeCmd(t, "--deadline=500ms", "--interval=50ms", hangs.URL+"/readyz"); code != scan.ExitUnreachable ||
		!strings.Contains(logs, "readyz check failed") || !strings.Contains(logs, `"status":503`) || !strings.Contains(logs, `"attempts":2`) {
		t.Errorf("deadline during an attempt: exit %d, want %d with the answer before it: %s", code, scan.ExitUnreachable, logs)
	}
	if code, logs := runProbeCmd(t, "--deadline=300ms", redirect.URL); code != scan.ExitUnreachable || !strings.Contains(logs, `"status":302`) {
		t.Errorf("redirect: exit %d, want %d (not followed): %s", code, scan.ExitUnreachable, logs)
	}
	for _, args := range [][]string{
		{},
		{"ftp://example.com/readyz"},
		{"not a url"},
		{"--timeout=0s", "http://example.com/readyz"},
		{"--bogus", "http://example.com/readyz"},
	} {
		if code, _ := runProbeCmd(t, args...); code != scan.ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, scan.ExitUsage)
		}
	}
	if code, out := runProbeCmd(t, "--help"); code != scan.ExitOK || !strings.Contains(out, "Usage: uploader probe") {
		t.Errorf("--help: exit %d: %s", code, out)
	}
}
