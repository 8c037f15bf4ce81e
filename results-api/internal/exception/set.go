package exception

import (
	"cmp"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Policy is how exceptions are judged against the clock.
type Policy struct {
	// MaxLifetime bounds expiresAt - creation (0: no bound).
	MaxLifetime time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (p Policy) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}

// Set is an immutable snapshot of every exception, indexed by
// vulnerability id. Safe for concurrent use.
type Set struct {
	all    []*Exception
	byVuln map[string][]*Exception
	policy Policy
	docs   []Document
	gen    uint64
}

// generations numbers the Sets built by this process.
var generations atomic.Uint64

// NewSet indexes list (exceptions and imported statements) and keeps docs,
// the imported documents as read. Within an id, cluster exceptions come
// first, then namespaced ones by namespace and name, so that decisions
// are stable.
func NewSet(list []*Exception, policy Policy, docs ...Document) *Set {
	s := &Set{all: slices.Clone(list), byVuln: map[string][]*Exception{}, policy: policy, docs: docs, gen: generations.Add(1)}
	slices.SortStableFunc(s.all, compareExceptions)
	for _, e := range s.all {
		for _, id := range e.Vulnerabilities {
			s.byVuln[id] = append(s.byVuln[id], e)
		}
	}
	return s
}

func compareExceptions(a, b *Exception) int {
	if a.Cluster() != b.Cluster() {
		if a.Cluster() {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// All returns every exception, cluster ones first (do not modify).
func (s *Set) All() []*Exception {
	if s == nil {
		return nil
	}
	return s.all
}

// Len is the number of exceptions.
func (s *Set) Len() int { return len(s.All()) }

// Generation numbers s among the Sets of this process: a Set built later
// (after a change of the exceptions or documents) has a higher one; 0 is
// the nil Set's. What was decided with a Set holds for its generation
// until its clock reaches NextChange.
func (s *Set) Generation() uint64 {
	if s == nil {
		return 0
	}
	return s.gen
}

// Now is the clock s decides by.
func (s *Set) Now() time.Time { return s.Policy().now() }

// NextChange is the first time after t at which an exception of s changes
// state by the clock alone (it expires), or the zero time if none will:
// until then Decide and SuppressingVulns answer as they do at t.
func (s *Set) NextChange(t time.Time) time.Time {
	var next time.Time
	for _, e := range s.All() {
		if e.VEX == nil && e.ExpiresAt.After(t) && (next.IsZero() || e.ExpiresAt.Before(next)) {
			next = e.ExpiresAt
		}
	}
	return next
}

// Policy returns the policy s judges with.
func (s *Set) Policy() Policy {
	if s == nil {
		return Policy{}
	}
	return s.policy
}

// Documents returns the imported OpenVEX documents, valid or not (do not
// modify).
func (s *Set) Documents() []Document {
	if s == nil {
		return nil
	}
	return s.docs
}

// applies reports whether e suppresses f now; cands are the exceptions
// and statements of f's vulnerability.
func (s *Set) applies(e *Exception, f Finding, now time.Time, cands []*Exception) bool {
	if e.VEX != nil {
		return Suppresses(e.Status) && e.Covers(f) && !overruled(e, f, cands)
	}
	return e.State(now, s.policy.MaxLifetime) == Active && e.Covers(f) && !e.LapsedOnFix(f)
}

// overruled reports whether a later imported statement of the same scope
// (cluster, or e's namespace) says f is affected or under investigation:
// in OpenVEX the latest statement about a product and vulnerability holds.
func overruled(e *Exception, f Finding, cands []*Exception) bool {
	for _, o := range cands {
		if o.VEX != nil && o.Cluster() == e.Cluster() && o.Namespace == e.Namespace && !Suppresses(o.Status) &&
			o.VEX.Timestamp.After(e.VEX.Timestamp) && o.Covers(f) {
			return true
		}
	}
	return false
}

// Annotate returns the imported statement that says an active finding f
// is affected or under investigation in a view where its image runs in
// runsIn (the latest covering statement of the cluster's documents and
// those of runsIn, when its status does not suppress), or nil.
func (s *Set) Annotate(f Finding, runsIn []string) *Exception {
	if s == nil {
		return nil
	}
	var latest *Exception
	for _, e := range s.byVuln[strings.ToUpper(f.VulnID)] {
		if e.VEX == nil || (!e.Cluster() && !slices.Contains(runsIn, e.Namespace)) || !e.Covers(f) {
			continue
		}
		if latest == nil || e.VEX.Timestamp.After(latest.VEX.Timestamp) {
			latest = e
		}
	}
	if latest == nil || Suppresses(latest.Status) {
		return nil
	}
	return latest
}

// Decide returns the exception that suppresses f in a view in which f's
// image runs in the namespaces runsIn (the namespaces of the view where
// the digest runs), or nil when f stays active. A cluster exception
// suppresses f in every view. Namespaced exceptions suppress f only when
// each namespace of runsIn has one that applies: a team's decision never
// hides a finding from a view that includes another namespace running the
// same image without such a decision. With runsIn empty (the image runs in
// none of the view's namespaces) only cluster exceptions apply.
func (s *Set) Decide(f Finding, runsIn []string) *Exception {
	if s == nil {
		return nil
	}
	cands := s.byVuln[strings.ToUpper(f.VulnID)]
	if len(cands) == 0 {
		return nil
	}
	now := s.policy.now()
	var first *Exception
	for _, e := range cands {
		if !e.Cluster() {
			break // cluster exceptions sort first
		}
		if s.applies(e, f, now, cands) {
			return e
		}
	}
	for _, ns := range runsIn {
		var found *Exception
		for _, e := range cands {
			if !e.Cluster() && e.Namespace == ns && s.applies(e, f, now, cands) {
				found = e
				break
			}
		}
		if found == nil {
			return nil
		}
		if first == nil {
			first = found
		}
	}
	return first
}

// ForDigest returns the exceptions that could apply to digest in a view
// whose namespaces where it runs are runsIn: every active cluster
// exception and the active namespaced ones of runsIn, whose images (when
// set) include digest. Use it to describe decisions (VEX); use Decide to
// judge a finding.
func (s *Set) ForDigest(digest string, runsIn []string) []*Exception {
	now := s.policy.now()
	var out []*Exception
	for _, e := range s.All() {
		if e.State(now, s.policy.MaxLifetime) != Active {
			continue
		}
		if len(e.Images) > 0 && !slices.Contains(e.Images, digest) {
			continue
		}
		if e.Cluster() || slices.Contains(runsIn, e.Namespace) {
			out = append(out, e)
		}
	}
	return out
}

// VulnScope is a vulnerability id (upper-cased) that an exception or
// imported statement could suppress a finding of now, and the namespace
// whose views it applies in ("" for a cluster one: every view).
type VulnScope struct{ Namespace, VulnID string }

// SuppressingVulns returns the vulnerability ids, with their namespaces,
// that some exception or imported statement could suppress a finding of
// now: those of active exceptions and of imported statements whose status
// suppresses; sorted (cluster ones first), each once. A finding of any
// other id, or of an id only namespaced ones name in a namespace where its
// image does not run, stays active in every view: counting suppressed
// findings reads only these.
func (s *Set) SuppressingVulns() []VulnScope {
	if s == nil {
		return nil
	}
	now := s.policy.now()
	var out []VulnScope
	for _, e := range s.All() {
		if (e.VEX != nil && !Suppresses(e.Status)) || e.State(now, s.policy.MaxLifetime) != Active {
			continue
		}
		ns := e.Namespace
		if e.Cluster() {
			ns = ""
		}
		for _, id := range e.Vulnerabilities {
			out = append(out, VulnScope{Namespace: ns, VulnID: id})
		}
	}
	slices.SortFunc(out, func(a, b VulnScope) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.VulnID, b.VulnID))
	})
	return slices.Compact(out)
}

// At returns s deciding by the fixed time t: every decision of one read
// (an export's rules and then its results) then agrees, even when an
// exception expires while the read runs.
func (s *Set) At(t time.Time) *Set {
	if s == nil {
		return nil
	}
	c := *s
	c.policy.Now = func() time.Time { return t }
	return &c
}
