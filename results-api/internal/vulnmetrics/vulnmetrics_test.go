package vulnmetrics_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store/storetest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
)

// seedFleet stores the fleet the tests read:
//
//	d1 alpha (two workloads), beta  C CVE-1/a  H CVE-2/b  M CVE-3/c  H CVE-7/g (new 1 day ago)
//	d2 beta                         C CVE-1/a  N CVE-5/e (new 10 days ago)  U CVE-8/h (new 2 days ago)
//	d3 not running                  H CVE-2/b  U CVE-6/f (new 1 day ago)
//	d4 gamma                        no report, scan failed
//	d5 gamma                        no report, scanning
//	d6 alpha                        no report, no scan known
//	d7 delta                        report without findings
//
// d1 also had CVE-9/i, new 3 days ago and resolved 1 day ago; d2 had
// CVE-4/d, resolved 2 days ago.
func seedFleet(t *testing.T, st *store.Store) {
	c1, c2, c3 := vuln("CVE-1", report.Critical, "a"), vuln("CVE-2", report.High, "b"), vuln("CVE-3", report.Medium, "c")
	c4, c5, c6 := vuln("CVE-4", report.Low, "d"), vuln("CVE-5", report.Negligible, "e"), vuln("CVE-6", report.Unknown, "f")
	c7, c8, c9 := vuln("CVE-7", report.High, "g"), vuln("CVE-8", report.Unknown, "h"), vuln("CVE-9", report.Medium, "i")
	put(t, st, 1, now.Add(-10*day), c1, c2, c3) // baseline: nothing new
	put(t, st, 1, now.Add(-3*day), c1, c2, c3, c9)
	put(t, st, 1, now.Add(-1*day), c1, c2, c3, c7)
	put(t, st, 2, now.Add(-20*day), c1, c4)
	put(t, st, 2, now.Add(-10*day), c1, c4, c5)
	put(t, st, 2, now.Add(-2*day), c1, c5, c8)
	put(t, st, 3, now.Add(-5*day), c2)
	put(t, st, 3, now.Add(-1*day), c2, c6)
	put(t, st, 7, now.Add(-1*day))
	apply(t, st, "alpha", 1, run("web", 1), run("worker", 1), run("cron", 6))
	apply(t, st, "beta", 1, run("api", 1), run("db", 2))
	apply(t, st, "gamma", 1, run("new", 4), run("newer", 5))
	apply(t, st, "delta", 1, run("empty", 7))
	scan(t, st, 4, report.ScanFailed)
	scan(t, st, 5, report.ScanScanning)
}

// want builds expected samples.
type want map[string]float64

// sev adds name's six severity samples, extra labels first (sorted by
// name, as gathered).
func (w want) sev(name, labels string, critical, high, medium, low, negligible, unknown float64) want {
	for i, s := range []string{"critical", "high", "medium", "low", "negligible", "unknown"} {
		w[fmt.Sprintf(`%s{severity="%s"%s}`, name, s, labels)] = []float64{critical, high, medium, low, negligible, unknown}[i]
	}
	return w
}

func (w want) images(running, notRunning, failed, unscanned float64) want {
	w[`crowsnest_images{state="running"}`], w[`crowsnest_images{state="not_running"}`] = running, notRunning
	w[`crowsnest_images{state="failed"}`], w[`crowsnest_images{state="unscanned"}`] = failed, unscanned
	return w
}

func (w want) top(id, severity string, images float64) want {
	w[fmt.Sprintf(`crowsnest_vulnerability_top{severity="%s",vulnerability="%s"}`, severity, id)] = images
	return w
}

func (w want) set(key string, v float64) want { w[key] = v; return w }

// ns is the namespace label of crowsnest_namespace_vulnerabilities.
func ns(n string) string { return fmt.Sprintf(`,workload_namespace="%s"`, n) }

// vulnFamilies are the metrics the collector serves.
var vulnFamilies = []string{"crowsnest_vulnerabilities", "crowsnest_namespace_vulnerabilities", "crowsnest_namespace_vulnerabilities_truncated",
	"crowsnest_images", "crowsnest_vulnerability_top", "crowsnest_findings_new_7d", "crowsnest_vulnerability_metrics_refreshed_timestamp_seconds"}

// samples gathers the vulnerability metrics of reg as "name{labels}" →
// value.
func samples(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	return samplesOf(t, reg, vulnFamilies...)
}

// samplesOf is samples of the metric families named.
func samplesOf(t *testing.T, reg prometheus.Gatherer, families ...string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !slices.Contains(families, mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf(`%s="%s"`, l.GetName(), l.GetValue()))
			}
			key := mf.GetName()
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}

func compare(t *testing.T, reg prometheus.Gatherer, w want) {
	t.Helper()
	got := samples(t, reg)
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if g, ok := got[k]; !ok {
			t.Errorf("missing %s (want %v)", k, w[k])
		} else if g != w[k] {
			t.Errorf("%s = %v, want %v", k, g, w[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := w[k]; !ok {
			t.Errorf("unexpected %s = %v", k, got[k])
		}
	}
}

// refresher builds a refresher registered on a fresh metrics registry,
// clocked at now.
func refresher(st *store.Store, o vulnmetrics.Options) (*vulnmetrics.Refresher, *metrics.Metrics) {
	m := metrics.New()
	col := vulnmetrics.NewCollector()
	rm := m.WatchVulnerabilities(col)
	o.Errors, o.Duration, o.Now = rm.Errors, rm.Duration, func() time.Time { return now }
	return vulnmetrics.New(st, col, o), m
}

func refresh(t *testing.T, r *vulnmetrics.Refresher) {
	t.Helper()
	if err := r.Refresh(ctx(t)); err != nil {
		t.Fatal(err)
	}
}

var refreshedAt = `crowsnest_vulnerability_metrics_refreshed_timestamp_seconds`

// fleetBefore is what seedFleet's fleet exports.
func fleetBefore() want {
	return want{}.
		sev("crowsnest_vulnerabilities", "", 2, 2, 1, 0, 1, 1).
		sev("crowsnest_namespace_vulnerabilities", ns("alpha"), 1, 2, 1, 0, 0, 0).
		sev("crowsnest_namespace_vulnerabilities", ns("beta"), 2, 2, 1, 0, 1, 1).
		sev("crowsnest_namespace_vulnerabilities", ns("delta"), 0, 0, 0, 0, 0, 0).
		sev("crowsnest_namespace_vulnerabilities", ns("gamma"), 0, 0, 0, 0, 0, 0).
		set("crowsnest_namespace_vulnerabilities_truncated", 0).
		images(3, 1, 1, 2).
		top("CVE-1", "critical", 2).top("CVE-2", "high", 1).top("CVE-7", "high", 1).top("CVE-3", "medium", 1).
		top("CVE-5", "negligible", 1).top("CVE-8", "unknown", 1).
		sev("crowsnest_findings_new_7d", "", 0, 1, 0, 0, 0, 1).
		set(refreshedAt, float64(now.Unix()))
}

// TestRefreshExportsExactValues refreshes over a known fleet, then changes
// the inventory (an image stops running, a namespace disappears) and
// checks that series change and vanish exactly.
func TestRefreshExportsExactValues(t *testing.T) {
	st, _ := open(t)
	r, m := refresher(st, vulnmetrics.Options{})
	compare(t, m.Registry, want{}) // nothing before the first refresh
	seedFleet(t, st)
	refresh(t, r)
	compare(t, m.Registry, fleetBefore())

	// beta empties (its series vanish; d2 stops running), d7 stops
	// running (delta vanishes too), and d4's scan gets its report.
	apply(t, st, "beta", 2)
	apply(t, st, "delta", 2)
	put(t, st, 4, now, vuln("CVE-1", report.Critical, "a"), vuln("CVE-10", report.Low, "j"))
	scan(t, st, 4, report.ScanDone)
	refresh(t, r)
	compare(t, m.Registry, want{}.
		sev("crowsnest_vulnerabilities", "", 2, 2, 1, 1, 0, 0).
		sev("crowsnest_namespace_vulnerabilities", ns("alpha"), 1, 2, 1, 0, 0, 0).
		sev("crowsnest_namespace_vulnerabilities", ns("gamma"), 1, 0, 0, 1, 0, 0).
		set("crowsnest_namespace_vulnerabilities_truncated", 0).
		images(2, 3, 0, 2).
		top("CVE-1", "critical", 2).top("CVE-2", "high", 1).top("CVE-7", "high", 1).top("CVE-3", "medium", 1).
		top("CVE-10", "low", 1).
		sev("crowsnest_findings_new_7d", "", 0, 1, 0, 0, 0, 0).
		set(refreshedAt, float64(now.Unix())))
}

// TestNamespaceCap keeps the namespaces with the most critical+high
// findings (ties by name) and counts the others.
func TestNamespaceCap(t *testing.T) {
	st, _ := open(t)
	seedFleet(t, st)
	r, m := refresher(st, vulnmetrics.Options{MaxNamespaces: 3})
	refresh(t, r)
	w := fleetBefore().set("crowsnest_namespace_vulnerabilities_truncated", 1)
	for _, s := range []string{"critical", "high", "medium", "low", "negligible", "unknown"} {
		delete(w, fmt.Sprintf(`crowsnest_namespace_vulnerabilities{severity="%s",workload_namespace="gamma"}`, s)) // 0, and after delta
	}
	compare(t, m.Registry, w)
}

// TestTopIsBounded exports the 20 vulnerabilities in the most running
// images, not more.
func TestTopIsBounded(t *testing.T) {
	st, _ := open(t)
	var fs []report.Finding
	for i := range 30 {
		fs = append(fs, vuln(fmt.Sprintf("CVE-%02d", i), report.High, "p"))
		if i < 19 {
			put(t, st, 100+i, now, fs...) // image 100+i has CVE-00 … CVE-i
		}
	}
	put(t, st, 200, now, fs...) // and one image all 30
	var entries []store.InventoryEntry
	for i := range 19 {
		entries = append(entries, run(fmt.Sprint("w", i), 100+i))
	}
	apply(t, st, "many", 1, append(entries, run("all", 200))...)
	r, m := refresher(st, vulnmetrics.Options{})
	refresh(t, r)
	got := samples(t, m.Registry)
	var top []string
	for k, v := range got {
		if strings.HasPrefix(k, "crowsnest_vulnerability_top{") {
			top = append(top, fmt.Sprintf("%s=%v", k[len(`crowsnest_vulnerability_top{severity="high",vulnerability="`):len(k)-2], v))
		}
	}
	slices.Sort(top)
	// CVE-i is in 20-i images for i < 19, CVE-19 … CVE-29 in one: the tie
	// at one image goes to the smallest id.
	w := []string{}
	for i := range 19 {
		w = append(w, fmt.Sprintf("CVE-%02d=%d", i, 20-i))
	}
	w = append(w, "CVE-19=1")
	if !slices.Equal(top, w) {
		t.Errorf("top = %v\nwant %v", top, w)
	}
}

// TestRefreshKeepsValuesWhenPostgresIsGone stops Postgres: a failed
// refresh counts an error and leaves the last values (refresh time
// included) in place; once Postgres is back the next refresh succeeds.
func TestRefreshKeepsValuesWhenPostgresIsGone(t *testing.T) {
	pg, err := pgtest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.Stop() }()
	errs := &storetest.ErrLog{}
	st, err := store.Open(ctx(t), pg.AdminURL(), store.Options{OnError: errs.Add})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seedFleet(t, st)
	r, m := refresher(st, vulnmetrics.Options{})
	refresh(t, r)
	if err := pg.Pause(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.Refresh(ctx(t)); err == nil {
			t.Fatal("refresh with Postgres stopped: no error")
		}
	}
	compare(t, m.Registry, fleetBefore())
	if errors, refreshes := refreshCounts(t, m.Registry); errors != 2 || refreshes != 3 {
		t.Errorf("refresh errors %v, refreshes observed %d; want 2, 3", errors, refreshes)
	}
	if ops := errs.List(); !slices.Equal(ops, []string{"vulnerability stats", "vulnerability stats"}) {
		t.Errorf("store errors = %v", ops)
	}
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return r.Refresh(ctx(t)) == nil })
	compare(t, m.Registry, fleetBefore())
}

// refreshCounts returns the refresh error counter and the number of
// refresh durations observed.
func refreshCounts(t *testing.T, reg prometheus.Gatherer) (errors float64, refreshes uint64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "crowsnest_vulnerability_metrics_refresh_errors_total":
			errors = mf.GetMetric()[0].GetCounter().GetValue()
		case "crowsnest_vulnerability_metrics_refresh_duration_seconds":
			refreshes = mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return errors, refreshes
}

// TestRunRefreshesOnTriggerAndStops: Run refreshes at start, again a
// debounce after a Trigger (the interval being far away), and returns
// when its context ends.
func TestRunRefreshesOnTriggerAndStops(t *testing.T) {
	st, _ := open(t)
	seedFleet(t, st)
	r, m := refresher(st, vulnmetrics.Options{Interval: time.Hour, Debounce: 50 * time.Millisecond})
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(runCtx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	}()
	const running = `crowsnest_images{state="running"}`
	waitFor(t, func() bool { return samples(t, m.Registry)[running] == 3 })
	apply(t, st, "beta", 2)
	apply(t, st, "delta", 2)
	r.Trigger()
	r.Trigger() // a burst costs one refresh
	waitFor(t, func() bool { return samples(t, m.Registry)[running] == 1 })
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
