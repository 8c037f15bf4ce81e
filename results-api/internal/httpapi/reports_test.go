package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"net/http"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// constructed CycloneDX input (not real Grype output).
var constructed = bomtest.BOM(
	bomtest.Vuln{ID: "CVE-2026-0001", Severity: "critical", Package: "openssl", Version: "3.0.1", Fix: "3.0.9", Score: 9.8},
	bomtest.Vuln{ID: "CVE-2026-0002", Severity: "high", Package: "zlib", Version: "1.2"},
	bomtest.Vuln{ID: "CVE-2026-0005", Severity: "none", Package: "musl", Version: "1.2", Fix: "1.3"},
)

func TestPutGetReplaceDelete(t *testing.T) {
	c := newClient(t)
	d := bomtest.Digest(7)
	code, b := c.put(d, constructed)
	if code != http.StatusCreated {
		t.Fatalf("first PUT: %d %s", code, b)
	}
	var sum api.ReportSummary
	_ = jsonUnmarshal(b, &sum)
	if sum.Counts.Critical != 1 || sum.Counts.High != 1 || sum.Counts.Negligible != 1 || sum.Findings != 3 || sum.Fixable != 2 {
		t.Errorf("summary = %+v", sum)
	}
	if code, _ := c.put(d, constructed); code != http.StatusOK {
		t.Errorf("same report again: %d, want 200", code)
	}
	var det api.ReportDetail
	c.getJSON("/api/v1/reports/"+d, &det)
	if det.FindingCount != 3 || len(det.Findings) != 3 || det.Findings[0].Severity != api.SeverityCritical {
		t.Errorf("detail = %+v", det)
	}
	if det.Image != "registry.example/app@"+d {
		t.Errorf("image = %q", det.Image)
	}
	code, raw := c.do(http.MethodGet, "/api/v1/reports/"+d+"/bom", nil)
	if code != 200 || !bytes.Equal(raw, constructed) {
		t.Errorf("bom: %d, byte-identical %v", code, bytes.Equal(raw, constructed))
	}

	// A new report replaces the findings.
	next := bomtest.BOM(bomtest.Vuln{ID: "CVE-2026-0009", Severity: "low", Package: "curl", Version: "8.0"})
	var gzbuf bytes.Buffer
	zw := gzip.NewWriter(&gzbuf)
	_, _ = zw.Write(next)
	_ = zw.Close()
	if code, b := c.put(d, gzbuf.Bytes(), "Content-Encoding", "gzip"); code != http.StatusOK {
		t.Fatalf("replace: %d %s", code, b)
	}
	c.getJSON("/api/v1/reports/"+d, &det)
	if det.FindingCount != 1 || len(det.Findings) != 1 || det.Findings[0].Id != "CVE-2026-0009" {
		t.Errorf("after replace: %+v", det.Findings)
	}
	if _, raw := c.do(http.MethodGet, "/api/v1/reports/"+d+"/bom", nil); !bytes.Equal(raw, next) {
		t.Error("bom after gzip upload is not the original decompressed bytes")
	}

	if code, _ := c.do(http.MethodDelete, "/api/v1/reports/"+d, nil, "Authorization", "Bearer "+c.srv.Token); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code, b := c.do(http.MethodGet, "/api/v1/reports/"+d, nil); code != 404 || errorCode(t, b) != "not_found" {
		t.Errorf("after delete: %d %s", code, b)
	}
}

func TestAuth(t *testing.T) {
	c := newClient(t)
	d := bomtest.Digest(8)
	for name, hdr := range map[string][]string{"anonymous": nil, "basic": {"Authorization", "Basic eDp5"}} {
		if code, b := c.do(http.MethodPut, "/api/v1/reports/"+d, constructed, hdr...); code != 401 || errorCode(t, b) != "unauthorized" {
			t.Errorf("%s PUT: %d %s", name, code, b)
		}
	}
	if code, b := c.do(http.MethodPut, "/api/v1/reports/"+d, constructed, "Authorization", "Bearer wrong"); code != 403 || errorCode(t, b) != "forbidden" {
		t.Errorf("wrong token PUT: %d %s", code, b)
	}
	if code, _ := c.do(http.MethodDelete, "/api/v1/reports/"+d, nil); code != 401 {
		t.Errorf("anonymous DELETE: %d", code)
	}
	if code, _ := c.do(http.MethodDelete, "/api/v1/reports/"+d, nil, "Authorization", "Bearer nope"); code != 403 {
		t.Errorf("wrong-token DELETE: %d", code)
	}
	if code, _ := c.do(http.MethodGet, "/api/v1/reports/"+d, nil); code != 404 {
		t.Errorf("rejected writes stored something: GET %d", code)
	}
}

func TestBadInputStoresNothing(t *testing.T) {
	c := newClient(t, apitest.WithMaxBOMBytes(64<<10))
	d := bomtest.Digest(9)
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	_, _ = zw.Write(bytes.Repeat([]byte(" "), 64<<20))
	_ = zw.Close()
	// 64 MiB of spaces as one zstd frame: its header declares them all;
	// then the frame of a 100 KiB BOM whose header says 60,000 bytes (in
	// the 64 KiB limit), which Decode refuses at the declared size.
	zenc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<20))
	zbomb := zenc.EncodeAll(bytes.Repeat([]byte(" "), 64<<20), nil)
	zlies := zenc.EncodeAll(bomtest.Sized(1, 100<<10), nil)
	fcsAt := 5 // after the magic and the frame header descriptor
	if fhd := zlies[4]; fhd>>6 != 2 || fhd&3 != 0 {
		t.Fatalf("frame header descriptor %08b: want a 4-byte content size, no dictionary", fhd)
	} else if fhd&(1<<5) == 0 {
		fcsAt++ // and the window descriptor
	}
	binary.LittleEndian.PutUint32(zlies[fcsAt:], 60000)
	cases := []struct {
		name, digest string
		body         []byte
		hdr          []string
		code         int
		errCode      string
	}{
		{"malformed digest", "sha256:XYZ", constructed, nil, 400, "invalid_digest"},
		{"not json", d, []byte("hello"), nil, 400, "invalid_json"},
		{"not cyclonedx", d, []byte(`{"spdxVersion":"SPDX-2.3"}`), nil, 400, "not_cyclonedx"},
		{"over limit", d, bomtest.Sized(1, 70<<10), nil, 413, "too_large"},
		{"gzip bomb", d, bomb.Bytes(), []string{"Content-Encoding", "gzip"}, 413, "too_large"},
		{"zstd bomb", d, zbomb, []string{"Content-Encoding", "zstd"}, 413, "too_large"},
		{"zstd that lies", d, zlies, []string{"Content-Encoding", "zstd"}, 400, "invalid_zstd"},
		{"gzip sent as zstd", d, bomb.Bytes(), []string{"Content-Encoding", "zstd"}, 400, "invalid_zstd"},
		{"missing body", d, nil, nil, 400, "empty_body"},
		{"bad content type", d, constructed, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
		{"bad encoding", d, constructed, []string{"Content-Encoding", "br"}, 415, "unsupported_media_type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, b := c.put(tc.digest, tc.body, tc.hdr...)
			if code != tc.code || errorCode(t, b) != tc.errCode {
				t.Fatalf("got %d %s, want %d %s", code, b, tc.code, tc.errCode)
			}
			if !strings.Contains(string(b), `"message"`) {
				t.Fatalf("no message: %s", b)
			}
		})
	}
	var list api.ReportList
	c.getJSON("/api/v1/reports", &list)
	if list.Total != 0 {
		t.Errorf("bad input stored %d reports", list.Total)
	}
	if code, _ := c.do(http.MethodGet, "/healthz", nil); code != 200 {
		t.Errorf("server down after bad input: %d", code)
	}
}

// A client may percent-encode the digest's colon; chi then hands the
// handler the escaped segment.
func TestEncodedDigestPath(t *testing.T) {
	c := newClient(t)
	d := bomtest.Digest(10)
	enc := strings.Replace(d, ":", "%3A", 1)
	auth := []string{"Authorization", "Bearer " + c.srv.Token, "Content-Type", "application/json"}
	if code, b := c.do(http.MethodPut, "/api/v1/reports/"+enc, constructed, auth...); code != http.StatusCreated {
		t.Fatalf("PUT encoded: %d %s", code, b)
	}
	var det api.ReportDetail
	c.getJSON("/api/v1/reports/"+enc, &det)
	if det.Digest != d || det.FindingCount != 3 {
		t.Errorf("GET encoded: digest %q, findings %d", det.Digest, det.FindingCount)
	}
	if code, raw := c.do(http.MethodGet, "/api/v1/reports/"+enc+"/bom", nil); code != 200 || !bytes.Equal(raw, constructed) {
		t.Errorf("GET encoded bom: %d, byte-identical %v", code, bytes.Equal(raw, constructed))
	}
	if code, b := c.do(http.MethodGet, "/api/v1/reports/sha256%3AXYZ", nil); code != 400 || errorCode(t, b) != "invalid_digest" {
		t.Errorf("GET encoded bad digest: %d %s", code, b)
	}
	if code, _ := c.do(http.MethodDelete, "/api/v1/reports/"+enc, nil, auth[:2]...); code != http.StatusNoContent {
		t.Fatalf("DELETE encoded: %d", code)
	}
	if code, _ := c.do(http.MethodGet, "/api/v1/reports/"+d, nil); code != 404 {
		t.Errorf("after encoded delete: %d", code)
	}
}
