package scanner

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// release removes the operator's finalizer (scanjob.Finalizer) from job,
// which lets a Job being deleted go. A Job already gone, or replaced by
// another of the same name, is no error. The patch carries the Job's
// resourceVersion, so another writer's finalizer is never dropped: on a
// conflict the Job is read again and the removal retried.
func (r *Reconciler) release(ctx context.Context, job *batchv1.Job) error {
	uid := job.UID
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if job.UID != uid || !controllerutil.ContainsFinalizer(job, scanjob.Finalizer) {
			return nil
		}
		before := job.DeepCopy()
		controllerutil.RemoveFinalizer(job, scanjob.Finalizer)
		err := r.Patch(ctx, job, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			if getErr := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), job); getErr != nil {
				return getErr
			}
		}
		return err
	})
	if err := client.IgnoreNotFound(err); err != nil {
		return fmt.Errorf("remove finalizer of scan job %s: %w", job.Name, err)
	}
	return nil
}

// releaseJobs removes the finalizer from every Job labelled with the
// Scanner's name in its namespace, for a Scanner that is gone or being
// deleted, or that may not scan its namespace: nothing will record those
// Jobs' outcomes, and a finalizer nobody removes would keep them, their
// Scanner's foreground deletion and their namespace's deletion waiting
// forever. Their undelivered job.done events are dropped. Where RBAC forbids
// it, there is nothing the operator can do: that is logged, not retried.
func (r *Reconciler) releaseJobs(ctx context.Context, namespace, scanner string) error {
	logger := log.FromContext(ctx)
	var list batchv1.JobList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels(scanjob.SelectorLabels(scanner))); err != nil {
		if apierrors.IsForbidden(err) {
			logger.Info("may not list scan jobs to remove their finalizers", "error", err.Error())
			return nil
		}
		return fmt.Errorf("list scan jobs to release: %w", err)
	}
	var errs []error
	released := 0
	for i := range list.Items {
		job := &list.Items[i]
		if !controllerutil.ContainsFinalizer(job, scanjob.Finalizer) {
			continue
		}
		switch err := r.release(ctx, job); {
		case apierrors.IsForbidden(err):
			logger.Info("may not remove the finalizer of a scan job", "job", job.Name, "error", err.Error())
		case err != nil:
			errs = append(errs, err)
		default:
			released++
		}
	}
	if released > 0 {
		logger.Info("released the scan jobs of a scanner that is gone or may not scan here", "jobs", released)
	}
	return errors.Join(errs...)
}
