package ingest_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/ingest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// fixtures are every JSON document under results-api/testdata: real Grype
// CycloneDX output (and Grype's native JSON and OpenVEX, which are not BOMs).
func fixtures(t testing.TB) map[string][]byte {
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "*", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures under testdata: %v", err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p)] = b
	}
	return out
}

// withValue replaces the first occurrence of old in the constructed BOM.
func withValue(old, new string) []byte {
	b := constructedBOM()
	if !bytes.Contains(b, []byte(old)) {
		panic("constructed BOM has no " + old)
	}
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}

const head = `{"bomFormat":"CycloneDX","specVersion":"1.6",`

// edgeCases are documents around what the fast decoder reads and skips.
// mistyped: json.Unmarshal into cdx.BOM refuses it (so Parse must too).
var edgeCases = map[string]struct {
	doc      []byte
	mistyped bool
}{
	"unread string field is a number":   {[]byte(head + `"serialNumber":5}`), true},
	"unread int field is a string":      {[]byte(head + `"version":"1"}`), true},
	"unread int field has a fraction":   {[]byte(head + `"version":1.5}`), true},
	"unread int field overflows":        {[]byte(head + `"version":99999999999999999999}`), true},
	"cwes hold a float":                 {[]byte(head + `"vulnerabilities":[{"id":"X","cwes":[79.5]}]}`), true},
	"component hashes is a string":      {[]byte(head + `"components":[{"bom-ref":"a","name":"a","hashes":"x"}]}`), true},
	"component property name is a bool": {[]byte(head + `"components":[{"name":"a","properties":[{"name":true}]}]}`), true},
	"vulnerability tools is a number":   {[]byte(head + `"vulnerabilities":[{"id":"X","tools":5}]}`), true},
	"rating score is a string":          {[]byte(head + `"vulnerabilities":[{"id":"X","ratings":[{"score":"9.8"}]}]}`), true},
	"rating score out of range":         {[]byte(head + `"vulnerabilities":[{"id":"X","ratings":[{"score":1e999}]}]}`), true},
	"affects is an object":              {[]byte(head + `"vulnerabilities":[{"id":"X","affects":{"ref":"a"}}]}`), true},
	"component is a string":             {[]byte(head + `"components":["a"]}`), true},
	"unknown specVersion":               {[]byte(`{"bomFormat":"CycloneDX","specVersion":"9.9"}`), true},
	"dependencies mistyped":             {[]byte(head + `"dependencies":[{"ref":"a","dependsOn":"b"}]}`), true},

	"duplicate id, last wins":            {[]byte(head + `"vulnerabilities":[{"id":"X","id":"Y"}]}`), false},
	"duplicate metadata merges":          {[]byte(head + `"metadata":{"timestamp":"2026-01-01T00:00:00Z"},"metadata":{"component":{"name":"a"}}}`), false},
	"key in other case":                  {[]byte(head + `"vulnerabilities":[{"ID":"X","Affects":[{"REF":"a"}]}]}`), false},
	"escaped key":                        {[]byte(head + `"vulnerabilities":[{"i\u0064":"X"}]}`), false},
	"escapes and non-ASCII in strings":   {[]byte(head + `"components":[{"bom-ref":"a","name":"caf\u00e9 \ud83d\ude00 ü \"q\""}],"vulnerabilities":[{"id":"X\/1","description":"é\n","affects":[{"ref":"a"}]}]}`), false},
	"invalid UTF-8 in a read string":     {[]byte(head + "\"components\":[{\"bom-ref\":\"a\",\"name\":\"\xff\xfe\"}],\"vulnerabilities\":[{\"id\":\"X\",\"affects\":[{\"ref\":\"a\"}]}]}"), false},
	"nulls everywhere":                   {[]byte(head + `"metadata":null,"components":[null,{"bom-ref":null,"name":"a","components":null}],"vulnerabilities":[null,{"id":"X","source":null,"ratings":[null,{"score":null,"source":null}],"affects":[null,{"ref":"a","versions":null}],"advisories":null}]}`), false},
	"empty arrays":                       {[]byte(head + `"components":[],"vulnerabilities":[{"id":"X","ratings":[],"affects":[],"advisories":[]}]}`), false},
	"nested components":                  {[]byte(head + `"components":[{"bom-ref":"p","name":"p","components":[{"bom-ref":"c","name":"c","version":"1","purl":"pkg:npm/c@1"}]}],"vulnerabilities":[{"id":"X","affects":[{"ref":"c"}]}]}`), false},
	"unknown keys of every kind":         {[]byte(head + `"x":{"a":[1,-2.5e3,true,false,null,"s",{}]},"vulnerabilities":[{"id":"X","y":[[[]]]}]}`), false},
	"legacy tools array":                 {[]byte(head + `"metadata":{"tools":[{"vendor":"anchore","name":"grype","version":"0.74.0"}],"properties":[{"name":"grype:db:built","value":"x"}]}}`), false},
	"advisory url wins over source":      {[]byte(head + `"vulnerabilities":[{"id":"X","source":{"name":"n","url":"u"},"advisories":[{"title":"t","url":"a"}]}]}`), false},
	"whitespace everywhere":              {[]byte(" \t\r\n{ \"bomFormat\" : \"CycloneDX\" , \"specVersion\" : \"1.6\" , \"vulnerabilities\" : [ { \"id\" : \"X\" } ] } \n"), false},
	"wrong bomFormat":                    {[]byte(`{"bomFormat":"SPDX","specVersion":"1.6"}`), false},
	"old specVersion":                    {[]byte(`{"bomFormat":"CycloneDX","specVersion":"1.3"}`), false},
	"unread number formats":              {[]byte(head + `"version":-0,"vulnerabilities":[{"id":"X","cwes":[0,7,-12],"ratings":[{"score":1E+2},{"score":-0.0e-1}]}]}`), false},
	"trailing garbage":                   {[]byte(head + `"vulnerabilities":[]} x`), false},
	"trailing comma":                     {[]byte(head + `"vulnerabilities":[],}`), false},
	"leading zero":                       {[]byte(head + `"version":01}`), false},
	"bad escape":                         {[]byte(head + `"serialNumber":"\x"}`), false},
	"control character in a string":      {[]byte(head + "\"serialNumber\":\"a\tb\"}"), false},
	"truncated":                          {[]byte(head + `"vulnerabilities":[{"id":"X"`), false},
	"top-level array":                    {[]byte(`[1,2]`), false},
	"top-level null":                     {[]byte(`null`), false},
	"byte order mark":                    {append([]byte("\xef\xbb\xbf"), head+`"vulnerabilities":[]}`...), false},
	"deep nesting in an unknown key":     {[]byte(head + `"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`), false},
	"too deep for encoding/json":         {[]byte(head + `"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`), false},
	"constructed BOM, future timestamp":  {withValue(`"2026-11-01T10:00:00Z"`, `"2099-01-01T00:00:00Z"`), false},
	"constructed BOM, escaped purl":      {withValue(`"pkg:apk/`, `"pkg:apk\/`), false},
	"constructed BOM, vulnerability bad": {withValue(`"id":"CVE-2026-0002"`, `"id":""`), false},
}

// assertSameParse requires Parse (the fast decoder, falling back to
// json.Unmarshal) and ParseFull (json.Unmarshal into cdx.BOM, as ingest
// decoded before) to accept or refuse raw alike, with equal reports or
// equal errors.
func assertSameParse(t *testing.T, raw []byte) {
	t.Helper()
	got, err := ingest.Parse(raw, opts)
	want, wantErr := ingest.ParseFull(raw, opts)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("Parse error %v; the full decode's %v", err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse and the full decode differ:\n%+v\n%+v", got, want)
	}
}

// TestDecodeBOMMatchesFullDecode: on every fixture the fast decoder is the
// one that decodes (no fall-back) and the report is the one the full
// decode gives; on the edge cases both accept or refuse alike, and a
// document whose unread fields are mistyped is still refused.
func TestDecodeBOMMatchesFullDecode(t *testing.T) {
	for name, raw := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			assertSameParse(t, raw)
			if _, full := ingest.ParseFull(raw, opts); full == nil {
				if _, ok := ingest.DecodeBOM(raw); !ok {
					t.Fatal("the fast decoder left a real Grype BOM to the full decode")
				}
			}
		})
	}
	for _, raw := range [][]byte{constructedBOM(), bomtest.BOM(), bomtest.Sized(3, 200<<10)} {
		assertSameParse(t, raw)
		if _, ok := ingest.DecodeBOM(raw); !ok {
			t.Fatal("the fast decoder left a constructed BOM to the full decode")
		}
	}
	for name, tc := range edgeCases {
		t.Run(name, func(t *testing.T) {
			assertSameParse(t, tc.doc)
			if _, err := ingest.Parse(tc.doc, opts); tc.mistyped && err == nil {
				t.Fatal("accepted a BOM json.Unmarshal refuses")
			}
		})
	}
}

// FuzzDecodeBOM: for any input, Parse and the full decode agree.
func FuzzDecodeBOM(f *testing.F) {
	for _, raw := range fixtures(f) {
		if len(raw) < 8<<10 { // larger ones make each run and each minimization slow
			f.Add(raw)
		}
	}
	for _, tc := range edgeCases {
		if len(tc.doc) < 4<<10 {
			f.Add(tc.doc)
		}
	}
	f.Add(constructedBOM())
	f.Fuzz(func(t *testing.T, raw []byte) {
		assertSameParse(t, raw)
	})
}

// BenchmarkParse decodes the real Grype fixtures in-process: the fast
// decoder (Parse) against json.Unmarshal into cdx.BOM (full). The large
// one also as a producer that escapes <, > and & writes it (json.Marshal,
// cyclonedx-go's default encoder; Grype does not): 15,000 of its strings
// then carry an escape.
func BenchmarkParse(b *testing.B) {
	fx := fixtures(b)
	escaped, err := json.Marshal(json.RawMessage(fx["grype/large.cdx.json"]))
	if err != nil {
		b.Fatal(err)
	}
	fx["grype/large-escaped.cdx.json"] = escaped
	for _, name := range []string{"grype/alpine.cdx.json", "grype/large.cdx.json", "grype/large-escaped.cdx.json"} {
		raw := fx[name]
		for _, path := range []struct {
			name  string
			parse func([]byte, ingest.Options) (*report.Report, error)
		}{{"fast", ingest.Parse}, {"full", ingest.ParseFull}} {
			b.Run(filepath.Base(name)+"/"+path.name, func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := path.parse(raw, opts); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
