package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"libssl3":                  "libssl3",
		"3.1.1-r1 (fixed) ü 日本":    "3.1.1-r1 (fixed) ü 日本",
		"pkg\x1b[2J":               `pkg\x1b[2J`,
		"a\rb\nc\td\be\x00":        `a\rb\nc\td\be\x00`,
		"title\x1b]0;owned\a":      `title\x1b]0;owned\a`,
		"c1\u009b31m del\x7f":      `c1\u009b31m del\x7f`,
		"bidi \u202egnp.exe":       `bidi \u202egnp.exe`,
		"zero\u200bwidth":          `zero\u200bwidth`,
		"bad utf8 \x9b2J \xff end": `bad utf8 \x9b2J \xff end`,
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
	if got := CleanLines("line one\x1b[2J\nline two\r"); got != "line one\\x1b[2J\nline two\\r" {
		t.Errorf("CleanLines = %q", got)
	}
}

// TestOutputsEscapeReportData: a package name carrying terminal controls
// reaches the writer escaped in a table, in JSON and in YAML, and JSON and
// YAML still decode to the name as the report has it.
func TestOutputsEscapeReportData(t *testing.T) {
	const hostile = "pkg\x1b[2J\u009b31m\x7f\rend"
	raw := func(s string) bool {
		return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f })
	}
	var table bytes.Buffer
	tw := NewTable(&table, "PACKAGE", "VERSION")
	tw.Row(hostile, "1.0")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if raw(table.String()) || !strings.Contains(table.String(), `pkg\x1b[2J\u009b31m\x7f\rend`) {
		t.Errorf("table %q", table.String())
	}
	for _, f := range []Format{JSON, YAML} {
		var out bytes.Buffer
		if err := Data(&out, f, map[string]string{"name": hostile}); err != nil {
			t.Fatal(err)
		}
		if raw(out.String()) {
			t.Errorf("-o %s printed a raw control: %q", f, out.String())
		}
		var back map[string]string
		var err error
		if f == JSON {
			err = json.Unmarshal(out.Bytes(), &back)
		} else {
			err = yaml.Unmarshal(out.Bytes(), &back)
		}
		if err != nil || back["name"] != hostile {
			t.Errorf("-o %s decodes to %q (err %v), want %q", f, back["name"], err, hostile)
		}
	}
}
