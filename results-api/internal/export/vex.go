package export

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"
)

// OpenVEX v0.2.0 (https://github.com/openvex/spec): the document a VEX
// export writes, as the spec's JSON schema names its fields.
const (
	OpenVEXContext = "https://openvex.dev/ns/v0.2.0"
	OpenVEXAuthor  = "Crowsnest results-api"
	OpenVEXTooling = "Crowsnest results-api from VulnerabilityException and ClusterVulnerabilityException resources"
)

// VEXDocument is an OpenVEX document.
type VEXDocument struct {
	Context    string         `json:"@context"`
	ID         string         `json:"@id"`
	Author     string         `json:"author"`
	Timestamp  time.Time      `json:"timestamp"`
	Version    int            `json:"version"`
	Tooling    string         `json:"tooling,omitempty"`
	Statements []VEXStatement `json:"statements"`
}

// VEXStatement is one decision about one vulnerability.
type VEXStatement struct {
	Vulnerability   VEXVulnerability `json:"vulnerability"`
	Timestamp       *time.Time       `json:"timestamp,omitempty"`
	Products        []VEXComponent   `json:"products,omitempty"`
	Status          string           `json:"status"`
	StatusNotes     string           `json:"status_notes,omitempty"`
	Justification   string           `json:"justification,omitempty"`
	ImpactStatement string           `json:"impact_statement,omitempty"`
	ActionStatement string           `json:"action_statement,omitempty"`
	Supplier        string           `json:"supplier,omitempty"`
}

// VEXVulnerability names a vulnerability.
type VEXVulnerability struct {
	Name string `json:"name"`
}

// VEXComponent is a product or a subcomponent, named by a package URL.
type VEXComponent struct {
	ID            string         `json:"@id"`
	Subcomponents []VEXComponent `json:"subcomponents,omitempty"`
}

// Decision is one triage decision about one vulnerability of an image,
// with the package URLs of the findings it covers there.
type Decision struct {
	Vulnerability   string
	Status          string
	Justification   string
	Statement       string
	ActionStatement string
	Owner           string
	Source          string    // the exception or imported document, kind/namespace/name
	ExpiresAt       time.Time // zero for an imported statement
	Created         time.Time
	Packages        []string
}

// VEXOptions shape the products of each statement.
type VEXOptions struct {
	// PackageProducts also names each covered package as a product of its
	// own. Grype scanning an SBOM knows no image identity and matches VEX
	// products against the packages only; such a statement applies to the
	// package wherever the document is used, so it is opt-in.
	PackageProducts bool
}

// NewVEX builds the OpenVEX document of the decisions about the image
// (its reference and digest), issued at now. Statements come in the order
// of decisions.
func NewVEX(image, digest string, decisions []Decision, now time.Time, o VEXOptions) VEXDocument {
	doc := VEXDocument{Context: OpenVEXContext, Author: OpenVEXAuthor, Timestamp: now.UTC(), Version: 1, Tooling: OpenVEXTooling,
		Statements: make([]VEXStatement, 0, len(decisions))}
	product := OCIPURL(image, digest)
	for _, d := range decisions {
		pkgs := slices.Compact(slices.Sorted(slices.Values(d.Packages)))
		img := VEXComponent{ID: product}
		for _, p := range pkgs {
			img.Subcomponents = append(img.Subcomponents, VEXComponent{ID: p})
		}
		st := VEXStatement{Vulnerability: VEXVulnerability{Name: d.Vulnerability}, Products: []VEXComponent{img},
			Status: d.Status, Supplier: d.Owner}
		if !d.Created.IsZero() {
			ts := d.Created.UTC()
			st.Timestamp = &ts
		}
		if o.PackageProducts {
			for _, p := range pkgs {
				st.Products = append(st.Products, VEXComponent{ID: p})
			}
		}
		notes := "decided by " + d.Source
		if !d.ExpiresAt.IsZero() { // imported statements do not expire
			notes += ", until " + d.ExpiresAt.UTC().Format(time.RFC3339)
		}
		// The schema allows a not_affected statement either a
		// justification or an impact statement, never both: the reason
		// goes into the notes when there is a justification.
		switch {
		case d.Status == "not_affected" && d.Justification != "":
			st.Justification, notes = d.Justification, d.Statement+" ("+notes+")"
		case d.Status == "not_affected":
			st.ImpactStatement = d.Statement
		default:
			notes = d.Statement + " (" + notes + ")"
		}
		st.StatusNotes = notes
		if d.Status == "affected" {
			st.ActionStatement = d.ActionStatement
		}
		doc.Statements = append(doc.Statements, st)
	}
	body, _ := json.Marshal(doc.Statements)
	sum := sha256.Sum256(append([]byte(digest+"\n"), body...))
	doc.ID = "urn:crowsnest:vex:" + hex.EncodeToString(sum[:16])
	return doc
}

// OCIPURL is the package URL of an image by digest, as Grype names an
// image it scans: pkg:oci/<name>@<digest>?repository_url=<registry/repository>.
func OCIPURL(image, digest string) string {
	repo := image
	if i := strings.Index(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i] // a tag, not a registry port
	}
	name := repo[strings.LastIndex(repo, "/")+1:]
	if name == "" {
		name = "image"
	}
	p := "pkg:oci/" + url.PathEscape(strings.ToLower(name)) + "@" + url.PathEscape(digest)
	if repo != "" && repo != name {
		p += "?repository_url=" + url.QueryEscape(repo)
	}
	return p
}
