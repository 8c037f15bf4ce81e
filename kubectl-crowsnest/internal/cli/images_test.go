package cli

import (
	"testing"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
)

// TestNamespaceFallback covers what a results-api from before the
// inventory makes the plugin do (today's results-api, which the e2e tests
// run, filters by namespace itself): its items carry no runningIn, so the
// plugin keeps those whose digests the namespace's Pods run.
func TestNamespaceFallback(t *testing.T) {
	old := []resultsapi.ReportSummary{{Digest: "sha256:a"}, {Digest: "sha256:b"}, {Digest: "sha256:c"}}
	if hasRunningIn(old) {
		t.Fatal("items without runningIn taken for a filtering server")
	}
	empty := []resultsapi.RunningWorkload{}
	if !hasRunningIn([]resultsapi.ReportSummary{{Digest: "sha256:a", RunningIn: &empty}}) || !hasRunningIn(nil) {
		t.Fatal("a filtering server's items (runningIn present, even empty) taken for an old server's")
	}
	web := []resultsapi.RunningWorkload{{Namespace: "shop", Kind: "Deployment", Name: "web", Containers: []string{"app"}, Pods: 2}}
	got := keepRunning(old, map[string][]resultsapi.RunningWorkload{"sha256:b": web, "sha256:z": web})
	if len(got) != 1 || got[0].Digest != "sha256:b" || got[0].RunningIn == nil || (*got[0].RunningIn)[0].Name != "web" {
		t.Fatalf("kept %+v", got)
	}
	if old[1].RunningIn != nil {
		t.Fatal("keepRunning changed its input")
	}
}
