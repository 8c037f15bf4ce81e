package scanbudget

import (
	"container/heap"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// share hands free slots out one at a time, each to the waiting Scanner
// running the fewest Jobs (counting what it was given), of those first the
// Scanner first (the caller in its turn: Budget.Admit; the zero key is
// none), then the longest-waiting, each up to what it wants: max-min
// fairness, which is round-robin when all start from nothing, and which
// gives a slot a busy Scanner frees to one that has none. It costs
// O((waiting + free) log waiting): with a ClusterScanner over 2,000
// namespaces every reconcile calls it, most often with nothing free. buf, when not nil, is the queue's
// storage, reused from call to call (the caller holds it alone): 2,000
// waiting Scanners are a 112 KB queue, built on every call that finds more
// than one slot free.
func share(waiting map[types.NamespacedName]waiter, running map[types.NamespacedName]int, free int, first types.NamespacedName, buf *shareQueue) map[types.NamespacedName]int {
	if free <= 0 || len(waiting) == 0 {
		return nil
	}
	if free == 1 {
		// The steady state while the cap is full: one Job ended. One pass,
		// nothing allocated but the answer.
		var best shareEntry
		found := false
		for k, w := range waiting {
			if e := (shareEntry{key: k, since: w.since, load: running[k], want: w.want, first: k == first}); w.want > 0 && (!found || e.before(&best)) {
				best, found = e, true
			}
		}
		if !found {
			return nil
		}
		return map[types.NamespacedName]int{best.key: 1}
	}
	var h shareQueue
	if buf != nil {
		h = (*buf)[:0]
		defer func() { *buf = h[:0] }()
	}
	if cap(h) < len(waiting) {
		h = make(shareQueue, 0, len(waiting))
	}
	for k, w := range waiting {
		if w.want > 0 {
			h = append(h, shareEntry{key: k, since: w.since, load: running[k], want: w.want, first: k == first})
		}
	}
	heap.Init(&h)
	out := make(map[types.NamespacedName]int, min(free, len(h)))
	for ; free > 0 && len(h) > 0; free-- {
		e := &h[0]
		out[e.key]++
		e.load++
		if e.want--; e.want == 0 {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
	}
	return out
}

// shareEntry is a waiting Scanner in share's queue: load is what it runs
// plus what it was given, want what it still wants, first whether it wins
// a tie on load.
type shareEntry struct {
	key        types.NamespacedName
	since      time.Time
	load, want int
	first      bool
}

// shareQueue is a min-heap: fewest Jobs first, then the Scanner first,
// then longest waiting, then by namespace and name, so that equal
// Scanners are served in a fixed order.
type shareQueue []shareEntry

func (q shareQueue) Len() int           { return len(q) }
func (q shareQueue) Less(i, j int) bool { return q[i].before(&q[j]) }

// before orders share's queue.
func (a *shareEntry) before(b *shareEntry) bool {
	if a.load != b.load {
		return a.load < b.load
	}
	if a.first != b.first {
		return a.first
	}
	if !a.since.Equal(b.since) {
		return a.since.Before(b.since)
	}
	if a.key.Namespace != b.key.Namespace {
		return a.key.Namespace < b.key.Namespace
	}
	return a.key.Name < b.key.Name
}
func (q shareQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *shareQueue) Push(x any)   { *q = append(*q, x.(shareEntry)) }
func (q *shareQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
