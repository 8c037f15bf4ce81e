package snapshot

import (
	"sync/atomic"
)

// Generation counts the changes a replica made to the data memoised values
// are computed from. The zero value is ready; a nil Generation stays 0.
type Generation struct{ n atomic.Uint64 }

// Bump records a change. Call it after the change is committed.
func (g *Generation) Bump() {
	if g != nil {
		g.n.Add(1)
	}
}

// Load returns the number of changes so far. Read it before reading the
// data a value is computed from.
func (g *Generation) Load() uint64 {
	if g == nil {
		return 0
	}
	return g.n.Load()
}
