package scanner

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/podcache"
)

// deletedReports turns "a report was deleted in results-api" into reconciles
// of the Scanners of the namespaces that run the digest (the pod cache's
// digest index), so a deleted digest that is still running is scanned again
// without waiting for an unrelated change. Setup adds it to the manager as a
// Runnable and watches Events().
type deletedReports struct {
	client client.Reader
	pods   *podcache.Cache
	forget func(digest string) // drops the digest's cached lookup answer
	source ReportDeletions     // consumed while Start runs

	digests chan string
	events  chan event.GenericEvent
}

// newDeletedReports makes a bounded queue of the digests source delivers.
func newDeletedReports(c client.Reader, pods *podcache.Cache, forget func(string), source ReportDeletions) *deletedReports {
	return &deletedReports{client: c, pods: pods, forget: forget, source: source, digests: make(chan string, 256), events: make(chan event.GenericEvent, 64)}
}

// deleted queues a digest without blocking; when the queue is full the digest
// is dropped (forget is still applied); the digest is then rescanned when
// its report's absence is next looked up, at the latest on the Scanner's
// next reconcile.
func (d *deletedReports) deleted(digest string) {
	d.forget(digest)
	select {
	case d.digests <- digest:
	default:
	}
}

// Events is the source the Scanner controller watches.
func (d *deletedReports) Events() <-chan event.GenericEvent { return d.events }

// Start implements manager.Runnable: it consumes the deletions and enqueues
// every Scanner for each deleted digest until ctx ends. It runs on the leader
// only: the deletions come from one durable consumer shared by every
// replica, and one a standby replica took would never reach the leader.
func (d *deletedReports) Start(ctx context.Context) error {
	unsubscribe, err := d.source.OnReportDeleted(d.deleted)
	if err != nil {
		return fmt.Errorf("watch deleted reports: %w", err)
	}
	defer func() { _ = unsubscribe() }()
	log := logf.FromContext(ctx).WithName("deleted-reports")
	for {
		select {
		case <-ctx.Done():
			return nil
		case digest := <-d.digests:
			namespaces := map[string]bool{}
			for _, p := range d.pods.Running(digest) {
				namespaces[p.Namespace()] = true
			}
			for _, ns := range sortedKeys(namespaces) {
				var list crowsnestv1alpha1.ScannerList
				if err := d.client.List(ctx, &list, client.InNamespace(ns)); err != nil {
					log.Error(err, "list scanners after report deletion", "digest", digest, "namespace", ns)
					continue
				}
				log.V(1).Info("report deleted; reconciling scanners", "digest", digest, "namespace", ns, "scanners", len(list.Items))
				for i := range list.Items {
					select {
					case d.events <- event.GenericEvent{Object: &list.Items[i]}:
						scannerWakeups.WithLabelValues(wakeupReportDeleted).Inc()
					case <-ctx.Done():
						return nil
					}
				}
			}
		}
	}
}

// NeedLeaderElection is true: only the leader schedules scans.
func (d *deletedReports) NeedLeaderElection() bool { return true }
