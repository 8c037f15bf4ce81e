package export_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/export"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// sarifSchema compiles the official SARIF 2.1.0 schema (testdata/README.md).
func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/sarif-schema-2.1.0.json")
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

func score(v float64) *float64 { return &v }

var findings = []report.Finding{
	{ID: "CVE-2026-0001", Severity: report.Critical, CVSSScore: score(9.8), Description: "Heap overflow\nin the parser.",
		URL: "https://nvd.nist.gov/vuln/detail/CVE-2026-0001", FixedIn: []string{"3.0.9", "3.1.2"},
		Package: report.Package{Name: "openssl", Version: "3.0.1", Type: "apk", PURL: "pkg:apk/alpine/openssl@3.0.1"}},
	{ID: "CVE-2026-0001", Severity: report.Critical, CVSSScore: score(9.8),
		Package: report.Package{Name: "libssl3", Version: "3.0.1", Type: "apk", PURL: "pkg:apk/alpine/libssl3@3.0.1"}},
	{ID: "GHSA-xxxx-yyyy-zzzz", Severity: report.Medium,
		Package: report.Package{Name: "lodash", Version: "4.17.20", Type: "npm"}},
	{ID: "CVE-2026-0003", Severity: report.Negligible, URL: "not a url",
		Package: report.Package{Name: "=cmd|' /C calc'!A0", Version: "-1", Type: "binary"}},
}

// writeSARIF writes a log of fs; sups[i], when given, suppresses fs[i].
func writeSARIF(t *testing.T, fs []report.Finding, sups ...*export.Suppression) []byte {
	t.Helper()
	var buf bytes.Buffer
	s := export.NewSARIF(&buf, export.Target{Image: "registry.example/app@sha256:abc", Digest: "sha256:abc",
		Provenance: export.Provenance{GrypeVersion: "0.121.2", DBBuilt: "2026-11-01T00:00:00Z", DBSchema: "v6.1.10"}})
	for _, f := range fs {
		if err := s.Rule(export.Rule{ID: f.ID, Severity: f.Severity, CVSSScore: f.CVSSScore, Description: f.Description, URL: f.URL}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range fs {
		var sup *export.Suppression
		if i < len(sups) {
			sup = sups[i]
		}
		if err := s.Result(&fs[i], sup); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type sarifLog struct {
	Runs []struct {
		Tool struct {
			Driver struct {
				Name, Version string
				Properties    map[string]string
				Rules         []struct {
					ID                   string
					HelpURI              string `json:"helpUri"`
					DefaultConfiguration struct{ Level string }
					Properties           map[string]any
				}
			}
		}
		Results []struct {
			RuleID              string
			RuleIndex           int
			Level               string
			Message             struct{ Text string }
			PartialFingerprints map[string]string
			Suppressions        []struct {
				Kind, Status, Justification string
				Properties                  map[string]string
			}
		}
	}
}

func TestSARIFValidAgainstSchema(t *testing.T) {
	schema := sarifSchema(t)
	for name, sups := range map[string][]*export.Suppression{"findings": nil, "empty": nil, "suppressed": {nil, &notAffected, &accepted}} {
		t.Run(name, func(t *testing.T) {
			fs := findings
			if name == "empty" {
				fs = nil
			}
			b := writeSARIF(t, fs, sups...)
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("not JSON: %v\n%s", err, b)
			}
			if err := schema.Validate(inst); err != nil {
				t.Fatalf("invalid SARIF: %v", err)
			}
		})
	}
	// The schema is live: a level SARIF does not know is refused.
	bad := bytes.Replace(writeSARIF(t, findings), []byte(`"level":"error"`), []byte(`"level":"fatal"`), 1)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if schema.Validate(inst) == nil {
		t.Error("the schema accepts level fatal")
	}
}

func TestSARIFContent(t *testing.T) {
	var log sarifLog
	if err := json.Unmarshal(writeSARIF(t, findings), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	d := run.Tool.Driver
	if d.Name != "Crowsnest (Grype)" || d.Version != "0.121.2" || len(d.Rules) != 3 || len(run.Results) != 4 {
		t.Fatalf("driver %s %s, %d rules, %d results", d.Name, d.Version, len(d.Rules), len(run.Results))
	}
	if d.Properties["grypeDbBuilt"] != "2026-11-01T00:00:00Z" || d.Properties["grypeDbSchema"] != "v6.1.10" {
		t.Errorf("driver properties %v, want the DB build and schema", d.Properties)
	}
	r0 := d.Rules[0]
	if r0.ID != "CVE-2026-0001" || r0.HelpURI != "https://nvd.nist.gov/vuln/detail/CVE-2026-0001" ||
		r0.DefaultConfiguration.Level != "error" || r0.Properties["security-severity"] != "9.8" || r0.Properties["cvss"] != 9.8 {
		t.Errorf("rule 0 = %+v", r0)
	}
	if r := d.Rules[1]; r.DefaultConfiguration.Level != "warning" || r.Properties["security-severity"] != "5.5" || r.Properties["cvss"] != nil {
		t.Errorf("medium rule without CVSS = %+v", r)
	}
	if r := d.Rules[2]; r.HelpURI != "" || r.DefaultConfiguration.Level != "note" {
		t.Errorf("rule with a URL that is not one = %+v", r)
	}
	res := run.Results[0]
	if res.Message.Text != "openssl 3.0.1 is affected by CVE-2026-0001; fixed in 3.0.9, 3.1.2" || res.Level != "error" {
		t.Errorf("result 0 = %+v", res)
	}
	for i, res := range run.Results {
		if d.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("result %d: ruleIndex %d names %s, not %s", i, res.RuleIndex, d.Rules[res.RuleIndex].ID, res.RuleID)
		}
	}
	if run.Results[0].PartialFingerprints[export.FingerprintKey] == run.Results[1].PartialFingerprints[export.FingerprintKey] {
		t.Error("two packages with one fingerprint")
	}
}

var (
	notAffected = export.Suppression{Exception: "VulnerabilityException/team-a/parser", Status: "not_affected",
		Justification: "vulnerable_code_not_in_execute_path", Statement: "the parser is never fed input",
		ExpiresAt: time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)}
	accepted = export.Suppression{Exception: "ClusterVEXDocument/publisher", Status: "affected",
		Statement: "=HYPERLINK(\"x\")", ActionStatement: "upgrade in Q1"}
)

// A suppressed finding carries SARIF's suppression (external, accepted)
// with the decision as its justification; an active one carries none.
func TestSARIFSuppressions(t *testing.T) {
	var log sarifLog
	if err := json.Unmarshal(writeSARIF(t, findings, nil, &notAffected, &accepted), &log); err != nil {
		t.Fatal(err)
	}
	res := log.Runs[0].Results
	if len(res[0].Suppressions) != 0 || len(res[3].Suppressions) != 0 {
		t.Errorf("active results carry suppressions: %+v, %+v", res[0].Suppressions, res[3].Suppressions)
	}
	for i, want := range map[int]struct{ justification, exception, expires string }{
		1: {"not_affected (vulnerable_code_not_in_execute_path): the parser is never fed input " +
			"(VulnerabilityException/team-a/parser, until 2027-03-01T00:00:00Z)", "VulnerabilityException/team-a/parser", "2027-03-01T00:00:00Z"},
		2: {"affected: =HYPERLINK(\"x\"); upgrade in Q1 (ClusterVEXDocument/publisher)", "ClusterVEXDocument/publisher", ""},
	} {
		if len(res[i].Suppressions) != 1 {
			t.Fatalf("result %d: suppressions %+v", i, res[i].Suppressions)
		}
		got := res[i].Suppressions[0]
		if got.Kind != "external" || got.Status != "accepted" || got.Justification != want.justification ||
			got.Properties["exception"] != want.exception || got.Properties["expiresAt"] != want.expires {
			t.Errorf("result %d: suppression %+v, want %+v", i, got, want)
		}
	}
}

// The fingerprint follows (id, package name, version, type) only: a
// rescan with a new score or description keeps it, a new version does not.
func TestFingerprintStable(t *testing.T) {
	a := findings[0]
	b := a
	b.CVSSScore, b.Description, b.URL, b.FixedIn = score(7.5), "other", "", nil
	if export.Fingerprint(&a) != export.Fingerprint(&b) {
		t.Error("fingerprint changed with the score or description")
	}
	b.Package.Version = "3.0.2"
	if export.Fingerprint(&a) == export.Fingerprint(&b) {
		t.Error("fingerprint ignores the version")
	}
	// Field boundaries count: ("ab","c") is not ("a","bc").
	x := report.Finding{ID: "ab", Package: report.Package{Name: "c"}}
	y := report.Finding{ID: "a", Package: report.Package{Name: "bc"}}
	if export.Fingerprint(&x) == export.Fingerprint(&y) {
		t.Error("fingerprint runs fields together")
	}
}

func TestLevel(t *testing.T) {
	for sev, want := range map[report.Severity]string{report.Critical: "error", report.High: "error", report.Medium: "warning",
		report.Low: "note", report.Negligible: "note", report.Unknown: "note"} {
		if got := export.Level(sev); got != want {
			t.Errorf("Level(%s) = %s, want %s", sev, got, want)
		}
	}
}

// An attacker who builds an image names its packages: a package called
// =cmd|' /C calc'!A0 must reach the spreadsheet as text.
func TestCSVDefusesFormulas(t *testing.T) {
	var buf bytes.Buffer
	c, err := export.NewCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	running := []report.Workload{{Namespace: "shop", Kind: "Deployment", Name: "web"}, {Namespace: "shop", Kind: "CronJob", Name: "@hourly"},
		{Namespace: "+ops", Kind: "DaemonSet", Name: "agent"}}
	if err := c.Row(export.Row{Image: "@evil/image", Digest: "sha256:abc", Finding: &findings[3], RunningIn: running}); err != nil {
		t.Fatal(err)
	}
	rated := findings[0]
	epss := 0.78
	rated.Risk = report.Risk{EPSS: &epss, KEV: true, Score: 78.75}
	if err := c.Row(export.Row{Image: "registry.example/app", Digest: "sha256:abc", Finding: &rated,
		Provenance: export.Provenance{GrypeVersion: "0.121.2", DBBuilt: "2026-11-01T00:00:00Z", DBSchema: "v6.1.10"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Row(export.Row{Image: "registry.example/app", Digest: "sha256:abc", Finding: &findings[1], Suppression: &accepted}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		export.CSVHeader,
		{"'@evil/image", "sha256:abc", "CVE-2026-0003", "negligible", "'=cmd|' /C calc'!A0", "'-1", "binary", "", "",
			"'+ops; shop", "shop/Deployment/web; shop/CronJob/@hourly; +ops/DaemonSet/agent", "false", "", "0", "", "", "",
			"false", "", "", "", "", "", ""},
		{"registry.example/app", "sha256:abc", "CVE-2026-0001", "critical", "openssl", "3.0.1", "apk", "3.0.9; 3.1.2", "9.8", "", "",
			"true", "0.78", "78.75", "0.121.2", "2026-11-01T00:00:00Z", "v6.1.10", "false", "", "", "", "", "", ""},
		{"registry.example/app", "sha256:abc", "CVE-2026-0001", "critical", "libssl3", "3.0.1", "apk", "", "9.8", "", "",
			"false", "", "0", "", "", "", "true", "ClusterVEXDocument/publisher", "affected", "", "'=HYPERLINK(\"x\")", "upgrade in Q1", ""},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %q", rows)
	}
	for i := range want {
		if !slices.Equal(rows[i], want[i]) {
			t.Errorf("row %d = %q\nwant     %q", i, rows[i], want[i])
		}
	}
	for _, cell := range []string{"=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"} {
		if got := export.SafeCell(cell); got != "'"+cell {
			t.Errorf("SafeCell(%q) = %q", cell, got)
		}
	}
	for _, cell := range []string{"", "CVE-1", "1.2.3", "a=b"} {
		if got := export.SafeCell(cell); got != cell {
			t.Errorf("SafeCell(%q) = %q, want it unchanged", cell, got)
		}
	}
}
