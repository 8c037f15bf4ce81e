package apitest

import (
	"testing"

	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// SmallBOM is resultsapitest.SmallBOM: a minimal valid CycloneDX document
// with one high finding for digest (constructed, not Grype output).
func SmallBOM(digest string) []byte { return resultsapitest.SmallBOM(digest) }

// PutReport uploads bom for digest (image registry.example/demo@digest) with
// the server's write token, as the uploader would, and fails the test unless
// results-api stored it. A nil bom uploads SmallBOM(digest).
func (s *Server) PutReport(t testing.TB, digest string, bom []byte) {
	t.Helper()
	if bom == nil {
		bom = SmallBOM(digest)
	}
	resultsapitest.Put(t, s.Client(), s.URL, s.Token, digest, "registry.example/demo@"+digest, bom)
}
