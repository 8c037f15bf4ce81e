package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/api/scan"
)

func TestDockerConfigCommand(t *testing.T) {
	secrets := t.TempDir()
	write := func(rel, data string) {
		path := filepath.Join(secrets, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("regcred/.dockerconfigjson", `{"auths":{"r1.example":{"auth":"YWxpY2U6cHc="}}}`)
	out := filepath.Join(t.TempDir(), "config.json")
	runCmd := func(args ...string) (int, string) {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"docker-config"}, args...), func(string) string { return "" }, &stderr)
		return code, stderr.String()
	}

	code, logs := runCmd("--from="+secrets, "--out="+out)
	if code != scan.ExitOK {
		t.Fatalf("exit %d: %s", code, logs)
	}
	data, err := os.ReadFile(out)
	if err != nil || string(data) != `{"auths":{"r1.example":{"auth":"YWxpY2U6cHc="}}}` {
		t.Errorf("wrote %s (%v)", data, err)
	}
	if strings.Contains(logs, "YWxpY2U6cHc=") {
		t.Errorf("credentials in the log: %s", logs)
	}

	write("z-broken/.dockercfg", `not json`)
	if code, logs := runCmd("--from", secrets, "--out", out); code != scan.ExitFailure || !strings.Contains(logs, "z-broken/.dockercfg") {
		t.Errorf("malformed secret: exit %d, want %d and the file named: %s", code, scan.ExitFailure, logs)
	}
	if code, _ := runCmd("--from", secrets); code != scan.ExitUsage {
		t.Errorf("no --out: exit %d, want %d", code, scan.ExitUsage)
	}
	if code, _ := runCmd("--help"); code != scan.ExitOK {
		t.Errorf("--help: exit %d", code)
	}
}
