package charttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refMetric is one row of a docs/metrics/<component>.md reference.
type refMetric struct {
	component string
	labels    map[string]bool
}

// referenceMetrics reads docs/metrics/*.md, the references each component's
// TestMetricsReference generates from its real registry (make generate), so
// the alert rules and dashboards are checked against the metrics the
// binaries actually serve. Runtime families (go_*, process_*) are listed
// there in one line, not as rows: queries here do not use them.
func referenceMetrics(t *testing.T) map[string]refMetric {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "metrics", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no docs/metrics/*.md: run make generate")
	}
	out := map[string]refMetric{}
	for _, f := range files {
		b, err := os.ReadFile(f) //nolint:gosec // a doc in the checkout
		if err != nil {
			t.Fatal(err)
		}
		component := strings.TrimSuffix(filepath.Base(f), ".md")
		for _, line := range strings.Split(string(b), "\n") {
			cells := strings.Split(line, " | ")
			if len(cells) < 3 || !strings.HasPrefix(cells[0], "| `") {
				continue
			}
			name := strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")
			m, ok := out[name]
			if !ok {
				m = refMetric{component: component, labels: map[string]bool{}}
			} else {
				m.component += ", " + component
			}
			for _, l := range strings.Split(cells[1], ", ") {
				if l = strings.Trim(l, "` "); l != "" {
					m.labels[l] = true
				}
			}
			out[name] = m
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/metrics/*.md list no metric")
	}
	return out
}

// lookupMetric finds a series name in the references: a histogram's
// _bucket, _sum and _count series belong to its family.
func lookupMetric(ref map[string]refMetric, name string) (refMetric, string, bool) {
	if m, ok := ref[name]; ok {
		return m, name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if m, ok := ref[base]; ok {
				return m, base, true
			}
		}
	}
	return refMetric{}, "", false
}
