package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// changes lists a digest's changes ("" for the feed) with a query.
func changes(t *testing.T, st *store.Store, q store.ChangeQuery) *store.ChangePage {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 50
	}
	if q.FindingsLimit == 0 {
		q.FindingsLimit = 100
	}
	page, err := st.ListChanges(ctx(t), q)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

func keys(fs []report.ChangedFinding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID+"/"+f.Name)
	}
	return out
}

// findingRows returns the physical identity (ctid, xmin) of a digest's
// findings rows: unchanged only if no row was rewritten.
func findingRows(t *testing.T, dsn, digest string) []string {
	t.Helper()
	rows, err := connect(t, dsn).Query(ctx(t), `SELECT ctid::text || '/' || xmin::text FROM findings WHERE digest = $1 ORDER BY id`, digest)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestChangesRecordedWithTheirCause walks one digest through a baseline, a
// rescan with new and resolved findings, a rematch that changes only a
// severity (no change) and a rematch that resolves a finding.
func TestChangesRecordedWithTheirCause(t *testing.T) {
	st, _ := open(t)
	d := digest(1)
	a, b, c := finding("CVE-A", report.Critical, "musl", "1.2.6"), finding("CVE-B", report.High, "zlib", ""), finding("CVE-C", report.Low, "curl", "")

	res := put(t, st, newReport(1, "reg/app@"+d, t0, `{"v":1}`, a, b))
	if !res.Created || res.Summary.Cause != report.CauseScan || res.Change == nil || !res.Change.Baseline {
		t.Fatalf("first report: %+v", res)
	}
	if res.Change.NewCounts != (report.Counts{Critical: 1, High: 1}) || len(res.Change.New) != 0 || res.Change.ID == 0 {
		t.Errorf("baseline %+v, want counts only", res.Change)
	}

	res = put(t, st, newReport(1, "", t0.Add(time.Hour), `{"v":2}`, b, c))
	ch := res.Change
	if res.Summary.Cause != report.CauseRescan || ch == nil || ch.Baseline || ch.Cause != report.CauseRescan {
		t.Fatalf("rescan: %+v", res)
	}
	if !slices.Equal(keys(ch.New), []string{"CVE-C/curl"}) || !slices.Equal(keys(ch.Resolved), []string{"CVE-A/musl"}) ||
		ch.NewCounts != (report.Counts{Low: 1}) || ch.ResolvedCounts != (report.Counts{Critical: 1}) || ch.Image != "reg/app@"+d {
		t.Errorf("rescan change %+v", ch)
	}

	// The same keys, one severity raised: the findings are rewritten, no
	// change is recorded.
	rematch := newReport(1, "", t0.Add(2*time.Hour), `{"v":3}`, b, finding("CVE-C", report.Medium, "curl", ""))
	rematch.Cause = report.CauseRematch
	res = put(t, st, rematch)
	if res.Change != nil || res.FindingsKept || res.Summary.Cause != report.CauseRematch {
		t.Fatalf("severity-only rematch: change %+v kept %v cause %s", res.Change, res.FindingsKept, res.Summary.Cause)
	}
	if sum, _ := st.GetSummary(ctx(t), d); sum.Counts != (report.Counts{High: 1, Medium: 1}) || sum.Cause != report.CauseRematch {
		t.Errorf("summary after the rematch %+v", sum)
	}

	rematch = newReport(1, "", t0.Add(3*time.Hour), `{"v":4}`, b)
	rematch.Cause = report.CauseRematch
	rematch.DBBuilt = "2026-11-02T00:00:00Z"
	res = put(t, st, rematch)
	if res.Change == nil || res.Change.Cause != report.CauseRematch || res.Change.DBBuilt != "2026-11-02T00:00:00Z" ||
		!slices.Equal(keys(res.Change.Resolved), []string{"CVE-C/curl"}) || res.Change.Resolved[0].Severity != report.Medium {
		t.Fatalf("rematch change %+v", res.Change)
	}

	page := changes(t, st, store.ChangeQuery{Digest: d})
	var causes []report.Cause
	for _, c := range page.Items {
		causes = append(causes, c.Cause)
	}
	if !slices.Equal(causes, []report.Cause{report.CauseRematch, report.CauseRescan, report.CauseScan}) || page.NextCursor != "" {
		t.Fatalf("history causes %v (next %q)", causes, page.NextCursor)
	}
	if got := page.Items[1]; !slices.Equal(keys(got.New), []string{"CVE-C/curl"}) || !slices.Equal(got.Resolved[0].FixedIn, []string{"1.2.6"}) {
		t.Errorf("stored rescan change %+v", got)
	}
}

// TestUnchangedFindingsKeepTheirRows: a new BOM with the same findings
// (the matcher's rematch with an unchanged result) rewrites the summary
// and the BOM, not one findings row, and records no change.
func TestUnchangedFindingsKeepTheirRows(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, _ := openDSN(t, dsn, nil)
	d := digest(1)
	fs := []report.Finding{finding("CVE-A", report.Critical, "musl", "1.2.6"), finding("CVE-B", report.High, "zlib", "")}
	put(t, st, newReport(1, "reg/app@"+d, t0, `{"v":1}`, fs...))
	before := findingRows(t, dsn, d)

	r := newReport(1, "", t0.Add(time.Hour), `{"v":2}`, fs[1], fs[0]) // another order, same set
	r.Cause, r.DBBuilt = report.CauseRematch, "2026-11-05T00:00:00Z"
	res := put(t, st, r)
	if !res.FindingsKept || res.Change != nil || res.Unchanged {
		t.Fatalf("put %+v, want the findings kept and no change", res)
	}
	if after := findingRows(t, dsn, d); !slices.Equal(before, after) || len(after) != 2 {
		t.Errorf("findings rows rewritten: %v, then %v", before, after)
	}
	if b, err := readBOM(st, d); err != nil || string(b) != `{"v":2}` {
		t.Errorf("bom %q, %v", b, err)
	}
	sum, err := st.GetSummary(ctx(t), d)
	if err != nil || sum.DBBuilt != "2026-11-05T00:00:00Z" || !sum.MatchedAt.Equal(r.StoredAt) || sum.Cause != report.CauseRematch {
		t.Errorf("summary %+v, %v", sum, err)
	}

	// A changed fix is not a change of keys, but the rows must follow it.
	fixed := finding("CVE-B", report.High, "zlib", "1.3.2")
	res = put(t, st, newReport(1, "", t0.Add(2*time.Hour), `{"v":3}`, fs[0], fixed))
	if res.FindingsKept || res.Change != nil {
		t.Fatalf("put with a new fix %+v, want the rows rewritten and no change", res)
	}
	page, err := st.GetReport(ctx(t), d, store.FindingQuery{Limit: 10})
	if err != nil || len(page.FindingList) != 2 || !slices.Equal(page.FindingList[1].FixedIn, []string{"1.3.2"}) {
		t.Errorf("findings after the fix: %+v, %v", page, err)
	}
}

// TestChangeFailureRollsBackTheReport: when the change cannot be written,
// the report is not replaced either.
func TestChangeFailureRollsBackTheReport(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, _ := openDSN(t, dsn, nil)
	d := digest(1)
	put(t, st, newReport(1, "reg/app@"+d, t0, `{"v":1}`, finding("CVE-A", report.High, "musl", "")))
	conn := connect(t, dsn)
	if _, err := conn.Exec(ctx(t), `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'change refused'; END $$;
CREATE TRIGGER refuse BEFORE INSERT ON report_change_findings FOR EACH ROW EXECUTE FUNCTION refuse();`); err != nil {
		t.Fatal(err)
	}
	_, err := st.PutReport(ctx(t), newReport(1, "", t0.Add(time.Hour), `{"v":2}`, finding("CVE-B", report.Critical, "zlib", "")))
	if err == nil {
		t.Fatal("put succeeded without its change")
	}
	sum, err := st.GetSummary(ctx(t), d)
	if err != nil || sum.Counts != (report.Counts{High: 1}) || sum.Cause != report.CauseScan {
		t.Errorf("report after the failed put: %+v, %v", sum, err)
	}
	if b, _ := readBOM(st, d); string(b) != `{"v":1}` {
		t.Errorf("bom %s, want the first", b)
	}
	if page := changes(t, st, store.ChangeQuery{Digest: d}); len(page.Items) != 1 || !page.Items[0].Baseline {
		t.Errorf("changes %+v, want the baseline only", page.Items)
	}
}

// TestChangesFeed: filters, pagination, the findings cap and the history
// kept after a delete.
func TestChangesFeed(t *testing.T) {
	st, _ := open(t)
	// Digest 1: baseline (high) then +critical; digest 2: baseline (clean)
	// then +low; digest 3: baseline (medium) then a rematch resolving it.
	put(t, st, newReport(1, "", t0, `{"v":1}`, finding("CVE-1", report.High, "a", "")))
	put(t, st, newReport(2, "", t0.Add(time.Minute), `{"v":1}`))
	put(t, st, newReport(3, "", t0.Add(2*time.Minute), `{"v":1}`, finding("CVE-3", report.Medium, "c", "")))
	put(t, st, newReport(1, "", t0.Add(time.Hour), `{"v":2}`, finding("CVE-1", report.High, "a", ""), finding("CVE-9", report.Critical, "z", "")))
	put(t, st, newReport(2, "", t0.Add(2*time.Hour), `{"v":2}`, finding("CVE-2", report.Low, "b", "")))
	rm := newReport(3, "", t0.Add(3*time.Hour), `{"v":2}`)
	rm.Cause = report.CauseRematch
	put(t, st, rm)

	label := func(p *store.ChangePage) []string {
		var out []string
		for _, c := range p.Items {
			out = append(out, fmt.Sprintf("%s:%s:%d+%d-", c.Digest[len(c.Digest)-1:], c.Cause, len(c.New), len(c.Resolved)))
		}
		return out
	}
	all := changes(t, st, store.ChangeQuery{})
	want := []string{"3:rematch:0+1-", "2:rescan:1+0-", "1:rescan:1+0-", "3:scan:0+0-", "2:scan:0+0-", "1:scan:0+0-"}
	if got := label(all); !slices.Equal(got, want) {
		t.Fatalf("feed %v, want %v", got, want)
	}
	// Pages of two follow one another without a gap or a repeat.
	var walked []string
	q := store.ChangeQuery{Limit: 2}
	for {
		p := changes(t, st, q)
		walked = append(walked, label(p)...)
		if p.NextCursor == "" {
			break
		}
		q.Cursor = p.NextCursor
	}
	if !slices.Equal(walked, want) {
		t.Errorf("paged feed %v, want %v", walked, want)
	}
	high := report.High
	if got := label(changes(t, st, store.ChangeQuery{MinSeverity: &high})); !slices.Equal(got, []string{"1:rescan:1+0-", "1:scan:0+0-"}) {
		t.Errorf("minSeverity high: %v", got)
	}
	unknown := report.Unknown // any finding at all: not the clean baseline
	if got := label(changes(t, st, store.ChangeQuery{MinSeverity: &unknown})); len(got) != 5 || slices.Contains(got, "2:scan:0+0-") {
		t.Errorf("minSeverity unknown: %v", got)
	}
	if got := label(changes(t, st, store.ChangeQuery{Cause: report.CauseRematch})); !slices.Equal(got, []string{"3:rematch:0+1-"}) {
		t.Errorf("cause rematch: %v", got)
	}
	if got := label(changes(t, st, store.ChangeQuery{Since: t0.Add(90 * time.Minute)})); !slices.Equal(got, want[:2]) {
		t.Errorf("since: %v", got)
	}
	// The listed findings follow minSeverity too.
	critical := report.Critical
	p := changes(t, st, store.ChangeQuery{Digest: digest(1), MinSeverity: &critical})
	if len(p.Items) != 1 || !slices.Equal(keys(p.Items[0].New), []string{"CVE-9/z"}) {
		t.Errorf("digest 1 at critical: %+v", p.Items)
	}
	if _, err := st.ListChanges(ctx(t), store.ChangeQuery{Limit: 5, Cursor: "not-a-cursor"}); !errors.Is(err, store.ErrBadCursor) {
		t.Errorf("bad cursor: %v", err)
	}

	// The history outlives the report.
	if _, err := st.DeleteReport(ctx(t), digest(2)); err != nil {
		t.Fatal(err)
	}
	if got := label(changes(t, st, store.ChangeQuery{Digest: digest(2)})); !slices.Equal(got, []string{"2:rescan:1+0-", "2:scan:0+0-"}) {
		t.Errorf("history after delete: %v", got)
	}
}

func TestChangeFindingsCapped(t *testing.T) {
	st, _ := open(t)
	put(t, st, newReport(1, "", t0, `{"v":1}`))
	var fs []report.Finding
	for i := range 30 {
		fs = append(fs, finding(fmt.Sprintf("CVE-%03d", i), report.Severity(i%6), "p", ""))
	}
	res := put(t, st, newReport(1, "", t0.Add(time.Hour), `{"v":2}`, fs...))
	if len(res.Change.New) != 30 {
		t.Fatalf("recorded %d new findings", len(res.Change.New))
	}
	p := changes(t, st, store.ChangeQuery{Digest: digest(1), Limit: 1, FindingsLimit: 10})
	ch := p.Items[0]
	if len(ch.New) != 10 || !ch.Truncated || ch.New[0].Severity != report.Critical || ch.New[9].Severity != report.High {
		t.Errorf("capped change: %d new, truncated %v, first %+v", len(ch.New), ch.Truncated, ch.New[0])
	}
	if p := changes(t, st, store.ChangeQuery{Digest: digest(1), Limit: 1, FindingsLimit: 30}); p.Items[0].Truncated {
		t.Error("30 of 30 listed, but truncated")
	}
}

func TestRecordVulnDB(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, _ := openDSN(t, dsn, nil)
	d := digest(1)
	rec := store.VulnDBRecord{Built: "2026-11-20T00:00:00Z", Schema: "v6.1.0", MatchedAt: t0.Add(5 * time.Hour)}
	if err := st.RecordVulnDB(ctx(t), d, rec); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("record for a digest without a report: %v", err)
	}
	put(t, st, newReport(1, "reg/app@"+d, t0, `{"v":1}`, finding("CVE-A", report.High, "musl", "")))
	before := findingRows(t, dsn, d)
	if err := st.RecordVulnDB(ctx(t), d, rec); err != nil {
		t.Fatal(err)
	}
	sum, err := st.GetSummary(ctx(t), d)
	if err != nil || sum.DBBuilt != rec.Built || sum.DBSchema != rec.Schema || !sum.MatchedAt.Equal(rec.MatchedAt) ||
		!sum.StoredAt.Equal(t0.Add(time.Minute)) || sum.Findings != 1 {
		t.Errorf("summary %+v, %v", sum, err)
	}
	if after := findingRows(t, dsn, d); !slices.Equal(before, after) {
		t.Errorf("findings rewritten: %v, then %v", before, after)
	}
	if b, _ := readBOM(st, d); string(b) != `{"v":1}` {
		t.Errorf("bom %s", b)
	}
	if p := changes(t, st, store.ChangeQuery{Digest: d}); len(p.Items) != 1 {
		t.Errorf("%d changes, want the baseline only", len(p.Items))
	}
}

// TestChangeEventFollowsItsReport: with a ChangeAnnouncer, a change's
// event is written after the report's own, in its transaction; a put
// without a change writes none.
func TestChangeEventFollowsItsReport(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, _ := openDSN(t, dsn, changeAnnouncer{})
	d := digest(1)
	put(t, st, newReport(1, "", t0, `{"v":1}`, finding("CVE-A", report.High, "a", "")))
	put(t, st, newReport(1, "", t0, `{"v":2}`, finding("CVE-A", report.High, "a", "")))
	res := put(t, st, newReport(1, "", t0, `{"v":3}`, finding("CVE-B", report.High, "b", "")))
	short := d[7:15]
	want := []string{"stored-" + short + "-1", "changed-" + short + "-1", "stored-" + short + "-1", "stored-" + short + "-1",
		fmt.Sprintf("changed-%s-%d", short, res.Change.ID)}
	if got := ids(outbox(t, dsn)); !slices.Equal(got, want) {
		t.Fatalf("outbox %v, want %v", got, want)
	}
	// An event that cannot be built fails the put: no report, no change.
	refusing, _ := openDSN(t, dsn, changeAnnouncer{announcer{refuse: true}})
	if _, err := refusing.PutReport(ctx(t), newReport(2, "", t0, `{}`)); err == nil {
		t.Fatal("put succeeded without its events")
	}
	if p := changes(t, st, store.ChangeQuery{Digest: digest(2)}); len(p.Items) != 0 {
		t.Errorf("change recorded without its report: %+v", p.Items)
	}
}
