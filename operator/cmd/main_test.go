package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func noKube() (*rest.Config, error) { return nil, errors.New("no cluster in this test") }

func TestHelpDocumentsEveryFlagAndItsEnv(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, &out, noKube)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	var o Options
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.BindFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(out.String(), "-"+f.Name) || !strings.Contains(out.String(), EnvName(f.Name)) {
			t.Errorf("--help does not document -%s and %s", f.Name, EnvName(f.Name))
		}
	})
}

func TestEnvDefaultsAndFlagsWin(t *testing.T) {
	env := map[string]string{
		"CROWSNEST_RESULTS_API_URL": "http://from-env:8080",
		"CROWSNEST_UPLOADER_IMAGE":  "ghcr.io/x/uploader:env",
		"CROWSNEST_RETRY_BACKOFF":   "30s",
	}
	var o Options
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := applyEnv(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--uploader-image=ghcr.io/x/uploader:flag"}); err != nil {
		t.Fatal(err)
	}
	if o.ResultsAPIURL != "http://from-env:8080" || o.UploaderImage != "ghcr.io/x/uploader:flag" || o.RetryBackoff != 30*time.Second {
		t.Errorf("options = %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("valid options rejected: %v", err)
	}
}

func TestInvalidConfigurationIsReported(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), nil, func(string) string { return "" }, &out, noKube)
	if err == nil || !strings.Contains(err.Error(), "--results-api-url is required") || !strings.Contains(err.Error(), "--uploader-image is required") {
		t.Errorf("err = %v", err)
	}
	err = run(context.Background(), nil, func(k string) string {
		return map[string]string{"CROWSNEST_RETRY_BACKOFF": "soon"}[k]
	}, &out, noKube)
	if err == nil || !strings.Contains(err.Error(), "CROWSNEST_RETRY_BACKOFF") {
		t.Errorf("bad env value: err = %v", err)
	}
	err = run(context.Background(), []string{"--results-api-url=http://x", "--uploader-image=u"}, func(string) string { return "" }, &out, noKube)
	if err == nil || !strings.Contains(err.Error(), "no cluster") {
		t.Errorf("kubeconfig error not returned: %v", err)
	}
}
