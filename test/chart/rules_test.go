package charttest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestAlertRulesHaveRunbooksAndRealMetrics: with every component on, each
// alert links to a section of docs/runbooks.md that exists, and every
// crowsnest_* metric its expression reads is served by a component: it is
// in docs/metrics/*.md, generated from the real registries (a renamed
// metric would otherwise leave an alert that never fires).
func TestAlertRulesHaveRunbooksAndRealMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs, err := Template(ctx, repoRoot, releaseNS, "-f", "test/chart/testdata/values-notifier.yaml",
		"--set", "monitoring.enabled=true", "--api-versions", "monitoring.coreos.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	rule := find(objs, "PrometheusRule/crowsnest-monitoring")
	if rule == nil {
		t.Fatal("no PrometheusRule rendered")
	}
	raw, err := yaml.Marshal(rule.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	runbooks, err := os.ReadFile(filepath.Join(repoRoot, "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(runbooks), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[strings.ToLower(strings.TrimSpace(h))] = true
		}
	}
	defined := referenceMetrics(t)
	metricRE := regexp.MustCompile(`crowsnest_[a-z0-9_]+`)
	alerts := 0
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			alerts++
			url := r.Annotations["runbook_url"]
			_, anchor, ok := strings.Cut(url, "/docs/runbooks.md#")
			if !ok || !anchors[anchor] || anchor != strings.ToLower(r.Alert) {
				t.Errorf("%s: runbook_url %q has no section in docs/runbooks.md", r.Alert, url)
			}
			for _, m := range metricRE.FindAllString(r.Expr, -1) {
				if _, _, ok := lookupMetric(defined, m); !ok {
					t.Errorf("%s reads %s, which no component's registry has (docs/metrics/*.md)", r.Alert, m)
				}
			}
		}
	}
	if alerts != 11 {
		t.Errorf("%d alerts rendered with every component on, want the chart's 11", alerts)
	}
}
