package main

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: `matcher --version` and `matcher version` print the build
// to stdout and return nil (exit 0).
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		var out bytes.Buffer
		if err := run(context.Background(), []string{arg}, noEnv, &out, io.Discard); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		got := strings.TrimSpace(out.String())
		if !strings.HasPrefix(got, "matcher dev (revision ") || !strings.HasSuffix(got, ", "+runtime.Version()+")") {
			t.Errorf("%s printed %q", arg, got)
		}
	}
}

// TestLogFormat: serve logs JSON unless --log-format or CROWSNEST_LOG_FORMAT
// says otherwise (api/cli tests the formats and refuses unknown ones).
func TestLogFormat(t *testing.T) {
	for value, want := range map[string]string{"": "json", "text": "text"} {
		env := func(k string) string {
			if k == "CROWSNEST_LOG_FORMAT" {
				return value
			}
			return ""
		}
		o, err := parseServe(nil, env, io.Discard)
		if err != nil || o.LogFormat != want {
			t.Errorf("CROWSNEST_LOG_FORMAT=%q: --log-format %q (%v), want %q", value, o.LogFormat, err, want)
		}
	}
}
