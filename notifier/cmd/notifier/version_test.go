package main

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: --version skips every other check and run prints the build
// to stdout without connecting anywhere.
func TestVersion(t *testing.T) {
	// A bad setting in the environment does not stop --version.
	o, err := parse([]string{"--version"}, func(k string) string {
		return map[string]string{"CROWSNEST_DASHBOARD_URL": "not a url"}[k]
	}, io.Discard)
	if err != nil || !o.Version {
		t.Fatalf("parse --version: %+v %v", o, err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), o, deps{stdout: &out, stderr: io.Discard, getenv: func(string) string { return "" }}); err != nil {
		t.Fatalf("run --version: %v", err)
	}
	got := strings.TrimSpace(out.String())
	if !strings.HasPrefix(got, "notifier dev (revision ") || !strings.HasSuffix(got, ", "+runtime.Version()+")") {
		t.Errorf("--version printed %q", got)
	}
}

// TestLogFormat: notifier logs JSON unless --log-format or CROWSNEST_LOG_FORMAT
// says otherwise (api/cli tests the formats and refuses unknown ones).
func TestLogFormat(t *testing.T) {
	for value, want := range map[string]string{"": "json", "text": "text"} {
		env := func(k string) string {
			if k == "CROWSNEST_LOG_FORMAT" {
				return value
			}
			return ""
		}
		o, err := parse(nil, env, io.Discard)
		if err != nil || o.LogFormat != want {
			t.Errorf("CROWSNEST_LOG_FORMAT=%q: --log-format %q (%v), want %q", value, o.LogFormat, err, want)
		}
	}
}
