package charttest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestRunningScanPodFrozenOnAPIServer plays a tenant who holds what the
// built-in edit role grants on Pods in a scanned namespace (update and
// patch Pods, exec, attach, port-forward) against a running scan Pod, on
// the real kube-apiserver with the chart's policies: swapping the
// uploader's image (which would upload anything for the digest with the
// Pod-bound token), any other spec change, an in-place resize, taking the
// Pod over with another controller, and exec, attach, port-forward or
// proxy into it are refused with the policy's message. What keeps a Pod
// running is not: the kubelet's status updates, the Job controller
// removing its tracking finalizer, labels, and deletion.
func TestRunningScanPodFrozenOnAPIServer(t *testing.T) {
	const release, ns, apps, scanSA = "vappod", "vappod-system", "vappod-apps", "crowsnest-scan"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	createNamespaces(ctx, t, admin, ns, apps)
	applyScanPolicies(ctx, t, admin, release, ns, append([]string{"--set", "global.scan.namespaces={" + apps + "}"}, goldenImageArgs...)...)

	// edit's rules on Pods, given to the tenant, the Job controller and
	// kubelets (Node authorizer's job in a real cluster).
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "vappod-edit"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/status", "pods/resize", "pods/ephemeralcontainers"},
			Verbs: []string{"create", "update", "patch", "get", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec", "pods/attach", "pods/portforward", "pods/proxy"}, Verbs: []string{"create", "get"}},
	}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const mallory, jobController = "mallory", "system:serviceaccount:kube-system:job-controller"
	for i, s := range []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: mallory}, {Kind: rbacv1.UserKind, Name: jobController},
		{Kind: rbacv1.GroupKind, Name: "system:nodes"}} {
		bind(ctx, t, admin, apps, "vappod-edit-"+string(rune('a'+i)), role.Name, s)
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
	tenant, kubelet := as(mallory), as("system:node:node-1", "system:nodes")
	operator := as("system:serviceaccount:"+ns+":"+release+"-operator", "system:serviceaccounts", "system:serviceaccounts:"+ns)

	// The scan-identity policy is in force once the tenant's bare scan Pod is refused.
	waitRefused(t, "a tenant's Pod as the scan ServiceAccount", "only the Job controller may create Pods", func() error {
		_, err := tenant.CoreV1().Pods(apps).Create(ctx, scanPod(apps, "probe", scanSA, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	job, err := operator.BatchV1().Jobs(apps).Create(ctx, goldenJob(t, "default", apps), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the operator creates its scan Job: %v", err)
	}
	// The Pod as the Job controller makes it: generateName "<job>-", the
	// tracking finalizer, the uploader with resources (Burstable).
	owned := scanPod(apps, job.Name+"-x7k2p", scanSA, &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)})
	owned.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	owned.Spec.Containers[0].Name = "uploader"
	owned.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	pod, err := as(jobController).CoreV1().Pods(apps).Create(ctx, owned, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the Job controller creates the scan Pod: %v", err)
	}

	const (
		frozen   = "their spec (containers, images) and controller cannot change once created"
		noResize = "no in-place resize"
		noExec   = "is named as a Crowsnest scan Pod"
	)
	patch := func(c kubernetes.Interface, body string, sub ...string) error {
		_, err := c.CoreV1().Pods(apps).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{}, sub...)
		return err
	}
	connect := func(sub string, params ...string) func() error {
		return func() error {
			req := tenant.CoreV1().RESTClient().Post().Namespace(apps).Resource("pods").Name(pod.Name).SubResource(sub)
			for i := 0; i+1 < len(params); i += 2 {
				req = req.Param(params[i], params[i+1])
			}
			return req.Do(ctx).Error()
		}
	}
	other := &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "other-scan-0123456789abcdef", UID: "5e1f0000-0000-4000-8000-000000000002", Controller: ptr.To(true)}
	for _, c := range []struct {
		name string
		do   func() error
		deny string // the policy's message, or "" when allowed
	}{
		{"tenant: swaps the uploader's image", func() error {
			return patch(tenant, `{"spec":{"containers":[{"name":"uploader","image":"registry.example/mallory/uploader:evil"}]}}`)
		}, frozen},
		{"tenant: changes the active deadline", func() error { return patch(tenant, `{"spec":{"activeDeadlineSeconds":86400}}`) }, frozen},
		{"tenant: adds a toleration", func() error {
			_, err := tenant.CoreV1().Pods(apps).Patch(ctx, pod.Name, types.JSONPatchType,
				[]byte(`[{"op":"add","path":"/spec/tolerations/-","value":{"key":"k","operator":"Exists","effect":"NoSchedule"}}]`), metav1.PatchOptions{})
			return err
		}, frozen},
		{"tenant: gives the Pod another controller", func() error {
			p, err := admin.CoreV1().Pods(apps).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.OwnerReferences = []metav1.OwnerReference{*other}
			_, err = tenant.CoreV1().Pods(apps).Update(ctx, p, metav1.UpdateOptions{})
			return err
		}, frozen},
		{"tenant: resizes the uploader in place", func() error {
			return patch(tenant, `{"spec":{"containers":[{"name":"uploader","resources":{"requests":{"cpu":"20m"}}}]}}`, "resize")
		}, noResize},
		{"tenant: exec into the uploader", connect("exec", "container", "uploader", "command", "/uploader", "stdin", "true", "stdout", "true"), noExec},
		{"tenant: attach to the uploader", connect("attach", "container", "uploader", "stdout", "true"), noExec},
		{"tenant: port-forward", connect("portforward", "ports", "8080"), noExec},
		{"tenant: proxy", connect("proxy"), noExec},

		{"kubelet: reports the Pod Running", func() error {
			p, err := admin.CoreV1().Pods(apps).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Status.Phase = corev1.PodRunning
			_, err = kubelet.CoreV1().Pods(apps).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			return err
		}, ""},
		{"tenant: labels the Pod", func() error { return patch(tenant, `{"metadata":{"labels":{"team":"a"}}}`) }, ""},
		{"Job controller: removes its tracking finalizer", func() error {
			return patch(as(jobController), `{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking"]}}`)
		}, ""},
		{"tenant: exec into its own Pod", func() error {
			own, err := tenant.CoreV1().Pods(apps).Create(ctx, scanPod(apps, "web-1", "default", nil), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			err = tenant.CoreV1().RESTClient().Post().Namespace(apps).Resource("pods").Name(own.Name).SubResource("exec").
				Param("container", "main").Param("command", "true").Param("stdout", "true").Do(ctx).Error()
			if err != nil && !strings.Contains(err.Error(), "does not have a host assigned") {
				return err // anything but the API server failing to reach a kubelet (there is none)
			}
			return nil
		}, ""},
		{"tenant: deletes the scan Pod", func() error {
			return tenant.CoreV1().Pods(apps).Delete(ctx, pod.Name, metav1.DeleteOptions{})
		}, ""},
	} {
		verdict(t, c.name, c.do(), c.deny)
	}
	got, err := admin.CoreV1().Pods(apps).Get(ctx, pod.Name, metav1.GetOptions{})
	if err == nil && got.Spec.Containers[0].Image != pod.Spec.Containers[0].Image {
		t.Fatalf("the scan Pod's image changed to %s", got.Spec.Containers[0].Image)
	}
}
