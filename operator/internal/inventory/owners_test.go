package inventory

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
)

// TestOwnersResolveThroughMetadata runs the owner caches on a real
// kube-apiserver: a ReplicaSet resolves to its Deployment and a Job to its
// CronJob, a ReplicaSet of no Deployment and an uncached owner stay as they
// are, the operator's own scan Jobs are not cached, namespace labels are
// read, and a ReplicaSet that changes its controller is reported.
func TestOwnersResolveThroughMetadata(t *testing.T) {
	cfg := kubetest.StartT(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := "shop"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": "a"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: "uid-1", Controller: ptr.To(true)}}
	}
	labels := map[string]string{"app": "web"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	rs := func(name string, owners []metav1.OwnerReference) {
		t.Helper()
		if _, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
			Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	job := func(name string, jobLabels map[string]string, owners []metav1.OwnerReference) {
		t.Helper()
		jt := *tmpl.DeepCopy()
		jt.Labels, jt.Spec.RestartPolicy = nil, corev1.RestartPolicyNever
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: jobLabels, OwnerReferences: owners},
			Spec: batchv1.JobSpec{Template: jt}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rs("web-1", ref("apps/v1", "Deployment", "web"))
	rs("lone-1", nil)
	job("nightly-1", nil, ref("batch/v1", "CronJob", "nightly"))
	job("scan-1", map[string]string{scanjob.LabelManagedBy: scanjob.ManagedBy}, ref("batch/v1", "CronJob", "not-cached"))

	o, err := NewOwners(cfg, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- o.Start(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if err := o.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		owner      discovery.Owner
		kind, name string
	}{
		{discovery.Owner{}, "Pod", "p"},
		{discovery.Owner{Kind: "ReplicaSet", Name: "web-1"}, "Deployment", "web"},
		{discovery.Owner{Kind: "ReplicaSet", Name: "lone-1"}, "ReplicaSet", "lone-1"},
		{discovery.Owner{Kind: "ReplicaSet", Name: "unknown"}, "ReplicaSet", "unknown"},
		{discovery.Owner{Kind: "Job", Name: "nightly-1"}, "CronJob", "nightly"},
		{discovery.Owner{Kind: "Job", Name: "scan-1"}, "Job", "scan-1"},
		{discovery.Owner{Kind: "StatefulSet", Name: "db"}, "StatefulSet", "db"},
	} {
		if kind, name := o.Workload(ns, "p", c.owner); kind != c.kind || name != c.name {
			t.Errorf("Workload(%+v) = %s/%s, want %s/%s", c.owner, kind, name, c.kind, c.name)
		}
	}
	if got := o.Labels(ns); got["team"] != "a" {
		t.Errorf("Labels(%s) = %v", ns, got)
	}

	var mu sync.Mutex
	var changed []string
	if err := o.OnChange(func(namespace string) { mu.Lock(); changed = append(changed, namespace); mu.Unlock() }); err != nil {
		t.Fatal(err)
	}
	r, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, "lone-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.OwnerReferences = ref("apps/v1", "Deployment", "lone")
	if _, err := cs.AppsV1().ReplicaSets(ns).Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(changed)
		mu.Unlock()
		if kind, name := o.Workload(ns, "p", discovery.Owner{Kind: "ReplicaSet", Name: "lone-1"}); n > 0 && kind == "Deployment" && name == "lone" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("adoption of lone-1 not seen: %d changes", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changed) != 1 || changed[0] != ns {
		t.Errorf("changes %v, want [%s] (the initial list reports nothing)", changed, ns)
	}
}
