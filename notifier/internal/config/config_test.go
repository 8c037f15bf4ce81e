package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte(`
receivers:
- name: am
  alertmanager: {url: "http://alertmanager:9093"}
routes:
- name: prod
  receiver: am
  namespaceSelector: "env in (prod),team!=sandbox"
`))
	if err != nil {
		t.Fatal(err)
	}
	r, rt := c.Receivers[0], c.Routes[0]
	if r.RatePerMinute != 30 || r.MaxAttempts != 6 || r.QueueSize != 100 || time.Duration(r.Timeout) != 10*time.Second ||
		time.Duration(r.Alertmanager.AlertDuration) != 24*time.Hour {
		t.Fatalf("receiver defaults %+v", r)
	}
	if rt.MinSeverity != "critical" || time.Duration(rt.GroupWait) != 30*time.Second || len(rt.Kinds) != 4 || !rt.Has(KindKEV) || rt.Has(KindResolved) {
		t.Fatalf("route defaults %+v", rt)
	}
	if c.ScanFailures.Threshold != 3 || time.Duration(c.ScanFailures.Window) != time.Hour {
		t.Fatalf("scan failure defaults %+v", c.ScanFailures)
	}
	if !rt.MatchNamespace("shop", map[string]string{"env": "prod", "team": "web"}) ||
		rt.MatchNamespace("shop", map[string]string{"env": "prod", "team": "sandbox"}) || rt.MatchNamespace("shop", nil) {
		t.Fatal("label selector")
	}
}

func TestMatch(t *testing.T) {
	r := Route{Namespaces: []string{"team-*", "ops"}, MinSeverity: "high", Causes: []string{"rematch"}, FixableOnly: true}
	if errs := r.check(); len(errs) > 0 {
		t.Fatal(errs)
	}
	for ns, want := range map[string]bool{"team-a": true, "ops": true, "opsx": false, "default": false} {
		if got := r.MatchNamespace(ns, nil); got != want {
			t.Errorf("namespace %s: %v, want %v", ns, got, want)
		}
	}
	if !r.MatchCause("rematch") || r.MatchCause("scan") {
		t.Error("cause")
	}
	if !r.MatchFinding(Finding{Severity: "critical", Fixable: true}) || !r.MatchFinding(Finding{Severity: "high", Fixable: true}) ||
		r.MatchFinding(Finding{Severity: "medium", Fixable: true}) || r.MatchFinding(Finding{Severity: "critical"}) {
		t.Error("severity/fixable")
	}
}

// TestMatchRisk: a kev route takes only KEV-listed findings, a minEpss
// route only findings scored at or above it (none without a score), both
// together both, and each still at or above minSeverity.
func TestMatchRisk(t *testing.T) {
	c, err := Parse([]byte(`receivers: [{name: x, webhook: {url: 'http://h'}}]
routes:
- {name: kev, receiver: x, minSeverity: high, kev: true}
- {name: epss, receiver: x, minSeverity: low, minEpss: 0.5}
- {name: both, receiver: x, minSeverity: low, kev: true, minEpss: 0.1}
- {name: plain, receiver: x, minSeverity: low}`))
	if err != nil {
		t.Fatal(err)
	}
	score := func(v float64) *float64 { return &v }
	kev, kevLow := Finding{Severity: "critical", KEV: true}, Finding{Severity: "low", KEV: true, EPSS: score(0.9)}
	likely, unlikely, unscored := Finding{Severity: "high", EPSS: score(0.5)}, Finding{Severity: "critical", EPSS: score(0.49)}, Finding{Severity: "critical"}
	for _, tc := range []struct {
		route string
		f     Finding
		want  bool
	}{
		{"kev", kev, true}, {"kev", kevLow, false}, {"kev", likely, false}, {"kev", unscored, false},
		{"epss", likely, true}, {"epss", kevLow, true}, {"epss", unlikely, false}, {"epss", unscored, false}, {"epss", kev, false},
		{"both", kevLow, true}, {"both", kev, false}, {"both", likely, false},
		{"plain", unscored, true}, {"plain", kevLow, true},
	} {
		r := &c.Routes[slices.IndexFunc(c.Routes, func(r Route) bool { return r.Name == tc.route })]
		if got := r.MatchFinding(tc.f); got != tc.want {
			t.Errorf("route %s, finding %+v: %v, want %v", tc.route, tc.f, got, tc.want)
		}
	}
	if !c.Routes[0].FiltersFindings() || !c.Routes[1].FiltersFindings() || c.Routes[3].FiltersFindings() {
		t.Error("FiltersFindings")
	}
}

// TestParseErrors: every mistake is reported with where it is.
func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"empty":            {``, "no receivers"},
		"unknown field":    {"receivers: []\nroute: []\n", `unknown field "route"`},
		"no type":          {"receivers: [{name: x}]\nroutes: [{name: r, receiver: x}]", `receivers[0] "x": set exactly one of alertmanager, slack, webhook (0 set)`},
		"two types":        {"receivers: [{name: x, webhook: {url: 'http://h'}, alertmanager: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x}]", "(2 set)"},
		"bad url":          {"receivers: [{name: x, webhook: {url: 'ftp://h'}}]\nroutes: [{name: r, receiver: x}]", `webhook.url: "ftp://h": want an http or https URL`},
		"inline slack":     {"receivers: [{name: x, slack: {}}]\nroutes: [{name: r, receiver: x}]", "slack.webhookURLFile is required"},
		"bad mode":         {"receivers: [{name: x, webhook: {url: 'http://h', mode: json}}]\nroutes: [{name: r, receiver: x}]", `webhook.mode "json"`},
		"bad name":         {"receivers: [{name: X_1, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: X_1}]", "name must be a DNS label"},
		"dup receiver":     {"receivers: [{name: x, webhook: {url: 'http://h'}}, {name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x}]", "duplicate name"},
		"no receiver":      {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: nope}]", `receiver "nope" is not defined`},
		"bad severity":     {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, minSeverity: severe}]", `minSeverity "severe"`},
		"bad cause":        {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, causes: [push]}]", `causes: "push"`},
		"minEpss above 1":  {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, minEpss: 1.5}]", `minEpss 1.5: want an EPSS probability from 0 to 1`},
		"negative minEpss": {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, minEpss: -0.1}]", `minEpss -0.1`},
		"minEpss a word":   {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, minEpss: likely}]", `minEpss`},
		"kev not a bool":   {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, kev: sometimes}]", `kev`},
		"bad kind":         {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, kinds: [all]}]", `kinds: "all"`},
		"bad glob":         {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, namespaces: ['[a']}]", `glob "[a"`},
		"bad selector":     {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, namespaceSelector: 'env in prod'}]", "namespaceSelector"},
		"bad duration":     {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, groupWait: 10}]", "duration"},
		"negative rate":    {"receivers: [{name: x, webhook: {url: 'http://h'}, ratePerMinute: -1}]\nroutes: [{name: r, receiver: x}]", "must be positive"},
		"bad threshold":    {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x}]\nscanFailures: {threshold: -2}", "scanFailures"},
		"several errors":   {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: nope, minSeverity: severe}]", `receiver "nope" is not defined` + "\n" + `routes[0] "r": minSeverity`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadAndSecrets(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, MaxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSecret(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized secret: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSecret(empty); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("empty secret: %v", err)
	}
}
