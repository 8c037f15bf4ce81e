package vulnmetrics

import (
	"cmp"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// TopLimit is the number of crowsnest_vulnerability_top series.
const TopLimit = 20

// NewWindow is how far back crowsnest_findings_new_7d looks.
const NewWindow = 7 * 24 * time.Hour

// severities are the severity label values, worst first: all of them are
// exported, zeros included, so that no series vanishes.
var severities = []report.Severity{report.Critical, report.High, report.Medium, report.Low, report.Negligible, report.Unknown}

// Image states, the values of crowsnest_images' state label.
const (
	StateRunning    = "running"
	StateNotRunning = "not_running"
	StateFailed     = "failed"
	StateUnscanned  = "unscanned"
)

var (
	vulnsDesc = prometheus.NewDesc("crowsnest_vulnerabilities",
		"Findings in the images running now (digests some namespace's inventory lists), one per image digest and finding "+
			"(vulnerability id, affected package), by stored severity. Only active findings: not those a triage exception "+
			"suppresses in the cluster view (a cluster exception, or namespaced ones in every namespace running the image). "+
			"Every replica exports the same fleet values.",
		[]string{"severity"}, nil)
	nsVulnsDesc = prometheus.NewDesc("crowsnest_namespace_vulnerabilities",
		"Findings in the images running in each namespace (label workload_namespace: namespace is the scrape target's own), "+
			"an image counting in every namespace it runs in, by severity; active findings in that namespace's view (its own "+
			"exceptions and the cluster's suppress). At most --vuln-metrics-max-namespaces namespaces, those with the most critical+high findings; "+
			"crowsnest_namespace_vulnerabilities_truncated counts the others.",
		[]string{"workload_namespace", "severity"}, nil)
	// The KEV-listed part of the two gauges above, as families of their
	// own rather than a kev label on them: a label would split each
	// severity's series in two, and every existing `max by (severity)`
	// (replicas export the same values, so they are combined with max, not
	// sum) would silently report the larger half.
	kevVulnsDesc = prometheus.NewDesc("crowsnest_vulnerabilities_kev",
		"Of crowsnest_vulnerabilities, the findings listed in CISA's Known Exploited Vulnerabilities catalog, by severity.",
		[]string{"severity"}, nil)
	nsKEVVulnsDesc = prometheus.NewDesc("crowsnest_namespace_vulnerabilities_kev",
		"Of crowsnest_namespace_vulnerabilities, the findings listed in CISA's Known Exploited Vulnerabilities catalog, "+
			"for the same namespaces (label workload_namespace), by severity.",
		[]string{"workload_namespace", "severity"}, nil)
	nsTruncatedDesc = prometheus.NewDesc("crowsnest_namespace_vulnerabilities_truncated",
		"Namespaces running images that crowsnest_namespace_vulnerabilities leaves out (beyond --vuln-metrics-max-namespaces, "+
			"those with the fewest critical+high findings).",
		nil, nil)
	imagesDesc = prometheus.NewDesc("crowsnest_images",
		"Images (digests) by state: running (running now, with a report), not_running (with a report, not running now), "+
			"failed (running, no report, its last scan failed), unscanned (running, no report, its scan queued, in progress or unknown).",
		[]string{"state"}, nil)
	topDesc = prometheus.NewDesc("crowsnest_vulnerability_top",
		"The 20 vulnerability ids found in the most running images: the number of running images with an active finding "+
			"of the id (as crowsnest_vulnerabilities'); "+
			"severity is the worst stored for it.",
		[]string{"vulnerability", "severity"}, nil)
	newDesc = prometheus.NewDesc("crowsnest_findings_new_7d",
		"Findings of running images that a later report of the image (a rescan or a re-match) recorded as new in the last 7 days "+
			"and that its current report still has, by severity. An image's first report is a baseline: its findings are not new.",
		[]string{"severity"}, nil)
	overdueDesc = prometheus.NewDesc("crowsnest_findings_overdue",
		"Findings of the images running in each namespace (label workload_namespace) past their SLA deadline (results-api's --sla), "+
			"an image counting in every namespace it runs in, by severity; active findings, as crowsnest_namespace_vulnerabilities'. "+
			"Namespaces as crowsnest_namespace_vulnerabilities' "+
			"(at most --vuln-metrics-max-namespaces); a namespace without an overdue finding exports zeros.",
		[]string{"workload_namespace", "severity"}, nil)
	overdueKEVDesc = prometheus.NewDesc("crowsnest_findings_overdue_kev",
		"Of crowsnest_findings_overdue, the findings listed in CISA's KEV catalog, per namespace (label workload_namespace).",
		[]string{"workload_namespace"}, nil)
	refreshedDesc = prometheus.NewDesc("crowsnest_vulnerability_metrics_refreshed_timestamp_seconds",
		"Unix time of the last successful refresh of the vulnerability metrics from the store (absent before the first).",
		nil, nil)
)

// Collector serves the last snapshot of the vulnerability metrics: nothing
// until the first refresh succeeds. It is safe for concurrent use.
type Collector struct {
	snap atomic.Pointer[[]prometheus.Metric]
}

// NewCollector returns an empty collector.
func NewCollector() *Collector { return &Collector{} }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{vulnsDesc, nsVulnsDesc, kevVulnsDesc, nsKEVVulnsDesc, nsTruncatedDesc, imagesDesc, topDesc, newDesc, overdueDesc, overdueKEVDesc, refreshedDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if s := c.snap.Load(); s != nil {
		for _, m := range *s {
			ch <- m
		}
	}
}

// set replaces the snapshot with st's samples, at most maxNamespaces
// namespaces of them, refreshed at at.
func (c *Collector) set(st *store.VulnStats, maxNamespaces int, at time.Time) {
	var ms []prometheus.Metric
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		// A label value that is not valid UTF-8 (a vulnerability id or
		// namespace from outside) is an error here, not a panic: its
		// sample is left out.
		if m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, float64(v), labels...); err == nil {
			ms = append(ms, m)
		}
	}
	bySeverity := func(d *prometheus.Desc, counts report.Counts, labels ...string) {
		for _, s := range severities {
			gauge(d, count(counts, s), append(labels, s.String())...)
		}
	}
	bySeverity(vulnsDesc, st.Running)
	bySeverity(kevVulnsDesc, st.RunningKEV)
	bySeverity(newDesc, st.New)
	kept, cut := worstNamespaces(st.Namespaces, maxNamespaces)
	overdue := make(map[string]store.NamespaceOverdue, len(st.Overdue))
	for _, o := range st.Overdue {
		overdue[o.Namespace] = o
	}
	for _, n := range kept {
		bySeverity(nsVulnsDesc, n.Counts, n.Namespace)
		bySeverity(nsKEVVulnsDesc, n.KEV, n.Namespace)
		// Only the kept namespaces: the series stay as bounded as theirs.
		o := overdue[n.Namespace]
		bySeverity(overdueDesc, o.Counts, n.Namespace)
		gauge(overdueKEVDesc, o.KEV, n.Namespace)
	}
	gauge(nsTruncatedDesc, cut)
	gauge(imagesDesc, st.Images.Running, StateRunning)
	gauge(imagesDesc, st.Images.NotRunning, StateNotRunning)
	gauge(imagesDesc, st.Images.Failed, StateFailed)
	gauge(imagesDesc, st.Images.Unscanned, StateUnscanned)
	for _, v := range st.TopVulnerabilities {
		gauge(topDesc, v.Images, v.ID, v.Severity.String())
	}
	ms = append(ms, prometheus.MustNewConstMetric(refreshedDesc, prometheus.GaugeValue, float64(at.UnixNano())/1e9)) // no labels: cannot fail
	c.snap.Store(&ms)
}

// worstNamespaces keeps the max namespaces with the most critical+high
// findings (ties: by name) and says how many it left out.
func worstNamespaces(ns []store.NamespaceCounts, maxNamespaces int) ([]store.NamespaceCounts, int) {
	if len(ns) <= maxNamespaces {
		return ns, 0
	}
	s := slices.Clone(ns)
	slices.SortFunc(s, func(a, b store.NamespaceCounts) int {
		return cmp.Or(cmp.Compare(b.Counts.Critical+b.Counts.High, a.Counts.Critical+a.Counts.High), cmp.Compare(a.Namespace, b.Namespace))
	})
	return s[:maxNamespaces], len(ns) - maxNamespaces
}

func count(c report.Counts, s report.Severity) int {
	switch s {
	case report.Critical:
		return c.Critical
	case report.High:
		return c.High
	case report.Medium:
		return c.Medium
	case report.Low:
		return c.Low
	case report.Negligible:
		return c.Negligible
	}
	return c.Unknown
}
