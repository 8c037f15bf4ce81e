package service_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestExceptionAudit: the audit states each exception exactly once, by
// the findings of the caller's view; a team sees the cluster exceptions
// and its own, never another team's; the gauge counts the cluster-wide
// audit.
func TestExceptionAudit(t *testing.T) {
	e := newExceptionEnv(t)
	in := func(d time.Duration) func(map[string]any) {
		return func(s map[string]any) { s["expiresAt"] = time.Now().Add(d).UTC().Format(time.RFC3339) }
	}
	e.except("team-a", "active", []string{"CVE-2024-0001"}, nil)
	e.except("team-a", "nothing", []string{"CVE-2099-9999"}, nil)
	// CVE-2024-0001 of bOnly exists, but bOnly runs only in team-b.
	e.except("team-a", "elsewhere", []string{"CVE-2024-0001"}, func(s map[string]any) { s["images"] = []any{bOnly} })
	e.except("team-a", "expired", []string{"CVE-2024-0003"}, in(-time.Hour))
	e.except("team-a", "forever", []string{"CVE-2024-0004"}, in(200*24*time.Hour))
	e.except("team-a", "soon", []string{"CVE-2024-0003"}, in(3*24*time.Hour))
	e.except("team-a", "until-fix", []string{"CVE-2024-0002"}, func(s map[string]any) { s["expiredOnFix"] = true })
	e.except("team-b", "b-stale", []string{"CVE-2099-0002"}, nil)
	e.except("", "curl", []string{"CVE-2024-0005"}, nil)
	e.except("", "ghost", []string{"CVE-2098-0001"}, nil)
	e.start()
	alice, carol := e.c.token("alice"), e.c.token("carol")

	type item struct {
		Exception struct{ Kind, Namespace, Name string }
		State     string
		Covered   int
	}
	audit := func(token, query string) ([]string, map[string]int) {
		t.Helper()
		code, b := e.get("/api/v1/exceptions/audit?"+query, "Authorization", "Bearer "+token)
		if code != http.StatusOK {
			t.Fatalf("audit?%s: %d %s", query, code, b)
		}
		var out struct {
			Items  []item
			Counts map[string]int
		}
		decode(t, b, &out)
		var names []string
		for _, i := range out.Items {
			names = append(names, i.Exception.Namespace+"/"+i.Exception.Name+"="+i.State)
		}
		slices.Sort(names)
		return names, out.Counts
	}
	got, counts := audit(alice, "")
	want := []string{"/curl=active", "/ghost=stale", "team-a/active=active", "team-a/elsewhere=stale", "team-a/expired=expired",
		"team-a/forever=invalid_expiry", "team-a/nothing=stale", "team-a/soon=expiring", "team-a/until-fix=lapsed_on_fix"}
	if !slices.Equal(got, want) {
		t.Errorf("alice's audit:\n got %v\nwant %v", got, want)
	}
	if counts["stale"] != 3 || counts["active"] != 2 || counts["expired"] != 1 {
		t.Errorf("alice's counts %v", counts)
	}
	if got, _ := audit(alice, "state=stale"); !slices.Equal(got, []string{"/ghost=stale", "team-a/elsewhere=stale", "team-a/nothing=stale"}) {
		t.Errorf("alice's stale exceptions: %v", got)
	}
	if got, _ := audit(carol, "state=stale"); !slices.Equal(got, []string{"/ghost=stale", "team-a/elsewhere=stale", "team-a/nothing=stale", "team-b/b-stale=stale"}) {
		t.Errorf("carol's stale exceptions: %v", got)
	}
	if code, _ := e.get("/api/v1/exceptions/audit?state=bad", "Authorization", "Bearer "+alice); code != http.StatusBadRequest {
		t.Errorf("state=bad: %d", code)
	}

	// The gauge: the cluster-wide audit, recomputed every 100 ms here.
	deadline := time.Now().Add(10 * time.Second)
	for {
		g := gauge(t, e, "crowsnest_results_api_exceptions")
		if g["stale"] == 4 && g["active"] == 2 && g["expiring"] == 1 && g["lapsed_on_fix"] == 1 && g["expired"] == 1 && g["invalid_expiry"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("crowsnest_results_api_exceptions = %v", g)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// gauge reads a gauge vector by its state label from the service's registry.
func gauge(t *testing.T, e *exceptionEnv, name string) map[string]float64 {
	t.Helper()
	mfs, err := e.svc.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			out[label(m, "state")] = m.GetGauge().GetValue()
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
