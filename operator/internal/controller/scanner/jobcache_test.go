package scanner

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// TestTransformJobKeepsWhatTheOperatorReads: the cache's Job has no Pod
// template and no managedFields, keeps every field the operator reads, reads
// the same (readJob), and a second transform changes nothing.
func TestTransformJobKeepsWhatTheOperatorReads(t *testing.T) {
	s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default", UID: "u-1"}}
	full := scanjob.Build(scanjob.Params{Scanner: s, Digest: testDigest(1), Image: "ghcr.io/org/app@" + testDigest(1), Attempt: 2, Reason: "retry",
		UploaderImage: "ghcr.io/crowsnest-dev/uploader:test", APIURL: "http://results-api:8080", TTL: time.Hour})
	full.UID, full.ResourceVersion = "job-uid", "42"
	full.DeletionTimestamp = ptr.To(metav1.Now())
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "crowsnest-operator", Operation: metav1.ManagedFieldsOperationUpdate}}
	full.Annotations[scanjob.AnnotationOutcome] = "failed"
	full.Annotations[scanjob.AnnotationFailure] = crowsnestv1alpha1.FailureImagePull + ": unauthorized"
	setFinished(full, false)
	full.Status.Active, full.Status.Ready = 1, ptr.To[int32](1)

	got, err := TransformJob(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	job := got.(*batchv1.Job)
	if !reflect.DeepEqual(job.Spec, batchv1.JobSpec{ActiveDeadlineSeconds: full.Spec.ActiveDeadlineSeconds}) {
		t.Errorf("spec %+v, want only activeDeadlineSeconds %d", job.Spec, *full.Spec.ActiveDeadlineSeconds)
	}
	if job.ManagedFields != nil {
		t.Errorf("managedFields %v", job.ManagedFields)
	}
	want := full.ObjectMeta.DeepCopy()
	want.ManagedFields = nil
	if !reflect.DeepEqual(job.ObjectMeta, *want) {
		t.Errorf("metadata\n%+v\nwant\n%+v", job.ObjectMeta, *want)
	}
	if !reflect.DeepEqual(job.Status, full.Status) || job.TypeMeta != full.TypeMeta {
		t.Errorf("status %+v type %+v, want %+v %+v", job.Status, job.TypeMeta, full.Status, full.TypeMeta)
	}
	if a, b := readJob(job), readJob(full); a.digest != b.digest || a.image != b.image || a.attempt != b.attempt || a.reason != b.reason || a.result != b.result {
		t.Errorf("readJob of the cached Job %+v, of the full one %+v", a, b)
	}
	again, err := TransformJob(job.DeepCopy())
	if err != nil || !reflect.DeepEqual(again, job) {
		t.Errorf("a second transform gave %+v, %v", again, err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if got, err := TransformJob(pod); err != nil || got != pod {
		t.Errorf("a Pod came back as %v, %v", got, err)
	}
}

// TestJobPatchesFromTheTrimmedCacheKeepTheJob: the operator reads its Jobs
// from the trimmed cache and patches them (the published annotation), yet
// the Job on the API server keeps its Pod template; an Update of a cached
// Job, which would write the trimmed object back, is refused.
func TestJobPatchesFromTheTrimmedCacheKeepTheJob(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	_, natsURL := natstest.StartT(t)
	ctx := context.Background()
	runPod(t, ns, "web", nil, "ghcr.io/org/web@"+testDigest(1))
	newScanner(t, ns)
	op := startOperator(t, ns, api.URL, natsURL, testOptions())

	name := scanjob.JobName("default", testDigest(1))
	var served batchv1.Job
	eventually(t, 20*time.Second, "the scan job's image.needed is published and recorded", func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &served); err != nil {
			return err
		}
		if served.Annotations[scanjob.AnnotationPublished] != publishedNeeded {
			return fmt.Errorf("annotations %v", served.Annotations)
		}
		return nil
	})
	tmpl := served.Spec.Template.Spec
	if len(tmpl.InitContainers) == 0 || len(tmpl.Containers) != 1 || tmpl.Containers[0].Image != "ghcr.io/crowsnest-dev/uploader:test" || len(tmpl.Volumes) == 0 {
		t.Errorf("the served Job lost its Pod template: %+v", tmpl)
	}

	var cached batchv1.Job
	eventually(t, 10*time.Second, "the cache shows the annotation", func() error {
		if err := op.mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(&served), &cached); err != nil {
			return err
		}
		if cached.Annotations[scanjob.AnnotationPublished] != publishedNeeded {
			return fmt.Errorf("annotations %v", cached.Annotations)
		}
		return nil
	})
	if !reflect.DeepEqual(cached.Spec, batchv1.JobSpec{ActiveDeadlineSeconds: ptr.To[int64](600)}) || cached.ManagedFields != nil {
		t.Errorf("the cache holds spec %+v, managedFields %v; want it trimmed", cached.Spec, cached.ManagedFields)
	}

	r := newReconciler(op.mgr, Deps{Lookup: nopLookup{}, Options: testOptions()})
	cached.Annotations["x"] = "y"
	if err := r.Update(ctx, &cached); !errors.Is(err, errJobUpdate) {
		t.Errorf("updating a cached Job gave %v, want %v", err, errJobUpdate)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(&served), &served); err != nil {
		t.Fatal(err)
	}
	if served.Annotations["x"] != "" || len(served.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("the refused update reached the API server: %v", served.Annotations)
	}
}

// nopLookup answers no lookups; the test above never reconciles with it.
type nopLookup struct{}

func (nopLookup) Lookup(context.Context, map[string]time.Time) (map[string]time.Time, error) {
	return nil, errors.New("no lookups here")
}
func (nopLookup) Forget(string) {}
