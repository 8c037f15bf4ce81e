package httpapi_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// sarifSchema compiles the official SARIF 2.1.0 JSON schema, committed in
// internal/export/testdata (its README names the source).
func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "export", "testdata", "sarif-schema-2.1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("sarif-schema-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// get sends a GET and returns status, headers and body.
func (c *client) get(path string) (int, http.Header, []byte) {
	c.t.Helper()
	resp, err := c.srv.Client().Get(c.srv.URL + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, resp.Header, b
}

func (c *client) putFixture(fx fixture) {
	c.t.Helper()
	raw, err := os.ReadFile(filepath.Join(grypeDir, fx.File))
	if err != nil {
		c.t.Fatal(err)
	}
	if code, b := c.put(fx.Digest, raw); code != http.StatusCreated && code != http.StatusOK {
		c.t.Fatalf("PUT %s: %d %s", fx.Name, code, b)
	}
}

type sarifRun struct {
	Tool struct {
		Driver struct {
			Name, Version  string
			InformationURI string `json:"informationUri"`
			Rules          []struct{ ID string }
		}
	}
	Results []struct {
		RuleID              string
		Message             struct{ Text string }
		PartialFingerprints map[string]string
	}
}

// Every real Grype fixture, the 3,000-finding one included, comes out as
// a SARIF log that the official schema accepts, with one rule per distinct
// vulnerability id and one result per finding.
func TestSARIFOfGrypeFixtures(t *testing.T) {
	m := loadManifest(t)
	schema := sarifSchema(t)
	c := newClient(t)
	for _, fx := range m.Fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			c := &client{t: t, srv: c.srv}
			c.putFixture(fx)
			code, hdr, b := c.get("/api/v1/reports/" + fx.Digest + "/sarif")
			if code != http.StatusOK || hdr.Get("Content-Type") != "application/sarif+json" ||
				!strings.Contains(hdr.Get("Content-Disposition"), `filename="`+fx.Digest[7:19]+`.sarif"`) {
				t.Fatalf("GET sarif: %d %v %.200s", code, hdr, b)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			if err := schema.Validate(inst); err != nil {
				t.Fatalf("not SARIF 2.1.0: %v", err)
			}
			var log struct {
				Version string
				Runs    []sarifRun
			}
			if err := json.Unmarshal(b, &log); err != nil || len(log.Runs) != 1 {
				t.Fatalf("%v, %d runs", err, len(log.Runs))
			}
			run := log.Runs[0]
			d := run.Tool.Driver
			if log.Version != "2.1.0" || d.Name != "Crowsnest (Grype)" || d.Version != m.GrypeVersion || d.InformationURI == "" {
				t.Errorf("version %s, driver %s %s %s", log.Version, d.Name, d.Version, d.InformationURI)
			}
			if len(d.Rules) != fx.DistinctIDs || len(run.Results) != fx.Findings {
				t.Errorf("%d rules, %d results; the report has %d vulnerability ids, %d findings",
					len(d.Rules), len(run.Results), fx.DistinctIDs, fx.Findings)
			}
			rules := map[string]bool{}
			for _, r := range d.Rules {
				rules[r.ID] = true
			}
			for _, id := range fx.VulnerabilityIDs {
				if !rules[id] {
					t.Errorf("no rule for %s", id)
				}
			}
			prints := map[string]bool{}
			for _, r := range run.Results {
				if !rules[r.RuleID] || !strings.Contains(r.Message.Text, " is affected by "+r.RuleID+"; ") {
					t.Errorf("result %+v", r)
				}
				prints[r.PartialFingerprints["crowsnestFinding/v1"]] = true
			}
			if len(prints) != fx.Findings {
				t.Errorf("%d distinct fingerprints for %d findings", len(prints), fx.Findings)
			}
		})
	}
}

// The same image built again (a new digest, the same findings) keeps its
// fingerprints, so GitHub code scanning follows its alerts.
func TestSARIFFingerprintsStableAcrossDigests(t *testing.T) {
	fx := loadManifest(t).Fixtures[0]
	c := newClient(t)
	c.putFixture(fx)
	raw, err := os.ReadFile(filepath.Join(grypeDir, fx.File))
	if err != nil {
		t.Fatal(err)
	}
	other := bomtest.Digest(99)
	if code, b := c.put(other, raw); code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", code, b)
	}
	prints := func(digest string) []string {
		var log struct{ Runs []sarifRun }
		_, _, b := c.get("/api/v1/reports/" + digest + "/sarif")
		if err := json.Unmarshal(b, &log); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range log.Runs[0].Results {
			out = append(out, r.PartialFingerprints["crowsnestFinding/v1"])
		}
		slices.Sort(out)
		return out
	}
	if a, b := prints(fx.Digest), prints(other); !slices.Equal(a, b) || len(a) != fx.Findings {
		t.Errorf("fingerprints differ between two digests of the same findings:\n%v\n%v", a, b)
	}
}

func TestExportErrors(t *testing.T) {
	c := newClient(t)
	for _, path := range []string{"/api/v1/reports/" + bomtest.Digest(5) + "/sarif", "/api/v1/reports/" + bomtest.Digest(5) + "/findings.csv"} {
		if code, _, b := c.get(path); code != http.StatusNotFound || errorCode(t, b) != "not_found" {
			t.Errorf("%s: %d %s", path, code, b)
		}
	}
	for _, path := range []string{"/api/v1/reports/sha256:nope/sarif", "/api/v1/findings.csv?limit=0", "/api/v1/findings.csv?limit=200001",
		"/api/v1/findings.csv?minSeverity=none", "/api/v1/findings.csv?workload=web", "/api/v1/findings.csv?running=maybe"} {
		if code, _, b := c.get(path); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", path, code, b)
		}
	}
}

// readCSV parses a CSV response and checks its header row.
func readCSV(t *testing.T, b []byte) [][]string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, b)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != "image,digest,vulnerability,severity,package,version,type,fixed_in,cvss,namespaces,workloads,kev,epss,risk,grype_version,db_built,db_schema,"+
		"suppressed,suppressed_by,vex_status,vex_justification,suppression_statement,action_statement,expires_at" {
		t.Fatalf("header = %q", rows)
	}
	return rows[1:]
}

// applyInventory records, as the operator's inventory would, which
// workloads run which digests.
func applyInventory(t *testing.T, c *client, ns string, entries ...store.InventoryEntry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, c.srv.DatabaseURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.ApplyInventory(ctx, store.Inventory{Namespace: ns, EventID: ns, Time: time.Now(), Entries: entries}); err != nil {
		t.Fatal(err)
	}
}

func runs(kind, name, digest string) store.InventoryEntry {
	return store.InventoryEntry{Kind: kind, Name: name, Container: "app", Digest: digest, Pods: 1}
}

// The node fixture's CSV, row for row: real Grype output in, the columns
// a spreadsheet gets out, ordered by vulnerability id and package.
func TestReportCSVRows(t *testing.T) {
	var node fixture
	for _, fx := range loadManifest(t).Fixtures {
		if fx.Name == "node" {
			node = fx
		}
	}
	c := newClient(t)
	c.putFixture(node)
	applyInventory(t, c, "shop", runs("Deployment", "web", node.Digest), runs("CronJob", "report", node.Digest))
	code, hdr, b := c.get("/api/v1/reports/" + node.Digest + "/findings.csv")
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/csv") ||
		hdr.Get("Content-Disposition") != `attachment; filename="`+node.Digest[7:19]+`-findings.csv"` {
		t.Fatalf("GET csv: %d %v %s", code, hdr, b)
	}
	img, d := "registry.example/app@"+node.Digest, node.Digest
	where := []string{"shop", "shop/CronJob/report; shop/Deployment/web"}
	unrated := []string{"false", "", "0"}
	// Grype's CycloneDX names its release but not its DB, and the fixture is
	// uploaded without the uploader's DB headers: the DB is unknown.
	provenance := []string{"0.121.2", "", ""}
	row := func(risk []string, cells ...string) []string {
		active := []string{"false", "", "", "", "", "", ""} // no exceptions: the suppression columns are empty
		return append(append(append(append(append([]string{img, d}, cells...), where...), risk...), provenance...), active...)
	}
	// Grype's own risk scores for lodash and minimist (its JSON output,
	// testdata/grype/manifest.json), computed here from the CycloneDX.
	want := [][]string{
		row(unrated, "GHSA-29mw-wpgm-hmr9", "medium", "lodash", "4.17.15", "npm", "4.17.21", "5.3"),
		row(unrated, "GHSA-35jh-r3h4-6jhm", "high", "lodash", "4.17.15", "npm", "4.17.21", "7.2"),
		row(unrated, "GHSA-c2qf-rxjj-qqgw", "high", "semver", "7.5.1", "npm", "7.5.2", "7.5"),
		row([]string{"false", "0.034", "2.5330000000000004"}, "GHSA-p6mc-m468-83gw", "high", "lodash", "4.17.15", "npm", "4.17.19", "7.4"),
		row([]string{"false", "0.009", "0.8460000000000001"}, "GHSA-xvch-5gv4-984h", "critical", "minimist", "1.2.5", "npm", "1.2.6", "9.8"),
	}
	got := readCSV(t, b)
	if len(got) != node.Findings {
		t.Fatalf("%d rows, want %d: %q", len(got), node.Findings, got)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("row %d = %q\nwant     %q", i, got[i], want[i])
		}
	}
}

// A package named like a formula (anybody can build such an image)
// reaches the spreadsheet as text.
func TestReportCSVDefusesFormulas(t *testing.T) {
	c := newClient(t)
	d := bomtest.Digest(11)
	evil := bomtest.BOM(bomtest.Vuln{ID: "CVE-2026-0001", Severity: "high", Package: `=HYPERLINK("http://evil.example","x")`, Version: "-2+3", Fix: "@1"})
	if code, b := c.put(d, evil); code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", code, b)
	}
	_, _, b := c.get("/api/v1/reports/" + d + "/findings.csv")
	rows := readCSV(t, b)
	if len(rows) != 1 {
		t.Fatalf("rows = %q", rows)
	}
	if got := rows[0][4:8]; !slices.Equal(got, []string{`'=HYPERLINK("http://evil.example","x")`, "'-2+3", "apk", "'@1"}) {
		t.Errorf("package, version, type, fixed in = %q", got)
	}
}

// The fleet CSV: the findings of running images, filtered as the list
// is, cut at its limit with the cut said in a header.
func TestFleetCSV(t *testing.T) {
	fxs := map[string]fixture{}
	for _, fx := range loadManifest(t).Fixtures {
		fxs[fx.Name] = fx
	}
	alpine, debian, node := fxs["alpine"], fxs["debian"], fxs["node"]
	c := newClient(t)
	for _, fx := range []fixture{alpine, debian, node} {
		c.putFixture(fx)
	}
	applyInventory(t, c, "a", runs("Deployment", "web", alpine.Digest))
	applyInventory(t, c, "b", runs("StatefulSet", "db", debian.Digest), runs("Deployment", "web", alpine.Digest))
	// node has a report but runs nowhere.
	// The overview's first tile: debian's libc6 CVE-2023-4911 is the one
	// KEV-listed finding running.
	if code, _, b := c.get("/api/v1/stats"); code != http.StatusOK || !strings.Contains(string(b), `"kevRunning":1`) {
		t.Errorf("stats: %d %s, want kevRunning 1", code, b)
	}
	type want struct {
		rows      map[string]int // per digest
		truncated bool
	}
	per := func(kv ...any) map[string]int {
		m := map[string]int{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(fixture).Digest] = kv[i+1].(int)
		}
		return m
	}
	for query, w := range map[string]want{
		"":                                     {rows: per(alpine, alpine.Findings, debian, debian.Findings)},
		"?running=all":                         {rows: per(alpine, alpine.Findings, debian, debian.Findings, node, node.Findings)},
		"?running=false":                       {rows: per(node, node.Findings)},
		"?namespace=a":                         {rows: per(alpine, alpine.Findings)},
		"?namespace=b&workload=StatefulSet/db": {rows: per(debian, debian.Findings)},
		"?workload=Deployment/web":             {rows: per(alpine, alpine.Findings)},
		"?minSeverity=critical":                {rows: per(alpine, alpine.Counts["critical"], debian, debian.Counts["critical"])},
		"?minSeverity=high&running=all":        {rows: per(alpine, 4, debian, 6, node, 4)},
		"?q=CVE-2023-42363":                    {rows: per(alpine, alpine.Findings)}, // busybox: alpine only
		"?namespace=nowhere":                   {rows: per()},
		"?limit=5":                             {rows: per(fxFirst(alpine, debian), 5), truncated: true},
		"?limit=40":                            {rows: per(alpine, alpine.Findings, debian, debian.Findings)},
		"?kev=true":                            {rows: per(debian, 1)},
		"?minEpss=0.02&running=all":            {rows: per(alpine, 2, debian, 3, node, 1)},
	} {
		code, hdr, b := c.get("/api/v1/findings.csv" + query)
		if code != http.StatusOK || hdr.Get("Content-Disposition") != `attachment; filename="crowsnest-findings.csv"` {
			t.Fatalf("%s: %d %v %s", query, code, hdr, b)
		}
		got := map[string]int{}
		for _, r := range readCSV(t, b) {
			got[r[1]]++
			if r[1] == alpine.Digest && r[9] != "a; b" {
				t.Errorf("%s: alpine runs in %q, want a; b", query, r[9])
			}
		}
		if len(got) != len(w.rows) {
			t.Errorf("%s: rows per digest %v, want %v", query, got, w.rows)
			continue
		}
		for d, n := range w.rows {
			if got[d] != n {
				t.Errorf("%s: rows per digest %v, want %v", query, got, w.rows)
				break
			}
		}
		if tr := hdr.Get("X-Crowsnest-Truncated"); tr != map[bool]string{true: "true", false: "false"}[w.truncated] {
			t.Errorf("%s: X-Crowsnest-Truncated %q, want %v", query, tr, w.truncated)
		}
	}
}

// fxFirst is the fixture whose digest sorts first: the fleet CSV is
// ordered by digest.
func fxFirst(a, b fixture) fixture {
	if a.Digest < b.Digest {
		return a
	}
	return b
}
