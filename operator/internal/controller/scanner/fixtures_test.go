package scanner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

func testDigest(i int) string { return fmt.Sprintf("sha256:%064x", i) }

// newScanner creates a Scanner; mods adjust its spec.
func newScanner(t testing.TB, ns string, mods ...func(*crowsnestv1alpha1.ScannerSpec)) *crowsnestv1alpha1.Scanner {
	t.Helper()
	s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	for _, m := range mods {
		m(&s.Spec)
	}
	if err := k8s.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// runPod creates a Pod and, playing the kubelet, reports its containers as
// running with the given imageIDs (one container per imageID).
func runPod(t testing.TB, ns, name string, labels map[string]string, imageIDs ...string) {
	t.Helper()
	runOwnedPod(t, ns, name, labels, nil, imageIDs...)
}

// runOwnedPod is runPod for a Pod with owner references.
func runOwnedPod(t testing.TB, ns, name string, labels map[string]string, owners []metav1.OwnerReference, imageIDs ...string) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: owners}}
	for i := range imageIDs {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Image: "example/app"})
	}
	if err := k8s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	for i, id := range imageIDs {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: fmt.Sprintf("c%d", i), Image: "example/app", ImageID: id, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		})
	}
	if err := k8s.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// scanJobs lists the scan Jobs of a namespace, sorted by name.
func scanJobs(t testing.TB, ns string) []batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{scanjob.LabelManagedBy: scanjob.ManagedBy}); err != nil {
		t.Fatal(err)
	}
	sort.Slice(list.Items, func(a, b int) bool { return list.Items[a].Name < list.Items[b].Name })
	return list.Items
}

func jobCount(t testing.TB, ns string, want int) func() error {
	return func() error {
		if n := len(scanJobs(t, ns)); n != want {
			return fmt.Errorf("%d scan jobs, want %d", n, want)
		}
		return nil
	}
}

// finishJob plays the Job controller: it gives the Job a Pod with the given
// container states (when any) and marks the Job complete or failed.
func finishJob(t testing.TB, job *batchv1.Job, succeeded bool, grype, uploader *corev1.ContainerState) {
	t.Helper()
	ctx := context.Background()
	if grype != nil || uploader != nil {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-" + string(job.UID)[:5], Namespace: job.Namespace,
			Labels: map[string]string{batchv1.JobNameLabel: job.Name, scanjob.LabelManagedBy: scanjob.ManagedBy}},
			Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "grype", Image: "g"}}, Containers: []corev1.Container{{Name: "uploader", Image: "u"}}}}
		if err := k8s.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status.Phase = corev1.PodFailed
		if grype != nil {
			pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "grype", Image: "g", State: *grype}}
		}
		if uploader != nil {
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "uploader", Image: "u", State: *uploader}}
		}
		if err := k8s.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return err
		}
		setFinished(job, succeeded)
		return k8s.Status().Update(ctx, job)
	})
	if err != nil {
		t.Fatalf("mark job %s finished: %v", job.Name, err)
	}
}

// setFinished sets the status the Job controller writes on a finished Job.
func setFinished(job *batchv1.Job, succeeded bool) {
	now := metav1.Now()
	start := metav1.NewTime(now.Add(-3 * time.Second))
	job.Status.StartTime = &start
	cond := func(typ batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: now, LastProbeTime: now}
	}
	if succeeded {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached), cond(batchv1.JobComplete, batchv1.JobReasonCompletionsReached)}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded), cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded)}
	}
}

func exitedState(code int32, msg string) *corev1.ContainerState {
	return &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: msg}}
}

// putReport uploads a small constructed CycloneDX BOM to the real results-api.
func putReport(t testing.TB, srv *resultsapitest.Server, digest string) {
	t.Helper()
	srv.PutReport(t, digest, nil)
}

// deleteReport deletes a digest's report through the real results-api, as
// an administrator would.
func deleteReport(t testing.TB, srv *resultsapitest.Server, digest string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, srv.URL+"/api/v1/reports/"+digest, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.Token)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE report %s: HTTP %d", digest, resp.StatusCode)
	}
}

// deleteAsTTL deletes a Job as its TTL running out would. The TTL
// controller deletes with Foreground propagation, whose foregroundDeletion
// finalizer only the garbage collector removes; envtest runs none, so
// Background stands in (the operator's finalizer is the one that matters).
func deleteAsTTL(t testing.TB, job *batchv1.Job) {
	t.Helper()
	if err := k8s.Delete(context.Background(), job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatalf("delete job %s: %v", job.Name, err)
	}
}

// jobsByDigest indexes scan Jobs by the digest they scan.
func jobsByDigest(jobs []batchv1.Job) map[string]*batchv1.Job {
	m := make(map[string]*batchv1.Job, len(jobs))
	for i := range jobs {
		m[jobs[i].Annotations[scanjob.AnnotationDigest]] = &jobs[i]
	}
	return m
}

func getScanner(t testing.TB, ns string) *crowsnestv1alpha1.Scanner {
	t.Helper()
	var s crowsnestv1alpha1.Scanner
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "default"}, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// conditions polls until each of the Scanner's conditions in want, written
// "Type=Status/Reason" ("Stalled=" for absent), is so.
func conditions(t testing.TB, ns string, want ...string) func() error {
	return func() error {
		s := getScanner(t, ns)
		for _, w := range want {
			typ, sr, _ := strings.Cut(w, "=")
			got := ""
			if c := meta.FindStatusCondition(s.Status.Conditions, typ); c != nil {
				got = string(c.Status) + "/" + c.Reason
			}
			if got != sr {
				return fmt.Errorf("%s is %q, want %q (conditions %+v)", typ, got, sr, s.Status.Conditions)
			}
		}
		return nil
	}
}

// Condition sets the tests wait for.
var (
	scanningOK = []string{"Ready=True/Reconciled", "ScansComplete=False/Scanning", "Stalled=", "Reconciling="}
	upToDate   = []string{"Ready=True/Reconciled", "ScansComplete=True/UpToDate", "Degraded=False/NoFailures", "Stalled=", "Reconciling="}
)

// streamEvents reads every event stored in the CROWSNEST stream, in order.
func streamEvents(t testing.TB, url string) []eventsv1.Event {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, eventsv1.StreamName)
	if err != nil {
		return nil // not created yet
	}
	info, err := s.Info(ctx)
	if err != nil || info.State.Msgs == 0 {
		return nil
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(int(info.State.Msgs), jetstream.FetchMaxWait(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for msg := range batch.Messages() {
		var ev eventsv1.Event
		if err := json.Unmarshal(msg.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}
