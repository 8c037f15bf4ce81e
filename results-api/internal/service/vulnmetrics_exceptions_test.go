package service_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
)

// TestVulnMetricsCountActiveFindings: with triage exceptions, the
// vulnerability gauges count what the API's views count, exactly (two
// teams on a real kube-apiserver, one image shared by both):
//
//   - the fleet gauges the cluster view: team-a's exceptions on the shared
//     image do not lower them (team-b runs it too), the cluster exception
//     does, and a vulnerability suppressed in every image leaves the top;
//   - each namespace's gauges its own view: team-a's exceptions lower
//     team-a's counts, KEV and overdue ones included, never team-b's;
//   - deleting an exception brings its findings back at the next refresh.
func TestVulnMetricsCountActiveFindings(t *testing.T) {
	e := newExceptionEnv(t)
	later := time.Now().Add(2 * time.Hour)
	e.configure = func(c *service.Config) {
		hour := map[report.Severity]time.Duration{}
		for _, s := range []report.Severity{report.Critical, report.High, report.Medium, report.Low} {
			hour[s] = time.Hour
		}
		c.SLA = report.SLA{Windows: hour} // every finding is overdue at later
		c.Now = func() time.Time { return later }
		c.VulnMetrics = vulnmetrics.Options{Interval: 200 * time.Millisecond, Debounce: 20 * time.Millisecond}
	}
	e.except("team-a", "parser", []string{"CVE-2024-0001"}, nil)
	e.except("team-a", "curl", []string{"CVE-2024-0005"}, nil) // critical, KEV
	e.except("team-b", "attack", []string{"CVE-2024-0003", "CVE-2024-0004"}, func(s map[string]any) { s["images"] = []any{shared} })
	e.except("", "zlib", []string{"CVE-2024-0002"}, nil) // cluster-wide
	e.start()

	// The shared image (team-a, team-b): 0001 high, 0002 high, 0003
	// medium, 0004 low, 0005 critical KEV; team-b's own: 0001 high.
	// severities: critical, high, medium, low (negligible, unknown 0).
	fleet := vulnLines("crowsnest_vulnerabilities", "", 1, 2, 1, 1) // only 0002 suppressed everywhere
	fleet = append(fleet, vulnLines("crowsnest_vulnerabilities_kev", "", 1, 0, 0, 0)...)
	perNS := func(aHigh int) []string {
		var l []string
		for _, f := range []string{"crowsnest_namespace_vulnerabilities", "crowsnest_findings_overdue"} {
			l = append(l, vulnLines(f, "team-a", 0, aHigh, 1, 1)...) // 0003, 0004 (and 0001 without parser)
			l = append(l, vulnLines(f, "team-b", 1, 2, 0, 0)...)     // 0005, 0001 twice
		}
		l = append(l, vulnLines("crowsnest_namespace_vulnerabilities_kev", "team-a", 0, 0, 0, 0)...)
		l = append(l, vulnLines("crowsnest_namespace_vulnerabilities_kev", "team-b", 1, 0, 0, 0)...)
		return append(l, `crowsnest_findings_overdue_kev{workload_namespace="team-a"} 0`, `crowsnest_findings_overdue_kev{workload_namespace="team-b"} 1`)
	}
	top := []string{
		`crowsnest_vulnerability_top{severity="high",vulnerability="CVE-2024-0001"} 2`,
		`crowsnest_vulnerability_top{severity="critical",vulnerability="CVE-2024-0005"} 1`,
		`crowsnest_vulnerability_top{severity="medium",vulnerability="CVE-2024-0003"} 1`,
		`crowsnest_vulnerability_top{severity="low",vulnerability="CVE-2024-0004"} 1`,
		// CVE-2024-0002: suppressed in its only image, out of the top.
	}
	want := slices.Concat(fleet, perNS(0), top, []string{`crowsnest_images{state="running"} 2`,
		`crowsnest_images{state="not_running"} 0`, `crowsnest_images{state="failed"} 0`, `crowsnest_images{state="unscanned"} 0`})
	waitMetrics(t, e.url, want)

	if err := e.dc.Resource(exception.NamespacedResource).Namespace("team-a").Delete(e.c.ctx, "parser", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMetrics(t, e.url, slices.Concat(fleet, perNS(1), top))
}

// vulnLines are a by-severity gauge's six lines (of namespace ns unless "").
func vulnLines(family, ns string, critical, high, medium, low int) []string {
	var l []string
	for _, s := range []struct {
		name string
		n    int
	}{{"critical", critical}, {"high", high}, {"medium", medium}, {"low", low}, {"negligible", 0}, {"unknown", 0}} {
		labels := fmt.Sprintf("severity=%q", s.name)
		if ns != "" {
			labels += fmt.Sprintf(",workload_namespace=%q", ns)
		}
		l = append(l, fmt.Sprintf("%s{%s} %d", family, labels, s.n))
	}
	return l
}

// waitMetrics waits up to 15 s for /metrics to hold every line of want,
// and for the families want names to hold no other series.
func waitMetrics(t *testing.T, base string, want []string) {
	t.Helper()
	families := map[string]bool{}
	for _, l := range want {
		families[l[:strings.IndexAny(l, "{ ")]] = true
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var got []string
		for l := range strings.SplitSeq(scrape(t, base), "\n") {
			if i := strings.IndexAny(l, "{ "); i > 0 && families[l[:i]] {
				got = append(got, l)
			}
		}
		slices.Sort(got)
		w := slices.Sorted(slices.Values(want))
		if slices.Equal(got, w) {
			return
		}
		if time.Now().After(deadline) {
			var missing, extra []string
			for _, l := range w {
				if !slices.Contains(got, l) {
					missing = append(missing, l)
				}
			}
			for _, l := range got {
				if !slices.Contains(w, l) {
					extra = append(extra, l)
				}
			}
			t.Fatalf("/metrics after 15s:\nmissing:\n  %s\nunexpected:\n  %s", strings.Join(missing, "\n  "), strings.Join(extra, "\n  "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
