package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// TestBatchVulnDBRecordNeedsRematchScope plays a scan Pod against the
// batch DB record (PUT /api/v1/reports/vulndb) with the real write gate
// and Pod-bound tokens from a real kube-apiserver: the route takes the
// matcher's rematch scope as PUT …/{digest}/vulndb does, and a scan Pod's
// token (bound to its Pod, or not) cannot mark other reports as matched
// against a DB — which would hide them from the next re-match pass.
func TestBatchVulnDBRecordNeedsRematchScope(t *testing.T) {
	cfg := kubetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k := &kube{t: t, ctx: ctx, c: kubernetes.NewForConfigOrDie(cfg)}
	k.serviceAccount(matcherNS, matcherSA)
	k.serviceAccount(scansNS, scanSA)
	dA, dB := bomtest.Digest(0xa), bomtest.Digest(0xb)
	matcher := k.token(matcherNS, matcherSA, k.pod(matcherNS, "matcher-0", matcherSA, nil))
	scanner := k.token(scansNS, scanSA, k.pod(scansNS, "scan-a-x1", scanSA, k.scanJob("scan-a", dA)))
	scanUnbound := k.token(scansNS, scanSA, nil)

	reviewer, err := authn.New(cfg, authn.Options{Audience: scan.TokenAudience, Allowed: []string{scansNS + "/*"}})
	must(t, err)
	az, err := authz.New(k.c, authz.Options{RematchServiceAccounts: []string{matcherNS + "/" + matcherSA}, ScanServiceAccount: scanSA})
	must(t, err)
	srv := apitest.Start(t, func(c *service.Config) {
		c.Gate = &authz.Gate{Reviewer: reviewer, Authz: az, Audience: scan.TokenAudience}
	})
	srv.PutReport(t, dA, bomtest.BOM(bomtest.Random(7, 3)...))
	srv.PutReport(t, dB, bomtest.BOM(bomtest.Random(8, 3)...))
	built := "2099-01-01T00:00:00Z"
	body := []byte(`{"built":"` + built + `","schema":"v6.1.0","digests":["` + dA + `","` + dB + `"]}`)
	put := func(token string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPut, srv.URL+"/api/v1/reports/vulndb", bytes.NewReader(body))
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		t.Logf("PUT /reports/vulndb: %d %s", resp.StatusCode, bytes.TrimSpace(b))
		return resp.StatusCode
	}
	for name, token := range map[string]string{"scan Pod's token": scanner, "scan service account's unbound token": scanUnbound} {
		if code := put(token); code != http.StatusForbidden {
			t.Errorf("%s: HTTP %d, want 403", name, code)
		}
	}
	for _, d := range []string{dA, dB} {
		if got := dbBuilt(t, srv, d); got == built {
			t.Errorf("%s: DB recorded by a scan token", d)
		}
	}
	if code := put(matcher); code != http.StatusOK {
		t.Fatalf("matcher's Pod-bound token: HTTP %d, want 200", code)
	}
	for _, d := range []string{dA, dB} {
		if got := dbBuilt(t, srv, d); got != built {
			t.Errorf("%s: dbBuilt %q after the matcher's record, want %s", d, got, built)
		}
	}
}

func dbBuilt(t *testing.T, srv *apitest.Server, digest string) string {
	t.Helper()
	var s struct {
		DBBuilt string `json:"dbBuilt"`
	}
	must(t, json.Unmarshal(get(t, srv, "/api/v1/reports/"+digest+"?findingsLimit=1"), &s))
	return s.DBBuilt
}
