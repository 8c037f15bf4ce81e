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

// MatchFinding reports whether a finding of this severity (and fix) is
// notified by the route.
func (r *Route) MatchFinding(severity string, fixable bool) bool {
	return Rank(severity) >= Rank(r.MinSeverity) && (fixable || !r.FixableOnly)
}

// Receiver returns the named receiver.
func (c *Config) Receiver(name string) *Receiver {
	for i := range c.Receivers {
		if c.Receivers[i].Name == name {
			return &c.Receivers[i]
		}
	}
	return nil
}
