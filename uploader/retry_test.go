package main

import (
	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/test/support"

	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// TestRetriesUntilAPIComesBack: the API is down when the uploader starts;
// it keeps retrying with backoff and succeeds once the API is restarted.
func TestRetriesUntilAPIComesBack(t *testing.T) {
	f := fixture(t, "alpine")
	srv := resultsapitest.Start(t)
	srv.Close()
	logs := &support.Buffer{}
	in := invocation{api: srv.URL, bom: filepath.Join(fixtureDir, f.File), digest: f.Digest, image: f.Image,
		tokenFile: tokenFile(t, srv.Token), extra: []string{"--max-attempts", "100"}}
	done := make(chan int, 1)
	go func() { done <- runUploader(t, in, logs) }()

	deadline := time.Now().Add(20 * time.Second)
	for countMsg(t, logs, "upload attempt failed, retrying") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("uploader did not retry; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.Restart()
	select {
	case code := <-done:
		if code != scan.ExitOK {
			t.Fatalf("exit %d after the API came back", code)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("uploader did not finish after the API came back")
	}
	if code := getJSON(t, srv, "/api/v1/reports/"+f.Digest, nil); code != http.StatusOK {
		t.Fatalf("report not stored after retry: GET %d", code)
	}
}

// TestRetriesOn5xx: a reverse proxy in front of the real API answers 503
// twice (a stand-in for an overloaded or restarting API behind a Service),
// then forwards; the uploader retries and the real API stores the report.
func TestRetriesOn5xx(t *testing.T) {
	f := fixture(t, "debian")
	var calls atomic.Int32
	srv, front := behindProxy(t, func(w http.ResponseWriter, r *http.Request, api http.Handler) {
		if calls.Add(1) <= 2 {
			http.Error(w, `{"error":{"code":"unavailable","message":"try later"}}`, http.StatusServiceUnavailable)
			return
		}
		api.ServeHTTP(w, r)
	})
	logs := &support.Buffer{}
	in := invocation{api: front.URL, bom: filepath.Join(fixtureDir, f.File), digest: f.Digest, image: f.Image,
		tokenFile: tokenFile(t, srv.Token)}
	if code := runUploader(t, in, logs); code != scan.ExitOK {
		t.Fatalf("exit %d", code)
	}
	if calls.Load() != 3 || countMsg(t, logs, "upload attempt failed, retrying") != 2 {
		t.Fatalf("calls %d, retries logged %d; want 3 and 2", calls.Load(), countMsg(t, logs, "upload attempt failed, retrying"))
	}
	if code := getJSON(t, srv, "/api/v1/reports/"+f.Digest, nil); code != http.StatusOK {
		t.Fatalf("GET after 5xx retries: %d", code)
	}
}

// TestFallsBackToGzipForAnOlderAPI: a reverse proxy in front of the real
// API answers a zstd body as results-api before issue 30 did (415
// unsupported_media_type: "use gzip or none") and forwards the rest. The
// uploader sends the report again at once, gzip-compressed, without
// spending an attempt or a backoff on it, and the real API stores it.
func TestFallsBackToGzipForAnOlderAPI(t *testing.T) {
	f := fixture(t, "alpine")
	var mu sync.Mutex
	var encodings []string
	srv, front := behindProxy(t, func(w http.ResponseWriter, r *http.Request, api http.Handler) {
		enc := r.Header.Get("Content-Encoding")
		mu.Lock()
		encodings = append(encodings, enc)
		mu.Unlock()
		if enc != "gzip" && enc != "" && enc != "identity" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnsupportedMediaType)
			_, _ = w.Write([]byte(`{"error":{"code":"unsupported_media_type","message":"unsupported content encoding \"` + enc + `\": use gzip or none"}}`))
			return
		}
		api.ServeHTTP(w, r)
	})
	logs := &support.Buffer{}
	in := invocation{api: front.URL, bom: filepath.Join(fixtureDir, f.File), digest: f.Digest, image: f.Image,
		tokenFile: tokenFile(t, srv.Token), extra: []string{"--max-attempts", "1"}}
	if code := runUploader(t, in, logs); code != scan.ExitOK {
		t.Fatalf("exit %d; logs:\n%s", code, logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(encodings, []string{"zstd", "gzip"}) {
		t.Errorf("bodies sent as %v, want zstd then gzip", encodings)
	}
	if n := countMsg(t, logs, "results-api does not accept zstd, sending gzip"); n != 1 {
		t.Errorf("fallback logged %d times, want 1; logs:\n%s", n, logs.String())
	}
	if code := getJSON(t, srv, "/api/v1/reports/"+f.Digest, nil); code != http.StatusOK {
		t.Fatalf("GET after the gzip fallback: %d", code)
	}
}

// behindProxy starts the real results-api and, in front of it, a server
// whose handle decides each request: answer it, or pass it to api (a
// reverse proxy to the real API). Both close with the test.
func behindProxy(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, api http.Handler)) (*resultsapitest.Server, *httptest.Server) {
	t.Helper()
	srv := resultsapitest.Start(t)
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(w, r, proxy) }))
	t.Cleanup(front.Close)
	return srv, front
}
