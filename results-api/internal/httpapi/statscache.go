package httpapi

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/lru"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// Bounds of the /stats snapshots.
const (
	// DefaultStatsMaxAge is Config.StatsMaxAge's default: the interval of
	// the vulnerability metrics, the other fleet aggregates.
	DefaultStatsMaxAge = 15 * time.Second
	// statsViews is how many views' (scopes') answers are kept, each a few
	// kilobytes (the totals and the top ten images and vulnerabilities).
	statsViews = 1000
	// statsTimeout bounds one computation (its statements each have the
	// store's statement timeout too).
	statsTimeout = time.Minute
)

// statsCache holds /stats's answers: totals is store.Stats per scope,
// computed at most once per StatsMaxAge and again after a change this
// replica made (Config.Changes); views is the answer per view, those
// totals less what the exceptions suppress, computed again when the
// totals are, when the exceptions change (a new exception.Set) and when
// one of them expires.
type statsCache struct {
	totals *lru.Memo[*statsTotals]
	views  *lru.Memo[*statsView]
}

func newStatsCache(maxAge time.Duration, now func() time.Time) statsCache {
	return statsCache{totals: lru.NewMemo[*statsTotals](statsViews, maxAge, statsTimeout, now),
		views: lru.NewMemo[*statsView](statsViews, maxAge, statsTimeout, now)}
}

// statsTotals are the totals of one scope.
type statsTotals struct {
	st  *store.Stats
	at  time.Time // the clock reading they count overdue findings at
	gen uint64    // Config.Changes when they were read
}

// statsView is the answer in one view from one statsTotals.
type statsView struct {
	totals *statsTotals
	// until is when, by the exception set's clock, one of its exceptions
	// expires (zero: none will), which ends the answer.
	until time.Time
	out   api.Stats
}

// key names a view: every namespace, or a set of them (namespace names
// hold no NUL).
func (v view) key() string {
	if v.all {
		return "all"
	}
	ns := slices.Clone(v.namespaces)
	slices.Sort(ns)
	return "ns\x00" + strings.Join(slices.Compact(ns), "\x00")
}

// cachedStats is /stats's answer in view v, whose scope ctx carries.
func (s *Server) cachedStats(ctx context.Context, v view) (*api.Stats, error) {
	key, gen := v.key(), s.cfg.Changes.Load()
	totals, err := s.stats.totals.Get(ctx, key, strconv.FormatUint(gen, 10),
		func(t *statsTotals) bool { return t.gen >= gen },
		func(ctx context.Context) (*statsTotals, error) {
			t := &statsTotals{gen: s.cfg.Changes.Load(), at: s.now()}
			var err error
			t.st, err = s.cfg.Store.Stats(ctx, t.at, s.cfg.SLA)
			return t, err
		})
	if err != nil {
		return nil, err
	}
	set := s.exceptions()
	version := strconv.FormatUint(totals.gen, 10) + "@" + strconv.FormatInt(totals.at.UnixNano(), 10)
	answer, err := s.stats.views.Get(ctx, key+"\x00set "+strconv.FormatUint(set.Generation(), 10), version,
		func(a *statsView) bool { return a.totals == totals && (a.until.IsZero() || set.Now().Before(a.until)) },
		func(ctx context.Context) (*statsView, error) { return s.statsIn(ctx, set, v, totals) })
	if err != nil {
		return nil, err
	}
	return &answer.out, nil
}

// statsIn computes the answer in view v from totals with the exceptions
// set: what they suppress of the findings counted at the totals' clock.
func (s *Server) statsIn(ctx context.Context, set *exception.Set, v view, totals *statsTotals) (*statsView, error) {
	until := set.NextChange(set.Now())
	top := make([]string, len(totals.st.TopVulnerabilities))
	for i, tv := range totals.st.TopVulnerabilities {
		top[i] = tv.ID
	}
	sup, err := s.suppressedBy(ctx, set, totals.at, v, nil, top...)
	if err != nil {
		return nil, err
	}
	return &statsView{totals: totals, until: until, out: statsAnswer(totals.st, sup)}, nil
}
