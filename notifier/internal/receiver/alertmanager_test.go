package receiver

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/notifier/internal/config"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// TestAlertsShape checks the rendered alerts against Alertmanager's v2
// postableAlert rules (labels required, label names
// [a-zA-Z_][a-zA-Z0-9_]*, endsAt after startsAt, generatorURL a URI) and
// that a resent group renders identical alerts (same labels: Alertmanager
// merges them). The real Alertmanager test is in amtest.
func TestAlertsShape(t *testing.T) {
	due := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	g := &state.Group{ID: "g1", Route: "prod", Due: due, Items: []state.Item{
		{Kind: config.KindNew, Namespace: "a", Digest: "sha256:aa", Image: "r/app@sha256:aa",
			Findings: []state.Finding{{ID: "CVE-1", Severity: "high"}, {ID: "CVE-2", Severity: "critical", FixedIn: []string{"1.2"}}}},
		{Kind: config.KindScanFailures, Namespace: "b", Failures: 3, Reason: "ImagePullFailed"},
	}}
	alerts := Alerts(g, "https://dash", time.Hour)
	again, _ := json.Marshal(Alerts(g, "https://dash", time.Hour))
	if first, _ := json.Marshal(alerts); string(first) != string(again) {
		t.Fatal("a resent group renders different alerts")
	}
	if len(alerts) != 2 {
		t.Fatalf("%d alerts", len(alerts))
	}
	for _, a := range alerts {
		if a.Labels["alertname"] == "" || a.Labels[LabelGroup] != "g1" || !a.EndsAt.After(a.StartsAt) {
			t.Fatalf("alert %+v", a)
		}
		for k := range a.Labels {
			if !labelName.MatchString(k) {
				t.Fatalf("label name %q", k)
			}
		}
	}
	if a := alerts[0]; a.Labels["severity"] != "critical" || a.Labels["vulnerabilities"] != "CVE-1,CVE-2" || a.GeneratorURL != "https://dash/images/sha256:aa" {
		t.Fatalf("first alert %+v", a)
	}
	if a := alerts[1]; a.Labels["alertname"] != "CrowsnestScansFailing" || a.GeneratorURL != "" {
		t.Fatalf("second alert %+v", a)
	}
}
