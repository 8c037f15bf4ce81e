package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// TestVulnDBPerTenant: the matcher announces its DB on NATS and GET
// /api/v1/vulndb shows it with its age; the reports are counted by the DB
// build they were matched against, scoped like every read. Bob (namespace
// b, real RBAC and TokenReview) counts only b's reports — not a's, not the
// cluster's — so the counts tell him nothing about images he cannot read;
// alice counts a's; a cluster reader counts every report.
func TestVulnDBPerTenant(t *testing.T) {
	c := newCluster(t)
	for _, ns := range []string{"users", "a", "b", "c"} {
		c.namespace(ns)
	}
	c.clusterRole("reports-reader", nil, "list")
	c.bind("a", "reports-reader", c.user("alice"))
	c.bind("b", "reports-reader", c.user("bob"))
	c.bind("", "reports-reader", c.user("carol"))
	_, natsURL := natstest.StartT(t)
	e := startReadsWith(t, c, natsURL)
	alice, bob, carol := c.token("alice"), c.token("bob"), c.token("carol")

	// a runs d1 and d3, b runs d2 and d3, c runs d4; d5 runs nowhere.
	const served, old, schema = "2026-11-20T00:00:00Z", "2026-11-01T00:00:00Z", "v6.1.10"
	for d, built := range map[string]string{d1: served, d3: served, d2: old} {
		// The same BOM again, now with the DB the scan matched against.
		code, _, b := e.req(http.MethodPut, "/api/v1/reports/"+d, apitest.SmallBOM(d), nil, "Authorization", "Bearer "+adminToken,
			"Content-Type", "application/vnd.cyclonedx+json", scan.HeaderDBBuilt, built, scan.HeaderDBSchema, schema)
		if code != http.StatusOK {
			t.Fatalf("PUT %s with its DB: %d %s", d, code, b)
		}
	}

	vulndb := func(token string) api.VulnDBStatus {
		t.Helper()
		code, b := e.get("/api/v1/vulndb", bearer(token)...)
		if code != http.StatusOK {
			t.Fatalf("GET /vulndb: %d %s", code, b)
		}
		var out api.VulnDBStatus
		decode(t, b, &out)
		return out
	}
	if st := vulndb(carol); st.Served != nil || st.Stale != 0 || st.Reports != 5 {
		t.Errorf("before any announcement: %+v, want no served DB, 5 reports, none stale", st)
	}

	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	builtAt, _ := time.Parse(time.RFC3339, served)
	announced := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	ev, err := eventsv1.New(eventsv1.SourceMatcher, eventsv1.TypeVulnDBUpdated, eventsv1.ID(eventsv1.TypeVulnDBUpdated, served), "db-1", announced,
		eventsv1.VulnDBUpdated{Built: builtAt, Schema: schema, Checksum: "sha256:" + d1[7:], Source: "import", GrypeVersion: "0.121.2"})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(ev)
	if err := nc.Publish(eventsv1.SubjectVulnDBUpdated, data); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return vulndb(carol).Served != nil })

	all := vulndb(carol)
	s := all.Served
	if !s.Built.Equal(builtAt) || s.Schema != schema || s.Source != "import" || s.GrypeVersion == nil || *s.GrypeVersion != "0.121.2" ||
		!s.AnnouncedAt.Equal(announced) || s.AgeSeconds < int64(time.Since(builtAt)/time.Second)-60 {
		t.Errorf("served DB %+v", s)
	}
	for _, tc := range []struct {
		who, token     string
		reports, stale int
		builds         map[string]int // built → reports
	}{
		{"carol (cluster)", carol, 5, 3, map[string]int{"": 2, served: 2, old: 1}},
		{"alice (a)", alice, 2, 0, map[string]int{served: 2}},
		{"bob (b)", bob, 2, 1, map[string]int{served: 1, old: 1}},
	} {
		st := vulndb(tc.token)
		got := map[string]int{}
		for _, b := range st.Builds {
			got[b.Built] = b.Reports
			if b.Current != (b.Built == served) {
				t.Errorf("%s: build %q current %v", tc.who, b.Built, b.Current)
			}
		}
		if st.Reports != tc.reports || st.Stale != tc.stale || len(got) != len(tc.builds) {
			t.Errorf("%s: %d reports, %d stale, builds %v; want %d, %d, %v", tc.who, st.Reports, st.Stale, got, tc.reports, tc.stale, tc.builds)
		}
		for built, n := range tc.builds {
			if got[built] != n {
				t.Errorf("%s: build %q counts %d, want %d", tc.who, built, got[built], n)
			}
		}
		if st.Served == nil || !st.Served.Built.Equal(builtAt) {
			t.Errorf("%s: served %+v", tc.who, st.Served)
		}
	}

	// An older announcement delivered late does not move the served DB back.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	oldAt, _ := time.Parse(time.RFC3339, old)
	late, _ := eventsv1.New(eventsv1.SourceMatcher, eventsv1.TypeVulnDBUpdated, eventsv1.ID(eventsv1.TypeVulnDBUpdated, old), "db-0", announced.Add(-time.Hour),
		eventsv1.VulnDBUpdated{Built: oldAt, Schema: schema, Checksum: "sha256:" + d2[7:], Source: "import"})
	data, _ = json.Marshal(late)
	if err := nc.Publish(eventsv1.SubjectVulnDBUpdated, data); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.svc.Store.RecordServedDB(ctx, store.ServedDB{Built: oldAt, Schema: schema,
		EventID: late.ID, AnnouncedAt: late.Time}); err != nil || ok {
		t.Errorf("an older announcement recorded: %v %v", ok, err)
	}
	if s := vulndb(carol).Served; s == nil || !s.Built.Equal(builtAt) {
		t.Errorf("served after a late older announcement: %+v", s)
	}
	if code, _ := e.get("/api/v1/vulndb"); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
}
