package events_test

import (
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// TestKEVListingPublishedOnce: a report with the same findings whose
// Grype ratings now list one in CISA KEV reaches the stream as exactly one
// findings.changed, with that finding in kevAdded and its risk data; a
// later report that only moves an EPSS score publishes nothing more.
func TestKEVListingPublishedOnce(t *testing.T) {
	_, url := natstest.StartT(t)
	createStream(t, url)
	srv := apitest.Start(t, apitest.WithNATS(url))
	ctx := testCtx(t, 60*time.Second)
	_, js := natsConn(t, url)

	d := bomtest.Digest(9)
	a := bomtest.Vuln{ID: "CVE-2026-0001", Severity: "critical", Package: "musl", Version: "1", EPSS: 0.02}
	b := bomtest.Vuln{ID: "CVE-2025-7777", Severity: "high", Package: "zlib", Version: "1", Fix: "2", EPSS: 0.3}
	listed := b
	listed.KEV = true
	moved := listed
	moved.EPSS = 0.4
	for i, bom := range [][]byte{bomtest.BOM(a, b), bomtest.BOM(a, listed), bomtest.BOM(a, moved)} {
		if code := put(t, srv, d, bom); code != 201 && code != 200 {
			t.Fatalf("put %d: %d", i, code)
		}
	}
	// The KEV listing leaves the counts, and so report.stored's id, as
	// they were: JetStream keeps one report.stored of d. The relay keeps
	// each digest's events in order but not one digest's against
	// another's, so wait for d's two, then for a report of another digest
	// stored last, and count again: no third. (The store's tests count the
	// outbox itself: the EPSS-only re-match writes no findings.changed.)
	waitFor(t, func() bool { evs, _ := changedEvents(ctx, t, js, d); return len(evs) >= 2 })
	end := bomtest.Digest(10)
	if code := put(t, srv, end, bomtest.BOM()); code != 201 {
		t.Fatalf("put %s: %d", end, code)
	}
	waitFor(t, func() bool { return storedCount(ctx, t, js, end) == 1 })
	evs, _ := changedEvents(ctx, t, js, d)
	if len(evs) != 2 {
		t.Fatalf("%d findings.changed events, want 2 (baseline, KEV listing)", len(evs))
	}
	var p eventsv1.FindingsChanged
	if err := evs[1].Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p.Baseline || p.New != nil || p.Resolved != nil || p.KEVAddedCount != 1 || len(p.KEVAdded) != 1 || p.Truncated {
		t.Fatalf("KEV change %+v", p)
	}
	k := p.KEVAdded[0]
	if k.ID != b.ID || k.Severity != "high" || k.Package.Name != "zlib" || !k.KEV || k.EPSS == nil || *k.EPSS != 0.3 ||
		k.Risk == nil || *k.Risk <= 0 || len(k.FixedIn) != 1 {
		t.Errorf("KEV-added finding %+v", k)
	}
}
