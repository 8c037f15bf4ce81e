package ingest_test

import (
	"encoding/json"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/ingest"
)

// unquoteCases are the strings whose decoding differs from their bytes:
// every escape, surrogate pairs and lone halves, and invalid UTF-8.
var unquoteCases = []string{
	`plain`,
	`line\nbreak \"quoted\" back\\slash \/ \b\f\r\t`,
	`\u00e9t\u00E9 \u20ac \u0000`,
	`\ud83d\ude00 pair`,
	`\ud83d alone`,
	`\ude00 low alone`,
	`\ud83d\u0041 high then not low`,
	`\ud83d\ud83d\ude00 high, then a pair`,
	`\ud83d\\ude00 high, then an escaped backslash`,
	"bad utf-8 \xff\xfe, truncated \xe2\x82, overlong \xc0\xaf, surrogate \xed\xa0\x80",
	"valid U+FFFD \xef\xbf\xbd, 4-byte \xf0\x9f\x98\x80",
	`ends in escape\\`,
	`\u`,
	`\x41`,
	`\'`,
	"raw\ncontrol",
}

// TestReadStringIsEncodingJSON: where encoding/json accepts a string, the
// fast path reads the same value and ends after its closing quote; where
// encoding/json refuses it, the fast path gives up.
func TestReadStringIsEncodingJSON(t *testing.T) {
	for _, body := range unquoteCases {
		assertSameString(t, []byte(`"`+body+`"`))
	}
}

// FuzzReadString holds the fast path's unquoting to json.Unmarshal's.
func FuzzReadString(f *testing.F) {
	for _, body := range unquoteCases {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		doc := make([]byte, 0, len(body)+2)
		doc = append(append(append(doc, '"'), body...), '"')
		assertSameString(t, doc)
	})
}

func assertSameString(t *testing.T, doc []byte) {
	t.Helper()
	var want string
	wantErr := json.Unmarshal(doc, &want)
	got, end, ok := ingest.ReadString(doc)
	switch {
	case wantErr != nil && ok && end == len(doc):
		t.Fatalf("%q: encoding/json refuses it (%v), the fast path read %q", doc, wantErr, got)
	case wantErr != nil:
		return // refused (or stopped before the end: the caller then fails on what follows)
	case !ok:
		t.Fatalf("%q: the fast path gave up on a string encoding/json reads as %q", doc, want)
	case end != len(doc):
		t.Fatalf("%q: the fast path stopped at %d of %d", doc, end, len(doc))
	case got != want:
		t.Fatalf("%q: fast path %q, encoding/json %q", doc, got, want)
	}
}
