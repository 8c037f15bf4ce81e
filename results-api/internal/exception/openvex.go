package exception

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Kinds of imported OpenVEX document, as their custom resources are named.
const (
	KindVEXDocument        = "VEXDocument"
	KindClusterVEXDocument = "ClusterVEXDocument"
)

// Limits of one imported document, beyond the CRD's size cap: what one
// document may add to the Set.
const (
	MaxVEXStatements = 10000
	MaxVEXRules      = 50000
)

// Provenance says where an imported statement comes from.
type Provenance struct {
	DocumentID string    // the document's @id
	Author     string    // the document's author
	Timestamp  time.Time // the statement's timestamp, else the document's
}

// Suppresses reports whether a VEX status hides a finding: not_affected and
// fixed do; affected and under_investigation only annotate it.
func Suppresses(status string) bool { return status == "not_affected" || status == "fixed" }

// openVEX is the part of an OpenVEX document (https://github.com/openvex/spec,
// v0.2.0; v0.0.x wrote the vulnerability as a string) read here.
type openVEX struct {
	Context     string     `json:"@context"`
	ID          string     `json:"@id"`
	Author      string     `json:"author"`
	Timestamp   *time.Time `json:"timestamp"`
	LastUpdated *time.Time `json:"last_updated"`
	Statements  []vexStmt  `json:"statements"`
}

type vexStmt struct {
	Vulnerability   vexVuln      `json:"vulnerability"`
	Timestamp       *time.Time   `json:"timestamp"`
	Products        []vexProduct `json:"products"`
	Status          string       `json:"status"`
	Justification   string       `json:"justification"`
	ImpactStatement string       `json:"impact_statement"`
	ActionStatement string       `json:"action_statement"`
	StatusNotes     string       `json:"status_notes"`
}

type vexVuln struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases"`
}

// UnmarshalJSON reads a vulnerability object, or a bare id as OpenVEX
// v0.0.x wrote it.
func (v *vexVuln) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		return json.Unmarshal(b, &v.Name)
	}
	type plain vexVuln
	return json.Unmarshal(b, (*plain)(v))
}

type vexProduct struct {
	ID            string            `json:"@id"`
	Identifiers   map[string]string `json:"identifiers"`
	Hashes        map[string]string `json:"hashes"`
	Subcomponents []vexProduct      `json:"subcomponents"`
}

var (
	digestRE        = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	hexRE           = regexp.MustCompile(`^[a-f0-9]{64}$`)
	vulnIDRE        = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9._:]+)+$`)
	statuses        = map[string]bool{"not_affected": true, "affected": true, "fixed": true, "under_investigation": true}
	justifications  = map[string]bool{"component_not_present": true, "vulnerable_code_not_present": true, "vulnerable_code_not_in_execute_path": true, "vulnerable_code_cannot_be_controlled_by_adversary": true, "inline_mitigations_already_exist": true}
	errNoStatements = errors.New("no statements")
)

// ParseOpenVEX reads an OpenVEX document into rules: one Exception per
// image product of a statement (the image's digest, its subcomponents as
// packages), and one for the statement's package products (their purls, in
// any image), each carrying ref and the statement's provenance. A document
// that breaks the spec's rules, or names no image by digest and no package
// in a statement, is refused whole: no statement of it applies.
func ParseOpenVEX(ref Ref, doc []byte) ([]*Exception, *Provenance, error) {
	var d openVEX
	dec := json.NewDecoder(bytes.NewReader(doc))
	if err := dec.Decode(&d); err != nil {
		return nil, nil, fmt.Errorf("not OpenVEX JSON: %w", err)
	}
	switch {
	case !strings.HasPrefix(d.Context, "https://openvex.dev/ns"):
		return nil, nil, fmt.Errorf("@context %q is not OpenVEX's (https://openvex.dev/ns/v0.2.0)", d.Context)
	case strings.TrimSpace(d.ID) == "":
		return nil, nil, errors.New("the document has no @id")
	case strings.TrimSpace(d.Author) == "":
		return nil, nil, errors.New("the document has no author")
	case d.Timestamp == nil:
		return nil, nil, errors.New("the document has no timestamp")
	case len(d.Statements) == 0:
		return nil, nil, errNoStatements
	case len(d.Statements) > MaxVEXStatements:
		return nil, nil, fmt.Errorf("%d statements, more than %d", len(d.Statements), MaxVEXStatements)
	}
	prov := &Provenance{DocumentID: d.ID, Author: d.Author, Timestamp: d.Timestamp.UTC()}
	if d.LastUpdated != nil {
		prov.Timestamp = d.LastUpdated.UTC()
	}
	var rules []*Exception
	for i := range d.Statements {
		rs, err := statementRules(ref, prov, &d.Statements[i])
		if err != nil {
			return nil, nil, fmt.Errorf("statement %d: %w", i, err)
		}
		if rules = append(rules, rs...); len(rules) > MaxVEXRules {
			return nil, nil, fmt.Errorf("more than %d products in all", MaxVEXRules)
		}
	}
	return rules, prov, nil
}

// statementRules checks one statement against the spec and turns it into
// rules.
func statementRules(ref Ref, doc *Provenance, st *vexStmt) ([]*Exception, error) {
	if err := checkStatement(st); err != nil {
		return nil, err
	}
	ids := []string{strings.ToUpper(st.Vulnerability.Name)}
	for _, a := range st.Vulnerability.Aliases {
		if vulnIDRE.MatchString(a) {
			ids = append(ids, strings.ToUpper(a))
		}
	}
	prov := *doc
	if st.Timestamp != nil {
		prov.Timestamp = st.Timestamp.UTC()
	}
	statement := st.ImpactStatement
	if statement == "" {
		statement = st.StatusNotes
	}
	base := Exception{Ref: ref, Created: prov.Timestamp, Vulnerabilities: ids, Status: st.Status, Justification: st.Justification,
		Statement: statement, ActionStatement: st.ActionStatement, Owner: doc.Author, VEX: &prov}
	var rules []*Exception
	var pkgs []string
	for _, p := range st.Products {
		digest, purls := productIDs(p)
		var subs []string
		for _, s := range p.Subcomponents {
			_, sp := productIDs(s)
			subs = append(subs, sp...)
		}
		switch {
		case digest != "":
			r := base
			r.Images, r.Packages = []string{digest}, subs
			rules = append(rules, &r)
		case len(purls) > 0:
			pkgs = append(append(pkgs, purls...), subs...)
		}
	}
	if len(pkgs) > 0 {
		r := base
		r.Packages = pkgs
		rules = append(rules, &r)
	}
	if len(rules) == 0 {
		return nil, errors.New("no product names an image by digest (pkg:oci/…@sha256:…, sha256:…) or a package (a package URL)")
	}
	return rules, nil
}

// checkStatement applies the spec's rules for a statement.
func checkStatement(st *vexStmt) error {
	switch v := st.Vulnerability.Name; {
	case v == "":
		return errors.New("vulnerability has no name")
	case !vulnIDRE.MatchString(v):
		return fmt.Errorf("vulnerability name %q is not an id like CVE-2024-1234", v)
	case !statuses[st.Status]:
		return fmt.Errorf("status %q is not one of not_affected, affected, fixed, under_investigation", st.Status)
	case len(st.Products) == 0:
		return errors.New("no products")
	case st.Status == "not_affected" && st.Justification == "" && st.ImpactStatement == "":
		return errors.New("status not_affected needs a justification or an impact_statement")
	case st.Justification != "" && !justifications[st.Justification]:
		return fmt.Errorf("justification %q is not one of OpenVEX's", st.Justification)
	case st.Status == "affected" && st.ActionStatement == "":
		return errors.New("status affected needs an action_statement")
	}
	return nil
}

// productIDs reads what a component names: an image digest (an OCI
// package URL's version, a bare digest, a sha-256 hash) and the package
// URLs of other types. Other identifiers (CPEs, plain names) name nothing
// results-api can match.
func productIDs(p vexProduct) (digest string, purls []string) {
	ids := []string{p.ID, p.Identifiers["purl"]}
	if h := strings.ToLower(p.Hashes["sha-256"]); hexRE.MatchString(h) {
		digest = "sha256:" + h
	}
	for _, id := range ids {
		switch {
		case id == "":
		case strings.HasPrefix(id, "pkg:oci/"):
			if d := ociDigest(id); d != "" {
				digest = d
			}
		case digestRE.MatchString(id):
			digest = id
		case strings.HasPrefix(id, "pkg:"):
			purls = append(purls, id)
		}
	}
	return digest, purls
}

// ociDigest is the digest of pkg:oci/<name>@<digest>[?…][#…], "" if it
// has none.
func ociDigest(purl string) string {
	_, version, ok := strings.Cut(purl, "@")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(version, "?#"); i >= 0 {
		version = version[:i]
	}
	v, err := url.PathUnescape(version)
	if err != nil || !digestRE.MatchString(v) {
		return ""
	}
	return v
}
