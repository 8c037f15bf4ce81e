package rematch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// dailyChange is a day's DB update over advs (benchAdvisories): one
// advisory in 10,000 changes (severity or fixed version) and as many are
// added, each touching its 10 rows. Sizing: Grype's DB holds ~300,000
// vulnerabilities over ~1.5M affected rows and NVD, GHSA and the distro
// trackers revise or add some hundreds a day, of which few touch the rows
// of one distro release; we take 0.01% + 0.01% of the bench's advisories
// (0.2% of its rows) as the order of a day — an assumption, not a
// measurement of Grype's published diffs.
// A bench advisory has 10 rows over several namespaces, so a change touches
// ten names. Which ones is random (seeded): a change to a name of the
// fleet's common base meets every report, as a new OpenSSL advisory does.
func dailyChange(advs []advisory.Advisory, seed uint64) []advisory.Advisory {
	r := rand.New(rand.NewPCG(seed, 30))
	out := slices.Clone(advs)
	for range max(len(advs)/10000, 1) {
		i := r.IntN(len(out))
		a := out[i]
		a.Affected = slices.Clone(a.Affected)
		if r.IntN(2) == 0 {
			a.Severity = []string{"critical", "high", "medium", "low"}[r.IntN(4)]
		} else {
			k := r.IntN(len(a.Affected))
			a.Affected[k].Fixed += ".1"
			a.Affected[k].Constraint = "< " + a.Affected[k].Fixed
		}
		out[i] = a
	}
	for j := range max(len(advs)/10000, 1) {
		a := out[r.IntN(len(advs))]
		a.ID = fmt.Sprintf("CVE-2099-9%06d", j)
		out = append(out, a)
	}
	return out
}

// BenchmarkPassDaily measures a "daily update" pass against a full pass in
// one run, over b.N stored reports (120 packages; "fleet": 80% shared,
// "distinct": none shared) in a real results-api: DB A (the reports' advisories, a new build) is matched
// in full once, recording footprints; then DB B (A plus dailyChange) runs
// once with skipping (the daily pass) and, on a second results-api holding
// the same reports, once without (a full pass). Rows default to 30,000
// (CROWSNEST_BENCH_ROWS sets them; smoke: 3,000).
func BenchmarkPassDaily(b *testing.B) {
	rows, pkgs := 30_000, 120
	if os.Getenv("CROWSNEST_BENCH_SMOKE") != "" {
		rows, pkgs = 3_000, 40
	}
	if v, err := strconv.Atoi(os.Getenv("CROWSNEST_BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	advs := benchAdvisories(rows)
	dir0 := writeDB(b, advs, fixtureBuilt)
	dirA := writeDB(b, advs, db1Built)
	dirB := writeDB(b, dailyChange(advs, 1), db2Built)
	for _, v := range []struct {
		name   string
		shared float64
	}{{"fleet", 0.8}, {"distinct", 0}} {
		b.Run(v.name, func(b *testing.B) { benchPassDaily(b, dir0, dirA, dirB, rows, pkgs, v.shared) })
	}
}

func benchPassDaily(b *testing.B, dir0, dirA, dirB string, rows, pkgs int, shared float64) {
	scanned := openDB(b, dir0)
	start := time.Now()
	d, err := DiffDBs(dirA, dirB)
	if err != nil || d.Full != "" {
		b.Fatalf("diff: %+v, %v", d, err)
	}
	b.Logf("%d rows; the daily change names %d keys; diff took %s", rows, len(d.Keys)-1, time.Since(start).Round(time.Millisecond))
	if os.Getenv("CROWSNEST_BENCH_KEYS") != "" {
		b.Logf("keys: %v", d.Keys)
	}

	daily, full := resultsapitest.Start(b), resultsapitest.Start(b)
	for i := range b.N {
		out, _, err := scanned.Match(context.Background(), fleetSBOM(b, i, pkgs, shared))
		if err != nil {
			b.Fatal(err)
		}
		daily.PutReport(b, fmt.Sprintf("sha256:%064x", i+1), out)
		full.PutReport(b, fmt.Sprintf("sha256:%064x", i+1), out)
	}
	fps, err := OpenFootprints(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer fps.Close()
	dailyPass := &Pass{Client: httpClient(b, daily), Dir: b.TempDir(),
		Skip: &Skip{Footprints: fps, Previous: func() (string, bool) { return dirA, true }}}
	fullPass := &Pass{Client: httpClient(b, full), Dir: b.TempDir()}

	run := func(p *Pass, dir string) (Result, time.Duration) {
		m, err := Open(dir, Options{Footprints: true})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		t0 := time.Now()
		res, err := p.Run(context.Background(), m)
		if err != nil || !res.Finished || res.Failed != 0 || res.Total != b.N {
			b.Fatalf("pass: %+v, %v", res, err)
		}
		return res, time.Since(t0)
	}
	b.ResetTimer()
	resA, tookA := run(dailyPass, dirA) // full, records footprints (no previous build yet)
	resD, tookD := run(dailyPass, dirB)
	resF, tookF := run(fullPass, dirB)
	b.StopTimer()
	if resA.Skipped != 0 || resF.Skipped != 0 || resD.Changed != resF.Changed {
		b.Fatalf("passes: A %+v, daily %+v, full %+v", resA.Counts, resD.Counts, resF.Counts)
	}
	n := float64(b.N)
	b.Logf("pass A %s %+v; daily %s %+v; full %s %+v", tookA.Round(time.Millisecond), resA.Counts,
		tookD.Round(time.Millisecond), resD.Counts, tookF.Round(time.Millisecond), resF.Counts)
	b.ReportMetric(float64(resD.Skipped)/n, "skipped/report")
	b.ReportMetric(float64(resD.Changed)/n, "changed/report")
	b.ReportMetric(tookD.Seconds()/tookF.Seconds(), "daily/full-time")
	b.ReportMetric(n/tookD.Seconds(), "daily-reports/s")
	b.ReportMetric(n/tookF.Seconds(), "full-reports/s")
}
