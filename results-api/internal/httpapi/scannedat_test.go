package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// Plays an uploader (a swapped scan container) that stores a report whose
// metadata.timestamp is in 2099, on real Postgres: the operator decides
// rescans by the scannedAt the lookup returns, so a future one would keep
// the digest from ever being rescanned. The stored scannedAt is the upload
// time, the response says why in a Warning header, and the BOM is kept as
// uploaded.
func TestUploadFromTheFutureIsClamped(t *testing.T) {
	c := newClient(t)
	d := bomtest.Digest(2099)
	bom := bytes.Replace(constructed, []byte(`"2026-11-01T10:00:00Z"`), []byte(`"2099-01-01T00:00:00Z"`), 1)
	req, err := http.NewRequest(http.MethodPut, c.srv.URL+"/api/v1/reports/"+d, bytes.NewReader(bom))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.srv.Token)
	req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
	before := time.Now()
	resp, err := c.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	after := time.Now()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}
	if w := resp.Header.Get("Warning"); !strings.HasPrefix(w, `299 - "metadata.timestamp 2099-01-01T00:00:00Z is`) || !strings.Contains(w, "scannedAt is the upload time") {
		t.Errorf("Warning header = %q, want the clamp explained", w)
	}

	body, _ := json.Marshal(api.LookupRequest{Digests: []string{d}})
	code, b := c.do(http.MethodPost, "/api/v1/reports/lookup", body, "Content-Type", "application/json")
	var found api.LookupResponse
	if code != http.StatusOK || json.Unmarshal(b, &found) != nil || len(found.Reports) != 1 {
		t.Fatalf("lookup: %d %s", code, b)
	}
	if at := found.Reports[0].ScannedAt; at.Before(before.Truncate(time.Second)) || at.After(after) {
		t.Errorf("lookup scannedAt = %v, want the upload time (between %v and %v)", at, before, after)
	}
	var det api.ReportDetail
	c.getJSON("/api/v1/reports/"+d, &det)
	if !det.ScannedAt.Equal(found.Reports[0].ScannedAt) {
		t.Errorf("detail scannedAt = %v, lookup %v", det.ScannedAt, found.Reports[0].ScannedAt)
	}
	if _, raw := c.do(http.MethodGet, "/api/v1/reports/"+d+"/bom", nil); !bytes.Equal(raw, bom) {
		t.Error("the stored BOM is not the one uploaded")
	}
}
