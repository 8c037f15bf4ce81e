package service_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// TestStatsSnapshot: /stats is served from a snapshot per view, with the
// two teams of TestExceptionCounts, their own tokens and real RBAC, and a
// snapshot age of an hour (so that only invalidation, never the clock,
// renews one):
//
//   - a second /stats in the same view runs no SQL statement;
//   - a report stored through this replica shows in the next /stats;
//   - a new exception in team-b changes bob's and carol's suppressed
//     counts, not alice's, and costs only the suppressed tally (one
//     statement), not the totals;
//   - an exception that expires by the exceptions' clock stops applying
//     at once, although its set did not change;
//
// and every answer equals that of a second replica on the same database
// whose snapshots live a nanosecond (uncached).
func TestStatsSnapshot(t *testing.T) {
	e := newExceptionEnv(t)
	start := time.Now()
	var offset atomic.Int64 // added to the exceptions' clock
	var stmts atomic.Int64
	var cfg service.Config
	e.configure = func(c *service.Config) {
		c.Exceptions.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		c.Exceptions.AuditInterval = time.Hour
		c.OnStatement = func(ctx context.Context) {
			if middleware.GetReqID(ctx) != "" { // a request's, not a background job's
				stmts.Add(1)
			}
		}
		c.StatsMaxAge = time.Hour
		cfg = *c
	}
	e.except("team-a", "parser", []string{"CVE-2024-0001", "CVE-2024-0002"}, nil)
	e.except("", "curl", []string{"CVE-2024-0005"}, func(s map[string]any) {
		s["expiresAt"] = start.Add(time.Hour).UTC().Format(time.RFC3339)
	})
	e.start()
	alice, bob, carol := e.c.token("alice"), e.c.token("bob"), e.c.token("carol")

	// The uncached replica: the same configuration and database, its own
	// exception watch (on the same clock), snapshots that expire at once.
	cfg.StatsMaxAge, cfg.OnStatement = time.Nanosecond, nil
	fresh, err := service.New(e.c.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(fresh.Handler)
	t.Cleanup(func() { fresh.Hub.Close(); hs.Close(); fresh.Close() })
	uncached := &readEnv{t: t, url: hs.URL}

	stats := func(env *readEnv, who, token string) (api.Stats, []byte) {
		t.Helper()
		code, b := env.get("/api/v1/stats", "Authorization", "Bearer "+token)
		if code != http.StatusOK {
			t.Fatalf("%s: GET /stats: %d %s", who, code, b)
		}
		var st api.Stats
		decode(t, b, &st)
		return st, b
	}
	// check gets who's stats twice: the second runs no statement and
	// answers the same, which is what the uncached replica answers. It
	// returns the statements of the first.
	check := func(step, who, token string) (api.Stats, int64) {
		t.Helper()
		stmts.Store(0)
		st, first := stats(e.readEnv, who, token)
		n := stmts.Load()
		stmts.Store(0)
		_, second := stats(e.readEnv, who, token)
		if again := stmts.Load(); again != 0 || !bytes.Equal(first, second) {
			t.Errorf("%s: %s's second /stats ran %d statements (want 0); same answer: %t", step, who, again, bytes.Equal(first, second))
		}
		if _, want := stats(uncached, who, token); !bytes.Equal(first, want) {
			t.Errorf("%s: %s's /stats\n%s\nuncached:\n%s", step, who, first, want)
		}
		return st, n
	}
	before := map[string]api.Stats{}
	for _, u := range []struct{ who, token string }{{"alice", alice}, {"bob", bob}, {"carol", carol}} {
		st, n := check("start", u.who, u.token)
		if n == 0 {
			t.Errorf("start: %s's first /stats ran no statement", u.who)
		}
		before[u.who] = st
	}
	if got := before["alice"].Suppressed.Findings; got != 3 {
		t.Fatalf("start: alice sees %d suppressed findings, want 3 (CVE-2024-0001, -0002, -0005)", got)
	}

	// A report stored through this replica: carol (cluster-wide) counts it
	// at once, an hour before her snapshot would have expired.
	srv := &apitest.Server{URL: e.url, Token: adminToken}
	srv.PutReport(t, bomtest.Digest(103), bomtest.BOM(bomtest.Vuln{ID: "CVE-2024-0006", Severity: "low", Package: "tar", Version: "1.0"}))
	if st, _ := check("stored", "carol", carol); st.Images != before["carol"].Images+1 || st.Findings != before["carol"].Findings+1 {
		t.Errorf("stored: carol sees %d images, %d findings; want %d, %d", st.Images, st.Findings,
			before["carol"].Images+1, before["carol"].Findings+1)
	}
	check("stored", "alice", alice) // the new image runs nowhere: their counts stay, from new totals
	check("stored", "bob", bob)

	// team-b's exception on CVE-2024-0001: once both replicas' watches
	// have it, bob's and carol's counts drop (shared runs in team-a and team-b,
	// now both excepted; bOnly in team-b), alice's stay.
	e.except("team-b", "parser-b", []string{"CVE-2024-0001"}, nil)
	deadline := time.Now().Add(time.Minute)
	for {
		st, _ := stats(e.readEnv, "bob", bob)
		un, _ := stats(uncached, "bob", bob)
		if st.Suppressed.Findings != before["bob"].Suppressed.Findings && un.Suppressed.Findings == st.Suppressed.Findings {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bob's /stats never showed team-b's new exception")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, _ := check("excepted", "bob", bob); st.Suppressed.Findings != 3 {
		t.Errorf("excepted: bob sees %d suppressed findings, want 3 (CVE-2024-0005, CVE-2024-0001 twice)", st.Suppressed.Findings)
	}
	st, n := check("excepted", "alice", alice)
	if st.Suppressed != before["alice"].Suppressed || st.Findings != before["alice"].Findings {
		t.Errorf("excepted: team-b's exception changed alice's counts: %+v, was %+v", st.Suppressed, before["alice"].Suppressed)
	}
	if n != 1 {
		t.Errorf("excepted: alice's /stats after a new exception ran %d statements; want 1 (the suppressed tally; totals kept)", n)
	}
	check("excepted", "carol", carol)

	// The cluster exception on CVE-2024-0005 expires by the exceptions'
	// clock: every view counts it active again at once.
	offset.Store(int64(2 * time.Hour))
	for _, u := range []struct{ who, token string }{{"alice", alice}, {"bob", bob}, {"carol", carol}} {
		if st, _ := check("expired", u.who, u.token); st.Suppressed.Counts.Critical != 0 {
			t.Errorf("expired: %s still sees %d suppressed critical findings (the expired CVE-2024-0005)", u.who, st.Suppressed.Counts.Critical)
		}
	}
}
