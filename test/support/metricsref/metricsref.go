// Package metricsref keeps docs/metrics/<component>.md, the reference of a
// component's Prometheus metrics, equal to what its real registry describes.
//
// Each component has a TestMetricsReference that builds its registry the way
// its binary does and calls Check. With UPDATE_METRICS_REFERENCE=1 (make
// generate) Check rewrites the file; otherwise a difference fails the test.
// The chart tests read these files to check that every alert rule and
// dashboard query names a metric that exists.
package metricsref

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	support "github.com/crowsnest-dev/crowsnest/test/support"
)

// UpdateEnv is the environment variable that makes Check rewrite the file.
const UpdateEnv = "UPDATE_METRICS_REFERENCE"

// Metric is one metric family as its collector describes it.
type Metric struct {
	Name   string
	Labels []string // variable labels, then const labels
	Help   string
}

// runtimePrefixes are the Go runtime and process collectors' families:
// listed in one line, not one row each.
var runtimePrefixes = []string{"go_", "process_"}

// descRE matches prometheus.Desc.String():
// Desc{fqName: "…", help: "…", constLabels: {a="b"}, variableLabels: {c,d}},
// with `unit: "…"` after help in client_golang 1.24 and later.
var descRE = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"),(?: unit: "(?:[^"\\]|\\.)*",)? constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)

// Describe lists every metric family c describes, sorted by name. Describe
// rather than Gather: a vector without children is described but not
// gathered.
func Describe(c prometheus.Collector) ([]Metric, error) {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	seen := map[string]bool{}
	var out []Metric
	var err error
	for d := range ch {
		m, perr := parse(d.String())
		if perr != nil {
			if err == nil {
				err = perr
			}
			continue
		}
		if !seen[m.Name] {
			seen[m.Name] = true
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

func parse(s string) (Metric, error) {
	g := descRE.FindStringSubmatch(s)
	if g == nil {
		return Metric{}, fmt.Errorf("unexpected prometheus.Desc format: %s", s)
	}
	name, err := strconv.Unquote(g[1])
	if err != nil {
		return Metric{}, fmt.Errorf("desc %s: %w", s, err)
	}
	help, err := strconv.Unquote(g[2])
	if err != nil {
		return Metric{}, fmt.Errorf("desc %s: %w", s, err)
	}
	if strings.Contains(s, "has invalid") || name == "" {
		return Metric{}, fmt.Errorf("invalid desc: %s", s)
	}
	m := Metric{Name: name, Help: help}
	for _, l := range splitNonEmpty(g[4]) {
		// A constrained label prints as c(name).
		m.Labels = append(m.Labels, strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"))
	}
	// Const labels by name only: their values (build_info's version,
	// revision, goversion) change with every build.
	for _, l := range splitNonEmpty(g[3]) {
		name, _, _ := strings.Cut(l, "=")
		m.Labels = append(m.Labels, name)
	}
	return m, nil
}

func splitNonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// Markdown renders the reference of component.
func Markdown(component string, ms []Metric) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s metrics\n\n", component)
	fmt.Fprintf(&b, "Generated from the %s's Prometheus registry by its TestMetricsReference "+
		"(`make generate`); do not edit. Histograms add `_bucket`, `_sum` and `_count` series.\n\n", component)
	var runtime []string
	b.WriteString("| Metric | Labels | Help |\n|---|---|---|\n")
	for _, m := range ms {
		if isRuntime(m.Name) {
			runtime = append(runtime, m.Name)
			continue
		}
		labels := make([]string, len(m.Labels))
		for i, l := range m.Labels {
			labels[i] = "`" + l + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", m.Name, strings.Join(labels, ", "), escape(m.Help))
	}
	if len(runtime) > 0 {
		// No count: the runtime families differ between Go releases and platforms.
		fmt.Fprintf(&b, "\nAlso the Go runtime and process collectors' families (%s).\n", runtimeSummary(runtime))
	}
	return b.Bytes()
}

func isRuntime(name string) bool {
	for _, p := range runtimePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// runtimeSummary names the runtime prefixes present, e.g. "`go_*`, `process_*`".
func runtimeSummary(names []string) string {
	var out []string
	for _, p := range runtimePrefixes {
		for _, n := range names {
			if strings.HasPrefix(n, p) {
				out = append(out, "`"+p+"*`")
				break
			}
		}
	}
	return strings.Join(out, ", ")
}

func escape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// Path is docs/metrics/<component>.md in the checkout.
func Path(component string) (string, error) {
	root, err := support.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "docs", "metrics", component+".md"), nil
}

// Check compares docs/metrics/<component>.md with what c describes, or
// rewrites the file when UPDATE_METRICS_REFERENCE=1.
func Check(t testing.TB, component string, c prometheus.Collector) {
	t.Helper()
	ms, err := Describe(c)
	if err != nil {
		t.Fatal(err)
	}
	want := Markdown(component, ms)
	path, err := Path(component)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(UpdateEnv) == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil { //nolint:gosec // a doc in the checkout
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path) //nolint:gosec // a doc in the checkout
	if err != nil {
		t.Fatalf("%v: run make generate", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale (the registry describes other metrics): run make generate\n%s", path, diff(string(got), string(want)))
	}
}

// diff lists the lines only in the file (-) and only in the registry (+).
func diff(file, registry string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	f, r := in(file), in(registry)
	var b strings.Builder
	for _, l := range strings.Split(file, "\n") {
		if !r[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(registry, "\n") {
		if !f[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// CheckBuildInfo fails t unless g gathers crowsnest_build_info = 1 with
// exactly the version, revision and goversion labels, as an unstamped test
// binary has them (version "dev", the module's VCS revision, this Go).
func CheckBuildInfo(t testing.TB, g prometheus.Gatherer) {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "crowsnest_build_info" {
			continue
		}
		if len(mf.GetMetric()) != 1 {
			t.Fatalf("crowsnest_build_info has %d series, want 1", len(mf.GetMetric()))
		}
		m := mf.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if m.GetGauge().GetValue() != 1 || len(labels) != 3 || labels["version"] != "dev" || labels["revision"] == "" ||
			labels["goversion"] != runtime.Version() {
			t.Errorf("crowsnest_build_info = %v %v", labels, m.GetGauge().GetValue())
		}
		return
	}
	t.Fatal("crowsnest_build_info not in the registry")
}
