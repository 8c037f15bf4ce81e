package scanner

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	k8seventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

const grace = 2 * time.Minute

// stuckJob is an active scan Job created at t0.
func stuckJob(mods ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "default-scan-1", Namespace: "team-a", UID: "job-uid",
		CreationTimestamp: metav1.NewTime(t0), Annotations: map[string]string{}}}
	for _, m := range mods {
		m(j)
	}
	return j
}

// jobPod is a Pod of the Job with UID owner, created at t0.
func jobPod(owner types.UID, mods ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "default-scan-1-abcde", CreationTimestamp: metav1.NewTime(t0),
		OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "default-scan-1", UID: owner, Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	for _, m := range mods {
		m(&p)
	}
	return p
}

func withInit(name string, st corev1.ContainerState) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: name, Image: name + ":v1", State: st})
	}
}

func withMain(name string, st corev1.ContainerState) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: name, Image: name + ":v1", State: st})
	}
}

func waitingMsg(reason, msg string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
}

func doneAt(at time.Time) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(at)}}
}

func TestStuckReason(t *testing.T) {
	pull := waitingMsg("ImagePullBackOff", `Back-off pulling image "anchore/grype:v9"`)
	tests := []struct {
		name   string
		job    *batchv1.Job
		pods   []corev1.Pod
		now    time.Time
		reason string // "" for not stuck
		since  time.Time
		inMsg  string
	}{
		{name: "grype pull backoff past the grace", job: stuckJob(), pods: []corev1.Pod{jobPod("job-uid", withInit("grype", pull))},
			now: t0.Add(grace), reason: crowsnestv1alpha1.FailureScannerImagePull, since: t0, inMsg: "container grype (image grype:v1)"},
		{name: "within the grace", job: stuckJob(), pods: []corev1.Pod{jobPod("job-uid", withInit("grype", pull))},
			now: t0.Add(grace - time.Second)},
		{name: "ErrImagePull", job: stuckJob(), pods: []corev1.Pod{jobPod("job-uid", withInit("grype", waitingMsg("ErrImagePull", "not found")))},
			now: t0.Add(time.Hour), reason: crowsnestv1alpha1.FailureScannerImagePull, since: t0, inMsg: "ErrImagePull: not found"},
		{name: "invalid image name", job: stuckJob(), pods: []corev1.Pod{jobPod("job-uid", withInit("grype", waitingMsg("InvalidImageName", "bad")))},
			now: t0.Add(grace), reason: crowsnestv1alpha1.FailureScannerImagePull, since: t0},
		{name: "create container config error", job: stuckJob(),
			pods: []corev1.Pod{jobPod("job-uid", withInit("grype", waitingMsg("CreateContainerConfigError", "container has runAsNonRoot and image will run as root")))},
			now:  t0.Add(grace), reason: crowsnestv1alpha1.FailureScanPodConfig, since: t0, inMsg: "runAsNonRoot"},
		{name: "docker-config init container, first", job: stuckJob(),
			pods: []corev1.Pod{jobPod("job-uid", withInit("docker-config", pull), withInit("grype", waitingMsg("PodInitializing", "")))},
			now:  t0.Add(grace), reason: crowsnestv1alpha1.FailureScannerImagePull, since: t0, inMsg: "container docker-config"},
		{name: "second init container counts from the first one's end", job: stuckJob(),
			pods: []corev1.Pod{jobPod("job-uid", withInit("docker-config", doneAt(t0.Add(time.Minute))), withInit("grype", pull))},
			now:  t0.Add(grace + 30*time.Second)},
		{name: "second init container past its grace", job: stuckJob(),
			pods: []corev1.Pod{jobPod("job-uid", withInit("docker-config", doneAt(t0.Add(time.Minute))), withInit("grype", pull))},
			now:  t0.Add(time.Minute + grace), reason: crowsnestv1alpha1.FailureScannerImagePull, since: t0.Add(time.Minute)},
		{name: "uploader counts from the scan's end", job: stuckJob(),
			pods: []corev1.Pod{jobPod("job-uid", withInit("grype", doneAt(t0.Add(8*time.Minute))), withMain("uploader", pull))},
			now:  t0.Add(9 * time.Minute)},
		{name: "uploader past its grace", job: stuckJob(),
			pods: []corev1.Pod{jobPod("job-uid", withInit("grype", doneAt(t0.Add(8*time.Minute))), withMain("uploader", pull))},
			now:  t0.Add(8*time.Minute + grace), reason: crowsnestv1alpha1.FailureScannerImagePull, since: t0.Add(8 * time.Minute), inMsg: "container uploader"},
		{name: "time waiting for the kubelet does not count", job: stuckJob(),
			pods: []corev1.Pod{jobPod("job-uid", withInit("grype", pull), func(p *corev1.Pod) { p.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(5 * time.Minute))) })},
			now:  t0.Add(6 * time.Minute)},
		{name: "running and initializing are not stuck", job: stuckJob(),
			pods: []corev1.Pod{jobPod("job-uid", withInit("grype", waitingMsg("PodInitializing", "")), withMain("uploader", waitingMsg("ContainerCreating", "")))},
			now:  t0.Add(time.Hour)},
		{name: "a finished Job is not stuck", job: finishedJob(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded),
			pods: []corev1.Pod{jobPod("", withInit("grype", pull))}, now: t0.Add(time.Hour)},
		{name: "an ended Job is not ended twice", job: stuckJob(func(j *batchv1.Job) { j.Annotations[scanjob.AnnotationOutcome] = "failed" }),
			pods: []corev1.Pod{jobPod("job-uid", withInit("grype", pull))}, now: t0.Add(time.Hour)},
		{name: "a predecessor's Pod is not this Job's", job: stuckJob(),
			pods: []corev1.Pod{jobPod("old-uid", withInit("grype", pull))}, now: t0.Add(time.Hour)},
		{name: "a failed Pod is not stuck", job: stuckJob(),
			pods: []corev1.Pod{jobPod("job-uid", withInit("grype", pull), func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })}, now: t0.Add(time.Hour)},
		{name: "no Pods is for rejectedReason", job: stuckJob(), now: t0.Add(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, msg, since, ok := stuckReason(tt.job, tt.pods, tt.now, grace)
			if ok != (tt.reason != "") || reason != tt.reason {
				t.Fatalf("reason %q ok %v, want %q", reason, ok, tt.reason)
			}
			if !ok {
				return
			}
			if !since.Equal(tt.since) {
				t.Errorf("since %v, want %v", since, tt.since)
			}
			if !strings.Contains(msg, tt.inMsg) {
				t.Errorf("message %q does not contain %q", msg, tt.inMsg)
			}
		})
	}
}

func failedCreate(uid types.UID, at time.Time, note string) k8seventsv1.Event {
	return k8seventsv1.Event{Reason: reasonFailedCreate, Note: note, EventTime: metav1.NewMicroTime(at),
		Regarding: corev1.ObjectReference{Kind: "Job", Name: "default-scan-1", UID: uid}}
}

func TestRejectedReason(t *testing.T) {
	quota := `Error creating: pods "default-scan-1-x" is forbidden: exceeded quota: compute, requested: requests.cpu=250m, used: requests.cpu=2, limited: requests.cpu=2`
	tests := []struct {
		name   string
		job    *batchv1.Job
		pods   []corev1.Pod
		events []k8seventsv1.Event
		now    time.Time
		want   string // the message; "" for not rejected
	}{
		{name: "quota", job: stuckJob(), events: []k8seventsv1.Event{failedCreate("job-uid", t0.Add(time.Second), quota)}, now: t0.Add(grace), want: quota},
		{name: "newest message wins", job: stuckJob(), events: []k8seventsv1.Event{
			failedCreate("job-uid", t0.Add(2*time.Second), "admission webhook \"policy.example\" denied the request: no"),
			failedCreate("job-uid", t0.Add(time.Second), quota),
		}, now: t0.Add(grace), want: `admission webhook "policy.example" denied the request: no`},
		{name: "within the grace", job: stuckJob(), events: []k8seventsv1.Event{failedCreate("job-uid", t0, quota)}, now: t0.Add(grace - time.Second)},
		{name: "no FailedCreate event", job: stuckJob(), events: []k8seventsv1.Event{{Reason: "SuccessfulCreate", Regarding: corev1.ObjectReference{Kind: "Job", UID: "job-uid"}}}, now: t0.Add(time.Hour)},
		{name: "an earlier Job of the same name", job: stuckJob(), events: []k8seventsv1.Event{failedCreate("old-uid", t0, quota)}, now: t0.Add(time.Hour)},
		{name: "the Job has a Pod now", job: stuckJob(), pods: []corev1.Pod{jobPod("job-uid")}, events: []k8seventsv1.Event{failedCreate("job-uid", t0, quota)}, now: t0.Add(time.Hour)},
		{name: "a finished Job", job: finishedJob(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded), events: []k8seventsv1.Event{failedCreate("", t0, quota)}, now: t0.Add(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, msg, _, ok := rejectedReason(tt.job, tt.pods, tt.events, tt.now, grace)
			if ok != (tt.want != "") {
				t.Fatalf("ok %v (%s: %s), want %v", ok, reason, msg, tt.want != "")
			}
			if ok && (reason != crowsnestv1alpha1.FailurePodRejected || msg != tt.want) {
				t.Errorf("%s: %q, want PodRejected: %q", reason, msg, tt.want)
			}
		})
	}
}

func TestStuckCheckAfter(t *testing.T) {
	pull := waitingMsg("ImagePullBackOff", "")
	tests := []struct {
		name string
		job  *batchv1.Job
		pods []corev1.Pod
		now  time.Time
		want time.Duration // 0: no check needed
	}{
		{name: "no Pod yet", job: stuckJob(), now: t0.Add(10 * time.Second), want: grace - 10*time.Second + time.Second},
		{name: "waiting on a pull", job: stuckJob(), pods: []corev1.Pod{jobPod("job-uid", withInit("grype", pull))}, now: t0.Add(time.Minute), want: time.Minute + time.Second},
		{name: "overdue: check at once", job: stuckJob(), pods: []corev1.Pod{jobPod("job-uid", withInit("grype", pull))}, now: t0.Add(time.Hour), want: time.Second},
		// A real kubelet reports a pull failure after the last Job event
		// (the Job stays active, not ready): a Pending Pod is looked at again
		// when its grace would run out, and every grace after that.
		{name: "pending, Grype running: checked after the grace", job: stuckJob(), pods: []corev1.Pod{jobPod("job-uid", withInit("grype", corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}))}, now: t0.Add(time.Minute), want: grace - time.Minute + time.Second},
		{name: "pending, nothing reported yet, past the grace: every grace", job: stuckJob(), pods: []corev1.Pod{jobPod("job-uid")}, now: t0.Add(grace + time.Minute), want: grace + time.Second},
		{name: "running: the Job's ready count changes when it ends", job: stuckJob(), pods: []corev1.Pod{jobPod("job-uid", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning })}, now: t0.Add(time.Minute)},
		{name: "finished", job: finishedJob(batchv1.JobComplete, ""), now: t0.Add(time.Minute)},
	}
	for _, tt := range tests {
		got, ok := stuckCheckAfter(tt.job, tt.pods, tt.now, grace)
		if ok != (tt.want != 0) || got != tt.want {
			t.Errorf("%s: %v %v, want %v", tt.name, got, ok, tt.want)
		}
	}
	if p := jobPod("job-uid", withInit("grype", pull)); !waitsStuck(&p) {
		t.Error("waitsStuck: a Pod in ImagePullBackOff does not")
	}
	if p := jobPod("job-uid", withInit("grype", waitingMsg("PodInitializing", ""))); waitsStuck(&p) {
		t.Error("waitsStuck: an initializing Pod does")
	}
	if _, ok := stuckCheckAfter(stuckJob(), nil, t0, 0); ok {
		t.Error("grace 0 (disabled) asked for a check")
	}
}

// stuckFixture is a Scanner and one of its scan Jobs on the envtest API
// server, and a reconciler whose clock runs ahead by ahead, so the grace
// period has passed. envtest runs no Job controller and no kubelet: the
// tests play them, writing the Event and the Pod status they would write.
type stuckFixture struct {
	r        *Reconciler
	s        *crowsnestv1alpha1.Scanner
	job      *batchv1.Job
	recorder *events.FakeRecorder
}

func newStuckFixture(t *testing.T, ahead time.Duration) stuckFixture {
	t.Helper()
	ctx := context.Background()
	ns := newNamespace(t)
	s := newScanner(t, ns)
	job := scanjob.Build(scanjob.Params{Scanner: s, Digest: testDigest(1), Image: "registry.example/app@" + testDigest(1), Attempt: 1, Reason: "new",
		UploaderImage: "ghcr.io/crowsnest-dev/uploader:test", APIURL: "http://results-api:8080", TTL: time.Hour, PullSecrets: []string{"regcred"}})
	if err := k8s.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: k8s, APIReader: k8s, Recorder: rec, Options: Options{StuckGrace: grace},
		Now: func() time.Time { return time.Now().Add(ahead) }}
	return stuckFixture{r: r, s: s, job: job, recorder: rec}
}

func (f stuckFixture) scanJob() *scanJob {
	return &scanJob{job: f.job, digest: testDigest(1), image: f.job.Annotations[scanjob.AnnotationImage], attempt: 1, reason: "new", result: jobOutcome(f.job, nil)}
}

// recordEvent writes an events.k8s.io/v1 Event about a Job, as the Job
// controller does when the API server refuses its Pod.
func recordEvent(t *testing.T, job *batchv1.Job, uid types.UID, reason, note string) {
	t.Helper()
	ev := &k8seventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{GenerateName: job.Name + "-", Namespace: job.Namespace},
		EventTime:           metav1.NowMicro(),
		ReportingController: "job-controller", ReportingInstance: "kube-controller-manager",
		Action: "Create", Reason: reason, Note: note, Type: corev1.EventTypeWarning,
		Regarding: corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Namespace: job.Namespace, Name: job.Name, UID: uid},
	}
	if err := k8s.Create(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
}

// TestEndStuckPodRejected: a Job whose Pod the API server refused (the
// Event the Job controller records says so) is ended as PodRejected with
// the API server's message, not left to time out.
func TestEndStuckPodRejected(t *testing.T) {
	ctx := context.Background()
	f := newStuckFixture(t, grace+time.Minute)
	quota := `Error creating: pods "` + f.job.Name + `-x" is forbidden: exceeded quota: compute, requested: requests.ephemeral-storage=3Gi, used: requests.ephemeral-storage=8Gi, limited: requests.ephemeral-storage=10Gi`
	// Noise the field selector and the UID check must keep out: an earlier
	// Job of the same name, another Job, another reason.
	recordEvent(t, f.job, "0ld-uid", reasonFailedCreate, "an earlier attempt's refusal")
	other := f.job.DeepCopy()
	other.Name, other.UID = "other", "other-uid"
	recordEvent(t, other, other.UID, reasonFailedCreate, "another Job's refusal")
	recordEvent(t, f.job, f.job.UID, "SuccessfulCreate", "not a refusal")

	j := f.scanJob()
	if ended, err := f.r.endStuck(ctx, f.s, j, nil); err != nil || ended {
		t.Fatalf("before the refusal: ended %v err %v, want not ended", ended, err)
	}
	recordEvent(t, f.job, f.job.UID, reasonFailedCreate, quota)
	ended, err := f.r.endStuck(ctx, f.s, j, nil)
	if err != nil || !ended {
		t.Fatalf("ended %v err %v, want ended", ended, err)
	}
	if j.result.phase != jobFailed || j.result.reason != crowsnestv1alpha1.FailurePodRejected || j.result.message != quota {
		t.Errorf("result %+v", j.result)
	}
	var got batchv1.Job
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(f.job), &got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[scanjob.AnnotationOutcome] != "failed" || got.Annotations[scanjob.AnnotationFailure] != crowsnestv1alpha1.FailurePodRejected+": "+quota {
		t.Errorf("annotations %v", got.Annotations)
	}
	// The Job's age by the reconciler's clock: the Job controller fails it
	// at once, as DeadlineExceeded, and the recorded failure wins.
	if d := got.Spec.ActiveDeadlineSeconds; d == nil || *d < int64((grace+time.Minute).Seconds())-1 || *d > int64((grace+time.Minute).Seconds())+5 {
		t.Errorf("activeDeadlineSeconds %v, want the Job's age (~%v)", d, (grace + time.Minute).Seconds())
	}
	select {
	case e := <-f.recorder.Events:
		if !strings.Contains(e, EventScanFailed) || !strings.Contains(e, crowsnestv1alpha1.FailurePodRejected) {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no ScanFailed event")
	}

	// Once ended, a later reconcile sees it ended and changes nothing.
	again := &scanJob{job: &got, digest: j.digest, result: jobOutcome(&got, nil)}
	if ended, err := f.r.endStuck(ctx, f.s, again, nil); err != nil || !ended || again.result.reason != crowsnestv1alpha1.FailurePodRejected {
		t.Errorf("again: ended %v err %v result %+v", ended, err, again.result)
	}
}

// TestEndStuckImagePull: a scan Pod whose Grype image cannot be pulled is
// ended as ScannerImagePull once the grace period is over, not before.
func TestEndStuckImagePull(t *testing.T) {
	ctx := context.Background()
	f := newStuckFixture(t, 0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: f.job.Name + "-abcde", Namespace: f.job.Namespace,
		Labels:          map[string]string{batchv1.JobNameLabel: f.job.Name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: f.job.Name, UID: f.job.UID, Controller: ptr.To(true)}}},
		Spec: f.job.Spec.Template.Spec}
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodPending
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{
		{Name: scanjob.ContainerDockerConfig, Image: "ghcr.io/crowsnest-dev/uploader:test", State: doneAt(time.Now())},
		{Name: scanjob.ContainerGrype, Image: scanjob.DefaultGrypeImage, State: waitingMsg("ImagePullBackOff", `Back-off pulling image "anchore/grype:v0.121.2"`)},
	}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pods := []corev1.Pod{*pod}

	j := f.scanJob()
	if ended, err := f.r.endStuck(ctx, f.s, j, pods); err != nil || ended {
		t.Fatalf("within the grace: ended %v err %v", ended, err)
	}
	if after, ok := stuckCheckAfter(f.job, pods, f.r.Now(), grace); !ok || after > grace+time.Second {
		t.Errorf("check after %v %v, want within the grace", after, ok)
	}
	f.r.Now = func() time.Time { return time.Now().Add(grace + time.Second) }
	ended, err := f.r.endStuck(ctx, f.s, j, pods)
	if err != nil || !ended || j.result.reason != crowsnestv1alpha1.FailureScannerImagePull || !strings.Contains(j.result.message, "container grype") {
		t.Fatalf("ended %v err %v result %+v", ended, err, j.result)
	}
	var got batchv1.Job
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(f.job), &got); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Annotations[scanjob.AnnotationFailure], crowsnestv1alpha1.FailureScannerImagePull+": container grype") || got.Spec.ActiveDeadlineSeconds == nil || *got.Spec.ActiveDeadlineSeconds > 600-1 {
		t.Errorf("annotations %v deadline %v", got.Annotations, got.Spec.ActiveDeadlineSeconds)
	}
}
