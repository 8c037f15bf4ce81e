package store_test

import (
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

func scan(n int, job string, attempt int, state report.ScanState, at time.Time) report.ScanStatus {
	return report.ScanStatus{Digest: digest(n), Image: "reg/app@" + digest(n), Namespace: "ns", Scanner: "default",
		Job: job, State: state, Attempt: attempt, UpdatedAt: at}
}

func TestApplyScanOrdering(t *testing.T) {
	st, _ := open(t)
	apply := func(s report.ScanStatus, want bool) {
		t.Helper()
		changed, err := st.ApplyScan(ctx(t), s)
		if err != nil || changed != want {
			t.Fatalf("apply %s %s@%v: changed %v (err %v), want %v", s.Job, s.State, s.UpdatedAt, changed, err, want)
		}
	}
	apply(scan(1, "j1", 1, report.ScanScanning, t0), true)
	apply(scan(1, "j1", 1, report.ScanScanning, t0), false)                    // redelivered
	apply(scan(1, "j1", 1, report.ScanDone, t0.Add(time.Minute)), true)        // finished
	apply(scan(1, "j1", 1, report.ScanScanning, t0.Add(2*time.Minute)), false) // late scanning never undoes done
	apply(scan(1, "j0", 1, report.ScanFailed, t0.Add(-time.Hour)), false)      // older event of another job
	apply(scan(1, "j2", 1, report.ScanScanning, t0.Add(time.Hour)), true)      // a rescan
	// job.done may carry an earlier timestamp than the image.needed of its own job.
	apply(report.ScanStatus{Digest: digest(1), Job: "j2", Attempt: 1, State: report.ScanFailed, Reason: "ImagePull",
		UpdatedAt: t0.Add(30 * time.Minute)}, true)

	// A retry keeps the Job's name: attempt 2 finished, then attempt 1's
	// job.done, held back by an outage, is redelivered — it must not win.
	apply(scan(3, "j3", 1, report.ScanFailed, t0), true)
	apply(scan(3, "j3", 2, report.ScanScanning, t0.Add(3*time.Minute)), true)
	apply(scan(3, "j3", 2, report.ScanDone, t0.Add(4*time.Minute)), true)
	apply(scan(3, "j3", 1, report.ScanFailed, t0), false)

	put(t, st, newReport(1, "", t0, `{}`))
	sum, err := st.GetSummary(ctx(t), digest(1))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Scan == nil || sum.Scan.State != report.ScanFailed || sum.Scan.Reason != "ImagePull" || sum.Scan.Job != "j2" {
		t.Fatalf("summary scan = %+v", sum.Scan)
	}
}

func TestListScans(t *testing.T) {
	st, _ := open(t)
	for i, state := range []report.ScanState{report.ScanQueued, report.ScanScanning, report.ScanFailed, report.ScanDone, report.ScanScanning} {
		if _, err := st.ApplyScan(ctx(t), scan(i+1, "j", 1, state, t0.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	all, err := st.ListScans(ctx(t), "", 10)
	if err != nil || len(all) != 5 || all[0].Digest != digest(5) || all[4].Digest != digest(1) {
		t.Fatalf("all scans = %+v, %v", all, err)
	}
	scanning, err := st.ListScans(ctx(t), report.ScanScanning, 10)
	if err != nil || len(scanning) != 2 || scanning[0].Digest != digest(5) || scanning[1].Digest != digest(2) {
		t.Fatalf("scanning = %+v, %v", scanning, err)
	}
	if two, _ := st.ListScans(ctx(t), "", 2); len(two) != 2 {
		t.Fatalf("limit 2 gave %d", len(two))
	}
	// A scan without a report is not listed among reports.
	if p, err := st.ListReports(ctx(t), store.ListQuery{Limit: 10}); err != nil || p.Total != 0 {
		t.Fatalf("reports = %+v, %v", p, err)
	}
}
