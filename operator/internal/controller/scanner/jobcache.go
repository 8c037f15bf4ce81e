package scanner

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
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

// scanJobLabel selects scan Jobs (those with scanjob.LabelDigestHash),
// built once: client.HasLabels builds and validates its selector on every
// List, ~3% of the operator's CPU at 100,000 Pods, where a reconcile reads
// the Jobs of each of its ~100 digests.
var scanJobLabel = hasLabel(scanjob.LabelDigestHash)

func hasLabel(key string) labels.Selector {
	req, err := labels.NewRequirement(key, selection.Exists, nil)
	if err != nil {
		panic(fmt.Sprintf("label selector %q: %v", key, err)) // a constant key
	}
	return labels.NewSelector().Add(*req)
}

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

// jobIndexes are the scan Job field indexes (client.MatchingFields):
// namespaced ones are listed within a namespace.
var jobIndexes = []struct {
	field      string
	namespaced bool
	fn         func(*batchv1.Job) []string
}{
	{jobDigestField, false, func(j *batchv1.Job) []string { return nonEmpty(j.Annotations[scanjob.AnnotationDigest]) }},
	{jobScannerField, true, func(j *batchv1.Job) []string { return nonEmpty(j.Labels[scanjob.LabelScanner]) }},
	{jobActiveField, false, func(j *batchv1.Job) []string {
		if jobOutcome(j, nil).phase == jobActive {
			return []string{"true"}
		}
		return nil
	}},
}

// indexJobs registers the scan Job field indexes with the manager's cache.
func indexJobs(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range jobIndexes {
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

// jobReader reads cached scan Jobs by one of jobIndexes. A reconcile
// makes one such read per digest its Pods run (~100 at the 100,000-Pod
// shape), and controller-runtime's List costs each one a new object of the
// list's kind, selector checks and a reflected copy of every Job into the
// list: a third of the operator's allocations at 100,000 Pods. With a
// cluster-wide cache the Job informer is one client-go informer, and
// jobReader reads its indexer directly (the same store List reads, its
// indexes updated with it, before any watch handler runs); its entries are
// the cache's shared objects, as List with UnsafeDisableDeepCopy gives, and
// must not be changed. A cache of several namespaces has an informer per
// namespace and no one indexer: then it lists through the client.
type jobReader struct {
	idx toolscache.Indexer // nil: the reader's List
}

// fastIndex names a field's index on the informer's own indexer.
func fastIndex(field string) string { return "crowsnest/" + field }

// newJobReader adds jobIndexes to c's Job informer and reads through its
// indexer when c has one informer for Jobs.
func newJobReader(ctx context.Context, c cache.Cache) (jobReader, error) {
	indexers := toolscache.Indexers{}
	for _, ix := range jobIndexes {
		indexers[fastIndex(ix.field)] = func(obj any) ([]string, error) {
			job, ok := obj.(*batchv1.Job)
			if !ok {
				return nil, nil
			}
			keys := ix.fn(job)
			if ix.namespaced {
				for i, k := range keys {
					keys[i] = job.Namespace + "/" + k
				}
			}
			return keys, nil
		}
	}
	idx, err := informerIndexer(ctx, c, &batchv1.Job{}, indexers)
	if err != nil {
		return jobReader{}, fmt.Errorf("scan jobs: %w", err)
	}
	return jobReader{idx: idx}, nil
}

// scannerIndexer returns the indexer of c's Scanner informer, with its
// namespace index, when c has one informer for Scanners (cluster-wide);
// nil otherwise.
func scannerIndexer(ctx context.Context, c cache.Cache) (toolscache.Indexer, error) {
	idx, err := informerIndexer(ctx, c, &crowsnestv1alpha1.Scanner{},
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	if err != nil {
		return nil, fmt.Errorf("scanners: %w", err)
	}
	return idx, nil
}

// informerIndexer returns the indexer of c's informer for obj's kind, with
// indexers added (those it has already are kept), when c has one client-go
// informer for the kind (a cluster-wide cache); nil when it has one per
// namespace, which exposes no indexer.
func informerIndexer(ctx context.Context, c cache.Cache, obj client.Object, indexers toolscache.Indexers) (toolscache.Indexer, error) {
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("informer: %w", err)
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, nil
	}
	have := sii.GetIndexer().GetIndexers()
	add := toolscache.Indexers{}
	for name, fn := range indexers {
		if _, ok := have[name]; !ok {
			add[name] = fn
		}
	}
	if len(add) > 0 {
		if err := sii.AddIndexers(add); err != nil {
			return nil, fmt.Errorf("add indexers: %w", err)
		}
	}
	return sii.GetIndexer(), nil
}

// jobs returns the cached Jobs whose field is value (in namespace, for a
// namespaced field) and whose labels match sel, listed by reader (the
// reconciler's cached client) when there is no indexer to read.
func (x jobReader) jobs(ctx context.Context, reader client.Reader, field, value, namespace string, sel labels.Selector) ([]*batchv1.Job, error) {
	if x.idx == nil {
		opts := []client.ListOption{client.MatchingFields{field: value}, client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy}
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		var list batchv1.JobList
		if err := reader.List(ctx, &list, opts...); err != nil {
			return nil, err
		}
		out := make([]*batchv1.Job, len(list.Items))
		for i := range list.Items {
			out[i] = &list.Items[i]
		}
		return out, nil
	}
	key := value
	if namespace != "" {
		key = namespace + "/" + value
	}
	objs, err := x.idx.ByIndex(fastIndex(field), key)
	if err != nil {
		return nil, err
	}
	out := make([]*batchv1.Job, 0, len(objs))
	for _, o := range objs {
		if job, ok := o.(*batchv1.Job); ok && sel.Matches(labels.Set(job.Labels)) {
			out = append(out, job)
		}
	}
	return out, nil
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
