package engine

import (
	"context"
	"time"

	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

// Seal closes every open group whose window has passed: it stores the
// group as sealed, then removes it from the open groups (remembering its
// events), and returns the sealed groups for the receivers. A crash
// between the two writes seals the same group, with the same id, again.
func (e *Engine) Seal(ctx context.Context) ([]*state.Group, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.o.Now()
	var due []*state.Group
	for _, g := range e.open.Groups {
		if !g.Due.After(now) {
			due = append(due, g)
		}
	}
	if len(due) == 0 {
		return nil, nil
	}
	next := cloneOpen(e.open)
	for _, g := range due {
		if err := e.o.Store.PutSealed(ctx, g); err != nil {
			return nil, err
		}
		delete(next.Groups, g.Route)
		for _, it := range g.Items {
			next.Sealed = append(next.Sealed, it.EventID)
		}
	}
	if over := len(next.Sealed) - maxSealedEvents; over > 0 {
		next.Sealed = append([]string(nil), next.Sealed[over:]...)
	}
	if err := e.o.Store.PutOpen(ctx, next); err != nil {
		return nil, err
	}
	e.open = next
	e.gauge()
	return due, nil
}

// NextDue is when the earliest open group is due; zero when none is open.
func (e *Engine) NextDue() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	var t time.Time
	for _, g := range e.open.Groups {
		if t.IsZero() || g.Due.Before(t) {
			t = g.Due
		}
	}
	return t
}
