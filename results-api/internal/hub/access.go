package hub

import (
	"context"
	"math"
	"slices"
	"time"
)

// Access is what one WebSocket client may receive: every message (All), or
// those about images running in one of Namespaces (sorted).
type Access struct {
	All        bool
	Namespaces []string
	// Recheck, when set, authorizes the client again (its credentials may
	// have expired or been revoked, its namespaces changed): an error
	// closes the connection. It runs every RecheckEvery and once Expires
	// has passed.
	Recheck      func(ctx context.Context) (*Access, error)
	RecheckEvery time.Duration
	Expires      time.Time // zero: no expiry known
}

// sees reports whether a client with access a receives a message about
// namespaces (nil namespaces: a message for everyone who sees all).
func (a *Access) sees(namespaces []string) bool {
	if a == nil || a.All {
		return true
	}
	for _, ns := range namespaces {
		if _, ok := slices.BinarySearch(a.Namespaces, ns); ok {
			return true
		}
	}
	return false
}

// has reports whether a client with access a may learn of namespace ns.
func (a *Access) has(ns string) bool {
	if a == nil || a.All {
		return true
	}
	_, ok := slices.BinarySearch(a.Namespaces, ns)
	return ok
}

func (a *Access) limited() bool { return a != nil && !a.All }

// timer fires when a should be checked again; never without Recheck.
func (a *Access) timer(now time.Time) *time.Timer {
	d := time.Duration(math.MaxInt64)
	if a != nil && a.Recheck != nil {
		if a.RecheckEvery > 0 {
			d = a.RecheckEvery
		}
		if !a.Expires.IsZero() {
			d = min(d, max(a.Expires.Sub(now), 0))
		}
	}
	return time.NewTimer(d)
}

// setAccess replaces c's access (the scoped count follows).
func (h *Hub) setAccess(c *client, a *Access) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.clients[c]; ok {
		switch {
		case c.access.limited() && !a.limited():
			h.scoped.Add(-1)
		case !c.access.limited() && a.limited():
			h.scoped.Add(1)
		}
	}
	c.access = a
}
