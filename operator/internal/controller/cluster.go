package controller

import (
	"container/heap"
	"hash/fnv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
)

// claimTTL bounds how long a claim outlives a Job the cache has not shown:
// the cache lags a create by milliseconds, so a claim older than this is one
// whose Job was never created.
const claimTTL = time.Minute

// cluster is the leader's cluster-wide view of scanning: which digests have
// a Job just created that the cache may not show yet (ReplicaSet-style
// expectations, "claims"), the cluster-wide concurrency cap shared fairly
// between Scanners, and the cluster-wide rescan rate. Every Scanner's
// reconcile consults the one instance, so a digest that runs in 500
// namespaces gets one Job, not 500.
type cluster struct {
	mu       sync.Mutex
	now      func() time.Time
	cap      int // 0: no cluster-wide cap
	claims   map[string]claim
	waiting  map[types.NamespacedName]waiter
	rescans  *rate.Limiter // nil: no rate limit
	wake     func(types.NamespacedName)
	lastWake map[types.NamespacedName]time.Time
}

// claim says that owner created (or is creating) job for a digest.
type claim struct {
	owner types.NamespacedName
	job   types.NamespacedName
	at    time.Time
}

// waiter is a Scanner that wants more Jobs than the cap gave it.
type waiter struct {
	want  int
	since time.Time
}

// newCluster makes the shared state; wake enqueues a Scanner's reconcile.
func newCluster(now func() time.Time, maxConcurrent, rescansPerMinute int, wake func(types.NamespacedName)) *cluster {
	c := &cluster{now: now, cap: maxConcurrent, claims: map[string]claim{}, waiting: map[types.NamespacedName]waiter{},
		wake: wake, lastWake: map[types.NamespacedName]time.Time{}}
	if rescansPerMinute > 0 {
		c.rescans = rate.NewLimiter(rate.Every(time.Minute/time.Duration(rescansPerMinute)), max(rescansPerMinute/10, 1))
	}
	return c
}

// release drops owner's claim on digest: its Job is in the cache now, or
// it was never created.
func (c *cluster) release(digest string, owner types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.claims[digest]; ok && cl.owner == owner {
		delete(c.claims, digest)
	}
}

// claimedElsewhere tells whether another owner holds a live claim on digest.
func (c *cluster) claimedElsewhere(digest string, owner types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.claims[digest]
	return ok && cl.owner != owner && c.now().Sub(cl.at) < claimTTL
}

// claimed tells whether owner holds a live claim on digest: its Job was
// created, and the cache does not show it yet.
func (c *cluster) claimed(digest string, owner types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.claims[digest]
	return ok && cl.owner == owner && c.now().Sub(cl.at) < claimTTL
}

// admit says which of the digests owner wants new Jobs for may start now,
// and claims them in the same step, so that two Scanners reconciled at once
// can neither both take the last free slot nor both take a digest. running
// reads the running scan Jobs from the cache, under the lock, so that no
// claim is released between that read and this decision; live claims not
// among them count as running too. Free slots go round-robin to the waiting
// Scanners, oldest-waiting first, so one busy namespace cannot starve the
// others, and Scanners whose share is free are woken. A digest another
// Scanner claimed is skipped. With no cap every unclaimed digest is admitted.
func (c *cluster) admit(owner types.NamespacedName, want []claimRequest, running func() map[string]types.NamespacedName) []string {
	c.mu.Lock()
	now := c.now()
	active := running()
	inUse := len(active)
	byOwner := map[types.NamespacedName]int{}
	for _, o := range active {
		byOwner[o]++
	}
	for d, cl := range c.claims {
		if now.Sub(cl.at) >= claimTTL {
			delete(c.claims, d)
			continue
		}
		// Live claims not yet in the cache are Jobs just created (the
		// owner's own wanted digests aside): they hold slots too.
		if _, seen := active[d]; !seen && (cl.owner != owner || !wanted(want, d)) {
			inUse++
			byOwner[cl.owner]++
		}
	}
	free := want[:0:0]
	for _, w := range want {
		if cl, ok := c.claims[w.digest]; !ok || cl.owner == owner {
			free = append(free, w)
		}
	}
	slots := len(free)
	var wake []types.NamespacedName
	if c.cap > 0 {
		if len(free) > 0 {
			w, ok := c.waiting[owner]
			if !ok {
				w.since = now
			}
			w.want = len(free)
			c.waiting[owner] = w
		} else {
			delete(c.waiting, owner)
		}
		shares := share(c.waiting, byOwner, max(c.cap-inUse, 0))
		slots = shares[owner]
		if w, ok := c.waiting[owner]; ok {
			switch {
			case slots >= w.want:
				delete(c.waiting, owner)
			case slots > 0:
				// Served: to the back of the line.
				w.want -= slots
				w.since = now
				c.waiting[owner] = w
			}
		}
		for key, n := range shares {
			// A woken Scanner takes its share in its own reconcile; wake
			// it again only if it has not come for a while.
			if key != owner && n > 0 && now.Sub(c.lastWake[key]) > time.Second {
				c.lastWake[key] = now
				wake = append(wake, key)
			}
		}
	}
	admitted := make([]string, 0, slots)
	for _, w := range free[:min(slots, len(free))] {
		c.claims[w.digest] = claim{owner: owner, job: w.job, at: now}
		admitted = append(admitted, w.digest)
	}
	c.mu.Unlock()
	for _, key := range wake {
		c.wake(key)
	}
	return admitted
}

// claimRequest is a digest a Scanner wants to create Job job for.
type claimRequest struct {
	digest string
	job    types.NamespacedName
}

func wanted(want []claimRequest, digest string) bool {
	for _, w := range want {
		if w.digest == digest {
			return true
		}
	}
	return false
}

// forget drops a Scanner that is gone.
func (c *cluster) forget(owner types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, owner)
	delete(c.lastWake, owner)
	for d, cl := range c.claims {
		if cl.owner == owner {
			delete(c.claims, d)
		}
	}
}

// share hands free slots out one at a time, each to the waiting Scanner
// running the fewest Jobs (counting what it was given), the longest-waiting
// of those first, each up to what it wants: max-min fairness, which is
// round-robin when all start from nothing, and which gives a slot a busy
// Scanner frees to one that has none. It costs O((waiting + free) log
// waiting): with a ClusterScanner over 2,000 namespaces every reconcile
// calls it, most often with nothing free.
func share(waiting map[types.NamespacedName]waiter, running map[types.NamespacedName]int, free int) map[types.NamespacedName]int {
	if free <= 0 || len(waiting) == 0 {
		return nil
	}
	if free == 1 {
		// The steady state while the cap is full: one Job ended. One pass,
		// nothing allocated but the answer.
		var best shareEntry
		found := false
		for k, w := range waiting {
			if e := (shareEntry{key: k, since: w.since, load: running[k], want: w.want}); w.want > 0 && (!found || e.before(&best)) {
				best, found = e, true
			}
		}
		if !found {
			return nil
		}
		return map[types.NamespacedName]int{best.key: 1}
	}
	h := make(shareQueue, 0, len(waiting))
	for k, w := range waiting {
		if w.want > 0 {
			h = append(h, shareEntry{key: k, since: w.since, load: running[k], want: w.want})
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
// plus what it was given, want what it still wants.
type shareEntry struct {
	key        types.NamespacedName
	since      time.Time
	load, want int
}

// shareQueue is a min-heap: fewest Jobs first, then longest waiting, then
// by namespace and name, so that equal Scanners are served in a fixed order.
type shareQueue []shareEntry

func (q shareQueue) Len() int           { return len(q) }
func (q shareQueue) Less(i, j int) bool { return q[i].before(&q[j]) }

// before orders share's queue.
func (a *shareEntry) before(b *shareEntry) bool {
	if a.load != b.load {
		return a.load < b.load
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

// rescanDelay takes one rescan from the cluster-wide rate: 0 when the
// rescan may start now, otherwise how long until it may.
func (c *cluster) rescanDelay() time.Duration {
	if c.rescans == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	r := c.rescans.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

// rescanJitter is where, in [-1, 1), a digest's rescan falls within the
// jitter window. It is fixed per digest, so the due
// time does not move between reconciles, and spread over digests, so a
// sidecar image running everywhere and reports stored in one wave do not
// all come due in the same second.
func rescanJitter(digest string) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(digest))
	return float64(h.Sum64()%20000)/10000 - 1
}

// jittered is the rescan interval of digest: interval moved by up to
// ±fraction of it.
func jittered(interval time.Duration, digest string, fraction float64) time.Duration {
	if interval <= 0 || fraction <= 0 {
		return interval
	}
	return interval + time.Duration(float64(interval)*fraction*rescanJitter(digest))
}
