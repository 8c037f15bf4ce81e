package rematch

import (
	"bytes"
	"strings"
	"testing"

	"github.com/anchore/syft/syft/format/cyclonedxxml"
	"github.com/anchore/syft/syft/format/syftjson"
)

// identifiedAheadOfCycloneDXJSON asks the two decoders Syft's format.Decode
// asks before CycloneDX JSON's, on the whole document, as format.Decode
// does: the truth cycloneDXOnly must never contradict.
func identifiedAheadOfCycloneDXJSON(doc []byte) string {
	if id, _ := syftjson.NewFormatDecoder().Identify(bytes.NewReader(doc)); id != "" {
		return string(id)
	}
	if id, _ := cyclonedxxml.NewFormatDecoder().Identify(bytes.NewReader(doc)); id != "" {
		return string(id)
	}
	return ""
}

// cycloneDXOnlyCases are documents cycloneDXOnly must not name CycloneDX
// JSON for (those a decoder ahead of it identifies), and documents it
// should name it for, though they hold what the checks look for.
var cycloneDXOnlyCases = []struct {
	name string
	doc  string
	want bool
}{
	{"plain", `{"bomFormat":"CycloneDX","specVersion":"1.6","components":[]}`, true},
	{"a maintainer's address", `{"bomFormat":"CycloneDX","specVersion":"1.6","components":[{"publisher":"A B <a@b.invalid>"}]}`, true},
	{"a version range", `{"bomFormat":"CycloneDX","specVersion":"1.6","components":[{"description":"fixed in < 2.0, <= 3 and <4"}]}`, true},
	{"an HTML element in a string", `{"bomFormat":"CycloneDX","specVersion":"1.6","components":[{"description":"<b>bold</b>"}]}`, true},
	{"Syft JSON's schema, last", `{"artifacts":[],"schema":{"version":"16.0.0","url":"https://raw.githubusercontent.com/anchore/syft/main/schema/json/schema-16.0.0.json"}}`, false},
	{"Syft JSON's schema, first", `{"schema":{"version":"16.0.0","url":"https://raw.githubusercontent.com/anchore/syft/main/schema/json/schema-16.0.0.json"},"artifacts":[]}`, false},
	{"schema key, another case", `{"bomFormat":"CycloneDX","specVersion":"1.6","SCHEMA":{"version":"1","url":"anchore/syft"}}`, false},
	{"schema key, long s", `{"bomFormat":"CycloneDX","specVersion":"1.6","ſchema":{"version":"1","url":"anchore/syft"}}`, false},
	{"schema key, escaped", `{"bomFormat":"CycloneDX","specVersion":"1.6","sch\u0065ma":{"version":"1","url":"anchore/syft"}}`, false},
	{"schema key, nested (left to format.Decode)", `{"bomFormat":"CycloneDX","specVersion":"1.6","x":{"schema":1}}`, false},
	{"$schema is CycloneDX's own", `{"$schema":"http://cyclonedx.org/schema/bom-1.6.schema.json","bomFormat":"CycloneDX","specVersion":"1.6"}`, true},
	// In a JSON string an attribute's double quotes are escaped, which
	// XML refuses; single quotes are not.
	{"a CycloneDX XML element in a string", `{"bomFormat":"CycloneDX","specVersion":"1.6","components":[{"description":"<bom xmlns='http://cyclonedx.org/schema/bom/1.6'></bom>"}]}`, false},
	{"a CycloneDX XML element, double quotes", `{"bomFormat":"CycloneDX","specVersion":"1.6","components":[{"description":"<bom xmlns=\"http://cyclonedx.org/schema/bom/1.6\"></bom>"}]}`, true},
	{"a CycloneDX XML element after an address", `{"bomFormat":"CycloneDX","components":[{"publisher":"<a@b>"},{"description":"<bom xmlns='http://cyclonedx.org/schema/bom/1.5'/>"}]}`, true},
	{"not an object", `["bomFormat"]`, false},
	{"two objects", `{"bomFormat":"CycloneDX"} {}`, false},
	{"empty", ``, false},
}

// identifiedAhead are the cases a decoder ahead of CycloneDX JSON's does
// identify.
var identifiedAhead = map[string]bool{
	"Syft JSON's schema, last":            true,
	"Syft JSON's schema, first":           true,
	"schema key, another case":            true,
	"schema key, long s":                  true,
	"schema key, escaped":                 true,
	"a CycloneDX XML element in a string": true,
}

func TestCycloneDXOnly(t *testing.T) {
	for _, c := range cycloneDXOnlyCases {
		t.Run(c.name, func(t *testing.T) {
			got := cycloneDXOnly([]byte(c.doc))
			if got != c.want {
				t.Errorf("cycloneDXOnly = %v, want %v", got, c.want)
			}
			ahead := identifiedAheadOfCycloneDXJSON([]byte(c.doc))
			if got && ahead != "" {
				t.Errorf("cycloneDXOnly names CycloneDX JSON, but format.Decode identifies it as %s first", ahead)
			}
			if identifiedAhead[c.name] != (ahead != "") {
				t.Errorf("format.Decode identifies it as %q first: the case does not test what it says", ahead)
			}
		})
	}
}

// TestCycloneDXOnlyOfEveryFixture: every real report's SBOM part is named
// CycloneDX JSON (the OS fixtures' packages have maintainers' addresses in
// angle brackets), and no decoder ahead of it identifies any of them.
func TestCycloneDXOnlyOfEveryFixture(t *testing.T) {
	withAngle := 0
	for _, f := range fixtures(t) {
		p := f.File
		part := sbomPart(fixtureBOM(t, f.Name))
		if !cycloneDXOnly(part) {
			t.Errorf("%s: its SBOM part is not named CycloneDX JSON", p)
		}
		if ahead := identifiedAheadOfCycloneDXJSON(part); ahead != "" {
			t.Errorf("%s: identified as %s", p, ahead)
		}
		if bytes.IndexByte(part, '<') >= 0 {
			withAngle++
		}
	}
	if withAngle == 0 {
		t.Error("no fixture has a '<' in its SBOM part: the XML check is not exercised")
	}
}

// FuzzCycloneDXOnly: whatever the bytes, a document named CycloneDX JSON is
// identified by neither decoder ahead of it. go test runs the seeds (the
// cases above and each case spliced into a fixture's SBOM part); go test
// -fuzz FuzzCycloneDXOnly searches further.
func FuzzCycloneDXOnly(f *testing.F) {
	for _, c := range cycloneDXOnlyCases {
		f.Add([]byte(c.doc))
	}
	part := sbomPart(fixtureBOM(f, "alpine"))
	for _, c := range cycloneDXOnlyCases {
		if strings.HasPrefix(c.doc, "{") && strings.HasSuffix(c.doc, "}") && len(c.doc) > 2 {
			// The case's members after the fixture's, and before them.
			f.Add(append(append(bytes.TrimSuffix(bytes.TrimSpace(bytes.Clone(part)), []byte("}")), ','), c.doc[1:]...))
			f.Add([]byte(c.doc[:len(c.doc)-1] + "," + string(bytes.TrimSpace(part)[1:])))
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !cycloneDXOnly(doc) {
			return
		}
		if ahead := identifiedAheadOfCycloneDXJSON(doc); ahead != "" {
			t.Errorf("named CycloneDX JSON, but format.Decode identifies %q as %s first", doc, ahead)
		}
	})
}
