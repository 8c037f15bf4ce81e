package rematch

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSBOMPart(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"middle", `{"a":1,"vulnerabilities":[{"id":"CVE-1"}],"b":2}`, `{"a":1,"b":2}`},
		{"last", `{"a":1, "vulnerabilities" : [] }`, `{"a":1}`},
		{"first, pretty", "{\n  \"vulnerabilities\": [\n {\"x\": \"}]\\\"\"}\n ],\n  \"components\": [{\"name\": \"]\"}]\n}\n", `{"components": [{"name": "]"}]}`},
		{"only", `{"vulnerabilities":[1,2]}`, `{}`},
		{"twice", `{"vulnerabilities":[],"a":"b","vulnerabilities":{}}`, `{"a":"b"}`},
		{"none", `{"a":[1,{"vulnerabilities":[]}]}`, `{"a":[1,{"vulnerabilities":[]}]}`},
		{"escaped key", `{"vulnerabilit\u0069es":[],"a":1}`, `{"a":1}`},
		{"empty object", `{ }`, `{ }`},
		// Taken apart only when well formed; else as it came, for the
		// decoder to refuse with its own error.
		{"findings not JSON", `{"a":1,"vulnerabilities":[1,}]}`, `{"a":1,"vulnerabilities":[1,}]}`},
		{"truncated", `{"a":1,"vulnerabilities":[`, `{"a":1,"vulnerabilities":[`},
		{"unterminated string", `{"a":"x,"vulnerabilities":[]}`, `{"a":"x,"vulnerabilities":[]}`},
		{"mismatched brackets", `{"vulnerabilities":[},"a":1}`, `{"vulnerabilities":[},"a":1}`},
		{"trailing data", `{"vulnerabilities":[]} {}`, `{"vulnerabilities":[]} {}`},
		{"missing comma", `{"vulnerabilities":[] "a":1}`, `{"vulnerabilities":[] "a":1}`},
		{"array", `[{"vulnerabilities":[]}]`, `[{"vulnerabilities":[]}]`},
		{"empty", ``, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(sbomPart([]byte(tc.in))); got != tc.want {
				t.Errorf("sbomPart(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestSBOMPartOfEveryFixture: each real Grype report, without its findings,
// is the same document as the report decoded with its findings deleted.
func TestSBOMPartOfEveryFixture(t *testing.T) {
	withFindings := 0
	for _, f := range fixtures(t) {
		p, raw := f.File, fixtureBOM(t, f.Name)
		part := sbomPart(raw)
		var want, got map[string]any
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if _, ok := want[findingsMember]; !ok {
			if string(part) != string(raw) {
				t.Errorf("%s has no findings, and its SBOM part is not the report as it came", p)
			}
			continue
		}
		withFindings++
		delete(want, findingsMember)
		if err := json.Unmarshal(part, &got); err != nil {
			t.Fatalf("%s: its SBOM part is not JSON: %v", p, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the SBOM part differs from the report without its findings", p)
		}
		t.Logf("%s: %d of %d bytes left to decode", filepath.Base(p), len(part), len(raw))
	}
	if withFindings == 0 {
		t.Fatal("no fixture has findings: nothing was taken apart")
	}
}

// FuzzSBOMPart: whatever the input, the result is as valid as the input,
// and for valid JSON decodes to the input without its top-level findings.
func FuzzSBOMPart(f *testing.F) {
	for _, s := range []string{`{"a":1,"vulnerabilities":[{"id":"CVE-1"}],"b":2}`, `{"vulnerabilities":[]}`, `{"a":"\"}"}`, `[1]`, `{"a":tru,"vulnerabilities":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := sbomPart(in)
		if string(out) == string(in) {
			return
		}
		if json.Valid(in) != json.Valid(out) {
			t.Fatalf("sbomPart(%q) = %q: valid %v → %v", in, out, json.Valid(in), json.Valid(out))
		}
		if !json.Valid(in) {
			return
		}
		var want, got map[string]any
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		delete(want, findingsMember)
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("sbomPart(%q) = %q: %v", in, out, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("sbomPart(%q) = %q, which decodes to %v, want %v", in, out, got, want)
		}
	})
}
