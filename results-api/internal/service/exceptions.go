package service

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// Exceptions configures the triage exceptions applied to reads (the
// binary's --exceptions): a watch of VulnerabilityExceptions and
// ClusterVulnerabilityExceptions.
type Exceptions struct {
	Client dynamic.Interface
	// MaxLifetime bounds expiresAt - creationTimestamp (0:
	// exception.DefaultMaxLifetime); an exception beyond it never applies.
	MaxLifetime time.Duration
	// Now is the clock exceptions expire by (default time.Now).
	Now func() time.Time
	// AuditInterval is how often the exception gauge is recomputed
	// (0: five minutes: at 1,000 exceptions over 10,000 reports one audit
	// reads ~100,000 findings and takes seconds).
	AuditInterval time.Duration
}

// exceptionSyncTimeout bounds the exception watch's first list at start.
const exceptionSyncTimeout = time.Minute

// startExceptions watches the exceptions until the returned stop is
// called.
func startExceptions(ctx context.Context, c *Exceptions) (*exception.Watcher, func(), error) {
	maxLife := c.MaxLifetime
	if maxLife == 0 {
		maxLife = exception.DefaultMaxLifetime
	}
	w, err := exception.NewWatcher(c.Client, exception.Policy{MaxLifetime: maxLife, Now: c.Now})
	if err != nil {
		return nil, nil, err
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := func() { cancel(); w.Shutdown() }
	if err := w.Start(wctx, exceptionSyncTimeout); err != nil {
		stop()
		return nil, nil, fmt.Errorf("%w; or run without exceptions (--exceptions=false)", err)
	}
	return w, stop, nil
}

// auditExceptions sets the exception gauge from a cluster-wide audit, at
// start and then every interval (0: five minutes), until ctx ends.
func auditExceptions(ctx context.Context, w *exception.Watcher, st *store.Store, m *metrics.Metrics, interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	for {
		set := w.Set()
		located, err := set.Gather(ctx, st, true, nil)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("exception audit", "error", err)
		case err == nil:
			counts := map[exception.AuditState]int{}
			for _, a := range set.Audit(located) {
				counts[a.State]++
			}
			for _, s := range exception.AuditStates {
				m.Exceptions.WithLabelValues(string(s)).Set(float64(counts[s]))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
