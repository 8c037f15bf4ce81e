package config

import (
	"os"
	"path/filepath"
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
	if rt.MinSeverity != "critical" || time.Duration(rt.GroupWait) != 30*time.Second || len(rt.Kinds) != 3 || rt.Has(KindResolved) {
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
	if !r.MatchFinding("critical", true) || !r.MatchFinding("high", true) || r.MatchFinding("medium", true) || r.MatchFinding("critical", false) {
		t.Error("severity/fixable")
	}
}

// TestParseErrors: every mistake is reported with where it is.
func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"empty":          {``, "no receivers"},
		"unknown field":  {"receivers: []\nroute: []\n", `unknown field "route"`},
		"no type":        {"receivers: [{name: x}]\nroutes: [{name: r, receiver: x}]", `receivers[0] "x": set exactly one of alertmanager, slack, webhook (0 set)`},
		"two types":      {"receivers: [{name: x, webhook: {url: 'http://h'}, alertmanager: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x}]", "(2 set)"},
		"bad url":        {"receivers: [{name: x, webhook: {url: 'ftp://h'}}]\nroutes: [{name: r, receiver: x}]", `webhook.url: "ftp://h": want an http or https URL`},
		"inline slack":   {"receivers: [{name: x, slack: {}}]\nroutes: [{name: r, receiver: x}]", "slack.webhookURLFile is required"},
		"bad mode":       {"receivers: [{name: x, webhook: {url: 'http://h', mode: json}}]\nroutes: [{name: r, receiver: x}]", `webhook.mode "json"`},
		"bad name":       {"receivers: [{name: X_1, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: X_1}]", "name must be a DNS label"},
		"dup receiver":   {"receivers: [{name: x, webhook: {url: 'http://h'}}, {name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x}]", "duplicate name"},
		"no receiver":    {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: nope}]", `receiver "nope" is not defined`},
		"bad severity":   {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, minSeverity: severe}]", `minSeverity "severe"`},
		"bad cause":      {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, causes: [push]}]", `causes: "push"`},
		"bad kind":       {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, kinds: [all]}]", `kinds: "all"`},
		"bad glob":       {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, namespaces: ['[a']}]", `glob "[a"`},
		"bad selector":   {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, namespaceSelector: 'env in prod'}]", "namespaceSelector"},
		"bad duration":   {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x, groupWait: 10}]", "duration"},
		"negative rate":  {"receivers: [{name: x, webhook: {url: 'http://h'}, ratePerMinute: -1}]\nroutes: [{name: r, receiver: x}]", "must be positive"},
		"bad threshold":  {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: x}]\nscanFailures: {threshold: -2}", "scanFailures"},
		"several errors": {"receivers: [{name: x, webhook: {url: 'http://h'}}]\nroutes: [{name: r, receiver: nope, minSeverity: severe}]", `receiver "nope" is not defined` + "\n" + `routes[0] "r": minSeverity`},
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
