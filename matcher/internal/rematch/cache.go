package rematch

import (
	"sync"

	"github.com/anchore/grype/grype/match"
	"github.com/anchore/grype/grype/pkg"
	"github.com/anchore/grype/grype/vulnerability"
	syftPkg "github.com/anchore/syft/syft/pkg"
)

// The images of a fleet share most of their packages (a base image, a
// language runtime), and asking Grype's matchers about one package costs
// hundreds of SQLite statements. A matchCache remembers, for one DB, what
// each matcher answered for each package, so a package shared by many
// reports is matched once per DB.
//
// It caches the answer of a matcher (match.Matcher.Match: matches and ignore
// filters for one package), not a report's findings: everything Grype does
// across packages afterwards (ignore filters between packages that own the
// same files, ignore rules, VEX, deduplication, the presenter) still runs
// for every report, on the same input as without the cache.

// DefaultCacheBytes bounds a Matcher's match cache when Options.CacheBytes
// is zero.
const DefaultCacheBytes = 128 << 20

// entryOverhead approximates the cache's own memory per entry (key, list
// element, map slot).
const entryOverhead = 160

// CacheStats counts a Matcher's match-cache use since it was opened.
type CacheStats struct {
	Hits, Misses int64
	Entries      int
	Bytes        int64 // approximate memory held
}

type matchCache struct {
	maxBytes int64
	entries  *lru[cacheKey, *cacheEntry]

	// seen holds the keys of answers computed once and not kept. An answer
	// is kept the second time it is computed: a package that only one
	// image has (most of a fleet of distinct images) never fills the
	// cache, nor costs the copy that keeping takes, and a package that two
	// images share costs one more match. At seenMax keys the set starts
	// over.
	mu   sync.Mutex
	seen map[cacheKey]struct{}
}

// seenMax bounds matchCache.seen (a key is 32 bytes).
const seenMax = 1 << 16

type cacheEntry struct {
	matches []match.Match // Package left empty: it is the asking package
	ignores []match.IgnoreRelatedPackage
	// keys are the footprint keys of the lookups the answer took, when
	// recorded (a Matcher with Options.Footprints records them for all).
	keys     []string
	recorded bool
}

func newMatchCache(maxBytes int64) *matchCache {
	return &matchCache{maxBytes: maxBytes, entries: newLRU[cacheKey, *cacheEntry](maxBytes), seen: map[cacheKey]struct{}{}}
}

// get returns a copy of the cached answer for k, made for p, or false; a
// recording match (rec not nil) gets the answer's footprint keys added, and
// misses an answer kept without them.
func (c *matchCache) get(k cacheKey, p pkg.Package, rec *recorder) ([]match.Match, []match.IgnoreFilter, bool) {
	e, ok := c.entries.get(k)
	if !ok || (rec != nil && !e.recorded) {
		return nil, nil, false
	}
	if rec != nil {
		rec.add(e.keys...)
	}
	// e is never changed once stored, so it is copied outside the lock.
	var matches []match.Match
	if e.matches != nil {
		matches = copyOut(e.matches)
		for i := range matches {
			matches[i].Package = p
		}
	}
	var ignores []match.IgnoreFilter
	for _, f := range e.ignores {
		f.RelatedPackageID = p.ID
		ignores = append(ignores, f)
	}
	return matches, ignores, true
}

// put stores what a matcher answered for p under k, if the answer is about
// p alone: every match is for p itself and every ignore filter is one of p's
// own file-ownership filters (internal.OwnershipIgnores). Anything else is
// not cached and so always computed. An answer computed for the first time
// is not stored (seen).
func (c *matchCache) put(k cacheKey, p pkg.Package, matches []match.Match, ignores []match.IgnoreFilter, keys []string, recorded bool) {
	if c.maxBytes <= 0 || !c.computedBefore(k) {
		return
	}
	e := &cacheEntry{keys: keys, recorded: recorded}
	var size int64
	for _, key := range keys {
		size += int64(len(key)) + 16
	}
	if matches != nil {
		pk, _ := keyOf("", p)
		stripped := make([]match.Match, len(matches))
		for i, m := range matches {
			if m.Package.ID != p.ID {
				return
			}
			if mk, ok := keyOf("", m.Package); !ok || mk != pk {
				return
			}
			m.Package = pkg.Package{}
			stripped[i] = m
		}
		e.matches, size = deepCopy(stripped)
	}
	for _, f := range ignores {
		r, ok := f.(match.IgnoreRelatedPackage)
		if !ok || r.RelatedPackageID != p.ID {
			return
		}
		e.ignores = append(e.ignores, r)
		size += int64(len(r.Reason) + len(r.VulnerabilityID) + len(r.RelationshipType) + 64)
	}
	size += entryOverhead
	if size > c.maxBytes/4 {
		return
	}
	c.entries.add(k, e, size)
}

// computedBefore reports whether the answer for k was computed before and
// not kept, and remembers that it now has been.
func (c *matchCache) computedBefore(k cacheKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[k]; ok {
		delete(c.seen, k)
		return true
	}
	if len(c.seen) >= seenMax {
		clear(c.seen)
	}
	c.seen[k] = struct{}{}
	return false
}

// clear drops every entry (the Matcher is closed).
func (c *matchCache) clear() {
	c.entries.clear()
	c.mu.Lock()
	clear(c.seen)
	c.mu.Unlock()
}

func (c *matchCache) snapshot() CacheStats { return c.entries.snapshot() }

// cachingMatcher answers from the cache and asks the Grype matcher it wraps
// on a miss.
type cachingMatcher struct {
	inner match.Matcher
	cache *matchCache
	rec   *recorder // nil: the match records no footprint
}

func (m cachingMatcher) PackageTypes() []syftPkg.Type { return m.inner.PackageTypes() }
func (m cachingMatcher) Type() match.MatcherType      { return m.inner.Type() }

func (m cachingMatcher) Match(vp vulnerability.Provider, p pkg.Package) ([]match.Match, []match.IgnoreFilter, error) {
	k, ok := keyOf(m.inner.Type(), p)
	if !ok {
		return m.inner.Match(vp, p)
	}
	if matches, ignores, hit := m.cache.get(k, p, m.rec); hit {
		return matches, ignores, nil
	}
	var done func() []string
	if m.rec != nil {
		done = m.rec.capture()
	}
	matches, ignores, err := m.inner.Match(vp, p)
	var keys []string
	if done != nil {
		keys = done()
	}
	if err == nil {
		m.cache.put(k, p, matches, ignores, keys, m.rec != nil)
	}
	return matches, ignores, err
}

// withCache wraps every matcher so it answers through c (and records
// footprint keys into rec, when not nil).
func withCache(matchers []match.Matcher, c *matchCache, rec *recorder) []match.Matcher {
	out := make([]match.Matcher, len(matchers))
	for i, mt := range matchers {
		out[i] = cachingMatcher{inner: mt, cache: c, rec: rec}
	}
	return out
}
