package exception

import (
	"slices"
	"strings"
	"time"
)

// Kinds of exception, as their custom resources are named.
const (
	KindNamespaced = "VulnerabilityException"
	KindCluster    = "ClusterVulnerabilityException"
)

// DefaultMaxLifetime is how far after its creation an exception may
// expire at most (90 days).
const DefaultMaxLifetime = 90 * 24 * time.Hour

// Ref names one exception.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String is kind/name or kind/namespace/name.
func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// Exception is one triage decision, as read from its custom resource.
type Exception struct {
	Ref
	Created         time.Time
	Vulnerabilities []string // upper-cased: ids are matched case-insensitively
	Packages        []string // purls, or prefixes ending in '*'
	Images          []string // digests
	Status          string   // OpenVEX status
	Justification   string
	Statement       string
	ActionStatement string
	Owner, Ticket   string
	ExpiresAt       time.Time
	ExpiredOnFix    bool
	// VEX is set on a statement imported from an OpenVEX document (Ref
	// names its VEXDocument or ClusterVEXDocument): it never expires, and
	// suppresses only when its status does (Suppresses).
	VEX *Provenance
}

// Cluster reports whether e applies in every namespace.
func (e *Exception) Cluster() bool { return e.Kind == KindCluster || e.Kind == KindClusterVEXDocument }

// State is whether an exception applies at all, whatever the finding.
type State string

// The states of an exception.
const (
	Active State = "active"
	// Expired: expiresAt has passed.
	Expired State = "expired"
	// TooLong: expiresAt lies more than the maximum lifetime after the
	// exception's creation (admission cannot check it: CEL has no clock).
	TooLong State = "invalid_expiry"
)

// State of e at now, with at most maxLifetime between creation and expiry
// (0: no maximum).
func (e *Exception) State(now time.Time, maxLifetime time.Duration) State {
	switch {
	case e.VEX != nil:
		return Active // an imported statement holds until its document changes
	case !now.Before(e.ExpiresAt):
		return Expired
	case maxLifetime > 0 && e.ExpiresAt.Sub(e.Created) > maxLifetime:
		return TooLong
	}
	return Active
}

// Finding is what matching needs of a finding.
type Finding struct {
	Digest  string
	VulnID  string
	PURL    string
	FixedIn []string
}

// Covers reports whether e's selectors (vulnerability, package, image)
// select f, fix or not.
func (e *Exception) Covers(f Finding) bool {
	if !slices.Contains(e.Vulnerabilities, strings.ToUpper(f.VulnID)) {
		return false
	}
	if len(e.Images) > 0 && !slices.Contains(e.Images, f.Digest) {
		return false
	}
	if len(e.Packages) == 0 {
		return true
	}
	return slices.ContainsFunc(e.Packages, func(p string) bool { return purlMatches(p, f.PURL) })
}

// LapsedOnFix reports whether e, covering f, has lapsed because a fix
// version exists for f.
func (e *Exception) LapsedOnFix(f Finding) bool {
	return e.ExpiredOnFix && slices.ContainsFunc(f.FixedIn, func(v string) bool { return v != "" })
}

// purlMatches matches a package URL against a whole purl or a prefix
// ending in '*'. Qualifiers and subpath of the finding's purl are ignored
// when the pattern has none, so that pkg:deb/debian/openssl@3.0.11 matches
// pkg:deb/debian/openssl@3.0.11?arch=amd64&distro=debian-12.
func purlMatches(pattern, purl string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(purl, prefix)
	}
	if purl == pattern {
		return true
	}
	if !strings.ContainsAny(pattern, "?#") {
		if i := strings.IndexAny(purl, "?#"); i >= 0 {
			return purl[:i] == pattern
		}
	}
	return false
}

func upper(s string) string { return strings.ToUpper(s) }
