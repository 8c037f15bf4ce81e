package rematch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// skipMetrics counts what a pass reports about skipping.
type skipMetrics struct {
	nopMetrics
	skipped, mismatches atomic.Int64
}

func (m *skipMetrics) Skipped()      { m.skipped.Add(1) }
func (m *skipMetrics) SkipMismatch() { m.mismatches.Add(1) }

var db1Built = fixtureBuilt.Add(12 * time.Hour)

// skipWorld is a results-api holding the real fixtures and a small fleet,
// after a full pass against DB 1 (the fixtures' advisories, a new build)
// that recorded every report's footprint.
type skipWorld struct {
	srv     *resultsapitest.Server
	digests []string
	pass    *Pass
	metrics *skipMetrics
}

func newSkipWorld(t *testing.T, dir1 string, fleet [][]byte) *skipWorld {
	t.Helper()
	srv := resultsapitest.Start(t)
	w := &skipWorld{srv: srv, metrics: &skipMetrics{}}
	for _, r := range storeFixtures(t, srv) {
		w.digests = append(w.digests, r.digest)
	}
	for i, bom := range fleet {
		d := fmt.Sprintf("sha256:%064x", 0xf1ee7000+i)
		srv.PutReport(t, d, bom)
		w.digests = append(w.digests, d)
	}
	dir := t.TempDir()
	fps, err := OpenFootprints(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fps.Close() })
	w.pass = &Pass{Client: httpClient(t, srv), Dir: dir, PageSize: 4, Metrics: w.metrics,
		Skip: &Skip{Footprints: fps, Previous: func() (string, bool) { return "", false }}}
	res, err := w.pass.Run(context.Background(), openWith(t, dir1, Options{Footprints: true}))
	if err != nil || !res.Finished || res.Failed != 0 || res.Skipped != 0 {
		t.Fatalf("pass against DB 1: %+v, %v", res, err)
	}
	return w
}

// boms returns every report's stored BOM, normalized (normalize).
func (w *skipWorld) boms(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, d := range w.digests {
		resp, err := w.srv.Client().Get(w.srv.URL + "/api/v1/reports/" + d + "/bom")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET bom %s: HTTP %d, %v", d, resp.StatusCode, err)
		}
		out[d] = normalize(t, b, true)
	}
	return out
}

// TestPassSkipSameResults runs the DB 1 → DB 2 update pass twice, on two
// results-api holding the same reports: once matching every report, once
// skipping what the diff allows. Afterwards both hold the same reports
// byte for byte (per-run values aside), the same findings and the same DB
// build for every report, and the second pass skipped reports.
func TestPassSkipSameResults(t *testing.T) {
	dir1 := writeDB(t, advisory.Real, db1Built)
	dir2 := writeDB(t, changedAdvisories(), db2Built)
	// The fleet as scan Jobs stored it, with the fixtures' build: pass 1
	// matches it (a report already matched against DB 1 would not be, and
	// would have no footprint).
	old := openDB(t, writeDB(t, advisory.Real, fixtureBuilt))
	var fleet [][]byte
	for r := range 6 {
		out, _, err := old.Match(context.Background(), fleetSBOM(t, r, 30, 0.8))
		if err != nil {
			t.Fatal(err)
		}
		fleet = append(fleet, out)
	}

	full := newSkipWorld(t, dir1, fleet)
	full.pass.Skip.Disabled = true
	skip := newSkipWorld(t, dir1, fleet)
	skip.pass.Skip.Previous = func() (string, bool) { return dir1, true }
	skip.pass.Skip.Sample = -1 // check the first skippable report only

	var results []Result
	for _, w := range []*skipWorld{full, skip} {
		res, err := w.pass.Run(context.Background(), openWith(t, dir2, Options{Footprints: true}))
		if err != nil || !res.Finished || res.Failed != 0 {
			t.Fatalf("pass against DB 2: %+v, %v", res, err)
		}
		results = append(results, res)
	}
	t.Logf("full pass %+v; skipping pass %+v", results[0].Counts, results[1].Counts)
	if results[0].Skipped != 0 || results[1].Skipped < len(fleet)-1 || skip.metrics.skipped.Load() != int64(results[1].Skipped) {
		t.Errorf("skipped: full pass %d, skipping pass %d (metric %d), want 0 and ≥ %d",
			results[0].Skipped, results[1].Skipped, skip.metrics.skipped.Load(), len(fleet)-1)
	}
	if results[0].Changed != results[1].Changed || results[0].Unchanged != results[1].Unchanged {
		t.Errorf("counts differ: full %+v, skipping %+v", results[0].Counts, results[1].Counts)
	}
	if n := skip.metrics.mismatches.Load(); n != 0 {
		t.Errorf("%d skip mismatches", n)
	}
	a, b := full.boms(t), skip.boms(t)
	for _, d := range full.digests {
		if string(a[d]) != string(b[d]) {
			t.Errorf("%s: stored report differs between the full and the skipping pass", d)
		}
	}
	sa, sb := listed(t, full.pass.Client), listed(t, skip.pass.Client)
	if !slices.Equal(sa, sb) {
		t.Errorf("listed reports differ:\nfull %v\nskip %v", sa, sb)
	}
}

// TestPassSkipCheckCatchesMismatch breaks the diff on purpose (it names no
// change at all) and checks every skippable report: the pass counts the
// reports the DB change did change as mismatches, and uploads them, so
// results-api ends as after a full pass.
func TestPassSkipCheckCatchesMismatch(t *testing.T) {
	w, dir2 := newBrokenDiffWorld(t)
	res, err := w.pass.Run(context.Background(), openWith(t, dir2, Options{Footprints: true}))
	if err != nil || !res.Finished {
		t.Fatalf("pass: %+v, %v", res, err)
	}
	want := Counts{Total: 5, Changed: 3, Unchanged: 2}
	if res.Counts != want || w.metrics.mismatches.Load() != 3 {
		t.Fatalf("counts %+v, %d mismatches; want %+v and 3 (the reports DB 2 changes)", res.Counts, w.metrics.mismatches.Load(), want)
	}
}

// listed is every report's digest, DB build and findings fingerprint as
// results-api lists them.
func listed(t *testing.T, c Client) []string {
	t.Helper()
	var out []string
	cursor := ""
	for {
		p, err := c.ListReports(context.Background(), cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Items {
			out = append(out, r.Digest+" "+r.DBBuilt+" "+r.FindingsSHA256)
		}
		if cursor = p.NextCursor; cursor == "" {
			return out
		}
	}
}

// TestPassSkipCheckCapped samples every skippable report (Sample 1) under a
// cap of one: the pass matches the first skippable report and one sampled
// report in full, and skips the other three, of the five the broken diff
// lets it skip.
func TestPassSkipCheckCapped(t *testing.T) {
	w, dir2 := newBrokenDiffWorld(t)
	w.pass.Skip.SampleMax = 1
	res, err := w.pass.Run(context.Background(), openWith(t, dir2, Options{Footprints: true}))
	if err != nil || !res.Finished {
		t.Fatalf("pass: %+v, %v", res, err)
	}
	if res.Total != 5 || res.Skipped != 3 || w.metrics.skipped.Load() != 3 {
		t.Fatalf("pass %+v, %d skipped in metrics; want 5 reports, 3 skipped (2 checked: the first and one sampled)", res, w.metrics.skipped.Load())
	}
}

// newBrokenDiffWorld is a skipWorld after a full pass against DB 1, with a
// diff that names no change at all (so every report is skippable) and every
// skippable report sampled for the check; it returns DB 2's folder, whose
// advisories change three of the five reports.
func newBrokenDiffWorld(t *testing.T) (*skipWorld, string) {
	t.Helper()
	saved := keyedDiffs
	t.Cleanup(func() { keyedDiffs = saved })
	keyedDiffs = nil
	dir1 := writeDB(t, advisory.Real, db1Built)
	dir2 := writeDB(t, changedAdvisories(), db2Built)
	w := newSkipWorld(t, dir1, nil)
	w.pass.Skip.Previous = func() (string, bool) { return dir1, true }
	w.pass.Skip.Sample = 1
	return w, dir2
}
