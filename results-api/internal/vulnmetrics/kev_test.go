package vulnmetrics_test

import (
	"maps"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
)

// kevVuln is vuln listed in CISA's KEV catalog.
func kevVuln(id string, sev report.Severity, pkg string) report.Finding {
	f := vuln(id, sev, pkg)
	f.Risk.KEV = true
	return f
}

// TestKEVGauges exports the KEV-listed part of the running findings, fleet
// wide and per namespace, exactly: a KEV finding of an image that runs in
// two namespaces counts in both, one of an image that runs nowhere counts
// nowhere, unlisted findings never; a namespace without any exports zeros.
func TestKEVGauges(t *testing.T) {
	st, _ := open(t)
	k1, k2 := kevVuln("CVE-K1", report.Critical, "a"), kevVuln("CVE-K2", report.High, "b")
	plain := vuln("CVE-P", report.Critical, "c")
	put(t, st, 1, now, k1, k2, plain) // runs in alpha and beta
	put(t, st, 2, now, k2, plain)     // runs in beta
	put(t, st, 3, now, k1)            // runs nowhere
	put(t, st, 4, now, plain)         // runs in gamma: no KEV finding
	apply(t, st, "alpha", 1, run("web", 1))
	apply(t, st, "beta", 1, run("api", 1), run("db", 2))
	apply(t, st, "gamma", 1, run("job", 4))
	r, m := refresher(st, vulnmetrics.Options{})
	refresh(t, r)

	got := samplesOf(t, m.Registry, "crowsnest_vulnerabilities_kev", "crowsnest_namespace_vulnerabilities_kev")
	w := want{}.
		sev("crowsnest_vulnerabilities_kev", "", 1, 2, 0, 0, 0, 0).
		sev("crowsnest_namespace_vulnerabilities_kev", ns("alpha"), 1, 1, 0, 0, 0, 0).
		sev("crowsnest_namespace_vulnerabilities_kev", ns("beta"), 1, 2, 0, 0, 0, 0).
		sev("crowsnest_namespace_vulnerabilities_kev", ns("gamma"), 0, 0, 0, 0, 0, 0)
	if !maps.Equal(got, map[string]float64(w)) {
		for k, v := range w {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		for k := range got {
			if _, ok := w[k]; !ok {
				t.Errorf("unexpected %s", k)
			}
		}
	}
	// The totals stay every finding, KEV-listed or not.
	all := samples(t, m.Registry)
	if c := all[`crowsnest_vulnerabilities{severity="critical"}`]; c != 4 {
		t.Errorf("crowsnest_vulnerabilities{critical} = %v, want 4 (images 1 (two), 2 and 4; KEV and not)", c)
	}
}
