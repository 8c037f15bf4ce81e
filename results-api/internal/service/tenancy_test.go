package service_test

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestExceptionsPerTenant plays two teams, with their own tokens and real
// RBAC, running the same image (one report shared by both namespaces):
//
//   - team-a's exception suppresses CVE-2024-0001 in team-a's view only;
//     bob (team-b) still sees it active, and so does a cluster reader,
//     for whom the image also runs in team-b.
//   - bob, an attacker in team-b, writes exceptions in team-b that name the
//     shared image's digest: they change bob's view, not alice's.
//   - an exception past expiresAt, one expiring more than the maximum
//     lifetime after its creation, and one with expiredOnFix on a finding
//     that has a fix do not apply.
//   - a cluster exception suppresses everywhere.
//
// Suppressed findings are marked and counted, not deleted (suppressed=true
// and all show them).
func TestExceptionsPerTenant(t *testing.T) {
	e := newExceptionEnv(t)
	e.except("team-a", "parser", []string{"CVE-2024-0001"}, nil)
	e.except("team-a", "zlib-until-fix", []string{"CVE-2024-0002"}, func(s map[string]any) {
		s["status"], s["actionStatement"], s["expiredOnFix"] = "affected", "accepted until the fix ships", true
		delete(s, "justification")
	})
	e.except("team-a", "expired", []string{"CVE-2024-0003"}, func(s map[string]any) {
		s["expiresAt"] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	})
	e.except("team-a", "forever", []string{"CVE-2024-0004"}, func(s map[string]any) {
		s["expiresAt"] = time.Now().Add(200 * 24 * time.Hour).UTC().Format(time.RFC3339)
	})
	e.except("team-b", "attack", []string{"CVE-2024-0003", "CVE-2024-0004"}, func(s map[string]any) {
		s["images"] = []any{shared}
	})
	e.except("", "curl", []string{"CVE-2024-0005"}, nil)
	e.start()
	alice, bob, carol := e.c.token("alice"), e.c.token("bob"), e.c.token("carol")

	all := []string{"CVE-2024-0001", "CVE-2024-0002", "CVE-2024-0003", "CVE-2024-0004", "CVE-2024-0005"}
	for _, tc := range []struct {
		who, token, query string
		suppressed        []string
	}{
		{"alice (team-a)", alice, "", []string{"CVE-2024-0001", "CVE-2024-0005"}},
		{"bob (team-b)", bob, "", []string{"CVE-2024-0003", "CVE-2024-0004", "CVE-2024-0005"}},
		{"carol (cluster reader, both namespaces)", carol, "", []string{"CVE-2024-0005"}},
		{"carol viewing team-a", carol, "namespace=team-a&", []string{"CVE-2024-0001", "CVE-2024-0005"}},
		{"carol viewing team-b", carol, "namespace=team-b&", []string{"CVE-2024-0003", "CVE-2024-0004", "CVE-2024-0005"}},
		// A namespace outside alice's scope narrows her view to nothing:
		// team-b's exceptions never apply for her.
		{"alice asking for team-b's view", alice, "namespace=team-b&", []string{"CVE-2024-0005"}},
	} {
		var active []string
		for _, id := range all {
			if !slices.Contains(tc.suppressed, id) {
				active = append(active, id)
			}
		}
		got, d := e.findings(tc.token, shared, tc.query)
		if !slices.Equal(got, active) || d.ActiveFindings != len(active) || d.SuppressedFindings != len(tc.suppressed) {
			t.Errorf("%s sees active %v (counts %d active, %d suppressed), want %v", tc.who, got, d.ActiveFindings, d.SuppressedFindings, active)
		}
		if got, _ := e.findings(tc.token, shared, tc.query+"suppressed=true"); !slices.Equal(got, tc.suppressed) {
			t.Errorf("%s: suppressed=true lists %v, want %v", tc.who, got, tc.suppressed)
		}
		got, d = e.findings(tc.token, shared, tc.query+"suppressed=all")
		if !slices.Equal(got, all) {
			t.Errorf("%s: suppressed=all lists %v", tc.who, got)
		}
		for _, f := range d.Findings {
			if marked := f.Suppression != nil; marked != slices.Contains(tc.suppressed, f.ID) {
				t.Errorf("%s: %s marked %v", tc.who, f.ID, f.Suppression)
			}
		}
	}
	_, d := e.findings(alice, shared, "suppressed=true&sort=id")
	if s := d.Findings[0].Suppression; s.Exception.Kind != "VulnerabilityException" || s.Exception.Namespace != "team-a" ||
		s.Exception.Name != "parser" || s.Status != "not_affected" {
		t.Errorf("alice's CVE-2024-0001 marked %+v", s)
	}

	// The CVE view: the same rule per affected image.
	for _, tc := range []struct {
		who, token         string
		active, suppressed int
	}{
		{"alice", alice, 0, 1}, // the shared image only; bOnly is not hers
		{"bob", bob, 2, 0},
		{"carol", carol, 2, 0},
	} {
		code, b := e.get("/api/v1/vulnerabilities/CVE-2024-0001", "Authorization", "Bearer "+tc.token)
		if code != http.StatusOK {
			t.Fatalf("%s: CVE view %d %s", tc.who, code, b)
		}
		var v struct {
			ActiveImages, SuppressedImages int
			Images                         []struct{ Digest string }
		}
		decode(t, b, &v)
		if v.ActiveImages != tc.active || v.SuppressedImages != tc.suppressed || len(v.Images) != tc.active {
			t.Errorf("%s: CVE view %d active, %d suppressed, %d listed; want %d, %d", tc.who, v.ActiveImages, v.SuppressedImages,
				len(v.Images), tc.active, tc.suppressed)
		}
	}
	if code, b := e.get("/api/v1/reports/"+shared+"?suppressed=maybe", "Authorization", "Bearer "+alice); code != http.StatusBadRequest {
		t.Errorf("suppressed=maybe: %d %s", code, b)
	}
}
