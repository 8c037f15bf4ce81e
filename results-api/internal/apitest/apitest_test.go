package apitest_test

import (
	"bytes"
	"net/http"
	"os"
	"testing"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestStartCloseRestart(t *testing.T) {
	srv := apitest.Start(t)
	digest := bomtest.Digest(1)
	body := bomtest.BOM(bomtest.Vuln{ID: "CVE-2026-0001", Severity: "high", Package: "zlib", Version: "1.0", Fix: "1.1"})
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/api/v1/reports/"+digest+"?image=demo@"+digest, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+srv.Token)
	req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT status %d, want 201", resp.StatusCode)
	}

	srv.Close()
	if resp, err := srv.Client().Get(srv.URL + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("API still answers after Close: %d", resp.StatusCode)
	}

	srv.Restart()
	resp, err = srv.Client().Get(srv.URL + "/api/v1/reports/" + digest)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET after restart: status %d, want 200 (same database)", resp.StatusCode)
	}
}
