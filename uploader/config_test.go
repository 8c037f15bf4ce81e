package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseConfigFlagsAndEnv(t *testing.T) {
	env := envMap(map[string]string{
		"CROWSNEST_API_URL":      "http://env:8080",
		"CROWSNEST_DIGEST":       "sha256:env",
		"CROWSNEST_BOM_FILE":     "/env/bom.json",
		"CROWSNEST_TIMEOUT":      "7s",
		"CROWSNEST_MAX_ATTEMPTS": "3",
	})
	c, err := parseConfig([]string{"--api-url", "https://flag:8443/prefix", "--image", "r@sha256:x"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.APIURL != "https://flag:8443/prefix" {
		t.Errorf("flag must override env: api url %q", c.APIURL)
	}
	if c.Digest != "sha256:env" || c.BOMFile != "/env/bom.json" || c.Image != "r@sha256:x" {
		t.Errorf("env defaults not applied: %+v", c)
	}
	if c.Timeout != 7*time.Second || c.MaxAttempts != 3 {
		t.Errorf("timeout %v attempts %d", c.Timeout, c.MaxAttempts)
	}
	if c.TokenFile != DefaultTokenFile || c.Deadline != 5*time.Minute || c.MaxBOMBytes != 32<<20 {
		t.Errorf("defaults: %+v", c)
	}
}

func TestParseConfigErrors(t *testing.T) {
	base := []string{"--api-url", "http://a", "--digest", "sha256:x", "--bom-file", "b"}
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"missing required": {nil, nil, "--bom-file is required"},
		"bad url":          {[]string{"--api-url", "ftp://x", "--digest", "d", "--bom-file", "b"}, nil, "want http(s)"},
		"url without host": {[]string{"--api-url", "http://", "--digest", "d", "--bom-file", "b"}, nil, "want http(s)"},
		"bad env duration": {base, map[string]string{"CROWSNEST_TIMEOUT": "soon"}, "CROWSNEST_TIMEOUT"},
		"bad env number":   {base, map[string]string{"CROWSNEST_MAX_ATTEMPTS": "many"}, "CROWSNEST_MAX_ATTEMPTS"},
		"zero attempts":    {append(base, "--max-attempts", "0"), nil, "--max-attempts"},
		"negative timeout": {append(base, "--timeout", "-1s"), nil, "--timeout"},
		"backoff order":    {append(base, "--backoff-base", "2s", "--backoff-max", "1s"), nil, "--backoff-max"},
		"stray argument":   {append(base, "extra"), nil, "unexpected arguments"},
		"empty token file": {append(base, "--token-file", ""), nil, "--token-file is required"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseConfig(tc.args, envMap(tc.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestHelpDocumentsEveryFlagEnvAndExitCode(t *testing.T) {
	var out strings.Builder
	_, err := parseConfig([]string{"--help"}, envMap(nil), &out)
	if !errors.Is(err, errHelp) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{
		"-bom-file", "-api-url", "-digest", "-image", "-token-file", "-timeout", "-deadline", "-max-attempts",
		"CROWSNEST_BOM_FILE", "CROWSNEST_API_URL", "CROWSNEST_TOKEN_FILE", DefaultTokenFile,
		"  3  report invalid", "  4  rejected", "  5  results-api unreachable", "  6  token",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}
