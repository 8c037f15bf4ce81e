package inventory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/bus"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
)

// DefaultDebounce is how long the changes of a namespace are collected
// before its snapshot is built: a rollout of a hundred Pods publishes a
// handful of snapshots, not a hundred.
const DefaultDebounce = 2 * time.Second

// Options configure the inventory.
type Options struct {
	// Enabled turns the inventory on (--inventory).
	Enabled bool
	// Debounce is DefaultDebounce when 0.
	Debounce time.Duration
	// Exclude lists namespaces left out: the operator's own.
	Exclude []string
	// Namespaces are the watched namespaces (none: every namespace). Each
	// gets a snapshot at start-up, Pods or not.
	Namespaces []string
	// NamespaceLabels puts each namespace's labels in its snapshots; it needs
	// a cluster-wide list and watch of Namespaces.
	NamespaceLabels bool
	// RetryBase is the first wait after a failed publish; it doubles up to
	// RetryMax (defaults 1s and 5m).
	RetryBase, RetryMax time.Duration
}

// dedupPublisher is a bus.Publisher that tells when JetStream dropped an
// event as a duplicate (bus.JetStream).
type dedupPublisher interface {
	PublishDedup(ctx context.Context, ev eventsv1.Event) (duplicate bool, err error)
}

func (p *Publisher) send(ctx context.Context, ev eventsv1.Event) (duplicate bool, err error) {
	if d, ok := p.bus.(dedupPublisher); ok {
		return d.PublishDedup(ctx, ev)
	}
	return false, p.bus.Publish(ctx, ev)
}

// Pods is what the inventory reads of the pod cache (podcache.Cache).
type Pods interface {
	WaitForSync(ctx context.Context) error
	InNamespace(namespace string) []*discovery.Pod
	Namespaces() []string
	OnChange(fn func(namespace string)) error
}

// Publisher publishes each namespace's inventory: once per namespace after
// the caches have synced, then whenever a namespace's content (and so its
// id) changes. It runs on the leader only, in its own goroutine: a slow or
// failing NATS never holds up a reconcile.
type Publisher struct {
	pods   Pods
	owners *Owners
	bus    bus.Publisher
	opts   Options
	now    func() time.Time
	queue  workqueue.TypedRateLimitingInterface[string]

	started string // Previous of each namespace's first snapshot: "start:" and the start time

	mu        sync.Mutex
	last      map[string]string // namespace → id of its last published snapshot
	content   map[string]string // namespace → content id (InventoryID without Previous) of it
	workloads map[string]int    // namespace → workloads in it
}

// NewPublisher makes the publisher; the manager runs it (Start).
func NewPublisher(pods Pods, owners *Owners, p bus.Publisher, opts Options) *Publisher {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = time.Second
	}
	if opts.RetryMax < opts.RetryBase {
		opts.RetryMax = max(opts.RetryBase, 5*time.Minute)
	}
	return &Publisher{
		pods: pods, owners: owners, bus: p, opts: opts, now: time.Now,
		started: "start:" + time.Now().UTC().Format(time.RFC3339Nano), content: map[string]string{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.RetryBase, opts.RetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{}),
		last: map[string]string{}, workloads: map[string]int{},
	}
}

// NeedLeaderElection is true: only the leader publishes.
func (p *Publisher) NeedLeaderElection() bool { return true }

// Start waits for the caches, queues every namespace once, then publishes
// until ctx ends (manager.Runnable).
func (p *Publisher) Start(ctx context.Context) error {
	defer p.queue.ShutDown()
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	if err := p.pods.WaitForSync(ctx); err != nil {
		return nilIfDone(ctx, err)
	}
	if err := p.owners.WaitForSync(ctx); err != nil {
		return nilIfDone(ctx, err)
	}
	if err := p.pods.OnChange(p.changed); err != nil {
		return err
	}
	if err := p.owners.OnChange(p.changed); err != nil {
		return err
	}
	for _, ns := range p.startNamespaces() {
		p.queue.Add(ns)
	}
	for p.next(ctx) {
	}
	return nil
}

func nilIfDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// changed schedules a namespace's snapshot: the first change starts the
// debounce, later ones within it ride along.
func (p *Publisher) changed(namespace string) {
	if !p.excluded(namespace) {
		p.queue.AddAfter(namespace, p.opts.Debounce)
	}
}

func (p *Publisher) excluded(namespace string) bool {
	return namespace == "" || slices.Contains(p.opts.Exclude, namespace) ||
		(len(p.opts.Namespaces) > 0 && !slices.Contains(p.opts.Namespaces, namespace))
}

// startNamespaces are the watched namespaces, every namespace known (when
// Namespaces are cached) and every namespace with Pods.
func (p *Publisher) startNamespaces() []string {
	all := slices.Concat(p.opts.Namespaces, p.owners.Namespaces(), p.pods.Namespaces())
	slices.Sort(all)
	all = slices.Compact(all)
	return slices.DeleteFunc(all, p.excluded)
}

// next publishes one queued namespace; false once the queue shut down.
func (p *Publisher) next(ctx context.Context) bool {
	ns, shutdown := p.queue.Get()
	if shutdown {
		return false
	}
	defer p.queue.Done(ns)
	if err := p.publish(ctx, ns); err != nil {
		if ctx.Err() != nil {
			return false
		}
		snapshotsFailed.Inc()
		logf.FromContext(ctx).WithName("inventory").Error(err, "publish inventory snapshot; retrying", "namespace", ns)
		p.queue.AddRateLimited(ns)
		return true
	}
	p.queue.Forget(ns)
	return true
}

// publish builds a namespace's snapshot now (so a retry sends the latest
// content, never a stale one) and publishes it unless its content is the
// one published last. Its Previous is the id published last for the
// namespace (the start marker first), so a retry keeps its id and
// JetStream drops the duplicate, while content going back to an earlier
// state (A, B, A) or a restart gets a new id and is delivered.
func (p *Publisher) publish(ctx context.Context, namespace string) error {
	defer snapshotsBuilt.Inc()
	snap := Build(namespace, p.owners.Labels(namespace), p.pods.InNamespace(namespace), p.owners.Workload)
	content := eventsv1.InventoryID(snap)
	p.mu.Lock()
	same := p.content[namespace] == content
	snap.Previous = p.last[namespace]
	p.mu.Unlock()
	if same {
		return nil
	}
	if snap.Previous == "" {
		snap.Previous = p.started
	}
	id := eventsv1.InventoryID(snap)
	ev, err := eventsv1.New(eventsv1.SourceOperator, eventsv1.TypeInventorySnapshot, id, namespace, p.now(), snap)
	if err != nil {
		return err
	}
	duplicate, err := p.send(ctx, ev)
	if err != nil {
		return fmt.Errorf("inventory of %s: %w", namespace, err)
	}
	snapshotsPublished.Inc()
	p.mu.Lock()
	defer p.mu.Unlock()
	if duplicate {
		// Only a retry of a publish JetStream took after all carries the
		// same id; anything else dropped as a duplicate would leave
		// consumers with an older snapshot until the next change.
		snapshotsDropped.Inc()
		logf.FromContext(ctx).WithName("inventory").Info("inventory snapshot dropped by JetStream as a duplicate of an earlier one; "+
			"consumers keep the previous snapshot until the next change", "namespace", namespace, "id", id, "previous", p.last[namespace])
	}
	p.last[namespace] = id
	p.content[namespace] = content
	p.workloads[namespace] = len(snap.Workloads)
	total := 0
	for _, n := range p.workloads {
		total += n
	}
	workloads.Set(float64(total))
	logf.FromContext(ctx).WithName("inventory").V(1).Info("published inventory snapshot", "namespace", namespace,
		"id", id, "workloads", len(snap.Workloads), "truncated", snap.Truncated)
	return nil
}
