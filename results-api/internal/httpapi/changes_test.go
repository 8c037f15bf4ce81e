package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// scopes stands in for the authz.Gate, which needs a kube-apiserver
// (TestGateRoutesEachTokenToItsScope tests it on one): each token holds
// one write scope.
type scopes map[string]authz.Scope

func (s scopes) Authenticate(r *http.Request, token string) error {
	_, err := s.AuthenticateScope(r, token)
	return err
}

func (s scopes) AuthenticateScope(_ *http.Request, token string) (authz.Scope, error) {
	if sc, ok := s[token]; ok {
		return sc, nil
	}
	return "", authn.ErrBadToken
}

func withScopes() apitest.Option {
	return withConfig(func(c *service.Config) {
		c.Auth = scopes{"upload": authz.Upload, "rematch": authz.Rematch, "admin": authz.Admin}
	})
}

func (c *client) putAs(token, digest string, body []byte) (int, []byte) {
	c.t.Helper()
	return c.do(http.MethodPut, "/api/v1/reports/"+digest+"?image=registry.example/app@"+digest, body,
		"Authorization", "Bearer "+token, "Content-Type", "application/vnd.cyclonedx+json")
}

func vulns(ids ...string) []byte {
	var vs []bomtest.Vuln
	for _, id := range ids {
		sev, name, _ := strings.Cut(id, ":")
		vs = append(vs, bomtest.Vuln{ID: name, Severity: sev, Package: "pkg-" + name, Version: "1", Fix: "2"})
	}
	return bomtest.BOM(vs...)
}

// clean returns bom without its vulnerabilities: the same packages, no
// findings (a rematch changes findings only, never the components).
func clean(bom []byte) []byte {
	var doc map[string]any
	if err := json.Unmarshal(bom, &doc); err != nil {
		panic(err)
	}
	delete(doc, "vulnerabilities")
	out, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return out
}

func TestChangesEndpoints(t *testing.T) {
	c := newClient(t, withScopes())
	a, b := bomtest.Digest(1), bomtest.Digest(2)
	var sum api.ReportSummary
	for _, step := range []struct {
		token, digest string
		bom           []byte
		code          int
		cause         api.Cause
	}{
		{"upload", a, vulns("high:CVE-1", "low:CVE-2"), 201, api.Scan},
		{"upload", b, clean(vulns("medium:CVE-4")), 201, api.Scan}, // the package, no findings yet
		{"admin", a, vulns("high:CVE-1", "critical:CVE-3"), 200, api.Rescan},
		{"rematch", b, vulns("medium:CVE-4"), 200, api.Rematch},
		{"rematch", a, vulns("critical:CVE-3", "high:CVE-1"), 200, api.Rematch}, // same keys: no change
	} {
		code, body := c.putAs(step.token, step.digest, step.bom)
		if code != step.code || json.Unmarshal(body, &sum) != nil || sum.Cause != step.cause {
			t.Fatalf("PUT %s as %s: %d %s, want %d with cause %s", step.digest[len(step.digest)-1:], step.token, code, body, step.code, step.cause)
		}
	}

	var l api.ChangeList
	c.getJSON("/api/v1/reports/"+a+"/changes", &l)
	if len(l.Items) != 2 || l.Items[0].Cause != api.Rescan || !l.Items[1].Baseline || l.NextCursor != nil {
		t.Fatalf("changes of a: %+v", l)
	}
	ch := l.Items[0]
	if len(ch.New) != 1 || ch.New[0].Id != "CVE-3" || ch.New[0].Severity != api.SeverityCritical || ch.New[0].Package.Name != "pkg-CVE-3" ||
		ch.New[0].FixedIn == nil || !slices.Equal(*ch.New[0].FixedIn, []string{"2"}) ||
		len(ch.Resolved) != 1 || ch.Resolved[0].Id != "CVE-2" || ch.ResolvedCounts.Low != 1 || ch.NewCounts.Critical != 1 {
		t.Errorf("rescan of a: %+v", ch)
	}
	if l.Items[1].NewCounts.High != 1 || l.Items[1].NewCounts.Low != 1 || len(l.Items[1].New) != 0 {
		t.Errorf("baseline of a: %+v", l.Items[1])
	}
	var sumA api.ReportDetail
	c.getJSON("/api/v1/reports/"+a, &sumA)
	if sumA.Cause != api.Rematch || sumA.MatchedAt == nil {
		t.Errorf("detail of a: cause %s matchedAt %v", sumA.Cause, sumA.MatchedAt)
	}

	feed := func(query string) []string {
		t.Helper()
		var out []string
		path := "/api/v1/changes?limit=1&" + query
		for range 10 {
			var l api.ChangeList
			c.getJSON(path, &l)
			for _, ch := range l.Items {
				out = append(out, fmt.Sprintf("%s:%s:%d", ch.Digest[len(ch.Digest)-1:], ch.Cause, len(ch.New)+len(ch.Resolved)))
			}
			if l.NextCursor == nil {
				return out
			}
			path = "/api/v1/changes?limit=1&" + query + "&cursor=" + url.QueryEscape(*l.NextCursor)
		}
		t.Fatalf("feed %s does not end", query)
		return nil
	}
	if got, want := feed(""), []string{"2:rematch:1", "1:rescan:2", "2:scan:0", "1:scan:0"}; !slices.Equal(got, want) {
		t.Errorf("feed %v, want %v", got, want)
	}
	if got, want := feed("minSeverity=critical"), []string{"1:rescan:1"}; !slices.Equal(got, want) {
		t.Errorf("feed at critical %v, want %v (only the critical finding listed)", got, want)
	}
	if got, want := feed("cause=rematch"), []string{"2:rematch:1"}; !slices.Equal(got, want) {
		t.Errorf("rematch feed %v, want %v", got, want)
	}
	future := url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	if got := feed("since=" + future); len(got) != 0 {
		t.Errorf("feed since an hour ahead: %v", got)
	}

	for _, path := range []string{
		"/api/v1/changes?since=yesterday", "/api/v1/changes?minSeverity=none", "/api/v1/changes?minSeverity=CRITICAL",
		"/api/v1/changes?cause=upload", "/api/v1/changes?limit=0", "/api/v1/changes?limit=101",
		"/api/v1/changes?cursor=bogus", "/api/v1/reports/" + a + "/changes?cursor=bogus",
		"/api/v1/reports/sha256:nothex/changes",
	} {
		code, body := c.do(http.MethodGet, path, nil)
		if want := "invalid_query"; strings.Contains(path, "nothex") {
			want = "invalid_digest"
			if code != 400 || errorCode(t, body) != want {
				t.Errorf("GET %s: %d %s", path, code, body)
			}
		} else if code != 400 || errorCode(t, body) != want {
			t.Errorf("GET %s: %d %s, want 400 %s", path, code, body, want)
		}
	}
}

func TestPutVulnDB(t *testing.T) {
	c := newClient(t, withScopes())
	d := bomtest.Digest(1)
	if code, b := c.putAs("upload", d, vulns("high:CVE-1")); code != 201 {
		t.Fatalf("put: %d %s", code, b)
	}
	var before api.ReportDetail
	c.getJSON("/api/v1/reports/"+d, &before)
	put := func(token, digest, body string) (int, []byte) {
		t.Helper()
		hdr := []string{"Content-Type", "application/json"}
		if token != "" {
			hdr = append(hdr, "Authorization", "Bearer "+token)
		}
		return c.do(http.MethodPut, "/api/v1/reports/"+digest+"/vulndb", []byte(body), hdr...)
	}
	ok := `{"built":"2026-11-20T03:04:05Z","schema":"v6.1.2"}`
	for _, tc := range []struct {
		name, token, digest, body string
		code                      int
		errCode                   string
	}{
		{"no token", "", d, ok, 401, "unauthorized"},
		{"unknown token", "nobody", d, ok, 403, "forbidden"},
		{"upload scope", "upload", d, ok, 403, "forbidden"},
		{"rematch, no report", "rematch", bomtest.Digest(2), ok, 404, "not_found"},
		{"admin, no report", "admin", bomtest.Digest(2), ok, 404, "not_found"},
		{"empty body", "rematch", d, ``, 400, "invalid_vulndb"},
		{"not JSON", "rematch", d, `built=now`, 400, "invalid_vulndb"},
		{"built not RFC 3339", "rematch", d, `{"built":"2026-11-20","schema":"v6.1.2"}`, 400, "invalid_vulndb"},
		{"built a number", "rematch", d, `{"built":20261120,"schema":"v6.1.2"}`, 400, "invalid_vulndb"},
		{"schema not a version", "rematch", d, `{"built":"2026-11-20T03:04:05Z","schema":"six"}`, 400, "invalid_vulndb"},
		{"schema missing", "rematch", d, `{"built":"2026-11-20T03:04:05Z"}`, 400, "invalid_vulndb"},
		{"unknown field", "rematch", d, `{"built":"2026-11-20T03:04:05Z","schema":"v6","findings":[]}`, 400, "invalid_vulndb"},
		{"two objects", "rematch", d, ok + ok, 400, "invalid_vulndb"},
		{"too large", "rematch", d, `{"built":"2026-11-20T03:04:05Z","schema":"v6","x":"` + strings.Repeat("a", 2000) + `"}`, 413, "too_large"},
		{"bad digest", "rematch", "sha256:x", ok, 400, "invalid_digest"},
	} {
		code, body := put(tc.token, tc.digest, tc.body)
		if code != tc.code || errorCode(t, body) != tc.errCode {
			t.Errorf("%s: %d %s, want %d %s", tc.name, code, body, tc.code, tc.errCode)
		}
	}
	var after api.ReportDetail
	c.getJSON("/api/v1/reports/"+d, &after)
	if after.DbBuilt != before.DbBuilt || *after.MatchedAt != *before.MatchedAt {
		t.Fatalf("a refused PUT changed the report: %+v", after)
	}

	for i, token := range []string{"rematch", "admin"} {
		built := fmt.Sprintf("2026-11-2%dT00:00:00Z", i+1)
		if code, body := put(token, d, `{"built":"`+built+`","schema":"v6.1.`+fmt.Sprint(i)+`"}`); code != 204 || len(body) != 0 {
			t.Fatalf("%s: %d %s", token, code, body)
		}
		c.getJSON("/api/v1/reports/"+d, &after)
		if after.DbBuilt != built || after.DbSchema == nil || *after.DbSchema != "v6.1."+fmt.Sprint(i) ||
			!after.MatchedAt.After(before.MatchedAt.Add(-time.Millisecond)) || after.StoredAt != before.StoredAt ||
			after.FindingCount != 1 || after.Cause != api.Scan {
			t.Errorf("after %s: %+v", token, after)
		}
	}
	var l api.ChangeList
	c.getJSON("/api/v1/reports/"+d+"/changes", &l)
	if len(l.Items) != 1 {
		t.Errorf("vulndb records made changes: %+v", l.Items)
	}
}

// Without NATS the hub gets findings.changed straight from the handler.
func TestFindingsChangedReachesWebSocket(t *testing.T) {
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.srv.URL, "http")+"/api/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	d := bomtest.Digest(1)
	c.put(d, vulns("high:CVE-1"))
	c.put(d, vulns("critical:CVE-2"))
	var got []string
	for len(got) < 4 {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		var m struct {
			Type string
			Data map[string]any
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Type)
		if m.Type == "findings.changed" && m.Data["baseline"] == false {
			if nc := m.Data["newCounts"].(map[string]any); nc["critical"] != 1.0 || m.Data["cause"] != "rescan" {
				t.Errorf("change frame %s", b)
			}
		}
	}
	if want := []string{"report.stored", "findings.changed", "report.stored", "findings.changed"}; !slices.Equal(got, want) {
		t.Errorf("frames %v, want %v", got, want)
	}
}
