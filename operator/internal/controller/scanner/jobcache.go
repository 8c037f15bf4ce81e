package scanner

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// The scan Job cache is a fleet-sized cache: one Job per digest being
// scanned or waiting for a retry, in the whole cluster. Two things keep a
// reconcile and the memory from growing with it:
//
//   - TransformJob keeps only what the operator reads of a Job, so the Pod
//     template (most of a Job) is not held once per Job;
//   - field indexes let a reconcile read only the Jobs it is about: its own
//     Scanner's, those of its Pods' digests, the running ones.
//
// A trimmed Job must never be written back whole: every write of a Job is a
// merge patch (a diff of two copies of the same trimmed object, so nothing
// trimmed is in it) or a Delete, and the reconciler's client refuses Update
// of a Job (noJobUpdates).

// Field indexes on the cached scan Jobs (client.MatchingFields).
const (
	// jobDigestField is the digest a Job scans (scanjob.AnnotationDigest).
	jobDigestField = "scanjob.digest"
	// jobScannerField is the name of the Scanner a Job is labelled with
	// (scanjob.LabelScanner); list it within the Scanner's namespace.
	jobScannerField = "scanjob.scanner"
	// jobActiveField is "true" on a Job that runs (jobActive), and absent
	// on a finished one.
	jobActiveField = "scanjob.active"
)

// TransformJob trims a scan Job to what the operator reads: metadata
// (labels, annotations, owner references, finalizers, timestamps; not
// managedFields), the whole status (small; the watch predicates compare it)
// and spec.activeDeadlineSeconds (stuck.go). The Pod template and the rest
// of the spec are dropped. Anything else passes through unchanged; it is
// idempotent, as a cache transform must be.
func TransformJob(obj any) (any, error) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return obj, nil
	}
	out := &batchv1.Job{TypeMeta: job.TypeMeta, ObjectMeta: job.ObjectMeta, Status: job.Status}
	out.ManagedFields = nil
	out.Spec.ActiveDeadlineSeconds = job.Spec.ActiveDeadlineSeconds
	return out, nil
}

// indexJobs registers the scan Job field indexes with the manager's cache.
func indexJobs(ctx context.Context, indexer client.FieldIndexer) error {
	indexes := []struct {
		field string
		fn    func(*batchv1.Job) []string
	}{
		{jobDigestField, func(j *batchv1.Job) []string { return nonEmpty(j.Annotations[scanjob.AnnotationDigest]) }},
		{jobScannerField, func(j *batchv1.Job) []string { return nonEmpty(j.Labels[scanjob.LabelScanner]) }},
		{jobActiveField, func(j *batchv1.Job) []string {
			if jobOutcome(j, nil).phase == jobActive {
				return []string{"true"}
			}
			return nil
		}},
	}
	for _, ix := range indexes {
		err := indexer.IndexField(ctx, &batchv1.Job{}, ix.field, func(obj client.Object) []string {
			if job, ok := obj.(*batchv1.Job); ok {
				return ix.fn(job)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("index scan jobs by %s: %w", ix.field, err)
		}
	}
	return nil
}

func nonEmpty(v string) []string {
	if v == "" {
		return nil
	}
	return []string{v}
}

// errJobUpdate is what noJobUpdates answers an Update of a Job with.
var errJobUpdate = errors.New("scan jobs are cached trimmed (TransformJob): an update would write the trimmed object back; patch the fields instead")

// noJobUpdates is the reconciler's client: it refuses to Update a Job, so
// that a Job read from the trimmed cache is never written back whole.
type noJobUpdates struct {
	client.Client
}

// Update refuses Jobs and passes everything else on.
func (c noJobUpdates) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if _, ok := obj.(*batchv1.Job); ok {
		return fmt.Errorf("update scan job %s: %w", obj.GetName(), errJobUpdate)
	}
	return c.Client.Update(ctx, obj, opts...)
}
