package resultsclient

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// The client is tested against the REAL results-api (resultsapitest: its
// binary on Postgres), not a stand-in.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func digest(i int) string { return fmt.Sprintf("sha256:%064x", i) }

// putReport uploads a small constructed CycloneDX BOM to the real results-api.
func putReport(t *testing.T, srv *resultsapitest.Server, d string) {
	t.Helper()
	srv.PutReport(t, d, nil)
}

func TestLookupBatchesAndCaches(t *testing.T) {
	srv := resultsapitest.Start(t)
	putReport(t, srv, digest(1))
	putReport(t, srv, digest(3))
	now := time.Now()
	c, err := New(Options{BaseURL: srv.URL, CacheTTL: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[string]time.Time{}
	for i := 1; i <= 500; i++ {
		want[digest(i)] = time.Time{}
	}
	got, err := c.Lookup(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[digest(1)].IsZero() || got[digest(3)].IsZero() {
		t.Fatalf("found = %v, want digests 1 and 3", got)
	}
	if c.Requests() != 1 {
		t.Errorf("500 digests took %d requests, want 1", c.Requests())
	}
	// Cached: no request; a report uploaded meanwhile is not seen yet.
	putReport(t, srv, digest(2))
	if got, _ = c.Lookup(ctx, want); c.Requests() != 1 || len(got) != 2 {
		t.Errorf("cached lookup: %d requests, %d found", c.Requests(), len(got))
	}
	// Demanding an answer newer than the cache entry refetches just that digest.
	if got, _ = c.Lookup(ctx, map[string]time.Time{digest(2): now.Add(time.Second), digest(1): {}}); c.Requests() != 2 || got[digest(2)].IsZero() || got[digest(1)].IsZero() {
		t.Errorf("fresh lookup: %d requests, found %v", c.Requests(), got)
	}
	// After the TTL everything is asked again, in one request.
	now = now.Add(2 * time.Minute)
	if got, _ = c.Lookup(ctx, want); c.Requests() != 3 || len(got) != 3 {
		t.Errorf("expired lookup: %d requests, %d found", c.Requests(), len(got))
	}
}

func TestLookupErrors(t *testing.T) {
	srv := resultsapitest.Start(t)
	c, err := New(Options{BaseURL: srv.URL + "/", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// results-api itself rejects a malformed digest with 400.
	if _, err := c.Lookup(context.Background(), map[string]time.Time{"sha256:nope": {}}); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("bad digest: err = %v, want HTTP 400", err)
	}
	srv.Close()
	if _, err := c.Lookup(context.Background(), map[string]time.Time{digest(1): {}}); err == nil {
		t.Error("lookup against a stopped API succeeded")
	}
	srv.Restart()
	if _, err := c.Lookup(context.Background(), map[string]time.Time{digest(1): {}}); err != nil {
		t.Errorf("after restart: %v", err)
	}
	for _, bad := range []string{"", "ftp://x", "results-api:8080"} {
		if _, err := New(Options{BaseURL: bad}); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}
