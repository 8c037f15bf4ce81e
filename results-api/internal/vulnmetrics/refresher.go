package vulnmetrics

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// Defaults of Options.
const (
	DefaultInterval      = 15 * time.Second
	DefaultMaxNamespaces = 500
	DefaultDebounce      = 2 * time.Second
	DefaultTimeout       = 30 * time.Second
)

// Options tune a Refresher; zero fields take the defaults.
type Options struct {
	// Interval is the time between refreshes. It bounds how stale the
	// metrics are on every replica: a replica hears of the changes the
	// others make (reports, inventories) only through the database.
	Interval time.Duration
	// MaxNamespaces caps crowsnest_namespace_vulnerabilities' namespaces.
	MaxNamespaces int
	// Debounce is the wait after a Trigger, so that a burst of changes
	// costs one refresh.
	Debounce time.Duration
	// Timeout bounds one refresh.
	Timeout time.Duration
	// Errors counts failed refreshes; Duration observes every refresh's
	// duration in seconds (metrics.WatchVulnerabilities). Nil: not counted.
	Errors   prometheus.Counter
	Duration prometheus.Observer
	Logger   *slog.Logger
	// Now is the clock of the 7-day window, of overdue findings and of the
	// refresh timestamp (default time.Now).
	Now func() time.Time
	// SLA is the policy findings are overdue by (zero: none is).
	SLA report.SLA
	// Suppress, when set, makes the metrics count only the findings that
	// no triage exception suppresses, as /stats does: called once per
	// refresh (nil: every finding counts).
	Suppress func() Suppression
}

// Suppression takes what triage exceptions suppress out of one refresh's
// store counts.
type Suppression struct {
	// TopSlack is how many vulnerability ids the exceptions could lower:
	// the refresh loads that many beyond TopLimit, so that the top it
	// exports after Subtract is the exact top of the active findings (only
	// those ids can fall, so the true top is among the first TopLimit +
	// TopSlack).
	TopSlack int
	// Subtract takes the suppressed findings out of st, computed at now
	// (nil: nothing is suppressed).
	Subtract func(ctx context.Context, st *store.VulnStats, now time.Time) error
}

// Refresher recomputes the vulnerability metrics from the store into a
// Collector.
type Refresher struct {
	st      *store.Store
	col     *Collector
	o       Options
	trigger chan struct{} // capacity 1
	failing bool          // of Run's refreshes: log once per outage
}

// New returns a refresher of col from st; Run starts it.
func New(st *store.Store, col *Collector, o Options) *Refresher {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.MaxNamespaces <= 0 {
		o.MaxNamespaces = DefaultMaxNamespaces
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Errors == nil {
		o.Errors = prometheus.NewCounter(prometheus.CounterOpts{Name: "unused"})
	}
	if o.Duration == nil {
		o.Duration = prometheus.ObserverFunc(func(float64) {})
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Refresher{st: st, col: col, o: o, trigger: make(chan struct{}, 1)}
}

// Trigger asks for a refresh soon (after the debounce). It never blocks:
// call it after a report was stored or deleted or an inventory applied.
// On a nil Refresher (metrics off) it does nothing.
func (r *Refresher) Trigger() {
	if r == nil {
		return
	}
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// Refresh recomputes the metrics once, now. On an error the previous
// values stay and the error is counted.
func (r *Refresher) Refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	start, now := time.Now(), r.o.Now()
	var sup Suppression
	if r.o.Suppress != nil {
		sup = r.o.Suppress()
	}
	st, err := r.st.VulnStats(ctx, store.VulnStatsQuery{TopLimit: TopLimit + max(sup.TopSlack, 0), NewSince: now.Add(-NewWindow), Now: now, SLA: r.o.SLA})
	if err == nil && sup.Subtract != nil {
		err = sup.Subtract(ctx, st, now)
	}
	r.o.Duration.Observe(time.Since(start).Seconds())
	if err != nil {
		r.o.Errors.Inc()
		return err
	}
	st.TopVulnerabilities = top(st.TopVulnerabilities, TopLimit)
	r.col.set(st, r.o.MaxNamespaces, now)
	return nil
}

// top is the first limit of vs in the store's order (most images, then
// the worst) once suppression lowered some counts, without the ids left
// in no image. The sort is stable: ties keep the store's order, which
// breaks them by id in the database's collation.
func top(vs []store.TopVulnerability, limit int) []store.TopVulnerability {
	vs = slices.DeleteFunc(vs, func(v store.TopVulnerability) bool { return v.Images <= 0 })
	slices.SortStableFunc(vs, func(a, b store.TopVulnerability) int {
		return cmp.Or(cmp.Compare(b.Images, a.Images), cmp.Compare(b.Severity, a.Severity))
	})
	return vs[:min(len(vs), limit)]
}

// Run refreshes at once, then every interval and a debounce after each
// Trigger, until ctx ends. A failed refresh is logged when the failures
// start and when they end, and tried again at the next tick.
func (r *Refresher) Run(ctx context.Context) {
	ticker := time.NewTicker(r.o.Interval)
	defer ticker.Stop()
	var debounce <-chan time.Time
	r.run(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			debounce = nil // the tick's refresh sees the triggering change
			r.run(ctx)
		case <-r.trigger:
			if debounce == nil {
				debounce = time.After(r.o.Debounce)
			}
		case <-debounce:
			debounce = nil
			r.run(ctx)
		}
	}
}

func (r *Refresher) run(ctx context.Context) {
	err := r.Refresh(ctx)
	switch {
	case ctx.Err() != nil:
	case err != nil && !r.failing:
		r.failing = true
		r.o.Logger.Warn("refresh vulnerability metrics; keeping the previous values", "error", err)
	case err == nil && r.failing:
		r.failing = false
		r.o.Logger.Info("vulnerability metrics refreshed again")
	}
}
