package charttest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestScanIdentityPolicyOnAPIServer installs the chart's
// ValidatingAdmissionPolicy on the real kube-apiserver and plays a tenant
// who may create Pods, Jobs, CronJobs, Deployments and ServiceAccount tokens
// in a scanned namespace (what the built-in edit role grants) and wants a
// token results-api would take as a scan's: every way to run as the scan
// ServiceAccount, to forge or relabel a scan Job, or to mint its token is
// refused with the policy's message, while the tenant's own workloads, the
// operator's scan Job, the Job controller's scan Pod, a kubelet's token
// request and the garbage collector's finalizer update all pass.
func TestScanIdentityPolicyOnAPIServer(t *testing.T) {
	const release, ns, apps, scanSA = "vap", "vap-system", "vap-apps", "crowsnest-scan"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	createNamespaces(ctx, t, admin, ns, apps)
	applyScanPolicies(ctx, t, admin, release, ns, append([]string{"--set", "global.scan.namespaces={" + apps + "}"}, goldenImageArgs...)...)

	// What edit grants a tenant here, given to the tenant, to the Job
	// controller and garbage collector (their own bootstrap roles are not
	// reconciled into envtest's RBAC) and to kubelets (Node authorizer's
	// job in a real cluster).
	tenantRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "vap-workloads"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/ephemeralcontainers", "serviceaccounts/token"}, Verbs: []string{"create", "update", "patch", "get"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs", "cronjobs"}, Verbs: []string{"create", "update", "patch", "get"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create"}},
	}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, tenantRole, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const (
		mallory       = "mallory"
		jobController = "system:serviceaccount:kube-system:job-controller"
		kcm           = "system:kube-controller-manager"
		gc            = "system:serviceaccount:kube-system:generic-garbage-collector"
	)
	for i, s := range []rbacv1.Subject{
		{Kind: rbacv1.UserKind, Name: mallory},
		{Kind: rbacv1.UserKind, Name: jobController},
		{Kind: rbacv1.UserKind, Name: kcm},
		{Kind: rbacv1.UserKind, Name: gc},
		{Kind: rbacv1.GroupKind, Name: "system:nodes"},
	} {
		bind(ctx, t, admin, apps, "vap-workloads-"+string(rune('a'+i)), tenantRole.Name, s)
	}
	as := func(user string, groups ...string) kubernetes.Interface {
		cfg := rest.CopyConfig(apiCfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	// envtest runs no ServiceAccount controller to create "default".
	if _, err := admin.CoreV1().ServiceAccounts(apps).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tenant, operator := as(mallory), as("system:serviceaccount:"+ns+":"+release+"-operator", "system:serviceaccounts", "system:serviceaccounts:"+ns)
	kubelet := as("system:node:node-1", "system:nodes")

	// The API server loads a new policy asynchronously: wait (bounded) for
	// its first refusal. It only ever refuses, so everything checked after
	// that sees it in force.
	forged := scanJob(apps, "forged", scanSA, true)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := tenant.BatchV1().Jobs(apps).Create(ctx, forged, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "only the Crowsnest operator") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy is not in force after 30s: a tenant's forged scan Job gets %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The operator's real scan Job, and its Pod as the Job controller makes it.
	job, err := operator.BatchV1().Jobs(apps).Create(ctx, goldenJob(t, "default", apps), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the operator creates its scan Job: %v", err)
	}
	owned := scanPod(apps, job.Name+"-abcde", scanSA, &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)})
	pod, err := as(jobController).CoreV1().Pods(apps).Create(ctx, owned, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the Job controller creates the scan Pod: %v", err)
	}

	const (
		operatorOnly = "only the Crowsnest operator"
		reserved     = "is reserved for Crowsnest scan Jobs"
		jobPods      = "only the Job controller may create Pods"
		noEphemeral  = "no ephemeral containers"
		kubeletToken = "for the kubelet of a Crowsnest scan Pod only"
	)
	relabelled := job.DeepCopy()
	relabelled.Annotations["crowsnest.dev/digest"] = "sha256:" + strings.Repeat("b", 64)
	debugged := pod.DeepCopy()
	debugged.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1.37"}}}
	rsOwner := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: types.UID("d2c1e6d4-0000-4000-8000-000000000001"), Controller: ptr.To(true)}
	forgedOwner := &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}
	token := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{"crowsnest-results-api"}, ExpirationSeconds: ptr.To[int64](600)}}

	for _, c := range []struct {
		name string
		do   func() error
		deny string // the policy's message, or "" when allowed
	}{
		{"tenant: a Job labelled as the operator's", func() error {
			return create(ctx, tenant.BatchV1().Jobs(apps).Create, scanJob(apps, "f1", "default", true))
		}, operatorOnly},
		{"tenant: an unlabelled Job running as the scan ServiceAccount", func() error {
			return create(ctx, tenant.BatchV1().Jobs(apps).Create, scanJob(apps, "f2", scanSA, false))
		}, operatorOnly},
		{"tenant: a CronJob running as the scan ServiceAccount", func() error {
			cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "f3", Namespace: apps}, Spec: batchv1.CronJobSpec{
				Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: scanJob(apps, "", scanSA, false).Spec}}}
			return create(ctx, tenant.BatchV1().CronJobs(apps).Create, cj)
		}, operatorOnly},
		{"tenant: a Deployment running as the scan ServiceAccount", func() error {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "f4", Namespace: apps}, Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "f4"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "f4"}}, Spec: scanPod(apps, "", scanSA, nil).Spec}}}
			d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			return create(ctx, tenant.AppsV1().Deployments(apps).Create, d)
		}, reserved},
		{"tenant: a Pod running as the scan ServiceAccount", func() error {
			return create(ctx, tenant.CoreV1().Pods(apps).Create, scanPod(apps, "f5", scanSA, nil))
		}, jobPods},
		{"tenant: a Pod as the scan ServiceAccount claiming the real scan Job as controller", func() error {
			return create(ctx, tenant.CoreV1().Pods(apps).Create, scanPod(apps, "f6", scanSA, forgedOwner))
		}, jobPods},
		{"tenant: a token of the scan ServiceAccount", func() error {
			_, err := tenant.CoreV1().ServiceAccounts(apps).CreateToken(ctx, scanSA, token, metav1.CreateOptions{})
			return err
		}, kubeletToken},
		{"tenant: another digest on the operator's scan Job", func() error {
			_, err := tenant.BatchV1().Jobs(apps).Update(ctx, relabelled, metav1.UpdateOptions{})
			return err
		}, operatorOnly},
		{"tenant: an ephemeral debug container in the scan Pod", func() error {
			_, err := tenant.CoreV1().Pods(apps).UpdateEphemeralContainers(ctx, pod.Name, debugged, metav1.UpdateOptions{})
			return err
		}, noEphemeral},
		{"controller-manager: a ReplicaSet's Pod as the scan ServiceAccount", func() error {
			return create(ctx, as(kcm).CoreV1().Pods(apps).Create, scanPod(apps, "f7", scanSA, rsOwner))
		}, jobPods},
		{"Job controller: a scan-ServiceAccount Pod without a Job", func() error {
			return create(ctx, as(jobController).CoreV1().Pods(apps).Create, scanPod(apps, "f8", scanSA, nil))
		}, jobPods},

		{"tenant: its own Job, Pod and token as default", func() error {
			if err := create(ctx, tenant.BatchV1().Jobs(apps).Create, scanJob(apps, "own", "default", false)); err != nil {
				return err
			}
			if err := create(ctx, tenant.CoreV1().Pods(apps).Create, scanPod(apps, "own", "default", nil)); err != nil {
				return err
			}
			_, err := tenant.CoreV1().ServiceAccounts(apps).CreateToken(ctx, "default", token, metav1.CreateOptions{})
			return err
		}, ""},
		{"operator: annotates its scan Job", func() error {
			patch := []byte(`{"metadata":{"annotations":{"crowsnest.dev/outcome":"succeeded"}}}`)
			_, err := operator.BatchV1().Jobs(apps).Patch(ctx, job.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		}, ""},
		{"garbage collector: a finalizer on the scan Job", func() error {
			j, err := admin.BatchV1().Jobs(apps).Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			j.Finalizers = append(j.Finalizers, "orphan")
			_, err = as(gc).BatchV1().Jobs(apps).Update(ctx, j, metav1.UpdateOptions{})
			return err
		}, ""},
		{"kubelet: the scan Pod's projected token", func() error {
			bound := token.DeepCopy()
			bound.Spec.BoundObjectRef = &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
			_, err := kubelet.CoreV1().ServiceAccounts(apps).CreateToken(ctx, scanSA, bound, metav1.CreateOptions{})
			return err
		}, ""},
	} {
		err := c.do()
		switch {
		case c.deny == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.deny != "" && err == nil:
			t.Errorf("%s: allowed, want refused by the policy", c.name)
		case c.deny != "" && !strings.Contains(err.Error(), c.deny):
			t.Errorf("%s: %v, want the policy's refusal %q", c.name, err, c.deny)
		}
	}
}

// create calls a typed client's Create and keeps only the error.
func create[T any](ctx context.Context, f func(context.Context, T, metav1.CreateOptions) (T, error), obj T) error {
	_, err := f(ctx, obj, metav1.CreateOptions{})
	return err
}

// scanJob is a Job like the operator's scan Job: labelled as the
// operator's when labelled, running as sa.
func scanJob(ns, name, sa string, labelled bool) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{},
			Annotations: map[string]string{"crowsnest.dev/digest": "sha256:" + strings.Repeat("a", 64)}},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: scanPod(ns, "", sa, nil).Spec}},
	}
	j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if labelled {
		j.Labels["app.kubernetes.io/managed-by"] = "crowsnest-operator"
	}
	return j
}

// scanPod is a Pod running as sa, controlled by owner when not nil.
func scanPod(ns, name, sa string, owner *metav1.OwnerReference) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{ServiceAccountName: sa, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.37"}}},
	}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return p
}

// applyKinds renders release in ns with args and applies the objects of
// the given kinds to the API server for real.
func applyKinds(ctx context.Context, t *testing.T, release, ns string, kinds []string, args ...string) {
	t.Helper()
	applier, err := NewApplier(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := TemplateRelease(ctx, repoRoot, release, ns, args...)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if slices.Contains(kinds, o.GetKind()) {
			if err := applier.Apply(ctx, o); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatalf("the release renders none of %v", kinds)
	}
}
