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
// crowsnest_* metric its expression reads is defined somewhere in the Go
// code (a renamed metric would otherwise leave an alert that never fires).
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
	defined := definedMetrics(t)
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
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
				if !defined[base] {
					t.Errorf("%s reads %s, which no Go code defines", r.Alert, m)
				}
			}
		}
	}
	if alerts != 9 {
		t.Errorf("%d alerts rendered with every component on, want the chart's 9", alerts)
	}
}

// definedMetrics collects every quoted crowsnest_* name in the repository's
// non-test Go files (metric names are string literals there), and the names
// results-api builds from its namespace and subsystem constants
// (`const ns, sub = "crowsnest", "results_api"` and `Name: "…"`).
func definedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`"(crowsnest_[a-z0-9_]+)"`)
	prefixRE := regexp.MustCompile(`const ns, sub = "([a-z_]+)", "([a-z_]+)"`)
	nameRE := regexp.MustCompile(`Name: +"([a-z0-9_]+)"`)
	out := map[string]bool{}
	for _, dir := range []string{"operator", "results-api", "matcher", "notifier", "uploader"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
			if p := prefixRE.FindStringSubmatch(string(b)); p != nil {
				for _, m := range nameRE.FindAllStringSubmatch(string(b), -1) {
					out[p[1]+"_"+p[2]+"_"+m[1]] = true
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}
