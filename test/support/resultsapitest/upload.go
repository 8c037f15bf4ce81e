package resultsapitest

import (
	"bytes"
	"net/http"
	"testing"
)

// SmallBOM is a minimal valid CycloneDX document with one high finding for
// digest. It is constructed for tests, not Grype output; use the fixtures in
// results-api/testdata/grype for real reports.
func SmallBOM(digest string) []byte {
	return []byte(`{"bomFormat":"CycloneDX","specVersion":"1.6","version":1,
"metadata":{"component":{"bom-ref":"img","type":"container","name":"registry.example/demo","version":"` + digest + `"}},
"components":[{"bom-ref":"pkg:apk/alpine/musl@1.2.5","type":"library","name":"musl","version":"1.2.5","purl":"pkg:apk/alpine/musl@1.2.5"}],
"vulnerabilities":[{"bom-ref":"v1","id":"CVE-2026-0001","source":{"name":"alpine:distro:alpine:3.20"},"ratings":[{"severity":"high"}],"affects":[{"ref":"pkg:apk/alpine/musl@1.2.5"}]}]}`)
}

// PutReport uploads bom for digest (image registry.example/demo@digest) with
// the server's write token, as the uploader would, and fails the test unless
// results-api stored it. A nil bom uploads SmallBOM(digest).
func (s *Server) PutReport(t testing.TB, digest string, bom []byte) {
	t.Helper()
	if bom == nil {
		bom = SmallBOM(digest)
	}
	Put(t, s.Client(), s.URL, s.Token, digest, "registry.example/demo@"+digest, bom)
}

// Put uploads bom as digest's report of image to the results API at url
// with token, as the uploader does, and fails the test unless it was
// stored (200 or 201).
func Put(t testing.TB, c *http.Client, url, token, digest, image string, bom []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url+"/api/v1/reports/"+digest+"?image="+image, bytes.NewReader(bom))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT report %s: HTTP %d", digest, resp.StatusCode)
	}
}
