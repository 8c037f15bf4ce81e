package rematch

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// realFixtures are the fixtures stored in results-api for the pass tests;
// the changed DB changes alpine's, clean's (both Alpine images with zlib)
// and node's findings, not debian's or gobinary's.
var realFixtures = []string{"alpine", "debian", "gobinary", "node", "clean"}

var changedByDB2 = map[string]bool{"alpine": true, "clean": true, "node": true}

var db2Built = fixtureBuilt.Add(24 * time.Hour)

// countingClient counts, per digest, the report uploads and DB records a
// pass got through to results-api and the BOM downloads it started. It can
// stop the pass right after the nth upload, DB record (batch) or BOM
// download returned to the pass, before the pass saved it: the worst
// moment for a kill. A write the stop cut off (the pass saw it fail with
// its context ended) may still have landed — results-api cannot always
// tell either: its commit may finish as the request is cancelled — so
// after a stop, settle counts each such write that did land.
type countingClient struct {
	Client
	srv             *resultsapitest.Server
	mu              sync.Mutex
	puts, dbs, gets map[string]int
	cutPuts, cutDBs map[string]int // writes cut off by the stop, not settled yet
	cancel          context.CancelFunc
	cancelAt        int // cancel after this many uploads; 0 = never
	cancelAtBatch   int // cancel after this many DB records (batches); 0 = never
	cancelAtGet     int // cancel after this many BOM downloads; 0 = never
	putsSoFar       int
	batches         int
	getsSoFar       int
}

func newCounting(t testing.TB, srv *resultsapitest.Server) *countingClient {
	return &countingClient{Client: httpClient(t, srv), srv: srv, puts: map[string]int{}, dbs: map[string]int{}, gets: map[string]int{},
		cutPuts: map[string]int{}, cutDBs: map[string]int{}}
}

func (c *countingClient) PutReport(ctx context.Context, ref ReportRef, bom []byte) error {
	err := c.Client.PutReport(ctx, ref, bom)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.puts[ref.Digest]++
		c.putsSoFar++
		if c.cancelAt > 0 && c.putsSoFar == c.cancelAt {
			c.cancel()
		}
	case ctx.Err() != nil:
		c.cutPuts[ref.Digest]++
	}
	return err
}

func (c *countingClient) PutVulnDBs(ctx context.Context, digests []string, db DB) ([]string, error) {
	missing, err := c.Client.PutVulnDBs(ctx, digests, db)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.batches++
		for _, d := range digests {
			c.dbs[d]++
		}
		if c.cancelAtBatch > 0 && c.batches == c.cancelAtBatch {
			c.cancel()
		}
	case ctx.Err() != nil:
		for _, d := range digests {
			c.cutDBs[d]++
		}
	}
	return missing, err
}

func (c *countingClient) GetBOM(ctx context.Context, digest string) ([]byte, error) {
	b, err := c.Client.GetBOM(ctx, digest)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gets[digest]++
	c.getsSoFar++
	if c.cancelAtGet > 0 && c.getsSoFar == c.cancelAtGet {
		c.cancel()
	}
	return b, err
}

// settle runs after a stopped pass returned. It lets results-api finish
// what the pass sent — the API is closed (its connections cut; Close
// waits for every handler they started) and started again on the same
// database, as a matcher restarted after a kill would find it — then
// counts each write the stop cut off whose report is now matched against
// db2Built: that write landed (no other write of the test sets that
// build). A cut-off write of a report that another write made current is
// counted too: the pass sent that report twice.
func (c *countingClient) settle(t *testing.T) {
	t.Helper()
	c.srv.Restart()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cut := range []struct {
		what     string
		from, to map[string]int
	}{{"upload", c.cutPuts, c.puts}, {"DB record", c.cutDBs, c.dbs}} {
		for d, n := range cut.from {
			var s summary
			getJSON(t, c.srv, "/api/v1/reports/"+d+"?findingsLimit=1", &s)
			if built, err := time.Parse(time.RFC3339, s.DBBuilt); err == nil && built.Equal(db2Built) {
				t.Logf("%s of %s: cut off by the stop, landed", cut.what, d)
				cut.to[d] += n
			}
			delete(cut.from, d)
		}
	}
}

type stored struct {
	digest string
	name   string
}

// storeFixtures uploads the real fixtures to srv, as scan Jobs would.
func storeFixtures(t *testing.T, srv *resultsapitest.Server) []stored {
	t.Helper()
	var out []stored
	for _, f := range fixtures(t) {
		for _, n := range realFixtures {
			if f.Name == n {
				srv.PutReport(t, f.Digest, fixtureBOM(t, n))
				out = append(out, stored{digest: f.Digest, name: n})
			}
		}
	}
	if len(out) != len(realFixtures) {
		t.Fatalf("stored %d fixtures, want %d", len(out), len(realFixtures))
	}
	return out
}

func httpClient(t testing.TB, srv *resultsapitest.Server) *HTTPClient {
	t.Helper()
	tok := filepath.Join(t.TempDir(), "token")
	// resultsapitest's write token is the admin scope: its auth cannot express the
	// rematch scope (a TokenReview of the matcher's service account).
	if err := os.WriteFile(tok, []byte(srv.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &HTTPClient{BaseURL: srv.URL, TokenFile: tok, BackoffBase: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond}
}

type summary struct {
	Digest    string    `json:"digest"`
	StoredAt  time.Time `json:"storedAt"`
	DBBuilt   string    `json:"dbBuilt"`
	DBSchema  string    `json:"dbSchema"`
	Findings  int       `json:"findingCount"`
	MatchedAt time.Time `json:"matchedAt"`
}

func getJSON(t *testing.T, srv *resultsapitest.Server, path string, v any) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

type changeList struct {
	Items []struct {
		Cause    string `json:"cause"`
		DBBuilt  string `json:"dbBuilt"`
		Baseline bool   `json:"baseline"`
		New      []struct {
			ID string `json:"id"`
		} `json:"new"`
		Resolved []struct {
			ID string `json:"id"`
		} `json:"resolved"`
	} `json:"items"`
}

// state is what results-api holds for each stored fixture.
func state(t *testing.T, srv *resultsapitest.Server, reps []stored) map[string]summary {
	t.Helper()
	out := map[string]summary{}
	for _, r := range reps {
		var s summary
		getJSON(t, srv, "/api/v1/reports/"+r.digest+"?findingsLimit=1", &s)
		out[r.name] = s
	}
	return out
}

func changes(t *testing.T, srv *resultsapitest.Server, digest string) changeList {
	t.Helper()
	var cl changeList
	getJSON(t, srv, "/api/v1/reports/"+digest+"/changes", &cl)
	return cl
}

// checkAfterPass checks results-api's state after a finished pass with DB 2:
// the changed reports were replaced once (one non-baseline change each,
// with DB 2's build), the others kept their report and got DB 2's record.
func checkAfterPass(t *testing.T, srv *resultsapitest.Server, reps []stored, before map[string]summary, m *Matcher) {
	t.Helper()
	after := state(t, srv, reps)
	for _, r := range reps {
		b, a := before[r.name], after[r.name]
		if got, err := time.Parse(time.RFC3339, a.DBBuilt); err != nil || !got.Equal(db2Built) || a.DBSchema != m.DB().Schema {
			t.Errorf("%s: dbBuilt %q schema %q, want %s %s", r.name, a.DBBuilt, a.DBSchema, db2Built, m.DB().Schema)
		}
		var later []string
		for _, c := range changes(t, srv, r.digest).Items {
			if !c.Baseline {
				later = append(later, c.Cause)
			}
		}
		if changedByDB2[r.name] {
			if !a.StoredAt.After(b.StoredAt) {
				t.Errorf("%s: not re-uploaded (storedAt %s → %s)", r.name, b.StoredAt, a.StoredAt)
			}
			if len(later) != 1 {
				t.Errorf("%s: %d change records after the baseline (%v), want 1", r.name, len(later), later)
			}
		} else {
			if !a.StoredAt.Equal(b.StoredAt) || a.Findings != b.Findings {
				t.Errorf("%s: report replaced (storedAt %s → %s)", r.name, b.StoredAt, a.StoredAt)
			}
			if len(later) != 0 {
				t.Errorf("%s: change records %v, want none", r.name, later)
			}
		}
	}
}

func TestPassAgainstResultsAPI(t *testing.T) {
	srv := resultsapitest.Start(t)
	reps := storeFixtures(t, srv)
	before := state(t, srv, reps)
	m := openDB(t, writeDB(t, changedAdvisories(), db2Built))
	cc := newCounting(t, srv)
	dir := t.TempDir()
	pass := &Pass{Client: cc, Dir: dir, PageSize: 2}

	res, err := pass.Run(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{Total: 5, Changed: 3, Unchanged: 2}
	if res.Counts != want || !res.Finished || res.Repeated || !res.DB.Built.Equal(db2Built) {
		t.Fatalf("result %+v, want counts %+v, finished", res, want)
	}
	for _, r := range reps {
		wantPuts, wantDBs := 0, 1
		if changedByDB2[r.name] {
			wantPuts, wantDBs = 1, 0
		}
		if cc.puts[r.digest] != wantPuts || cc.dbs[r.digest] != wantDBs {
			t.Errorf("%s: %d uploads, %d DB records; want %d, %d", r.name, cc.puts[r.digest], cc.dbs[r.digest], wantPuts, wantDBs)
		}
	}
	checkAfterPass(t, srv, reps, before, m)

	// alpine's change lists exactly the keys the DB change made.
	for _, r := range reps {
		if r.name != "alpine" {
			continue
		}
		cl := changes(t, srv, r.digest)
		c := cl.Items[0]
		if len(c.New) != 1 || c.New[0].ID != "CVE-2023-45853" || len(c.Resolved) != 4 {
			t.Errorf("alpine change: new %v, resolved %v", c.New, c.Resolved)
		}
	}

	// Running again for the same DB does nothing.
	again, err := pass.Run(context.Background(), m)
	if err != nil || !again.Repeated || again.Counts != want {
		t.Fatalf("second run: %+v, %v", again, err)
	}
}

// TestPassResumesAfterKill stops a pass right after its first upload
// returned (before the pass recorded it), then runs it again from the
// progress file: the final state is that of an uninterrupted pass, no
// report was uploaded twice and the counts are exact.
func TestPassResumesAfterKill(t *testing.T) {
	for _, stopAfter := range []int{1, 2, 3} {
		srv := resultsapitest.Start(t)
		reps := storeFixtures(t, srv)
		before := state(t, srv, reps)
		m := openDB(t, writeDB(t, changedAdvisories(), db2Built))
		cc := newCounting(t, srv)
		dir := t.TempDir()

		ctx, cancel := context.WithCancel(context.Background())
		cc.cancel, cc.cancelAt = cancel, stopAfter
		res, err := (&Pass{Client: cc, Dir: dir, PageSize: 2}).Run(ctx, m)
		cancel()
		cc.settle(t)
		if err == nil || res.Finished {
			t.Fatalf("stop after %d: interrupted pass returned %+v, %v", stopAfter, res, err)
		}
		if _, err := os.Stat(filepath.Join(dir, ProgressFile)); err != nil {
			t.Fatal(err)
		}

		cc.cancelAt = 0
		res, err = (&Pass{Client: cc, Dir: dir, PageSize: 2}).Run(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		if want := (Counts{Total: 5, Changed: 3, Unchanged: 2}); res.Counts != want || !res.Finished {
			t.Errorf("stop after %d: resumed result %+v, want %+v", stopAfter, res.Counts, want)
		}
		for _, r := range reps {
			if cc.puts[r.digest] > 1 {
				t.Errorf("stop after %d: %s uploaded %d times", stopAfter, r.name, cc.puts[r.digest])
			}
		}
		checkAfterPass(t, srv, reps, before, m)
	}
}

// TestPassCountsRejectedReports: a report results-api refuses (4xx) is
// counted failed and the pass goes on.
func TestPassCountsRejectedReports(t *testing.T) {
	srv := resultsapitest.Start(t)
	reps := storeFixtures(t, srv)
	m := openDB(t, writeDB(t, changedAdvisories(), db2Built))
	c := httpClient(t, srv)
	if err := os.WriteFile(c.TokenFile, []byte("not-the-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := (&Pass{Client: c, Dir: t.TempDir()}).Run(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{Total: len(reps), Failed: len(reps)}); res.Counts != want || !res.Finished {
		t.Fatalf("result %+v, want %+v", res.Counts, want)
	}
}

func TestPassIdenticalDBChangesNothing(t *testing.T) {
	srv := resultsapitest.Start(t)
	reps := storeFixtures(t, srv)
	before := state(t, srv, reps)
	m := openDB(t, writeDB(t, advisory.Real, db2Built))
	cc := newCounting(t, srv)
	res, err := (&Pass{Client: cc, Dir: t.TempDir()}).Run(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{Total: 5, Unchanged: 5}); res.Counts != want {
		t.Fatalf("result %+v, want %+v", res.Counts, want)
	}
	after := state(t, srv, reps)
	for _, r := range reps {
		if cc.puts[r.digest] != 0 || !after[r.name].StoredAt.Equal(before[r.name].StoredAt) {
			t.Errorf("%s re-uploaded", r.name)
		}
	}
}
