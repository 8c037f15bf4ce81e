package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/config"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

// Limits of the open groups.
const (
	// MaxGroupItems bounds one group; further items are counted as omitted.
	MaxGroupItems = 200
	// maxSealedEvents bounds the remembered event ids of sealed groups.
	maxSealedEvents = 4096
)

// Subjects are the events the notifier consumes.
var Subjects = []string{eventsv1.SubjectFindingsChanged, eventsv1.SubjectInventorySnapshot, eventsv1.SubjectJobDone}

// Options configure an Engine.
type Options struct {
	Config *config.Config
	Store  *state.Store
	Log    *slog.Logger
	Metric *metrics.Metrics
	// NotifyMaxAge: older events update the state but notify nobody (a
	// first start reading the stream's history).
	NotifyMaxAge time.Duration
	Now          func() time.Time
}

// Engine handles events and seals due groups. Handle and Seal may be
// called from different goroutines.
type Engine struct {
	o   Options
	mu  sync.Mutex
	inv map[string]*state.Namespace
	// open mirrors the "open" key.
	open *state.OpenGroups
}

// New loads the state (inventory index and open groups).
func New(ctx context.Context, o Options) (*Engine, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	inv, err := o.Store.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	open, err := o.Store.Open(ctx)
	if err != nil {
		return nil, err
	}
	e := &Engine{o: o, inv: inv, open: open}
	e.gauge()
	return e, nil
}

// ErrInvalid wraps an event that can never be handled (acknowledged and
// counted, not retried).
var ErrInvalid = errors.New("invalid event")

// Handle handles one message. A nil error means it may be acknowledged;
// an ErrInvalid error too (the message will never become valid); any other
// error means it must be redelivered.
func (e *Engine) Handle(ctx context.Context, subject string, data []byte) error {
	now := e.o.Now()
	ev, err := eventsv1.Parse(subject, data, now, eventsv1.DefaultMaxSkew)
	if err != nil {
		e.o.Metric.Events.WithLabelValues(subject, "invalid").Inc()
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	done, err := e.o.Store.Done(ctx, ev.ID)
	if err != nil {
		return err
	}
	if done {
		e.o.Metric.Events.WithLabelValues(subject, "duplicate").Inc()
		return nil
	}
	items, commit, err := e.decide(ctx, subject, ev, now)
	if err != nil {
		return err
	}
	if now.Sub(ev.Time) > e.o.NotifyMaxAge {
		for _, it := range items {
			e.o.Metric.Dropped.WithLabelValues(it.route, "too_old").Inc()
		}
		items = nil
	}
	if err := e.merge(ctx, ev.ID, items, now); err != nil {
		return err
	}
	if err := commit(ctx); err != nil {
		return err
	}
	if err := e.o.Store.MarkDone(ctx, ev.ID); err != nil {
		return err
	}
	e.o.Metric.Events.WithLabelValues(subject, "handled").Inc()
	return nil
}

// decide computes an event's items and returns the state write to commit
// after they are merged.
func (e *Engine) decide(ctx context.Context, subject string, ev eventsv1.Event, now time.Time) ([]routed, func(context.Context) error, error) {
	cfg := e.o.Config
	switch subject {
	case eventsv1.SubjectFindingsChanged:
		var p eventsv1.FindingsChanged
		if err := ev.Decode(&p); err != nil {
			return nil, nil, err
		}
		items, sup := findingsItems(cfg, ev, p, e.inv)
		for _, s := range sup {
			e.o.Metric.Suppressed.WithLabelValues(s.route, s.kind).Add(float64(len(s.ids)))
			e.o.Log.Debug("findings suppressed by triage exceptions left out", "route", s.route, "namespace", s.namespace,
				"kind", s.kind, "digest", p.Digest, "event", ev.ID, "vulnerabilities", s.ids)
		}
		c, err := e.o.Store.Criticals(ctx, p.Digest)
		if err != nil {
			return nil, nil, err
		}
		next, changed := applyCriticals(*c, p)
		return items, func(ctx context.Context) error {
			if !changed {
				return nil
			}
			return e.o.Store.PutCriticals(ctx, p.Digest, &next)
		}, nil
	case eventsv1.SubjectInventorySnapshot:
		var p eventsv1.InventorySnapshot
		if err := ev.Decode(&p); err != nil {
			return nil, nil, err
		}
		next := namespaceOf(p)
		crit := map[string]state.Criticals{}
		for d := range next.Digests {
			c, err := e.o.Store.Criticals(ctx, d)
			if err != nil {
				return nil, nil, err
			}
			crit[d] = *c
		}
		items := runningItems(cfg, ev, e.inv[p.Namespace], next, func(d string) state.Criticals { return crit[d] })
		return items, func(ctx context.Context) error {
			if err := e.o.Store.PutNamespace(ctx, p.Namespace, next); err != nil {
				return err
			}
			if len(next.Digests) == 0 {
				delete(e.inv, p.Namespace)
			} else {
				e.inv[p.Namespace] = next
			}
			return nil
		}, nil
	case eventsv1.SubjectJobDone:
		var p eventsv1.JobDone
		if err := ev.Decode(&p); err != nil {
			return nil, nil, err
		}
		if p.Outcome != eventsv1.OutcomeFailed {
			return nil, func(context.Context) error { return nil }, nil
		}
		f, err := e.o.Store.Failures(ctx, p.Namespace)
		if err != nil {
			return nil, nil, err
		}
		var labels map[string]string
		if n := e.inv[p.Namespace]; n != nil {
			labels = n.Labels
		}
		items, next := failureItems(cfg, ev, p, *f, labels, now)
		return items, func(ctx context.Context) error { return e.o.Store.PutFailures(ctx, p.Namespace, &next) }, nil
	}
	// The consumer filters on Subjects; anything else is not ours.
	return nil, func(context.Context) error { return nil }, nil
}

// merge adds an event's items to the open groups in one write. An event
// whose items went out in a sealed group already (a redelivery after a
// crash between this write and the done marker) adds nothing.
func (e *Engine) merge(ctx context.Context, eventID string, items []routed, now time.Time) error {
	if len(items) == 0 || slices.Contains(e.open.Sealed, eventID) {
		return nil
	}
	next := cloneOpen(e.open)
	for _, ri := range items {
		r := e.route(ri.route)
		g := next.Groups[ri.route]
		if g == nil {
			g = &state.Group{ID: eventsv1.ID("dev.crowsnest.notification.v1", ri.route, ri.item.Key), Route: r.Name, Receiver: r.Receiver,
				Opened: now, Due: now.Add(time.Duration(r.GroupWait))}
			next.Groups[ri.route] = g
		}
		if slices.ContainsFunc(g.Items, func(it state.Item) bool { return it.Key == ri.item.Key }) {
			continue
		}
		if len(g.Items) >= MaxGroupItems {
			g.Omitted++
			e.o.Metric.Dropped.WithLabelValues(ri.route, "group_full").Inc()
			continue
		}
		g.Items = append(g.Items, ri.item)
	}
	if err := e.o.Store.PutOpen(ctx, next); err != nil {
		return err
	}
	e.open = next
	e.gauge()
	return nil
}

func (e *Engine) route(name string) *config.Route {
	for i := range e.o.Config.Routes {
		if e.o.Config.Routes[i].Name == name {
			return &e.o.Config.Routes[i]
		}
	}
	return nil
}

// cloneOpen copies the groups map and the groups in it (their item slices
// are only appended to through a fresh copy below, so sharing is safe).
func cloneOpen(o *state.OpenGroups) *state.OpenGroups {
	n := &state.OpenGroups{Groups: make(map[string]*state.Group, len(o.Groups)), Sealed: o.Sealed}
	for k, g := range o.Groups {
		c := *g
		c.Items = slices.Clip(g.Items)
		n.Groups[k] = &c
	}
	return n
}

func (e *Engine) gauge() {
	e.o.Metric.QueueDepth.Reset()
	for r, g := range e.open.Groups {
		e.o.Metric.QueueDepth.WithLabelValues(r).Set(float64(len(g.Items)))
	}
}
