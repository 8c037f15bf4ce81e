package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

func TestPutCreateUnchangedReplace(t *testing.T) {
	st, _ := open(t)
	r1 := newReport(1, "reg/app@"+digest(1), t0, `{"v":1}`,
		finding("CVE-1", report.Critical, "a", "2.0"), finding("CVE-2", report.Low, "b", ""))
	if res := put(t, st, r1); !res.Created || res.Unchanged || res.Summary.Counts.Critical != 1 || res.Summary.Fixable != 1 {
		t.Fatalf("first put: %+v", res)
	}

	// Same bytes again: a no-op apart from stored_at (and a newly given image).
	again := newReport(1, "reg/renamed@"+digest(1), t0, `{"v":1}`, r1.FindingList...)
	again.StoredAt = t0.Add(time.Hour)
	res := put(t, st, again)
	if res.Created || !res.Unchanged || res.Summary.Image != "reg/renamed@"+digest(1) || !res.Summary.StoredAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("unchanged put: %+v", res)
	}

	// A different report replaces summary, findings and BOM together.
	r2 := newReport(1, "", t0.Add(2*time.Hour), `{"v":2}`, finding("CVE-3", report.High, "c", ""))
	res = put(t, st, r2)
	if res.Created || res.Unchanged || res.Summary.Counts != (report.Counts{High: 1}) || res.Summary.Image != "reg/renamed@"+digest(1) {
		t.Fatalf("replacing put: %+v", res)
	}
	got, err := st.GetReport(ctx(t), digest(1), store.FindingQuery{Order: store.BySeverity, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.FindingList) != 1 || got.FindingList[0].ID != "CVE-3" || got.Findings != 1 {
		t.Fatalf("findings after replace: %+v", got.FindingList)
	}
	if bom, err := readBOM(st, digest(1)); err != nil || string(bom) != `{"v":2}` {
		t.Fatalf("bom after replace: %q, %v", bom, err)
	}
}

// A replace that fails half-way (Postgres rejects a NUL byte in text, after
// the summary row was updated) rolls back: the old report stays whole.
func TestReplaceIsAtomic(t *testing.T) {
	st, log := open(t)
	put(t, st, newReport(2, "reg/app@"+digest(2), t0, `{"old":true}`, finding("CVE-OLD", report.Medium, "a", "1.1")))
	bad := newReport(2, "reg/app@"+digest(2), t0.Add(time.Hour), `{"new":true}`,
		finding("CVE-NEW", report.Critical, "a", ""), finding("CVE-BAD\x00", report.Low, "b", ""))
	if _, err := st.PutReport(ctx(t), bad); err == nil {
		t.Fatal("put with a NUL byte succeeded")
	}
	got, err := st.GetReport(ctx(t), digest(2), store.FindingQuery{Order: store.ByID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got.Counts != (report.Counts{Medium: 1}) || len(got.FindingList) != 1 || got.FindingList[0].ID != "CVE-OLD" ||
		!got.ScannedAt.Equal(t0) {
		t.Fatalf("old report not intact: %+v", got)
	}
	if bom, _ := readBOM(st, digest(2)); string(bom) != `{"old":true}` {
		t.Fatalf("bom = %q", bom)
	}
	if ops := log.List(); !slices.Contains(ops, "put report") {
		t.Errorf("error callback got %v, want put report", ops)
	}
	// A failing first upload stores nothing.
	if _, err := st.PutReport(ctx(t), newReport(3, "", t0, `{}`, finding("X\x00", report.Low, "a", ""))); err == nil {
		t.Fatal("put with a NUL byte succeeded")
	}
	if _, err := st.GetSummary(ctx(t), digest(3)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("failed first put left a report: %v", err)
	}
}

// Concurrent first uploads of one digest: exactly one creates, all succeed.
func TestConcurrentPutSameDigest(t *testing.T) {
	st, _ := open(t)
	var wg sync.WaitGroup
	results := make([]store.PutResult, 8)
	errs := make([]error, 8)
	for i := range results {
		wg.Go(func() {
			results[i], errs[i] = st.PutReport(ctx(t), newReport(4, "", t0, `{"same":1}`, finding("CVE-1", report.High, "a", "")))
		})
	}
	wg.Wait()
	created := 0
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("put %d: %v", i, errs[i])
		}
		if res.Created {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("%d puts created the report, want 1", created)
	}
	if got, _ := st.GetReport(ctx(t), digest(4), store.FindingQuery{Order: store.ByID, Limit: 100}); len(got.FindingList) != 1 {
		t.Fatalf("findings = %d, want 1", len(got.FindingList))
	}
}

func TestGetOrdersAndBOM(t *testing.T) {
	st, _ := open(t)
	raw := "{\n  \"bomFormat\": \"CycloneDX\" } \t" // kept byte-for-byte, whitespace included
	put(t, st, newReport(5, "", t0, raw, finding("CVE-B", report.Low, "z", ""), finding("CVE-A", report.Critical, "y", "2"),
		finding("CVE-C", report.High, "x", "")))
	ids := func(order store.FindingOrder) []string {
		r, err := st.GetReport(ctx(t), digest(5), store.FindingQuery{Order: order, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range r.FindingList {
			out = append(out, f.ID)
		}
		return out
	}
	for order, want := range map[store.FindingOrder][]string{
		store.BySeverity: {"CVE-A", "CVE-C", "CVE-B"}, store.ByID: {"CVE-A", "CVE-B", "CVE-C"}, store.ByPackage: {"CVE-C", "CVE-A", "CVE-B"},
	} {
		if got := ids(order); !slices.Equal(got, want) {
			t.Errorf("order %s: %v, want %v", order, got, want)
		}
	}
	if bom, err := readBOM(st, digest(5)); err != nil || string(bom) != raw {
		t.Fatalf("bom = %q, %v", bom, err)
	}
	r, _ := st.GetReport(ctx(t), digest(5), store.FindingQuery{Order: store.BySeverity, Limit: 100})
	if f := r.FindingList[0]; f.Package.PURL != "pkg:apk/alpine/y@1.0" || !slices.Equal(f.FixedIn, []string{"2"}) ||
		f.CVSSScore == nil || *f.CVSSScore != 9.5 || f.URL == "" || f.Description == "" {
		t.Errorf("finding fields lost: %+v", f)
	}
}

func TestDeleteAndNotFound(t *testing.T) {
	st, _ := open(t)
	put(t, st, newReport(6, "reg/app@"+digest(6), t0, `{}`, finding("CVE-DEL", report.High, "a", "")))
	sum, err := st.DeleteReport(ctx(t), digest(6))
	if err != nil || sum.Digest != digest(6) || sum.Image != "reg/app@"+digest(6) {
		t.Fatalf("delete: %+v, %v", sum, err)
	}
	for name, err := range map[string]error{
		"delete again":                      second(st.DeleteReport(ctx(t), digest(6))),
		"get":                               second(st.GetReport(ctx(t), digest(6), store.FindingQuery{Order: store.BySeverity, Limit: 100})),
		"summary":                           second(st.GetSummary(ctx(t), digest(6))),
		"bom":                               second(readBOM(st, digest(6))),
		"vulnerability (findings cascaded)": second(st.GetVulnerability(ctx(t), "CVE-DEL", store.AgeFilter{})),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}
}

func TestLookup(t *testing.T) {
	st, _ := open(t)
	put(t, st, newReport(7, "", t0, `{}`))
	put(t, st, newReport(8, "", t0.Add(time.Hour), `{}`))
	got, err := st.Lookup(ctx(t), []string{digest(7), digest(9), digest(8), digest(7)})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b store.Scanned) int { return a.ScannedAt.Compare(b.ScannedAt) })
	if len(got) != 2 || got[0].Digest != digest(7) || !got[0].ScannedAt.Equal(t0) || got[1].Digest != digest(8) {
		t.Fatalf("lookup = %+v", got)
	}
	if got, err := st.Lookup(ctx(t), nil); err != nil || len(got) != 0 {
		t.Fatalf("empty lookup = %v, %v", got, err)
	}
	if _, err := st.Lookup(ctx(t), []string{digest(7), "sha256:ABC"}); !errors.Is(err, report.ErrInvalidDigest) {
		t.Fatalf("invalid digest: %v", err)
	}
}

// Errors keep their cause: a canceled context is context.Canceled and not
// counted as a database error; a closed pool is counted.
func TestErrors(t *testing.T) {
	st, log := open(t)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.GetSummary(c, digest(1)); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	if ops := log.List(); len(ops) != 0 {
		t.Errorf("canceled request counted as DB error: %v", ops)
	}
	_ = st.Close()
	if _, err := st.ListReports(ctx(t), store.ListQuery{Limit: 10}); err == nil {
		t.Error("list on a closed store succeeded")
	}
	if err := st.Ping(ctx(t)); err == nil {
		t.Error("ping on a closed store succeeded")
	}
	if ops := log.List(); !slices.Contains(ops, "count reports") {
		t.Errorf("error callback got %v, want count reports", ops)
	}
}

func second[T any](_ T, err error) error { return err }

// StatBOM sizes a BOM from its row and zstd frame header: a tiny BOM has
// the minimum window (1 KiB), a large one the encoder's 1 MiB; OpenBOM
// then reads exactly Size bytes.
func TestStatBOM(t *testing.T) {
	st, _ := open(t)
	small := `{"bomFormat":"CycloneDX"}`
	large := strings.Repeat(`{"bomFormat":"CycloneDX","pad":"0123456789abcdef"}`, 3<<20/50)
	put(t, st, newReport(1, "", t0, small))
	put(t, st, newReport(2, "", t0, large))
	for n, want := range map[int]store.BOMInfo{1: {Size: int64(len(small)), Window: 1024}, 2: {Size: int64(len(large)), Window: 1 << 20}} {
		info, err := st.StatBOM(ctx(t), digest(n))
		if err != nil {
			t.Fatal(err)
		}
		if info.Size != want.Size || info.Window != want.Window || info.Stored <= 0 || (n == 2 && info.Stored >= info.Size/10) {
			t.Errorf("BOM %d: %+v, want size %d, window %d", n, info, want.Size, want.Window)
		}
		if b, err := readBOM(st, digest(n)); err != nil || int64(len(b)) != info.Size {
			t.Errorf("BOM %d read: %d bytes, %v", n, len(b), err)
		}
	}
	if _, err := st.StatBOM(ctx(t), digest(3)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing BOM: %v", err)
	}
}

// TestUploadedFrameKept: a BOM uploaded as one zstd frame whose reader
// holds at most the store's 1 MiB window is stored as it came, not
// compressed again; one with a larger window (here one 3 MB segment,
// which a reader must hold whole) is compressed by the store. Both read
// back as the original bytes.
func TestUploadedFrameKept(t *testing.T) {
	st, _ := open(t)
	raw := strings.Repeat(`{"bomFormat":"CycloneDX","pad":"0123456789abcdef"}`, 3<<20/50)
	// The uploads at another level than the store's SpeedFastest, so the
	// stored size tells which frame was kept.
	encode := func(window int) []byte {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithWindowSize(window))
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll([]byte(raw), nil)
	}
	storeOwn, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<20))
	if own := storeOwn.EncodeAll([]byte(raw), nil); len(own) == len(encode(1<<20)) {
		t.Fatalf("the upload's frame and the store's own are both %d bytes: the test cannot tell them apart", len(own))
	}
	for n, tc := range map[int]struct {
		frame  []byte
		window int64
		kept   bool
	}{
		1: {encode(1 << 20), 1 << 20, true},
		2: {encode(4 << 20), int64(len(raw)), false},
	} {
		r := newReport(n, "", t0, raw)
		r.Frame, r.FrameWindow = tc.frame, tc.window
		put(t, st, r)
		info, err := st.StatBOM(ctx(t), digest(n))
		if err != nil {
			t.Fatal(err)
		}
		if kept := info.Stored == int64(len(tc.frame)); kept != tc.kept || info.Window != 1<<20 {
			t.Errorf("frame with a %d-byte window: stored %d bytes (the frame is %d), window %d; want kept %v, a 1 MiB window",
				tc.window, info.Stored, len(tc.frame), info.Window, tc.kept)
		}
		if b, err := readBOM(st, digest(n)); err != nil || string(b) != raw {
			t.Errorf("BOM %d read back: %d bytes, equal %v, %v", n, len(b), string(b) == raw, err)
		}
	}
}
