package authz_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
)

const scanSA = "crowsnest-scan"

// cluster is a real kube-apiserver (envtest: no controllers run, so the test
// creates the Jobs' Pods and writes Job status itself) with one namespace
// holding the scan and default service accounts.
type cluster struct {
	t     *testing.T
	ctx   context.Context
	cfg   *rest.Config
	admin kubernetes.Interface // system:masters, for the fixtures
	ns    string
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	cfg := kubetest.StartT(t)
	cfg.QPS, cfg.Burst = 200, 400
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	c := &cluster{t: t, ctx: ctx, cfg: cfg, admin: kubernetes.NewForConfigOrDie(cfg), ns: "scans"}
	must(t, create(ctx, c.admin.CoreV1().Namespaces(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}))
	for _, sa := range []string{scanSA, "default"} {
		must(t, create(ctx, c.admin.CoreV1().ServiceAccounts(c.ns), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}))
	}
	return c
}

// scanJob creates a Job shaped like the operator's for digest.
func (c *cluster) scanJob(name, digest string, opts ...func(*batchv1.Job)) *batchv1.Job {
	c.t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns,
			Labels:      map[string]string{scan.LabelManagedBy: scan.ManagedBy, scan.LabelName: scan.AppName},
			Annotations: map[string]string{scan.AnnotationDigest: digest}},
		Spec: batchv1.JobSpec{BackoffLimit: ptrTo[int32](0), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, ServiceAccountName: scanSA,
			InitContainers: []corev1.Container{{Name: "grype", Image: "registry.example/grype:v0.121.2",
				Args: []string{"registry:registry.example/app@" + digest, "--output", "cyclonedx-json=/scan/bom.json"}}},
			Containers: []corev1.Container{{Name: "uploader", Image: "registry.example/uploader:v0.1.0",
				Args: []string{"--digest=" + digest, "--bom-file=/scan/bom.json"}}}}}},
	}
	for _, o := range opts {
		o(job)
	}
	job, err := c.admin.BatchV1().Jobs(c.ns).Create(c.ctx, job, metav1.CreateOptions{})
	must(c.t, err)
	return job
}

// pod creates a Pod running as sa in phase, controlled by owner when set
// and then running the owner's containers, as the Job controller makes it.
func (c *cluster) pod(name, sa string, owner *batchv1.Job, phase corev1.PodPhase) *corev1.Pod {
	c.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, ServiceAccountName: sa,
			Containers: []corev1.Container{{Name: "main", Image: "main"}}},
	}
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job",
			Name: owner.Name, UID: owner.UID, Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}}
		pod.Spec.InitContainers = owner.Spec.Template.Spec.InitContainers
		pod.Spec.Containers = owner.Spec.Template.Spec.Containers
	}
	pod, err := c.admin.CoreV1().Pods(c.ns).Create(c.ctx, pod, metav1.CreateOptions{})
	must(c.t, err)
	if phase != "" && phase != corev1.PodPending {
		pod.Status.Phase = phase
		pod, err = c.admin.CoreV1().Pods(c.ns).UpdateStatus(c.ctx, pod, metav1.UpdateOptions{})
		must(c.t, err)
	}
	return pod
}

// patchPod applies a strategic merge patch to the Pod as an admin (no
// admission policy is installed here).
func (c *cluster) patchPod(name, patch string) {
	c.t.Helper()
	_, err := c.admin.CoreV1().Pods(c.ns).Patch(c.ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	must(c.t, err)
}

// token mints a token of sa for the results-api audience with the
// TokenRequest API, bound to pod when it is set (as a projected volume is).
func (c *cluster) token(sa string, pod *corev1.Pod) string {
	c.t.Helper()
	spec := authv1.TokenRequestSpec{Audiences: []string{scan.TokenAudience}, ExpirationSeconds: ptrTo[int64](scan.TokenExpirationSeconds)}
	if pod != nil {
		spec.BoundObjectRef = &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tr, err := c.admin.CoreV1().ServiceAccounts(c.ns).CreateToken(c.ctx, sa, &authv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	must(c.t, err)
	return tr.Status.Token
}

// review authenticates token as authn does: TokenReview for the audience.
func (c *cluster) review(token string) (authz.Identity, bool) {
	c.t.Helper()
	tr, err := c.admin.AuthenticationV1().TokenReviews().Create(c.ctx, &authv1.TokenReview{
		Spec: authv1.TokenReviewSpec{Token: token, Audiences: []string{scan.TokenAudience}}}, metav1.CreateOptions{})
	must(c.t, err)
	if !tr.Status.Authenticated {
		return authz.Identity{}, false
	}
	return authz.FromUserInfo(tr.Status.User), true
}

func (c *cluster) identity(token string) authz.Identity {
	c.t.Helper()
	id, ok := c.review(token)
	if !ok {
		c.t.Fatal("TokenReview did not authenticate a freshly minted token")
	}
	return id
}

// finish marks job Complete through the status subresource, as the Job
// controller would once its Pod succeeded.
func (c *cluster) finish(job *batchv1.Job) {
	c.t.Helper()
	job, err := c.admin.BatchV1().Jobs(c.ns).Get(c.ctx, job.Name, metav1.GetOptions{})
	must(c.t, err)
	now := metav1.Now()
	job.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1,
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}}
	_, err = c.admin.BatchV1().Jobs(c.ns).UpdateStatus(c.ctx, job, metav1.UpdateOptions{})
	must(c.t, err)
}

// link is the authorizer's own connection to the API server: a switch that
// sends its dials to a closed loopback port (connection refused, as with an
// API server that is down), and a count of the requests it carried.
type link struct {
	down   atomic.Bool
	mu     sync.Mutex
	counts map[string]int // "GET /api/v1/namespaces/scans/pods/p" → n
}

func (c *cluster) client(l *link) kubernetes.Interface {
	c.t.Helper()
	closed := closedAddr(c.t)
	cfg := rest.CopyConfig(c.cfg)
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if l.down.Load() {
			addr = closed
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	l.counts = map[string]int{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			l.mu.Lock()
			l.counts[r.Method+" "+r.URL.Path]++
			l.mu.Unlock()
			return rt.RoundTrip(r)
		})
	})
	return kubernetes.NewForConfigOrDie(cfg)
}

func (l *link) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[key]
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	return addr
}

type creator[T any] interface {
	Create(context.Context, *T, metav1.CreateOptions) (*T, error)
}

func create[T any](ctx context.Context, c creator[T], obj *T) error {
	_, err := c.Create(ctx, obj, metav1.CreateOptions{})
	return err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptrTo[T any](v T) *T { return &v }
