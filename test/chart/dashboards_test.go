package charttest

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// dashboardConfigMaps are the chart's Grafana dashboards: ConfigMap name →
// the uid Grafana keeps it under (stable, so links and stars survive
// upgrades).
var dashboardConfigMaps = map[string]string{
	"ConfigMap/crowsnest-dashboard-vulnerabilities": "crowsnest-vulnerabilities",
	"ConfigMap/crowsnest-dashboard-operations":      "crowsnest-operations",
}

// targetLabels are the labels Prometheus (through a ServiceMonitor) puts on
// every scraped series, next to the metric's own.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "container", "endpoint"}

// fleetGauges are the results-api gauges every replica exports with the
// same fleet-wide values: a query must take one replica's (max, min), never
// add them up.
var fleetGauges = map[string]bool{
	"crowsnest_vulnerabilities": true, "crowsnest_namespace_vulnerabilities": true, "crowsnest_namespace_vulnerabilities_truncated": true,
	"crowsnest_images": true, "crowsnest_vulnerability_top": true, "crowsnest_findings_new_7d": true,
	"crowsnest_vulnerability_metrics_refreshed_timestamp_seconds": true,
}

// grafanaBuiltins stand in for Grafana's interval variables so that an
// expression parses as PromQL.
var grafanaBuiltins = strings.NewReplacer("$__rate_interval", "5m", "${__rate_interval}", "5m",
	"$__interval", "1m", "${__interval}", "1m", "$__range", "1h", "${__range}", "1h")

var dashboardVarRE = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"` // a collapsed row's
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// TestDashboards: with monitoring on, the two dashboard ConfigMaps render
// whether or not the cluster serves the Prometheus Operator API, carry the
// sidecar's label and the configured annotations, and hold dashboards whose
// every query is valid PromQL over metrics and labels the components'
// registries have (docs/metrics/*.md) and whose every $variable is defined.
func TestDashboards(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref := referenceMetrics(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"with the Prometheus Operator API", []string{"--api-versions", "monitoring.coreos.com/v1"}},
		{"without the Prometheus Operator API", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-f", "test/chart/testdata/values-notifier.yaml", "--set", "monitoring.enabled=true",
				"--set", "monitoring.dashboards.annotations.grafana_folder=Crowsnest"}, tc.args...)
			objs, err := Template(ctx, repoRoot, releaseNS, args...)
			if err != nil {
				t.Fatal(err)
			}
			uids := map[string]string{}
			for id, wantUID := range dashboardConfigMaps {
				cm := find(objs, id)
				if cm == nil {
					t.Errorf("%s not rendered", id)
					continue
				}
				if cm.GetLabels()["grafana_dashboard"] != "1" || cm.GetAnnotations()["grafana_folder"] != "Crowsnest" {
					t.Errorf("%s: labels %v, annotations %v; want grafana_dashboard=1 and grafana_folder=Crowsnest", id, cm.GetLabels(), cm.GetAnnotations())
				}
				d := dashboardOf(t, cm)
				if d.UID != wantUID {
					t.Errorf("%s: uid %q, want %q", id, d.UID, wantUID)
				}
				if other, dup := uids[d.UID]; dup {
					t.Errorf("%s and %s share uid %q", id, other, d.UID)
				}
				uids[d.UID] = id
				checkDashboard(t, id, d, ref)
			}
		})
	}
}

// TestDashboardsOff: no dashboard without monitoring, or with
// monitoring.dashboards.enabled=false.
func TestDashboardsOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, args := range [][]string{
		withScan("--api-versions", "monitoring.coreos.com/v1"),
		withScan("--set", "monitoring.enabled=true", "--set", "monitoring.dashboards.enabled=false", "--api-versions", "monitoring.coreos.com/v1"),
	} {
		objs, err := Template(ctx, repoRoot, releaseNS, args...)
		if err != nil {
			t.Fatal(err)
		}
		for id := range dashboardConfigMaps {
			if find(objs, id) != nil {
				t.Errorf("%v: %s rendered, want none", args, id)
			}
		}
	}
}

func dashboardOf(t *testing.T, cm *unstructured.Unstructured) dashboard {
	t.Helper()
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if len(data) != 1 {
		t.Fatalf("%s: %d data keys, want one dashboard", cm.GetName(), len(data))
	}
	var d dashboard
	for key, raw := range data {
		if !strings.HasSuffix(key, ".json") {
			t.Errorf("%s: data key %q does not end in .json (the sidecar loads *.json)", cm.GetName(), key)
		}
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			t.Fatalf("%s: %v", cm.GetName(), err)
		}
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("%s: uid %q, title %q: want both", cm.GetName(), d.UID, d.Title)
	}
	return d
}

func checkDashboard(t *testing.T, id string, d dashboard, ref map[string]refMetric) {
	t.Helper()
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type == "query" {
			q, _ := v.Query.(map[string]any)
			checkVariableQuery(t, id, v.Name, q, ref)
		}
	}
	if !vars["datasource"] {
		t.Errorf("%s: no datasource template variable", id)
	}
	panels := 0
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			panels++
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no target", id, p.Title)
			}
			for _, tg := range p.Targets {
				checkExpr(t, id+": panel "+p.Title, tg.Expr, vars, ref)
			}
		}
	}
	walk(d.Panels)
	if panels < 5 {
		t.Errorf("%s: %d panels, want a dashboard", id, panels)
	}
}

// checkVariableQuery: label_values(metric, label) names a real metric and
// one of its labels.
func checkVariableQuery(t *testing.T, id, name string, q map[string]any, ref map[string]refMetric) {
	t.Helper()
	query, _ := q["query"].(string)
	m := regexp.MustCompile(`^label_values\(([a-z_:][a-z0-9_:]*),\s*([a-z_][a-z0-9_]*)\)$`).FindStringSubmatch(query)
	if m == nil {
		t.Errorf("%s: variable %s: query %q is not label_values(metric, label)", id, name, query)
		return
	}
	if rm, _, ok := lookupMetric(ref, m[1]); !ok {
		t.Errorf("%s: variable %s reads %s, which no component's registry has", id, name, m[1])
	} else if !rm.labels[m[2]] {
		t.Errorf("%s: variable %s reads label %s, which %s does not have", id, name, m[2], m[1])
	}
}

// checkExpr parses expr as PromQL (Grafana's variables replaced) and checks
// each selector's metric and label names against the registries.
func checkExpr(t *testing.T, where, expr string, vars map[string]bool, ref map[string]refMetric) {
	t.Helper()
	if strings.TrimSpace(expr) == "" {
		t.Errorf("%s: empty expr", where)
		return
	}
	expr = grafanaBuiltins.Replace(expr)
	for _, m := range dashboardVarRE.FindAllStringSubmatch(expr, -1) {
		if !vars[m[1]] {
			t.Errorf("%s: $%s is not a template variable", where, m[1])
		}
	}
	// User variables only appear inside label matcher strings.
	expr = dashboardVarRE.ReplaceAllString(expr, "var")
	ast, err := parser.ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q is not PromQL: %v", where, expr, err)
		return
	}
	parser.Inspect(ast, func(n parser.Node, path []parser.Node) error {
		if agg, ok := n.(*parser.AggregateExpr); ok && !agg.Without {
			checkGrouping(t, where, agg, ref)
		}
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		rm, base, ok := lookupMetric(ref, vs.Name)
		if !ok {
			t.Errorf("%s reads %s, which no component's registry has (docs/metrics/*.md)", where, vs.Name)
			return nil
		}
		if fleetGauges[vs.Name] {
			checkFleetAggregation(t, where, vs.Name, path)
		}
		for _, lm := range vs.LabelMatchers {
			l := lm.Name
			if l == "__name__" || rm.labels[l] || slices.Contains(targetLabels, l) || (l == "le" && base != vs.Name) {
				continue
			}
			t.Errorf("%s selects label %s of %s, which has labels %v", where, l, vs.Name, rm.labels)
		}
		return nil
	})
}

// checkGrouping: each label an aggregation groups by is a label of a metric
// it reads (or a target label, or le of a histogram's buckets), so that a
// renamed label fails here instead of collapsing a panel into one series.
func checkGrouping(t *testing.T, where string, agg *parser.AggregateExpr, ref map[string]refMetric) {
	t.Helper()
	have := map[string]bool{}
	var names []string
	parser.Inspect(agg.Expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
			if rm, base, ok := lookupMetric(ref, vs.Name); ok {
				for l := range rm.labels {
					have[l] = true
				}
				have["le"] = have["le"] || (base != vs.Name && strings.HasSuffix(vs.Name, "_bucket"))
			}
		}
		return nil
	})
	for _, l := range agg.Grouping {
		if !have[l] && !slices.Contains(targetLabels, l) {
			t.Errorf("%s groups by %s, which none of %v has", where, l, names)
		}
	}
}

// checkFleetAggregation: the aggregation nearest a fleet gauge's selector
// is max or min, so that replicas are not added up.
func checkFleetAggregation(t *testing.T, where, name string, path []parser.Node) {
	t.Helper()
	for i := len(path) - 1; i >= 0; i-- {
		if agg, ok := path[i].(*parser.AggregateExpr); ok {
			if op := agg.Op.String(); op != "max" && op != "min" {
				t.Errorf("%s aggregates %s across results-api replicas with %s; take max (every replica exports the same values)", where, name, op)
			}
			return
		}
	}
	t.Errorf("%s reads %s without aggregating the results-api replicas (max by (…))", where, name)
}
