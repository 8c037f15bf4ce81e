package receiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/notifier/internal/config"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

// Options configure a Dispatcher.
type Options struct {
	Config    *config.Config
	Store     *state.Store
	Log       *slog.Logger
	Metric    *metrics.Metrics
	Dashboard string
	// DryRun, when set, receives every request instead of the receiver.
	DryRun io.Writer
	Client *http.Client // nil: a client without redirects
	// MinBackoff and MaxBackoff bound the wait between attempts
	// (defaults 1s and 5m).
	MinBackoff, MaxBackoff time.Duration
	Now                    func() time.Time
}

// Dispatcher delivers sealed groups, one worker per receiver.
type Dispatcher struct {
	o       Options
	workers map[string]*worker
	dryMu   sync.Mutex
}

type worker struct {
	d      *Dispatcher
	cfg    *config.Receiver
	kind   kind
	queue  chan string
	mu     sync.Mutex
	queued map[string]bool
	last   time.Time
}

// New builds every receiver (reading its secret files).
func New(o Options) (*Dispatcher, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Minute
	}
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	d := &Dispatcher{o: o, workers: map[string]*worker{}}
	var errs []error
	for i := range o.Config.Receivers {
		r := &o.Config.Receivers[i]
		k, err := build(r, o.Now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d.workers[r.Name] = &worker{d: d, cfg: r, kind: k, queue: make(chan string, r.QueueSize), queued: map[string]bool{}}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return d, nil
}

// Enqueue queues a sealed group for its receiver without blocking; false
// when the receiver's queue is full (the group stays sealed in the store
// and is offered again later).
func (d *Dispatcher) Enqueue(g *state.Group) bool {
	w := d.workers[g.Receiver]
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.queued[g.ID] {
		return true
	}
	select {
	case w.queue <- g.ID:
		w.queued[g.ID] = true
		d.o.Metric.ReceiverQueue.WithLabelValues(w.cfg.Name).Set(float64(len(w.queue)))
		return true
	default:
		return false
	}
}

// Run runs the workers until ctx ends and they stopped.
func (d *Dispatcher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, w := range d.workers {
		wg.Go(func() { w.run(ctx) })
	}
	wg.Wait()
}

func (w *worker) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-w.queue:
			w.d.o.Metric.ReceiverQueue.WithLabelValues(w.cfg.Name).Set(float64(len(w.queue)))
			if err := w.handle(ctx, id); err != nil && ctx.Err() == nil {
				w.d.o.Log.Error("deliver notification", "receiver", w.cfg.Name, "group", id, "error", err)
			}
			w.mu.Lock()
			delete(w.queued, id)
			w.mu.Unlock()
		}
	}
}

// handle delivers one sealed group: rate limit, attempts with backoff,
// then forgets it (delivered or dead-lettered). Stopped by ctx, it leaves
// the group sealed for the next start.
func (w *worker) handle(ctx context.Context, id string) error {
	d := w.d
	g, ok, err := d.o.Store.Sealed(ctx, id)
	if err != nil || !ok {
		return err
	}
	if err := sleep(ctx, time.Until(w.last.Add(time.Minute/time.Duration(w.cfg.RatePerMinute)))); err != nil {
		return err
	}
	backoff := d.o.MinBackoff
	for attempt := 1; ; attempt++ {
		w.last = time.Now()
		err := w.attempt(ctx, g)
		if err == nil {
			d.o.Metric.Sent.WithLabelValues(w.cfg.Name, g.Route).Inc()
			return d.o.Store.DeleteSealed(ctx, id)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d.o.Metric.Failed.WithLabelValues(w.cfg.Name, g.Route).Inc()
		if errors.Is(err, errPermanent) || attempt >= w.cfg.MaxAttempts {
			d.o.Metric.DeadLetter.WithLabelValues(w.cfg.Name, g.Route).Inc()
			d.o.Log.Error("notification dead-lettered", "receiver", w.cfg.Name, "route", g.Route, "group", id, "attempts", attempt, "error", err)
			return d.o.Store.DeleteSealed(ctx, id)
		}
		d.o.Log.Warn("notification attempt failed", "receiver", w.cfg.Name, "group", id, "attempt", attempt, "retry_in", backoff, "error", err)
		if err := sleep(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, d.o.MaxBackoff)
	}
}

func (w *worker) attempt(ctx context.Context, g *state.Group) error {
	actx, cancel := context.WithTimeout(ctx, time.Duration(w.cfg.Timeout))
	defer cancel()
	req, err := w.kind.request(actx, g, w.d.o.Dashboard)
	if err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	if w.d.o.DryRun != nil {
		return w.d.dryRun(w.cfg.Name, g, req)
	}
	return deliver(actx, w.d.o.Client, req)
}

// dryRun prints the request: receiver, route, group, then the HTTP request
// (a Slack webhook URL, which is a secret, is not printed).
func (d *Dispatcher) dryRun(receiver string, g *state.Group, req *http.Request) error {
	if _, isSlack := d.workers[receiver].kind.(*slack); isSlack {
		req.URL.Path, req.URL.RawQuery = "/<redacted>", ""
	}
	b, err := httputil.DumpRequestOut(req, true)
	if err != nil {
		return fmt.Errorf("dump request: %w", err)
	}
	d.dryMu.Lock()
	defer d.dryMu.Unlock()
	_, err = fmt.Fprintf(d.o.DryRun, "--- dry-run receiver=%s route=%s group=%s url=%s\n%s\n", receiver, g.Route, g.ID, req.URL, b)
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
