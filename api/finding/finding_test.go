package finding_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/crowsnest-dev/crowsnest/api/finding"
)

// testBOM holds one of each case Of reads: nested components, two CVSS
// methods, a severity after an unnamed one, an advisory URL over the
// source's, fix records as versions and vers ranges, an affected ref with no
// component, a vulnerability with no affects, and a duplicate.
const testBOM = `{"bomFormat":"CycloneDX","specVersion":"1.6",
 "components":[{"bom-ref":"p1","name":"zlib","version":"1.2.13-r1","purl":"pkg:apk/alpine/zlib@1.2.13-r1",
   "components":[{"bom-ref":"p2","name":"lodash","version":"4.17.20","purl":"pkg:npm/lodash@4.17.20"}]}],
 "vulnerabilities":[
  {"id":"CVE-2023-45853","source":{"name":"alpine","url":"https://security.alpinelinux.org/vuln/CVE-2023-45853"},
   "description":"zlib overflow",
   "ratings":[{"severity":"unknown"},{"score":5.3,"severity":"critical","method":"CVSSv2","vector":"AV:N"},
    {"score":9.8,"severity":"high","method":"CVSSv31","vector":"CVSS:3.1/AV:N"}],
   "affects":[{"ref":"p1","versions":[{"version":"1.3.1-r0","status":"unaffected"},{"range":"vers:apk/>=1.2.14-r0","status":"unaffected"},
    {"version":"1.2.13-r1","status":"affected"}]},{"ref":"p1"},{"ref":"gone"}]},
  {"id":"GHSA-xxxx","advisories":[{"url":"https://github.com/advisories/GHSA-xxxx"}],"source":{"name":"github","url":"https://x"},
   "ratings":[{"severity":"none"}],"affects":[{"ref":"p2"}]},
  {"id":"CVE-2024-0001"}]}`

func decode(t *testing.T, s string) *cdx.BOM {
	t.Helper()
	var bom cdx.BOM
	if err := json.Unmarshal([]byte(s), &bom); err != nil {
		t.Fatal(err)
	}
	return &bom
}

func ptr(f float64) *float64 { return &f }

func TestOf(t *testing.T) {
	got, err := finding.Of(decode(t, testBOM), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []finding.Finding{
		{ID: "CVE-2023-45853", Source: "alpine", Severity: finding.Critical, CVSSScore: ptr(9.8), CVSSVector: "CVSS:3.1/AV:N",
			Package:     finding.Package{Name: "zlib", Version: "1.2.13-r1", Type: "apk", PURL: "pkg:apk/alpine/zlib@1.2.13-r1"},
			FixedIn:     []string{"1.2.14-r0", "1.3.1-r0"},
			Description: "zlib overflow", URL: "https://security.alpinelinux.org/vuln/CVE-2023-45853"},
		{ID: "CVE-2023-45853", Source: "alpine", Severity: finding.Critical, CVSSScore: ptr(9.8), CVSSVector: "CVSS:3.1/AV:N",
			Package: finding.Package{Name: "gone"}, Description: "zlib overflow", URL: "https://security.alpinelinux.org/vuln/CVE-2023-45853"},
		{ID: "GHSA-xxxx", Source: "github", Severity: finding.Negligible,
			Package: finding.Package{Name: "lodash", Version: "4.17.20", Type: "npm", PURL: "pkg:npm/lodash@4.17.20"},
			URL:     "https://github.com/advisories/GHSA-xxxx"},
		{ID: "CVE-2024-0001"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Of:\n got %+v\nwant %+v", got, want)
	}
}

func TestOfRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		bom  string
		max  int
		want error
	}{
		"no id":    {`{"vulnerabilities":[{"id":"CVE-1"},{"id":" "}]}`, 0, finding.ErrNoID},
		"too many": {testBOM, 3, finding.ErrTooMany},
	} {
		if _, err := finding.Of(decode(t, tc.bom), tc.max); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if fs, err := finding.Of(decode(t, testBOM), 4); err != nil || len(fs) != 4 {
		t.Errorf("max 4 of 4: %d findings, %v", len(fs), err)
	}
}

// TestFingerprint pins the fingerprint: results-api stored these bytes for
// every report since it had one, so a change here makes each stored
// report look changed to the matcher (re-uploaded once).
func TestFingerprint(t *testing.T) {
	fs, err := finding.Of(decode(t, testBOM), 0)
	if err != nil {
		t.Fatal(err)
	}
	const pinned = "70bbe47738b00b09eb424632e616f1524e44166b21099487934a369802f18578"
	if got := hex.EncodeToString(finding.Fingerprint(fs)); got != pinned {
		t.Errorf("fingerprint %s, want %s", got, pinned)
	}
	rev := []finding.Finding{fs[3], fs[2], fs[1], fs[0]}
	if hex.EncodeToString(finding.Fingerprint(rev)) != hex.EncodeToString(finding.Fingerprint(fs)) {
		t.Error("fingerprint depends on the order of the findings")
	}
	for i, change := range []func(f *finding.Finding){
		func(f *finding.Finding) { f.FixedIn = append(f.FixedIn, "9") },
		func(f *finding.Finding) { f.Severity = finding.High },
		func(f *finding.Finding) { *f.CVSSScore = 9.9 },
		func(f *finding.Finding) { f.Description += "." },
		func(f *finding.Finding) { f.Package.PURL = "" },
	} {
		fs2, _ := finding.Of(decode(t, testBOM), 0)
		change(&fs2[0])
		if hex.EncodeToString(finding.Fingerprint(fs2)) == hex.EncodeToString(finding.Fingerprint(fs)) {
			t.Errorf("change %d: same fingerprint", i)
		}
	}
	if reflect.DeepEqual(finding.Fingerprint(nil), finding.Fingerprint(fs[:1])) {
		t.Error("no findings and one finding: same fingerprint")
	}
}
