package exception

import (
	"os"
	"strings"
	"testing"
	"time"
)

const publisherDoc = "../../testdata/openvex/publisher.json"

var d101 = "sha256:0000000000000000000000000000000000000000000000000000000000000065"

func readPublisher(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(publisherDoc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseOpenVEX reads a vexctl-shaped document: products by pkg:oci
// purl, bare digest and sha-256 hash, package products, aliases, the
// statements' own timestamps and the document's last_updated.
func TestParseOpenVEX(t *testing.T) {
	ref := Ref{Kind: KindClusterVEXDocument, Name: "publisher"}
	rules, prov, err := ParseOpenVEX(ref, readPublisher(t))
	if err != nil {
		t.Fatal(err)
	}
	if prov.Author != "Demo Publisher Security <security@publisher.example>" || !strings.HasPrefix(prov.DocumentID, "https://openvex.dev/docs/public/vex-") ||
		!prov.Timestamp.Equal(time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("provenance %+v", prov)
	}
	if len(rules) != 6 {
		t.Fatalf("%d rules, want 6", len(rules))
	}
	first := rules[0]
	if first.Images[0] != d101 || first.Packages[0] != "pkg:apk/alpine/openssl@3.0.1" || first.Statement != "the image never parses untrusted certificates" ||
		first.Justification != "vulnerable_code_not_in_execute_path" || !first.VEX.Timestamp.Equal(time.Date(2026, 10, 2, 10, 0, 0, 0, time.UTC)) ||
		first.Ref != ref || !first.Cluster() {
		t.Errorf("first rule %+v %+v", first, first.VEX)
	}
	if r := rules[2]; r.Images[0] != d101 || !r.VEX.Timestamp.Equal(prov.Timestamp) || r.Status != "under_investigation" {
		t.Errorf("the hashes product: %+v, %+v", r, r.VEX)
	}
	if r := rules[5]; len(r.Images) != 0 || r.Packages[0] != "pkg:apk/alpine/curl@8.0" ||
		strings.Join(r.Vulnerabilities, ",") != "GHSA-ABCD-EFGH-IJKL,CVE-2024-0005" {
		t.Errorf("the package product: %+v", r)
	}
}

// TestParseOpenVEXRefuses: a document that breaks the spec's rules is
// refused whole, with a reason naming the statement.
func TestParseOpenVEXRefuses(t *testing.T) {
	good := string(readPublisher(t))
	for _, tc := range []struct{ name, doc, want string }{
		{"not JSON", "{statements: https://openvex.dev/ns", "not OpenVEX JSON"},
		{"another context", strings.Replace(good, "https://openvex.dev/ns/v0.2.0", "https://example.invalid/ns", 1), "@context"},
		{"no author", strings.Replace(good, `"author": "Demo Publisher Security <security@publisher.example>",`, "", 1), "no author"},
		{"unknown status", strings.Replace(good, `"status": "fixed"`, `"status": "patched"`, 1), `statement 1: status "patched"`},
		{"not_affected without a reason", strings.Replace(good, `"impact_statement": "busybox's vulnerable applet is not installed"`, `"status_notes": "x"`, 1),
			"statement 3: status not_affected needs a justification or an impact_statement"},
		{"affected without an action", strings.Replace(good, `"action_statement"`, `"status_notes"`, 1), "statement 4: status affected needs an action_statement"},
		{"product named by a CPE only", strings.Replace(good, `"@id": "pkg:apk/alpine/curl@8.0"`, `"@id": "cpe:2.3:a:haxx:curl:8.0:*:*:*:*:*:*:*"`, 1),
			"statement 5: no product names an image"},
		{"no statements", `{"@context": "https://openvex.dev/ns/v0.2.0", "@id": "x", "author": "a", "timestamp": "2026-10-01T00:00:00Z", "statements": []}`,
			"no statements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseOpenVEX(Ref{Kind: KindVEXDocument, Namespace: "a", Name: "d"}, []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestImportedStatements: not_affected and fixed suppress exactly what
// they cover, affected and under_investigation annotate, the latest
// statement holds, and a namespaced document applies in its namespace only.
func TestImportedStatements(t *testing.T) {
	rules, _, err := ParseOpenVEX(Ref{Kind: KindVEXDocument, Namespace: "a", Name: "publisher"}, readPublisher(t))
	if err != nil {
		t.Fatal(err)
	}
	set := NewSet(rules, Policy{MaxLifetime: DefaultMaxLifetime})
	f := func(vuln, pkg string) Finding {
		return Finding{Digest: d101, VulnID: vuln, PURL: "pkg:apk/alpine/" + pkg}
	}
	other := "sha256:" + strings.Repeat("1", 64)
	for _, tc := range []struct {
		name           string
		f              Finding
		runsIn         []string
		suppressed     bool
		annotateStatus string
	}{
		{"not_affected in its package", f("CVE-2024-0001", "openssl@3.0.1?arch=x86_64"), []string{"a"}, true, ""},
		{"another digest", Finding{Digest: other, VulnID: "CVE-2024-0001", PURL: "pkg:apk/alpine/openssl@3.0.1"}, []string{"a"}, false, ""},
		{"another namespace", f("CVE-2024-0001", "openssl@3.0.1"), []string{"b"}, false, ""},
		{"a view where one namespace has no document", f("CVE-2024-0001", "openssl@3.0.1"), []string{"a", "b"}, false, ""},
		{"fixed, but in another package", f("CVE-2024-0002", "zlib@1.2"), []string{"a"}, false, ""},
		{"fixed in its package", f("CVE-2024-0002", "musl@1.2.5"), []string{"a"}, true, ""},
		{"under_investigation annotates", f("CVE-2024-0003", "musl@1.2.5"), []string{"a"}, false, "under_investigation"},
		{"a later affected overrules not_affected", f("CVE-2024-0004", "busybox@1.36"), []string{"a"}, false, "affected"},
		{"by alias, package product in any image", Finding{Digest: other, VulnID: "cve-2024-0005", PURL: "pkg:apk/alpine/curl@8.0"}, []string{"a"}, true, ""},
		{"another vulnerability", f("CVE-2024-9999", "openssl@3.0.1"), []string{"a"}, false, ""},
	} {
		got := set.Decide(tc.f, tc.runsIn)
		if (got != nil) != tc.suppressed || (got != nil && got.VEX == nil) {
			t.Errorf("%s: decided %+v, want suppressed %v", tc.name, got, tc.suppressed)
		}
		note := set.Annotate(tc.f, tc.runsIn)
		if (note == nil && tc.annotateStatus != "") || (note != nil && note.Status != tc.annotateStatus) {
			t.Errorf("%s: annotated %+v, want %q", tc.name, note, tc.annotateStatus)
		}
	}
}
