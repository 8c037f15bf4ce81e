package charttest

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestCompromisedOperatorOnAPIServer plays an attacker holding the
// operator's token in cluster-wide mode (a ClusterScanner), against the
// real kube-apiserver with the chart's RBAC and policies: RBAC lets it
// create Jobs and ServiceAccounts in every namespace, kube-system included.
// Every Job that is not a scan Job — another ServiceAccount, another image,
// a weaker security context, a command, Secrets in the environment or as a
// volume, the API server's audience, a plain workload — and every other
// ServiceAccount it writes or deletes are refused with the policy's
// message; the operator's real Jobs (its golden files, with pull secrets
// and a Scanner's grypeImage) and its scan ServiceAccount are admitted.
func TestCompromisedOperatorOnAPIServer(t *testing.T) {
	const release, ns, apps, system, scanSA = "vapop", "vapop-system", "vapop-apps", "vapop-kube-system", "crowsnest-scan"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	createNamespaces(ctx, t, admin, ns, apps, system)
	applyScanPolicies(ctx, t, admin, release, ns, append(append([]string{}, clusterScannerArgs...), goldenImageArgs...)...)
	cfg := rest.CopyConfig(apiCfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + release + "-operator",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	operator, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A tenant's own Job and ServiceAccount for the operator to go after.
	tenantJob := scanJob(system, "backup", "default", false)
	if _, err := admin.BatchV1().Jobs(system).Create(ctx, tenantJob, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ServiceAccounts(system).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "backup"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	const (
		scanJobs   = "the Crowsnest operator's Jobs are scan Jobs"
		runAs      = "the Crowsnest operator's Jobs run as ServiceAccount crowsnest-scan"
		images     = "the Crowsnest operator's Jobs run only the scan images"
		restricted = "the Crowsnest operator's Jobs run with the restricted security context"
		mounts     = "the Crowsnest operator's Jobs mount only"
		ownOnly    = "the Crowsnest operator may change or delete only its own"
		saOnly     = "the Crowsnest operator writes only ServiceAccount crowsnest-scan"
		saDelete   = "the Crowsnest operator deletes only ServiceAccount crowsnest-scan"
	)
	// The operator's golden Job in the namespace that stands for
	// kube-system, changed by f, created with a dry-run (admission runs,
	// nothing is stored) so that each case stands alone.
	forged := func(f func(j *batchv1.Job, pod *corev1.PodSpec)) func() error {
		return func() error {
			j := goldenJob(t, "default", system)
			f(j, &j.Spec.Template.Spec)
			_, err := operator.BatchV1().Jobs(system).Create(ctx, j, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
	}
	// The policies load asynchronously: scan-identity (older) refuses the
	// operator a workload as the scan ServiceAccount; scan-operator, when
	// the release has it, refuses any other Job.
	waitRefused(t, "an unlabelled Job as the scan ServiceAccount", "only the Crowsnest operator", func() error {
		_, err := admin.BatchV1().Jobs(apps).Create(ctx, scanJob(apps, "probe", scanSA, false), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	if policyExists(ctx, admin, release+"-scan-operator") {
		waitRefused(t, "the operator's plain workload", scanJobs, func() error {
			_, err := operator.BatchV1().Jobs(apps).Create(ctx, scanJob(apps, "probe", "default", false), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})
	}

	hostPath := corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}
	for _, c := range []struct {
		name string
		do   func() error
		deny string // the policy's message, or "" when allowed
	}{
		{"a plain workload Job in kube-system", func() error {
			return create(ctx, operator.BatchV1().Jobs(system).Create, scanJob(system, "miner", "default", false))
		}, scanJobs},
		{"a scan Job named as no Scanner's", forged(func(j *batchv1.Job, _ *corev1.PodSpec) { j.Name = "kube-proxy-upgrade" }), scanJobs},
		{"a scan Job as another ServiceAccount", forged(func(_ *batchv1.Job, p *corev1.PodSpec) { p.ServiceAccountName = "backup" }), runAs},
		{"a scan Job with the API token mounted", forged(func(_ *batchv1.Job, p *corev1.PodSpec) { p.AutomountServiceAccountToken = ptr.To(true) }), runAs},
		{"a scan Job with another uploader image", forged(func(_ *batchv1.Job, p *corev1.PodSpec) {
			p.Containers[0].Image = "registry.example/mallory/uploader:v0.1.0"
		}), images},
		{"a scan Job with a sidecar", forged(func(_ *batchv1.Job, p *corev1.PodSpec) {
			p.Containers = append(p.Containers, corev1.Container{Name: "miner", Image: "registry.example/miner:1"})
		}), images},
		{"a scan Job with a privileged uploader", forged(func(_ *batchv1.Job, p *corev1.PodSpec) {
			p.Containers[0].SecurityContext.Privileged, p.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true), ptr.To(true)
		}), restricted},
		{"a scan Job with a writable root filesystem", forged(func(_ *batchv1.Job, p *corev1.PodSpec) {
			p.InitContainers[0].SecurityContext.ReadOnlyRootFilesystem = ptr.To(false)
		}), restricted},
		{"a scan Job running as root", forged(func(_ *batchv1.Job, p *corev1.PodSpec) {
			p.SecurityContext.RunAsUser, p.SecurityContext.RunAsNonRoot = ptr.To[int64](0), ptr.To(false)
		}), restricted},
		{"a scan Job on the host network", forged(func(_ *batchv1.Job, p *corev1.PodSpec) { p.HostNetwork = true }), restricted},
		{"a scan Job with a command", forged(func(_ *batchv1.Job, p *corev1.PodSpec) {
			p.Containers[0].Command = []string{"/uploader", "docker-config"}
		}), restricted},
		{"a scan Job with a Secret in the environment", forged(func(_ *batchv1.Job, p *corev1.PodSpec) {
			p.InitContainers[0].Env = append(p.InitContainers[0].Env, corev1.EnvVar{Name: "GRYPE_REGISTRY_AUTH_PASSWORD", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud-credentials"}, Key: "password"}}})
		}), restricted},
		{"a scan Job mounting a whole Secret", forged(func(_ *batchv1.Job, p *corev1.PodSpec) {
			p.Volumes = append(p.Volumes, corev1.Volume{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "cloud-credentials"}}})
		}), mounts},
		{"a scan Job mounting a Secret's other keys as pull secrets", forged(func(_ *batchv1.Job, p *corev1.PodSpec) {
			p.Volumes = append(p.Volumes, corev1.Volume{Name: "pull", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud-credentials"},
					Items: []corev1.KeyToPath{{Key: "password", Path: "x/.dockerconfigjson"}}}}}}}})
		}), mounts},
		{"a scan Job mounting the host", forged(func(_ *batchv1.Job, p *corev1.PodSpec) { p.Volumes = append(p.Volumes, hostPath) }), mounts},
		{"a scan Job with a token for the API server", forged(func(_ *batchv1.Job, p *corev1.PodSpec) {
			p.Volumes[len(p.Volumes)-1].Projected.Sources[0].ServiceAccountToken.Audience = ""
		}), mounts},
		{"a ServiceAccount of its choosing", func() error {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin-bot", Labels: map[string]string{"app.kubernetes.io/managed-by": "crowsnest-operator"}}}
			return create(ctx, operator.CoreV1().ServiceAccounts(system).Create, sa)
		}, saOnly},
		{"the scan ServiceAccount not labelled as its own", func() error {
			return create(ctx, operator.CoreV1().ServiceAccounts(system).Create, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: scanSA}})
		}, saOnly},
		{"delete a tenant's ServiceAccount", func() error {
			return operator.CoreV1().ServiceAccounts(system).Delete(ctx, "backup", metav1.DeleteOptions{})
		}, ownOnly},
		{"delete a tenant's Job", func() error {
			return operator.BatchV1().Jobs(system).Delete(ctx, tenantJob.Name, metav1.DeleteOptions{})
		}, ownOnly},

		{"its scan ServiceAccount: create and delete", func() error {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: scanSA, Labels: map[string]string{"app.kubernetes.io/managed-by": "crowsnest-operator"}},
				AutomountServiceAccountToken: ptr.To(false)}
			if err := create(ctx, operator.CoreV1().ServiceAccounts(apps).Create, sa); err != nil {
				return err
			}
			return operator.CoreV1().ServiceAccounts(apps).Delete(ctx, scanSA, metav1.DeleteOptions{})
		}, ""},
		{"its scan Job (golden default)", func() error { return create(ctx, operator.BatchV1().Jobs(apps).Create, goldenJob(t, "default", apps)) }, ""},
		{"its scan Job with pull secrets and a Scanner's grypeImage (golden custom)", func() error {
			j := goldenJob(t, "custom", apps)
			j.Name = "custom-scan-0123456789abcdef"
			return create(ctx, operator.BatchV1().Jobs(apps).Create, j)
		}, ""},
		{"its scan Job: annotate, drop its finalizer, delete", func() error {
			name := goldenJob(t, "default", apps).Name
			patch := []byte(`{"metadata":{"annotations":{"crowsnest.dev/outcome":"succeeded"},"finalizers":null}}`)
			if _, err := operator.BatchV1().Jobs(apps).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return err
			}
			return operator.BatchV1().Jobs(apps).Delete(ctx, name, metav1.DeleteOptions{})
		}, ""},
	} {
		verdict(t, c.name, c.do(), c.deny)
	}
}
