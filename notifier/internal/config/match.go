package config

import (
	"path"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
)

// Has reports whether the route sends notifications of kind.
func (r *Route) Has(kind string) bool { return slices.Contains(r.Kinds, kind) }

// MatchNamespace reports whether a namespace with these labels is the
// route's: one of its globs (or none given) and its label selector.
func (r *Route) MatchNamespace(ns string, nsLabels map[string]string) bool {
	if len(r.Namespaces) > 0 && !slices.ContainsFunc(r.Namespaces, func(g string) bool {
		ok, _ := path.Match(g, ns)
		return ok
	}) {
		return false
	}
	if r.selector == nil || r.selector.Empty() {
		return true
	}
	return r.selector.Matches(labels.Set(nsLabels))
}

// MatchCause reports whether the route takes findings of this cause.
func (r *Route) MatchCause(cause string) bool {
	return len(r.Causes) == 0 || slices.Contains(r.Causes, cause)
}

// Finding is what a route matches a finding on.
type Finding struct {
	Severity string
	Fixable  bool     // a fixed-in version is known
	KEV      bool     // listed in CISA KEV
	EPSS     *float64 // EPSS probability; nil when the DB has none
}

// MatchFinding reports whether the route notifies the finding: at or
// above its severity, and fixable, KEV-listed and at or above its EPSS
// score when it asks for them.
func (r *Route) MatchFinding(f Finding) bool {
	return Rank(f.Severity) >= Rank(r.MinSeverity) && (f.Fixable || !r.FixableOnly) && (f.KEV || !r.KEV) &&
		(r.MinEPSS == nil || f.EPSS != nil && *f.EPSS >= *r.MinEPSS)
}

// FiltersFindings reports whether the route selects findings by more than
// severity (fix, KEV, EPSS): counts alone, as a first scan sends, cannot
// tell whether any finding matches.
func (r *Route) FiltersFindings() bool { return r.FixableOnly || r.KEV || r.MinEPSS != nil }

// Receiver returns the named receiver.
func (c *Config) Receiver(name string) *Receiver {
	for i := range c.Receivers {
		if c.Receivers[i].Name == name {
			return &c.Receivers[i]
		}
	}
	return nil
}
