package main

import (
	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/test/support"

	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

func getJSON(t *testing.T, srv *resultsapitest.Server, path string, v any) int {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	return resp.StatusCode
}

type reportSummary struct {
	Digest   string         `json:"digest"`
	Image    string         `json:"image"`
	Counts   map[string]int `json:"counts"`
	Fixable  int            `json:"fixable"`
	Findings json.RawMessage
}

// TestUploadRealGrypeFixtures uploads every real Grype report, then reads the
// summary back (counts as in manifest.json) and the BOM byte for byte.
func TestUploadRealGrypeFixtures(t *testing.T) {
	srv := resultsapitest.Start(t)
	tok := tokenFile(t, srv.Token)
	for _, f := range loadFixtures(t) {
		if f.Synthetic && testing.Short() {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			bom := filepath.Join(fixtureDir, f.File)
			logs := &support.Buffer{}
			in := invocation{api: srv.URL, bom: bom, digest: f.Digest, image: f.Image, tokenFile: tok}
			if code := runUploader(t, in, logs); code != scan.ExitOK {
				t.Fatalf("exit %d", code)
			}
			uploaded := logs.JSONLines(t)
			last := uploaded[len(uploaded)-1]
			if last["msg"] != "report uploaded" || last["status"] != float64(http.StatusCreated) || last["digest"] != f.Digest {
				t.Fatalf("last log line %v, want report uploaded with 201", last)
			}
			if strings.Contains(logs.String(), srv.Token) {
				t.Fatal("token leaked into the logs")
			}

			var got struct {
				reportSummary
				Findings []json.RawMessage `json:"findings"`
			}
			// One page holds every finding of the largest fixture (3,000; the page limit is 5,000).
			if code := getJSON(t, srv, "/api/v1/reports/"+f.Digest+"?findingsLimit=5000", &got); code != http.StatusOK {
				t.Fatalf("GET report: %d", code)
			}
			if got.Image != f.Image || len(got.Findings) != f.Findings || got.Fixable != f.Fixable {
				t.Errorf("summary image %q findings %d fixable %d; want %q %d %d",
					got.Image, len(got.Findings), got.Fixable, f.Image, f.Findings, f.Fixable)
			}
			for sev, n := range f.Counts {
				if got.Counts[sev] != n {
					t.Errorf("counts[%s] = %d, want %d (all: %v)", sev, got.Counts[sev], n, got.Counts)
				}
			}

			want, err := os.ReadFile(bom)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Get(srv.URL + "/api/v1/reports/" + f.Digest + "/bom")
			if err != nil {
				t.Fatal(err)
			}
			// The Go client decompresses transparently if the API gzips.
			stored, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(stored, want) {
				t.Fatalf("GET bom: status %d, %d bytes (err %v), want the uploaded %d bytes exactly", resp.StatusCode, len(stored), err, len(want))
			}

			// Uploading the same report again replaces it: 200, still exit 0.
			logs = &support.Buffer{}
			if code := runUploader(t, in, logs); code != scan.ExitOK {
				t.Fatalf("re-upload exit %d", code)
			}
			if l := logs.JSONLines(t); l[len(l)-1]["status"] != float64(http.StatusOK) {
				t.Errorf("re-upload status %v, want 200", l[len(l)-1]["status"])
			}
		})
	}
}
