package main

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/api/cli"
)

// TestVersion: --version skips every other check and run prints the build
// to stdout without connecting anywhere.
func TestVersion(t *testing.T) {
	// A bad setting in the environment does not stop --version.
	o, err := parse([]string{"--version"}, func(k string) string {
		return map[string]string{"CROWSNEST_DASHBOARD_URL": "not a url"}[k]
	}, io.Discard)
	if err != nil || !o.version {
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

// TestLogFormat: --log-format picks JSON (default) or key=value lines and
// refuses anything else.
func TestLogFormat(t *testing.T) {
	for format, want := range map[string]string{"json": `"msg":"hello"`, "text": "msg=hello"} {
		var out bytes.Buffer
		log, err := cli.NewLogger("info", format, &out)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("hello")
		if !strings.Contains(out.String(), want) {
			t.Errorf("--log-format=%s wrote %q", format, out.String())
		}
	}
	if _, err := cli.NewLogger("info", "logfmt", io.Discard); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("--log-format=logfmt: err = %v", err)
	}
}
