package service_test

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
)

// publisherDoc is a vexctl-shaped OpenVEX document about shared
// (testdata/openvex/README.md says what each statement tests).
const publisherDoc = "../../testdata/openvex/publisher.json"

// importVEX creates a VEXDocument (a ClusterVEXDocument when namespace is
// ""), returning the API server's refusal.
func (e *exceptionEnv) importVEX(namespace, name, doc string) error {
	kind, res := exception.KindVEXDocument, e.dc.Resource(exception.VEXDocumentResource).Namespace(namespace)
	if namespace == "" {
		kind, res = exception.KindClusterVEXDocument, e.dc.Resource(exception.ClusterVEXDocumentResource).Namespace("")
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "crowsnest.dev/v1alpha1", "kind": kind,
		"spec": map[string]any{"document": doc, "description": "test import"}}}
	u.SetName(name)
	_, err := res.Create(e.c.ctx, u, metav1.CreateOptions{})
	return err
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// vexFinding is what a finding says about the decisions on it.
type vexFinding struct {
	ID          string
	Suppression *struct {
		Exception                        struct{ Kind, Namespace, Name string }
		Status, Justification, Statement string
		ExpiresAt                        *time.Time
		Vex                              *struct {
			DocumentID, Author string
			Timestamp          time.Time
		}
	}
	VexStatement *struct {
		Exception         struct{ Kind, Namespace, Name string }
		Status, Statement string
		ActionStatement   string
		Vex               struct{ DocumentID, Author string }
	}
}

// vexView returns every finding of digest in the caller's view, by id.
func (e *exceptionEnv) vexView(token, digest, query string) map[string]vexFinding {
	e.t.Helper()
	code, b := e.get("/api/v1/reports/"+digest+"?suppressed=all&"+query, "Authorization", "Bearer "+token)
	if code != http.StatusOK {
		e.t.Fatalf("GET report %s: %d %s", digest, code, b)
	}
	var d struct{ Findings []vexFinding }
	decode(e.t, b, &d)
	out := map[string]vexFinding{}
	for _, f := range d.Findings {
		out[f.ID] = f
	}
	return out
}

// suppressedIDs lists the suppressed ids of a view.
func suppressedIDs(v map[string]vexFinding) []string {
	var ids []string
	for id, f := range v {
		if f.Suppression != nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestVEXImport: a publisher's OpenVEX document, imported cluster-wide,
// suppresses exactly its not_affected and fixed statements' findings —
// another vulnerability, another digest, another package stay active —
// with the statement's provenance on the finding; affected and
// under_investigation statements annotate without suppressing, and a later
// statement overrules an earlier one. A document that does not parse is
// listed as invalid in the audit and changes nothing; one that is not
// OpenVEX at all, or too large, is refused at admission.
func TestVEXImport(t *testing.T) {
	e := newExceptionEnv(t)
	if err := e.importVEX("", "publisher", readFile(t, publisherDoc)); err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(readFile(t, publisherDoc), `"status": "fixed"`, `"status": "patched"`, 1)
	if err := e.importVEX("team-a", "broken", broken); err != nil {
		t.Fatalf("a document admission cannot parse is accepted (results-api reports it): %v", err)
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"not-openvex": {`{"bomFormat": "CycloneDX", "statements": []}`, "must be an OpenVEX document"},
		"too-large":   {`{"@context": "https://openvex.dev/ns/v0.2.0", "statements": [], "pad": "` + strings.Repeat("x", 512*1024) + `"}`, "spec.document: Too long"},
	} {
		if err := e.importVEX("team-a", name, tc.doc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("admission of %s: %v, want %q", name, err, tc.want)
		}
	}
	e.start()
	alice, bob := e.c.token("alice"), e.c.token("bob")

	for _, who := range []struct{ name, token string }{{"alice", alice}, {"bob", bob}} {
		v := e.vexView(who.token, shared, "")
		if got := suppressedIDs(v); !slices.Equal(got, []string{"CVE-2024-0001", "CVE-2024-0005"}) {
			t.Errorf("%s: suppressed %v, want CVE-2024-0001 (openssl, not_affected) and CVE-2024-0005 (curl, fixed by alias)", who.name, got)
		}
		s := v["CVE-2024-0001"].Suppression
		if s == nil || s.Exception.Kind != "ClusterVEXDocument" || s.Exception.Name != "publisher" || s.Status != "not_affected" ||
			s.Justification != "vulnerable_code_not_in_execute_path" || s.Statement != "the image never parses untrusted certificates" ||
			s.ExpiresAt != nil || s.Vex == nil || s.Vex.Author != "Demo Publisher Security <security@publisher.example>" ||
			!strings.HasPrefix(s.Vex.DocumentID, "https://openvex.dev/docs/public/vex-8a4c") ||
			!s.Vex.Timestamp.Equal(time.Date(2026, 10, 2, 10, 0, 0, 0, time.UTC)) {
			t.Errorf("%s: CVE-2024-0001's provenance %+v", who.name, s)
		}
		if n := v["CVE-2024-0003"].VexStatement; n == nil || n.Status != "under_investigation" || n.Vex.Author == "" || v["CVE-2024-0003"].Suppression != nil {
			t.Errorf("%s: CVE-2024-0003 (under_investigation) %+v", who.name, v["CVE-2024-0003"])
		}
		if n := v["CVE-2024-0004"].VexStatement; n == nil || n.Status != "affected" || n.ActionStatement != "upgrade to the 1.37 release once it ships" {
			t.Errorf("%s: CVE-2024-0004 (not_affected, then affected) %+v", who.name, v["CVE-2024-0004"])
		}
		if f := v["CVE-2024-0002"]; f.Suppression != nil || f.VexStatement != nil {
			t.Errorf("%s: CVE-2024-0002 is fixed in musl, the finding is in zlib: %+v", who.name, f)
		}
	}
	// Another digest: bOnly's CVE-2024-0001 stays active.
	if got := suppressedIDs(e.vexView(bob, bOnly, "")); len(got) != 0 {
		t.Errorf("bOnly: suppressed %v, want none", got)
	}
	// The CVE view marks the shared image only.
	code, b := e.get("/api/v1/vulnerabilities/CVE-2024-0001?suppressed=all", "Authorization", "Bearer "+bob)
	if code != http.StatusOK {
		t.Fatalf("CVE view: %d %s", code, b)
	}
	var cve struct {
		ActiveImages, SuppressedImages int
		Images                         []struct {
			Digest      string
			Suppression *struct{ Vex *struct{ Author string } }
		}
	}
	decode(t, b, &cve)
	if cve.ActiveImages != 1 || cve.SuppressedImages != 1 {
		t.Errorf("CVE view: %d active, %d suppressed", cve.ActiveImages, cve.SuppressedImages)
	}
	for _, im := range cve.Images {
		if marked := im.Suppression != nil && im.Suppression.Vex != nil; marked != (im.Digest == shared) {
			t.Errorf("CVE view: %s marked %v", im.Digest, marked)
		}
	}

	// The audit: alice sees the cluster document and team-a's broken one.
	code, b = e.get("/api/v1/exceptions/audit", "Authorization", "Bearer "+alice)
	if code != http.StatusOK {
		t.Fatalf("audit: %d %s", code, b)
	}
	var audit struct {
		Documents []struct {
			Document     struct{ Kind, Namespace, Name string }
			State, Error string
			Statements   int
		}
	}
	decode(t, b, &audit)
	if len(audit.Documents) != 2 {
		t.Fatalf("audit documents %+v", audit.Documents)
	}
	if d := audit.Documents[0]; d.Document.Name != "publisher" || d.State != "valid" || d.Statements != 6 {
		t.Errorf("publisher: %+v", d)
	}
	if d := audit.Documents[1]; d.Document.Name != "broken" || d.State != "invalid" || !strings.Contains(d.Error, `statement 1: status "patched"`) {
		t.Errorf("broken: %+v", d)
	}
	code, b = e.get("/api/v1/exceptions/audit", "Authorization", "Bearer "+bob)
	if code != http.StatusOK || strings.Contains(string(b), "broken") {
		t.Errorf("bob's audit lists team-a's document: %d %s", code, b)
	}
}

// TestVEXImportPerTenant: a team's VEXDocument changes its own view only,
// like its exceptions: team-a's document suppresses CVE-2024-0003 for
// alice, not for bob nor for carol's view of both namespaces; bob's
// document naming the shared image (the attack) changes bob's view, not
// alice's. A document imported while results-api runs applies at once.
func TestVEXImportPerTenant(t *testing.T) {
	e := newExceptionEnv(t)
	doc := func(vuln string) string {
		return `{"@context": "https://openvex.dev/ns/v0.2.0", "@id": "urn:test:` + vuln + `", "author": "security team",
		  "timestamp": "2026-11-01T00:00:00Z", "version": 1, "statements": [{"vulnerability": {"name": "` + vuln + `"},
		  "products": [{"@id": "` + shared + `"}], "status": "not_affected", "justification": "component_not_present"}]}`
	}
	if err := e.importVEX("team-a", "a-doc", doc("CVE-2024-0003")); err != nil {
		t.Fatal(err)
	}
	e.start()
	if err := e.importVEX("team-b", "attack", doc("CVE-2024-0004")); err != nil {
		t.Fatal(err)
	}
	alice, bob, carol := e.c.token("alice"), e.c.token("bob"), e.c.token("carol")
	want := map[string][]string{"alice": {"CVE-2024-0003"}, "bob": {"CVE-2024-0004"}, "carol": nil, "carol@team-a": {"CVE-2024-0003"}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string][]string{"alice": suppressedIDs(e.vexView(alice, shared, "")), "bob": suppressedIDs(e.vexView(bob, shared, "")),
			"carol": suppressedIDs(e.vexView(carol, shared, "")), "carol@team-a": suppressedIDs(e.vexView(carol, shared, "namespace=team-a"))}
		same := true
		for k := range want {
			same = same && slices.Equal(got[k], want[k])
		}
		if same {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("views %v, want %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestVEXImportRoundTrip: team-a's exceptions exported as OpenVEX
// (GET …/vex) and imported back as a VEXDocument, with the exceptions
// deleted, suppress the same findings in team-a's view — now with the
// document's provenance — and still nothing in team-b's.
func TestVEXImportRoundTrip(t *testing.T) {
	e := newExceptionEnv(t)
	e.except("team-a", "parser", []string{"CVE-2024-0001"}, nil)
	e.except("team-a", "musl-fixed", []string{"CVE-2024-0003", "CVE-2024-0004"}, func(s map[string]any) {
		s["status"], s["packages"] = "fixed", []any{"pkg:apk/alpine/musl@*"}
		delete(s, "justification")
	})
	e.start()
	alice, bob := e.c.token("alice"), e.c.token("bob")
	before := suppressedIDs(e.vexView(alice, shared, ""))
	if !slices.Equal(before, []string{"CVE-2024-0001", "CVE-2024-0003"}) {
		t.Fatalf("exceptions suppress %v", before)
	}
	code, doc := e.get("/api/v1/reports/"+shared+"/vex", "Authorization", "Bearer "+alice)
	if code != http.StatusOK {
		t.Fatalf("export: %d %s", code, doc)
	}
	for _, name := range []string{"parser", "musl-fixed"} {
		if err := e.dc.Resource(exception.NamespacedResource).Namespace("team-a").Delete(e.c.ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.importVEX("team-a", "exported", string(doc)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		v := e.vexView(alice, shared, "")
		got, kinds := suppressedIDs(v), map[string]bool{}
		for _, id := range got {
			kinds[v[id].Suppression.Exception.Kind+"/"+v[id].Suppression.Exception.Name] = true
		}
		if slices.Equal(got, before) && len(kinds) == 1 && kinds["VEXDocument/exported"] {
			if s := v["CVE-2024-0001"].Suppression; s.Vex == nil || s.Vex.Author != "Crowsnest results-api" ||
				!strings.HasPrefix(s.Vex.DocumentID, "urn:crowsnest:vex:") || !strings.HasPrefix(s.Statement, "not reachable") {
				t.Errorf("provenance after the round trip: %+v %+v", s, s.Vex)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the round trip alice's view suppresses %v by %v, want %v by the document", got, kinds, before)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := suppressedIDs(e.vexView(bob, shared, "")); len(got) != 0 {
		t.Errorf("team-a's imported document suppresses %v in bob's view", got)
	}
}
