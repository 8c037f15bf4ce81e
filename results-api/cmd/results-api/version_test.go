package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/api/cli"
)

// TestVersionFlag: --version prints the build and returns nil (exit 0)
// before the database or any other setting is looked at.
func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, envMap(nil), &out); err != nil {
		t.Fatalf("run --version: %v", err)
	}
	got := strings.TrimSpace(out.String())
	if !strings.HasPrefix(got, "results-api dev (revision ") || !strings.HasSuffix(got, ", "+runtime.Version()+")") {
		t.Errorf("--version printed %q", got)
	}
}

// TestLogFormat: --log-format picks JSON (default) or key=value lines and
// refuses anything else.
func TestLogFormat(t *testing.T) {
	for format, want := range map[string]string{"json": `"msg":"hello"`, "text": "msg=hello"} {
		var out bytes.Buffer
		h, err := cli.LogHandler(format, &out, slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		slog.New(h).Info("hello")
		if !strings.Contains(out.String(), want) {
			t.Errorf("--log-format=%s wrote %q", format, out.String())
		}
	}
	if _, err := cli.LogHandler("logfmt", io.Discard, slog.LevelInfo); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("--log-format=logfmt: err = %v", err)
	}
	o, err := parseFlags([]string{"--log-format=text"}, envMap(map[string]string{"CROWSNEST_DATABASE_URL": "x"}), io.Discard)
	if err != nil || o.LogFormat != "text" {
		t.Fatalf("--log-format=text: %+v, %v", o, err)
	}
}
