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

// TestLogFormat: serve's --log-format picks JSON (default) or key=value
// lines and refuses anything else.
func TestLogFormat(t *testing.T) {
	o, err := parseServe(nil, noEnv, io.Discard)
	if err != nil || o.logFormat != "json" {
		t.Fatalf("default --log-format: %q %v", o.logFormat, err)
	}
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
