package scanbudget

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
)

// ClaimTTL bounds how long a claim outlives a Job the cache has not shown:
// the cache lags a create by milliseconds, so a claim older than this is one
// whose Job was never created.
const ClaimTTL = time.Minute

// Budget is the leader's cluster-wide view of scanning: which digests have
// a Job just created that the cache may not show yet (ReplicaSet-style
// expectations, "claims"), the cluster-wide concurrency cap shared fairly
// between Scanners, and the cluster-wide rescan rate. Every Scanner's
// reconcile consults the one instance, so a digest that runs in 500
// namespaces gets one Job, not 500. It is safe for concurrent use.
type Budget struct {
	mu       sync.Mutex
	now      func() time.Time
	cap      int // 0: no cluster-wide cap
	claims   map[string]claim
	waiting  map[types.NamespacedName]waiter
	rescans  *rate.Limiter // nil: no rate limit
	wake     func(types.NamespacedName)
	lastWake map[types.NamespacedName]time.Time
	queue    shareQueue // share's storage, under mu
}

// claim says that owner created (or is creating) job for a digest.
type claim struct {
	owner types.NamespacedName
	job   types.NamespacedName
	at    time.Time
}

// waiter is a Scanner that wants more Jobs than the cap gave it. Its turn
// began when it was first given a slot it still waits after (turnStart),
// and has given it turnJobs slots since.
type waiter struct {
	want      int
	since     time.Time
	turnStart time.Time
	turnJobs  int
}

// A Scanner given slots keeps, for its turn, the slots its own reconciles
// find free, ahead of the Scanners that run as many Jobs as it does: the
// reconcile that records one of its Jobs' end creates its next Job, where
// handing the slot to another Scanner costs that Scanner a reconcile
// (woken) — with a Scanner per namespace, about one per Job. A turn is
// bounded by turnJobs Jobs and turnTime, after which the Scanner goes to
// the back of the line: no other Scanner waits for more than turnJobs of
// its Jobs, and one that runs fewer Jobs still comes first (max-min
// fairness is unchanged; only the order among equals is).
const (
	turnJobs = 4
	turnTime = 2 * time.Minute
)

// inTurn tells whether w's turn lasts at now.
func (w waiter) inTurn(now time.Time) bool {
	return !w.turnStart.IsZero() && w.turnJobs < turnJobs && now.Sub(w.turnStart) < turnTime
}

// New makes the shared state: maxConcurrent caps the scan Jobs running at
// once in the cluster (0: no cap), rescansPerMinute the rescans started per
// minute (0: no cap), and wake enqueues the reconcile of a Scanner that was
// given a free slot; it must not block.
func New(now func() time.Time, maxConcurrent, rescansPerMinute int, wake func(types.NamespacedName)) *Budget {
	c := &Budget{now: now, cap: maxConcurrent, claims: map[string]claim{}, waiting: map[types.NamespacedName]waiter{},
		wake: wake, lastWake: map[types.NamespacedName]time.Time{}}
	if rescansPerMinute > 0 {
		c.rescans = rate.NewLimiter(rate.Every(time.Minute/time.Duration(rescansPerMinute)), max(rescansPerMinute/10, 1))
	}
	return c
}

// Release drops owner's claim on digest: its Job is in the cache now, or
// it was never created.
func (c *Budget) Release(digest string, owner types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.claims[digest]; ok && cl.owner == owner {
		delete(c.claims, digest)
	}
}

// ClaimedElsewhere tells whether another owner holds a live claim on digest.
func (c *Budget) ClaimedElsewhere(digest string, owner types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.claims[digest]
	return ok && cl.owner != owner && c.now().Sub(cl.at) < ClaimTTL
}

// Claimed tells whether owner holds a live claim on digest: its Job was
// created, and the cache does not show it yet.
func (c *Budget) Claimed(digest string, owner types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.claims[digest]
	return ok && cl.owner == owner && c.now().Sub(cl.at) < ClaimTTL
}

// Admit says which of the digests owner wants new Jobs for may start now,
// and claims them in the same step, so that two Scanners reconciled at once
// can neither both take the last free slot nor both take a digest. running
// reads the running scan Jobs from the cache, under the lock, so that no
// claim is released between that read and this decision; live claims not
// among them count as running too. Free slots go round-robin to the waiting
// Scanners, oldest-waiting first (the caller first in its turn: turnJobs),
// so one busy namespace cannot starve the others, and Scanners whose share
// is free are woken. A digest another Scanner claimed is skipped. With no
// cap every unclaimed digest is admitted, and running is not called (it
// reads every running Job).
func (c *Budget) Admit(owner types.NamespacedName, want []Request, running func() map[string]types.NamespacedName) []string {
	c.mu.Lock()
	now := c.now()
	var active map[string]types.NamespacedName
	if c.cap > 0 {
		active = running()
	}
	inUse := len(active)
	byOwner := map[types.NamespacedName]int{}
	for _, o := range active {
		byOwner[o]++
	}
	for d, cl := range c.claims {
		if now.Sub(cl.at) >= ClaimTTL {
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
		if cl, ok := c.claims[w.Digest]; !ok || cl.owner == owner {
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
		var first types.NamespacedName
		if c.waiting[owner].inTurn(now) {
			first = owner
		}
		shares := share(c.waiting, byOwner, max(c.cap-inUse, 0), first, &c.queue)
		slots = shares[owner]
		if w, ok := c.waiting[owner]; ok {
			switch {
			case slots >= w.want:
				delete(c.waiting, owner)
			case slots > 0:
				// Served: to the back of the line, in its turn (a new
				// one if the last is over).
				w.want -= slots
				w.since = now
				if !w.inTurn(now) {
					w.turnStart, w.turnJobs = now, 0
				}
				w.turnJobs += slots
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
		c.claims[w.Digest] = claim{owner: owner, job: w.Job, at: now}
		admitted = append(admitted, w.Digest)
	}
	c.mu.Unlock()
	for _, key := range wake {
		c.wake(key)
	}
	return admitted
}

// Request is a digest a Scanner wants to create Job Job for.
type Request struct {
	Digest string
	Job    types.NamespacedName
}

func wanted(want []Request, digest string) bool {
	for _, w := range want {
		if w.Digest == digest {
			return true
		}
	}
	return false
}

// Forget drops a Scanner that is gone: its claims, its place in the line.
func (c *Budget) Forget(owner types.NamespacedName) {
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

// RescanDelay takes one rescan from the cluster-wide rate: 0 when the
// rescan may start now, otherwise how long until it may.
func (c *Budget) RescanDelay() time.Duration {
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
