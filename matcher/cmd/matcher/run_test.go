package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anchore/grype/grype/db/v6/distribution"
	"github.com/anchore/grype/grype/db/v6/installation"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite"
	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/vulndb"
)

var built = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func noEnv(string) string { return "" }

// TestDBImportOffline: `matcher db import FILE` then `matcher db status`,
// with every proxy pointed at a closed port and no upstream: the air-gap
// path opens no connection.
func TestDBImportOffline(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	up, err := dbwrite.WriteUpstream(t.TempDir(), advisory.All(0), built)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	args := []string{"db", "import", "--data-dir", dir, "--checksum", up.Archive.Checksum, up.ArchivePath}
	if err := run(context.Background(), args, noEnv, &out, &errOut); err != nil {
		t.Fatalf("db import: %v\n%s", err, errOut.String())
	}
	var imported statusJSON
	if err := json.Unmarshal(out.Bytes(), &imported); err != nil || !imported.Built.Equal(built) || imported.Checksum != up.Archive.Checksum {
		t.Fatalf("db import printed %s (err %v)", out.String(), err)
	}

	out.Reset()
	env := func(k string) string {
		if k == "CROWSNEST_DATA_DIR" {
			return dir
		}
		return ""
	}
	if err := run(context.Background(), []string{"db", "status"}, env, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var st statusJSON
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || st.ID != imported.ID || st.Path == "" || st.Schema == "" {
		t.Fatalf("db status printed %s (err %v)", out.String(), err)
	}
	t.Logf("db status: %s", out.String())

	// An older archive is refused with the reason.
	older, err := dbwrite.WriteUpstream(t.TempDir(), advisory.All(0), built.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), []string{"db", "import", "--data-dir", dir, older.ArchivePath}, noEnv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not newer") {
		t.Fatalf("older import: %v", err)
	}
	if err := run(context.Background(), []string{"db", "status", "--data-dir", t.TempDir()}, noEnv, io.Discard, io.Discard); err == nil {
		t.Fatal("status of an empty data dir succeeded")
	}
}

// TestServe runs `matcher serve` against an upstream on 127.0.0.1: it
// fetches the DB, becomes ready, serves it to Grype's own client, reports
// metrics, refuses unauthenticated uploads and stops cleanly.
func TestServe(t *testing.T) {
	root := t.TempDir()
	up, err := dbwrite.WriteUpstream(root, advisory.All(0), built)
	if err != nil {
		t.Fatal(err)
	}
	upstream := httptest.NewServer(http.FileServer(http.Dir(root)))
	defer upstream.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("admin-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A plain HTTP upstream, allowed explicitly (TestParseServe: refused otherwise).
	o, err := parseServe([]string{"--data-dir", t.TempDir(), "--upstream-url", upstream.URL, "--allow-insecure-upstream",
		"--admin-token-file", tokenFile, "--log-level", "warn"}, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	activated := make(chan vulndb.DB, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, o, deps{listener: ln, log: io.Discard, onActivate: func(db vulndb.DB) { activated <- db }})
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}()

	select {
	case db := <-activated:
		if db.Checksum != up.Archive.Checksum {
			t.Fatalf("activated %+v", db)
		}
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no DB activated")
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/vulndb/v6/latest.json": 200} {
		if code := httpStatus(t, http.MethodGet, base+path, ""); code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
	}
	if code := httpStatus(t, http.MethodPost, base+"/api/v1/vulndb/import", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("upload with a wrong token: %d", code)
	}

	client, err := distribution.NewClient(distribution.Config{LatestURL: base + "/vulndb", RequireUpdateCheck: true, CheckTimeout: 10 * time.Second, UpdateTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := installation.NewCurator(installation.Config{DBRootDir: t.TempDir(), ValidateChecksum: true}, client)
	if updated, err := cur.Update(); err != nil || !updated {
		t.Fatalf("grype db update from matcher serve: %v %v", updated, err)
	}

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"crowsnest_vulndb_built_timestamp_seconds 1.7934912e+09",
		`crowsnest_vulndb_fetch_total{result="updated"} 1`,
		"crowsnest_vulndb_age_seconds ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func httpStatus(t *testing.T, method, url, token string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestParseServe(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"CROWSNEST_CHECK_INTERVAL": "1h", "CROWSNEST_UPSTREAM_URL": "off"}[k]
	}
	o, err := parseServe(nil, env, io.Discard)
	if err != nil || o.CheckInterval != time.Hour || o.UpstreamURL != "" || o.DataDir != DefaultDataDir || !o.Metrics {
		t.Fatalf("%+v %v", o, err)
	}
	if o, _ := parseServe(nil, noEnv, io.Discard); o.UpstreamURL != vulndb.DefaultUpstreamURL || o.CheckInterval != 6*time.Hour {
		t.Fatalf("defaults %+v", o)
	}
	env = func(k string) string {
		return map[string]string{"CROWSNEST_RESULTS_API_URL": "http://results-api:8080/", "CROWSNEST_REMATCH_CONCURRENCY": "4",
			"CROWSNEST_NATS_URL": "nats://nats:4222", "CROWSNEST_NATS_USER": "matcher", "CROWSNEST_NATS_PASSWORD_FILE": "/pw"}[k]
	}
	if o, err := parseServe(nil, env, io.Discard); err != nil || o.ResultsAPIURL != "http://results-api:8080" || o.RematchConcurrency != 4 ||
		o.NATSURL != "nats://nats:4222" || o.NATS.User != "matcher" || o.NATS.PasswordFile != "/pw" {
		t.Fatalf("rematch and NATS settings %+v %v", o, err)
	}
	if o, _ := parseServe(nil, noEnv, io.Discard); o.ResultsAPIURL != "" || o.NATSURL != "" || o.RematchConcurrency != 2 {
		t.Fatalf("rematch and events are not off by default: %+v", o)
	}
	for _, args := range [][]string{{"--upstream-url", "ftp://x"}, {"--check-interval", "0s"}, {"extra"},
		{"--results-api-url", "results-api:8080"}, {"--rematch-concurrency", "0"}, {"--import-timeout", "0s"}} {
		if _, err := parseServe(args, noEnv, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	// A plain HTTP upstream only when allowed, by flag or environment.
	_, err = parseServe([]string{"--upstream-url", "http://mirror.example/db"}, noEnv, io.Discard)
	if !errors.Is(err, vulndb.ErrInsecureUpstream) || !strings.Contains(err.Error(), "--allow-insecure-upstream") {
		t.Errorf("http upstream: %v, want a refusal naming --allow-insecure-upstream", err)
	}
	if o, err := parseServe([]string{"--upstream-url", "http://mirror.example/db", "--allow-insecure-upstream"}, noEnv, io.Discard); err != nil || !o.AllowInsecureUpstream {
		t.Errorf("http upstream with the flag: %+v %v", o, err)
	}
	env = func(k string) string {
		return map[string]string{"CROWSNEST_ALLOW_INSECURE_UPSTREAM": "true", "CROWSNEST_IMPORT_TIMEOUT": "5m"}[k]
	}
	if o, err := parseServe([]string{"--upstream-url", "http://mirror.example/db"}, env, io.Discard); err != nil || o.ImportTimeout != 5*time.Minute {
		t.Errorf("http upstream with the environment: %+v %v", o, err)
	}
}

// TestHelpListsEveryFlag: `matcher --help` and `matcher serve --help` name
// every flag of serve (and --help every flag of db import and db status).
func TestHelpListsEveryFlag(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	o.BindFlags(fs, noEnv)
	var serveHelp, mainHelp bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--help"}, noEnv, io.Discard, &serveHelp); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("serve --help: %v", err)
	}
	if err := run(context.Background(), []string{"--help"}, noEnv, &mainHelp, io.Discard); err != nil {
		t.Fatalf("--help: %v", err)
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	for _, want := range []string{"results-api-url", "results-api-token-file", "rematch-concurrency", "nats-url", "nats-user",
		"nats-password-file", "nats-creds", "nats-nkey-file"} {
		if !slices.Contains(names, want) {
			t.Errorf("serve has no --%s", want)
		}
	}
	for _, n := range names {
		if !strings.Contains(serveHelp.String(), "  -"+n+" ") && !strings.Contains(serveHelp.String(), "  -"+n+"\n") {
			t.Errorf("matcher serve --help lacks -%s", n)
		}
	}
	for _, n := range append(names, "checksum", "force") {
		if !strings.Contains(mainHelp.String(), "  -"+n) {
			t.Errorf("matcher --help lacks -%s", n)
		}
	}
}
