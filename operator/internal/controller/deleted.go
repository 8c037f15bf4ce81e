package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// DeletedReports turns "a report was deleted in results-api" into reconciles
// of every Scanner, so a deleted digest that is still running is scanned again
// without waiting for an unrelated change. Add it to the manager as a
// Runnable and point ScannerReconciler.Rescans at Events().
type DeletedReports struct {
	Client client.Reader
	Forget func(digest string) // drops the digest's cached lookup answer

	digests chan string
	events  chan event.GenericEvent
}

// NewDeletedReports makes a bounded queue of deleted digests.
func NewDeletedReports(c client.Reader, forget func(string)) *DeletedReports {
	return &DeletedReports{Client: c, Forget: forget, digests: make(chan string, 256), events: make(chan event.GenericEvent, 64)}
}

// Deleted queues a digest without blocking; when the queue is full the digest
// is dropped, which is safe because one queued reconcile of every Scanner
// covers every deleted digest (Forget is still applied).
func (d *DeletedReports) Deleted(digest string) {
	d.Forget(digest)
	select {
	case d.digests <- digest:
	default:
	}
}

// Events is the source the Scanner controller watches.
func (d *DeletedReports) Events() <-chan event.GenericEvent { return d.events }

// Start implements manager.Runnable: it enqueues every Scanner for each
// deleted digest until ctx ends.
func (d *DeletedReports) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("deleted-reports")
	for {
		select {
		case <-ctx.Done():
			return nil
		case digest := <-d.digests:
			var list crowsnestv1alpha1.ScannerList
			if err := d.Client.List(ctx, &list); err != nil {
				log.Error(err, "list scanners after report deletion", "digest", digest)
				continue
			}
			log.V(1).Info("report deleted; reconciling scanners", "digest", digest, "scanners", len(list.Items))
			for i := range list.Items {
				select {
				case d.events <- event.GenericEvent{Object: &list.Items[i]}:
				case <-ctx.Done():
					return nil
				}
			}
		}
	}
}

// NeedLeaderElection is true: only the leader schedules scans.
func (d *DeletedReports) NeedLeaderElection() bool { return true }
