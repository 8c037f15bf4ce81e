package store_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// TestRematchAddingKEVIsOneChange: a re-match with the same finding keys
// that lists one of them in CISA KEV records exactly one change, with that
// finding as KEV-added (its risk data read back from the store), and one
// findings.changed event; the same re-match again records and announces
// nothing, and neither does one that only changes an EPSS score.
func TestRematchAddingKEVIsOneChange(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, _ := openDSN(t, dsn, changeAnnouncer{})
	d := digest(1)
	a, b := finding("CVE-A", report.Critical, "musl", ""), finding("CVE-B", report.High, "zlib", "1.3")
	put(t, st, newReport(1, "reg/app@"+d, t0, `{"v":1}`, a, b))

	epss := 0.42
	listed := b
	listed.Risk = report.Risk{KEV: true, EPSS: &epss, Score: 79.5}
	rematch := func(raw string, fs ...report.Finding) store.PutResult {
		r := newReport(1, "", t0.Add(time.Hour), raw, fs...)
		r.Cause = report.CauseRematch
		return put(t, st, r)
	}
	res := rematch(`{"v":2}`, a, listed)
	ch := res.Change
	if ch == nil || ch.Cause != report.CauseRematch || ch.KEVAddedCount != 1 || len(ch.New) != 0 || len(ch.Resolved) != 0 {
		t.Fatalf("rematch that lists CVE-B in KEV: change %+v", ch)
	}
	page := changes(t, st, store.ChangeQuery{Digest: d})
	if len(page.Items) != 2 {
		t.Fatalf("%d changes, want baseline and the KEV listing", len(page.Items))
	}
	got := page.Items[0]
	if got.ID != ch.ID || got.KEVAddedCount != 1 || !slices.Equal(keys(got.KEVAdded), []string{"CVE-B/zlib"}) || got.Empty() {
		t.Fatalf("stored change %+v", got)
	}
	k := got.KEVAdded[0]
	if !k.Risk.KEV || k.Risk.EPSS == nil || *k.Risk.EPSS != epss || k.Risk.Score != 79.5 || k.Severity != report.High ||
		!slices.Equal(k.FixedIn, []string{"1.3"}) {
		t.Errorf("KEV-added finding read back as %+v (risk %+v)", k, k.Risk)
	}
	// The fleet feed's severity filter sees a KEV-added high, and not at
	// critical (the baseline's counts match both).
	if p := changes(t, st, store.ChangeQuery{MinSeverity: ptr(report.High)}); len(p.Items) != 2 || len(p.Items[0].KEVAdded) != 1 {
		t.Errorf("feed at minSeverity high: %+v", p.Items)
	}
	if p := changes(t, st, store.ChangeQuery{MinSeverity: ptr(report.Critical)}); len(p.Items) != 1 || !p.Items[0].Baseline {
		t.Errorf("feed at minSeverity critical: %+v", p.Items)
	}

	// The same re-match again (other bytes, same findings), and one that
	// only moves an EPSS score: the finding is KEV-listed already.
	if res := rematch(`{"v":3}`, a, listed); res.Change != nil {
		t.Errorf("identical rematch recorded %+v", res.Change)
	}
	moved := listed
	moved.Risk.EPSS = ptr(0.5)
	if res := rematch(`{"v":4}`, a, moved); res.Change != nil {
		t.Errorf("rematch with another EPSS score recorded %+v", res.Change)
	}
	if p := changes(t, st, store.ChangeQuery{Digest: d}); len(p.Items) != 2 {
		t.Errorf("%d changes after the repeats, want 2", len(p.Items))
	}

	var kevEvents []map[string]any
	for _, row := range outbox(t, dsn) {
		if row.Subject != "crowsnest.findings.changed" {
			continue
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(row.Payload), &p); err != nil {
			t.Fatal(err)
		}
		if p["baseline"] != true {
			kevEvents = append(kevEvents, p)
		}
	}
	if len(kevEvents) != 1 || kevEvents[0]["kevAdded"] != 1.0 {
		t.Errorf("findings.changed events after the baseline: %v, want one with one KEV-added finding", kevEvents)
	}
}

// TestKEVUnknownBeforeRiskWasParsed: a report stored before findings
// carried risk has kev = false on every row, which says nothing: a
// re-match that lists a finding in KEV records no KEV-added change.
func TestKEVUnknownBeforeRiskWasParsed(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, _ := openDSN(t, dsn, changeAnnouncer{})
	b := finding("CVE-B", report.High, "zlib", "")
	put(t, st, newReport(1, "", t0, `{"v":1}`, b))
	if _, err := connect(t, dsn).Exec(ctx(t), `UPDATE reports SET risk_parsed = false`); err != nil {
		t.Fatal(err)
	}
	b.Risk = report.Risk{KEV: true, Score: 80}
	r := newReport(1, "", t0.Add(time.Hour), `{"v":2}`, b)
	r.Cause = report.CauseRematch
	if res := put(t, st, r); res.Change != nil {
		t.Errorf("rematch of an unparsed report recorded %+v", res.Change)
	}
}

func ptr[T any](v T) *T { return &v }
