package service_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const adminToken = "0123456789abcdef0123456789abcdef"

// The images: d1 runs in a, d2 in b, d3 in a and b, d4 in c (nobody's but
// the cluster readers'), d5 nowhere (a report of an image that stopped).
var d1, d2, d3, d4, d5 = bomtest.Digest(1), bomtest.Digest(2), bomtest.Digest(3), bomtest.Digest(4), bomtest.Digest(5)

type readEnv struct {
	t     *testing.T
	url   string
	svc   *service.Service
	clock *atomic.Int64 // offset added to time.Now for token expiry
}

// startReads runs the service with --read-auth=kubernetes against c, the
// proxy trusted from 127.0.0.1 only, the five reports stored and the
// inventory applied.
func startReads(t *testing.T, c *cluster) *readEnv {
	t.Helper()
	return startReadsWith(t, c, "")
}

// startReadsWith is startReads with the service connected to the NATS
// server at natsURL (none when empty).
func startReadsWith(t *testing.T, c *cluster, natsURL string) *readEnv {
	t.Helper()
	reviewer, err := authn.New(c.cfg, authn.Options{Audience: audience})
	if err != nil {
		t.Fatal(err)
	}
	e := &readEnv{t: t, clock: &atomic.Int64{}}
	now := func() time.Time { return time.Now().Add(time.Duration(e.clock.Load())) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc, err := service.New(ctx, service.Config{DatabaseURL: pgtest.NewDatabase(t), WriteToken: adminToken, NATSURL: natsURL,
		Reads: &service.ReadAuth{Reviewer: reviewer, Audience: audience, Client: kubernetes.NewForConfigOrDie(c.cfg), Now: now,
			Recheck: 100 * time.Millisecond,
			Proxy:   &authz.Proxy{UserHeader: "X-Remote-User", GroupsHeader: "X-Remote-Group", Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(svc.Handler)
	t.Cleanup(func() { svc.Hub.Close(); hs.Close(); svc.Close() })
	e.url, e.svc = hs.URL, svc
	srv := &apitest.Server{URL: hs.URL, Token: adminToken}
	for _, d := range []string{d1, d2, d3, d4, d5} {
		srv.PutReport(t, d, nil)
	}
	apply := func(ns string, at time.Time, digests ...string) {
		inv := store.Inventory{Namespace: ns, EventID: ns, Time: at}
		for i, d := range digests {
			inv.Entries = append(inv.Entries, store.InventoryEntry{Kind: "Deployment", Name: "w" + string(rune('a'+i)), Container: "c", Digest: d, Pods: 1})
		}
		if _, err := svc.Store.ApplyInventory(ctx, inv); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	apply("a", t0, d1, d3)
	apply("b", t0, d2, d3)
	apply("c", t0, d4)
	apply("gone", t0, d5)
	apply("gone", t0.Add(time.Minute)) // d5 stopped
	return e
}

// req sends a request with the given headers; "Bearer x" goes in
// Authorization.
func (e *readEnv) req(method, path string, body []byte, client *http.Client, hdr ...string) (int, http.Header, []byte) {
	e.t.Helper()
	r, err := http.NewRequest(method, e.url+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(r)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func (e *readEnv) get(path string, hdr ...string) (int, []byte) {
	e.t.Helper()
	code, _, b := e.req(http.MethodGet, path, nil, nil, hdr...)
	return code, b
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}

// seen collects the digests a caller sees through every read route and
// fails unless each route shows exactly want.
func (e *readEnv) expectVisible(who string, want []string, hdr ...string) {
	t := e.t
	t.Helper()
	want = sorted(want)
	check := func(route string, got []string) {
		t.Helper()
		if g := sorted(got); !slices.Equal(g, want) {
			t.Errorf("%s through %s sees %v, want %v", who, route, short(g), short(want))
		}
	}
	var list struct {
		Items []struct{ Digest string }
		Total int
	}
	code, b := e.get("/api/v1/reports?limit=2", hdr...)
	if code != http.StatusOK {
		t.Fatalf("%s: list %d %s", who, code, b)
	}
	decode(t, b, &list)
	if list.Total != len(want) || len(list.Items) != min(2, len(want)) {
		t.Errorf("%s: list total %d with %d items on a page of 2, want %d", who, list.Total, len(list.Items), len(want))
	}
	code, b = e.get("/api/v1/reports?limit=100", hdr...)
	if code != http.StatusOK {
		t.Fatalf("%s: list %d %s", who, code, b)
	}
	decode(t, b, &list)
	var digests []string
	for _, i := range list.Items {
		digests = append(digests, i.Digest)
	}
	check("list", digests)

	for _, route := range []string{"", "/bom", "/changes", "/sarif", "/findings.csv"} {
		var ok []string
		for _, d := range []string{d1, d2, d3, d4, d5} {
			code, b := e.get("/api/v1/reports/"+d+route, hdr...)
			switch code {
			case http.StatusOK:
				ok = append(ok, d)
			case http.StatusNotFound:
			default:
				t.Fatalf("%s: GET report%s %s: %d %s", who, route, d, code, b)
			}
		}
		check("report"+route, ok)
	}

	// The fleet CSV: one finding per image (apitest.SmallBOM), column 2
	// the digest.
	code, b = e.get("/api/v1/findings.csv?running=all", hdr...)
	if code != http.StatusOK {
		t.Fatalf("%s: findings.csv %d %s", who, code, b)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("%s: findings.csv: %v %s", who, err, b)
	}
	digests = nil
	for _, r := range rows[1:] {
		digests = append(digests, r[1])
	}
	check("findings.csv", digests)

	var vuln struct{ Images []struct{ Digest string } }
	digests = nil
	if code, b := e.get("/api/v1/vulnerabilities/CVE-2026-0001", hdr...); code == http.StatusOK {
		decode(t, b, &vuln)
		for _, i := range vuln.Images {
			digests = append(digests, i.Digest)
		}
	} else if code != http.StatusNotFound {
		t.Fatalf("%s: vulnerability %d %s", who, code, b)
	}
	check("vulnerability", digests)

	var stats struct {
		Images    int
		TopImages []struct{ Digest string }
	}
	_, b = e.get("/api/v1/stats", hdr...)
	decode(t, b, &stats)
	digests = nil
	for _, i := range stats.TopImages {
		digests = append(digests, i.Digest)
	}
	check("stats topImages", digests)
	if stats.Images != len(want) {
		t.Errorf("%s: stats images %d, want %d", who, stats.Images, len(want))
	}

	var changes struct{ Items []struct{ Digest string } }
	_, b = e.get("/api/v1/changes?limit=100", hdr...)
	decode(t, b, &changes)
	digests = nil
	for _, i := range changes.Items {
		digests = append(digests, i.Digest)
	}
	check("changes", digests)

	body, _ := json.Marshal(map[string][]string{"digests": {d1, d2, d3, d4, d5}})
	code, _, b = e.req(http.MethodPost, "/api/v1/reports/lookup", body, nil, append(hdr, "Content-Type", "application/json")...)
	if code != http.StatusOK {
		t.Fatalf("%s: lookup %d %s", who, code, b)
	}
	var lookup struct{ Reports []struct{ Digest string } }
	decode(t, b, &lookup)
	digests = nil
	for _, i := range lookup.Reports {
		digests = append(digests, i.Digest)
	}
	check("lookup", digests)
}

func short(ds []string) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = "d" + d[len(d)-1:]
	}
	return out
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// TestReadAuthorization plays every reader against a real kube-apiserver
// with real RBAC: each sees exactly its images through every read route; an
// image out of scope is 404; missing, expired, forged credentials and
// proxy headers from an untrusted peer are 401.
func TestReadAuthorization(t *testing.T) {
	c := newCluster(t)
	for _, ns := range []string{"users", "a", "b", "c"} {
		c.namespace(ns)
	}
	c.clusterRole("reports-reader", nil, "list")
	// As the chart ships it: aggregated to the built-in view role.
	c.clusterRole("crowsnest-view", map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}, "list", "get")
	alice, bob, admin, carol, operator, nobody := c.user("alice"), c.user("bob"), c.user("admin"), c.user("carol"), c.user("operator"), c.user("nobody")
	c.bind("a", "reports-reader", alice)
	c.bind("b", "reports-reader", bob)
	c.bind("", "reports-reader", admin)
	c.bind("", "reports-reader", operator)
	c.bind("a", "view", carol)
	_ = nobody
	c.waitAggregated()
	e := startReads(t, c)

	aliceToken := c.token("alice")
	t.Run("alice", func(t *testing.T) { e.t = t; e.expectVisible("alice", []string{d1, d3}, bearer(aliceToken)...) })
	t.Run("bob", func(t *testing.T) { e.t = t; e.expectVisible("bob", []string{d2, d3}, bearer(c.token("bob"))...) })
	t.Run("admin", func(t *testing.T) {
		e.t = t
		e.expectVisible("admin", []string{d1, d2, d3, d4, d5}, bearer(c.token("admin"))...)
	})
	t.Run("carol through view", func(t *testing.T) { e.t = t; e.expectVisible("carol", []string{d1, d3}, bearer(c.token("carol"))...) })
	t.Run("operator lookup", func(t *testing.T) {
		e.t = t
		e.expectVisible("operator", []string{d1, d2, d3, d4, d5}, bearer(c.token("operator"))...)
	})
	t.Run("nobody", func(t *testing.T) { e.t = t; e.expectVisible("nobody", nil, bearer(c.token("nobody"))...) })
	t.Run("static admin token", func(t *testing.T) {
		e.t = t
		e.expectVisible("static", []string{d1, d2, d3, d4, d5}, bearer(adminToken)...)
	})
	t.Run("trusted proxy", func(t *testing.T) {
		e.t = t
		e.expectVisible("proxied bob", []string{d2, d3}, "X-Remote-User", "system:serviceaccount:users:bob",
			"X-Remote-Group", "system:serviceaccounts, system:authenticated")
	})

	t.Run("access", func(t *testing.T) {
		e.t = t
		var a struct {
			User       string
			Cluster    bool
			Namespaces []string
		}
		code, b := e.get("/api/v1/access", bearer(aliceToken)...)
		decode(t, b, &a)
		if code != http.StatusOK || a.User != "system:serviceaccount:users:alice" || a.Cluster || !slices.Equal(a.Namespaces, []string{"a"}) {
			t.Errorf("alice's access: %d %s", code, b)
		}
		_, b = e.get("/api/v1/access", bearer(c.token("admin"))...)
		decode(t, b, &a)
		if !a.Cluster || len(a.Namespaces) != 0 {
			t.Errorf("admin's access: %s", b)
		}
	})

	t.Run("refused", func(t *testing.T) {
		e.t = t
		forged := forgedJWT(time.Now().Add(time.Hour))
		// Headers from 127.0.0.2: not the trusted proxy.
		untrusted := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
		for name, tc := range map[string]struct {
			client *http.Client
			hdr    []string
			code   string
		}{
			"anonymous":       {nil, nil, "unauthorized"},
			"not bearer":      {nil, []string{"Authorization", "Basic YWxpY2U6eA=="}, "unauthorized"},
			"forged":          {nil, bearer(forged), "invalid_token"},
			"garbage":         {nil, bearer("not-a-jwt"), "invalid_token"},
			"untrusted proxy": {untrusted, []string{"X-Remote-User", "system:serviceaccount:users:admin", "X-Remote-Group", "system:masters"}, "unauthorized"},
		} {
			for _, path := range []string{"/api/v1/reports", "/api/v1/reports/" + d1, "/api/v1/stats", "/api/v1/access", "/api/v1/events"} {
				code, h, b := e.req(http.MethodGet, path, nil, tc.client, tc.hdr...)
				var body struct{ Error struct{ Code string } }
				_ = json.Unmarshal(b, &body)
				if code != http.StatusUnauthorized || body.Error.Code != tc.code || h.Get("WWW-Authenticate") == "" {
					t.Errorf("%s GET %s: %d %s (WWW-Authenticate %q), want 401 %s", name, path, code, b, h.Get("WWW-Authenticate"), tc.code)
				}
			}
		}
		// Public: the document, probes, metrics.
		for _, path := range []string{"/api/v1/openapi.yaml", "/healthz", "/readyz", "/metrics"} {
			if code, _ := e.get(path); code != http.StatusOK {
				t.Errorf("GET %s without credentials: %d, want 200", path, code)
			}
		}
		// /readyz's details only for readers.
		if _, b := e.get("/readyz?verbose"); string(b) != "ok\n" {
			t.Errorf("anonymous /readyz?verbose: %q, want the bare verdict", b)
		}
		if _, b := e.get("/readyz?verbose", bearer(aliceToken)...); !bytes.Contains(b, []byte("[+]postgres ok")) {
			t.Errorf("alice's /readyz?verbose: %q, want the checks", b)
		}
		// Expired: the same real token, with the clock past its expiry
		// (TokenRequest issues no token shorter than 10 minutes).
		e.clock.Store(int64(12 * time.Minute))
		defer e.clock.Store(0)
		if code, b := e.get("/api/v1/reports", bearer(aliceToken)...); code != http.StatusUnauthorized {
			t.Errorf("expired token: %d %s, want 401", code, b)
		}
	})

	t.Run("inventory in the API", func(t *testing.T) {
		e.t = t
		adminTok := c.token("admin")
		list := func(query string, tok string) []string {
			t.Helper()
			code, b := e.get("/api/v1/reports?limit=100&"+query, bearer(tok)...)
			if code != http.StatusOK {
				t.Fatalf("list %s: %d %s", query, code, b)
			}
			var l struct{ Items []struct{ Digest string } }
			decode(t, b, &l)
			var out []string
			for _, i := range l.Items {
				out = append(out, i.Digest)
			}
			return sorted(out)
		}
		for _, tc := range []struct {
			who, query, token string
			want              []string
		}{
			{"admin", "namespace=b", adminTok, []string{d2, d3}},
			{"admin", "running=false", adminTok, []string{d5}},
			{"admin", "running=true", adminTok, []string{d1, d2, d3, d4}},
			{"admin", "workload=Deployment/wa&namespace=c", adminTok, []string{d4}},
			{"admin", "workload=Deployment/wa", adminTok, []string{d1, d2, d4}},
			{"admin", "workload=Deployment/wb", adminTok, []string{d3}},
			// d3 runs in b too: alice must not learn it from a filter.
			{"alice", "namespace=b", aliceToken, nil},
			{"alice", "running=false", aliceToken, nil},
		} {
			if got := list(tc.query, tc.token); !slices.Equal(got, sorted(tc.want)) {
				t.Errorf("%s ?%s: %v, want %v", tc.who, tc.query, short(got), short(sorted(tc.want)))
			}
		}
		// Workloads: the reader's namespaces only, with images and totals.
		workloads := func(query, tok string) []string {
			t.Helper()
			code, b := e.get("/api/v1/workloads?"+query, bearer(tok)...)
			if code != http.StatusOK {
				t.Fatalf("workloads %s: %d %s", query, code, b)
			}
			var l struct {
				Items []struct {
					Namespace, Kind, Name string
					Counts                struct{ High int }
					Images                []struct {
						Digest  string
						Scanned bool
					}
				}
				Truncated bool
			}
			decode(t, b, &l)
			var out []string
			for _, w := range l.Items {
				if len(w.Images) != 1 || !w.Images[0].Scanned || w.Counts.High != 1 {
					t.Errorf("workload %s/%s/%s: %+v, want one scanned image with one high finding", w.Namespace, w.Kind, w.Name, w)
					continue
				}
				out = append(out, w.Namespace+"/"+w.Name+"="+short([]string{w.Images[0].Digest})[0])
			}
			return out
		}
		for _, tc := range []struct {
			who, query, token string
			want              []string
		}{
			{"alice", "", aliceToken, []string{"a/wa=d1", "a/wb=d3"}},
			{"alice", "namespace=b", aliceToken, nil},
			{"admin", "", adminTok, []string{"a/wa=d1", "a/wb=d3", "b/wa=d2", "b/wb=d3", "c/wa=d4"}},
			{"admin", "namespace=b&minSeverity=high", adminTok, []string{"b/wa=d2", "b/wb=d3"}},
			{"admin", "minSeverity=critical", adminTok, nil},
		} {
			if got := workloads(tc.query, tc.token); !slices.Equal(got, tc.want) {
				t.Errorf("%s workloads ?%s: %v, want %v", tc.who, tc.query, got, tc.want)
			}
		}

		// runningIn: the workloads, limited to the reader's namespaces.
		type workload struct {
			Namespace, Kind, Name string
			Containers            []string
			Pods                  int
		}
		var detail struct{ RunningIn []workload }
		_, b := e.get("/api/v1/reports/"+d3, bearer(aliceToken)...)
		decode(t, b, &detail)
		if len(detail.RunningIn) != 1 || detail.RunningIn[0].Namespace != "a" || detail.RunningIn[0].Kind != "Deployment" ||
			detail.RunningIn[0].Name != "wb" || !slices.Equal(detail.RunningIn[0].Containers, []string{"c"}) || detail.RunningIn[0].Pods != 1 {
			t.Errorf("alice's runningIn of d3: %s", b)
		}
		var page struct {
			Items []struct {
				Digest    string
				RunningIn []workload
			}
		}
		_, b = e.get("/api/v1/reports?limit=100", bearer(adminTok)...)
		decode(t, b, &page)
		for _, it := range page.Items {
			var ns []string
			for _, w := range it.RunningIn {
				ns = append(ns, w.Namespace)
			}
			want := map[string][]string{d1: {"a"}, d2: {"b"}, d3: {"a", "b"}, d4: {"c"}, d5: nil}[it.Digest]
			if !slices.Equal(ns, want) {
				t.Errorf("admin's runningIn of %s: %v, want %v", short([]string{it.Digest}), ns, want)
			}
		}
	})

	t.Run("websocket", func(t *testing.T) {
		e.t = t
		e.expectEvents(map[string][]string{
			"alice": {d1, d3}, "bob": {d2, d3}, "admin": {d1, d2, d3, d4, d5}, "carol": {d1, d3},
		}, map[string]string{"alice": aliceToken, "bob": c.token("bob"), "admin": c.token("admin"), "carol": c.token("carol")})
	})

	t.Run("websocket closed at expiry", func(t *testing.T) {
		e.t = t
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ws := e.dial(ctx, c.token("alice"), true)
		defer ws.CloseNow()
		// Past the token's expiry: the next check closes the socket.
		e.clock.Store(int64(12 * time.Minute))
		defer e.clock.Store(0)
		_, _, err := ws.Read(ctx)
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Fatalf("after expiry the socket read %v, want close 1008", err)
		}
	})

	t.Run("websocket subprotocol token", func(t *testing.T) {
		e.t = t
		proto := authz.WebSocketProtocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(aliceToken))
		code, b := e.get("/api/v1/access", "Sec-WebSocket-Protocol", proto)
		if code != http.StatusOK || !bytes.Contains(b, []byte(`"namespaces":["a"]`)) {
			t.Errorf("token in the subprotocol: %d %s", code, b)
		}
	})
}

// dial opens /api/v1/events with token in the Authorization header, or
// (subprotocol) as the Kubernetes bearer subprotocol next to crowsnest.v1.
func (e *readEnv) dial(ctx context.Context, token string, subprotocol bool) *websocket.Conn {
	e.t.Helper()
	opts := &websocket.DialOptions{HTTPHeader: http.Header{}}
	if subprotocol {
		opts.Subprotocols = []string{hub.Subprotocol, authz.WebSocketProtocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(token))}
	} else {
		opts.HTTPHeader.Set("Authorization", "Bearer "+token)
	}
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http")+"/api/v1/events", opts)
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	if subprotocol && resp.Header.Get("Sec-WebSocket-Protocol") != hub.Subprotocol {
		e.t.Fatalf("server chose subprotocol %q, want %q", resp.Header.Get("Sec-WebSocket-Protocol"), hub.Subprotocol)
	}
	return ws
}

// expectEvents connects each user, stores every report again and checks
// that each user's socket delivers report.stored for exactly its images:
// d3 goes last and every user sees it, so that what came before it is all
// the user gets.
func (e *readEnv) expectEvents(want map[string][]string, tokens map[string]string) {
	t := e.t
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conns := map[string]*websocket.Conn{}
	for who, tok := range tokens {
		conns[who] = e.dial(ctx, tok, who == "alice")
		defer conns[who].CloseNow()
	}
	srv := &apitest.Server{URL: e.url, Token: adminToken}
	for _, d := range []string{d1, d2, d4, d5, d3} {
		srv.PutReport(t, d, bomtest.BOM(bomtest.Vuln{ID: "CVE-2026-0002", Severity: "critical", Package: "p", Version: "1"}))
	}
	for who, ws := range conns {
		var got []string
		for {
			_, msg, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("%s: read: %v", who, err)
			}
			var m struct {
				Type string
				Data struct{ Digest string }
			}
			decode(t, msg, &m)
			if m.Type != "report.stored" {
				continue
			}
			got = append(got, m.Data.Digest)
			if m.Data.Digest == d3 {
				break
			}
		}
		if g, w := sorted(got), sorted(want[who]); !slices.Equal(g, w) {
			t.Errorf("%s received report.stored for %v, want %v", who, short(g), short(w))
		}
	}
}

// forgedJWT is a well-formed token for the audience that no key signed.
func forgedJWT(exp time.Time) string {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	return enc(map[string]string{"alg": "RS256", "kid": "x"}) + "." +
		enc(map[string]any{"aud": []string{audience}, "exp": exp.Unix(), "iss": "https://kubernetes.default.svc.cluster.local",
			"sub": "system:serviceaccount:users:admin"}) + "." + base64.RawURLEncoding.EncodeToString([]byte("not a signature"))
}
