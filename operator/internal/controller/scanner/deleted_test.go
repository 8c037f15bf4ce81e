package scanner

import (
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// TestDeletedReportIsRescanned deletes a report through the real results-api,
// which publishes crowsnest.report.deleted on real JetStream; the operator,
// otherwise idle (rescanInterval 24h, nothing changing in the cluster), must
// schedule a new scan of the still-running digest.
func TestDeletedReportIsRescanned(t *testing.T) {
	ns := newNamespace(t)
	_, natsURL := natstest.StartT(t)
	api := resultsapitest.Start(t, resultsapitest.WithNATS(natsURL))
	digest := testDigest(11)
	putReport(t, api, digest)
	runPod(t, ns, "web", nil, "nginx@"+digest)
	newScanner(t, ns)
	startOperator(t, ns, api.URL, natsURL, testOptions())

	eventually(t, 15*time.Second, "scanned and up to date", conditions(t, ns, upToDate...))
	if n := len(scanJobs(t, ns)); n != 0 {
		t.Fatalf("%d jobs for a freshly scanned digest", n)
	}

	deleteReport(t, api, digest)

	eventually(t, 15*time.Second, "a scan job after the deletion", jobCount(t, ns, 1))
	if r := scanJobs(t, ns)[0].Annotations[scanjob.AnnotationReason]; r != "new" {
		t.Errorf("reason %q, want new (the report is gone)", r)
	}
}
