package service

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
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
