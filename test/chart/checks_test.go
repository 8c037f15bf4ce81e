package charttest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// These tests feed each checker a known-bad object, so a green chart test
// means the checks ran and found nothing, not that they cannot fail.

func restrictedPod() corev1.PodSpec {
	return corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "app", Image: "registry.example:5000/app:1.0", SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}}},
	}
}

func TestCheckRestricted(t *testing.T) {
	ok := restrictedPod()
	privileged := restrictedPod()
	privileged.Containers[0].SecurityContext.Privileged = ptr.To(true)
	noSeccomp := restrictedPod()
	noSeccomp.SecurityContext.SeccompProfile = nil
	hostPath := restrictedPod()
	hostPath.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	problems, err := CheckRestricted([]PodTemplate{{Object: "ok", Spec: ok}, {Object: "privileged", Spec: privileged},
		{Object: "noSeccomp", Spec: noSeccomp}, {Object: "hostPath", Spec: hostPath}})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(problems, "\n")
	for _, want := range []string{"privileged violates", "noSeccomp violates", "hostPath violates"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q miss %q", got, want)
		}
	}
	if strings.Contains(got, "ok violates") || len(problems) != 3 {
		t.Errorf("problems = %q, want exactly the three bad pods", problems)
	}
}

func TestCheckImages(t *testing.T) {
	for ref, pinned := range map[string]bool{
		"nginx":                                        false,
		"nginx:latest":                                 false,
		"registry.example:5000/nginx":                  false,
		"registry.example:5000/nginx:1.2":              true,
		"nginx@sha256:" + strings.Repeat("ab", 32):     true,
		"nginx:1.2@sha256:" + strings.Repeat("ab", 32): true,
		"nginx@sha256:abc":                             false,
	} {
		spec := restrictedPod()
		spec.Containers[0].Image = ref
		if got := len(CheckImages([]PodTemplate{{Object: ref, Spec: spec}})) == 0; got != pinned {
			t.Errorf("image %q pinned = %v, want %v", ref, got, pinned)
		}
	}
}

func toObj(t *testing.T, obj runtime.Object, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("rbac.authorization.k8s.io/v1")
	u.SetKind(kind)
	return u
}

func TestCheckRBAC(t *testing.T) {
	generated := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}
	role := &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		{APIGroups: []string{"*"}, Resources: []string{"pods"}, Verbs: []string{"get"}},
	}}
	role.Name = "operator"
	leader := &rbacv1.Role{Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update"}}}}
	leader.Name = "leader"
	binding := &rbacv1.ClusterRoleBinding{RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "mallory"}}}
	binding.Name = "admin"
	stray := &rbacv1.Role{Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	stray.Name = "stray"
	reports := []rbacv1.PolicyRule{{APIGroups: []string{"crowsnest.dev"}, Resources: []string{"reports"}, Verbs: []string{"get"}}}
	// Read access folded into edit, where only view was meant, and an admin
	// role folded into view: every namespace viewer would hold it.
	view := &rbacv1.ClusterRole{Rules: reports}
	view.Name = "view"
	view.Labels = map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}
	admin := &rbacv1.ClusterRole{Rules: reports}
	admin.Name = "people-admin"
	admin.Labels = map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}
	// Non-resource URLs: exactly the policy's in a ClusterRole, one more in
	// another, and any in a Role (which cannot grant them).
	metrics := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
	reader := &rbacv1.ClusterRole{Rules: metrics}
	reader.Name = "metrics-reader"
	scraper := &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/healthz"}, Verbs: []string{"get"}}}}
	scraper.Name = "scraper"
	urls := &rbacv1.Role{Rules: metrics}
	urls.Name = "urls"
	problems, err := CheckRBAC([]*unstructured.Unstructured{
		toObj(t, role, "ClusterRole"), toObj(t, leader, "Role"), toObj(t, binding, "ClusterRoleBinding"), toObj(t, stray, "Role"),
		toObj(t, view, "ClusterRole"), toObj(t, admin, "ClusterRole"),
		toObj(t, reader, "ClusterRole"), toObj(t, scraper, "ClusterRole"), toObj(t, urls, "Role"),
	}, map[string]RolePolicy{
		"ClusterRole/operator":       {Rules: generated},
		"Role/leader":                {Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update"}}}},
		"ClusterRole/view":           {Rules: reports, AggregateTo: []string{"view"}},
		"ClusterRole/people-admin":   {Rules: reports},
		"ClusterRole/metrics-reader": {Rules: metrics},
		"ClusterRole/scraper":        {Rules: metrics},
		"Role/urls":                  {Rules: metrics},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(problems, "\n")
	for _, want := range []string{"get core/secrets beyond", "wildcard", "ClusterRole/operator lacks list core/pods",
		"cluster-admin, which the chart does not define", "User mallory", "Role/stray grants get core/configmaps",
		"ClusterRole/view is aggregated into the built-in edit role", "ClusterRole/view lacks label rbac.authorization.k8s.io/aggregate-to-view",
		"ClusterRole/people-admin is aggregated into the built-in view role",
		"ClusterRole/scraper grants get /healthz beyond", "Role/urls grants non-resource URLs [/metrics], which a Role cannot"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q miss %q", got, want)
		}
	}
	if len(problems) != 11 {
		t.Errorf("problems = %q, want 11 (pods get, leases get/update, the reports rules and metrics-reader are as they should be)", problems)
	}
}

func TestCheckSecrets(t *testing.T) {
	spec := restrictedPod()
	spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "DB_PASSWORD", Value: "hunter2"},
		{Name: "CROWSNEST_NATS_URL", Value: "nats://app:hunter2@nats:4222"},
		{Name: "POSTGRES_PASSWORD_FILE", Value: "/run/secrets/pw"},
		{Name: "CROWSNEST_RESULTS_API_URL", Value: "http://api.ns.svc"},
		{Name: "CROWSNEST_NATS_PASSWORD_FILE", Value: "/run/secrets/nats/password"},
		{Name: "CROWSNEST_NATS_CREDS", Value: "/tmp/nats.creds"}, // on an emptyDir: anyone could have written it
	}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "pw", MountPath: "/run/secrets", ReadOnly: true}, {Name: "tmp", MountPath: "/tmp"}}
	spec.Volumes = []corev1.Volume{
		{Name: "pw", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "pw"}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	spec.Containers[0].Args = []string{"--token=abc", "--write-token-file=/run/token", "--listen=:8080", "--token-audience=x", "--database-url=postgres://h/db"}
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "plain"}, "stringData": map[string]any{"password": "x"}}}
	// A password in its Secret, and again in a ConfigMap: a leak, whatever the key is called.
	users := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "nats-users"}, "data": map[string]any{"reader": "UmVhZGVyUGFzc3dvcmQxMjM0NTY=", "user": "cmVhZGVy"}}}
	conf := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "nats"}, "data": map[string]any{"nats.conf": `users = [{user: reader, password: "ReaderPassword123456"}]`}}}
	problems := CheckManifestSecrets([]*unstructured.Unstructured{secret, users, conf}, []PodTemplate{{Object: "p", Spec: spec}})
	got := strings.Join(problems, "\n")
	for _, want := range []string{"stringData", "env DB_PASSWORD has a literal", "env CROWSNEST_NATS_URL holds a URL with a password", `"--token=abc"`, `"--database-url=postgres://h/db"`,
		"ConfigMap/nats holds the value of Secret/nats-users key reader", `env CROWSNEST_NATS_CREDS = "/tmp/nats.creds" is not a file on a read-only Secret mount`} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q miss %q", got, want)
		}
	}
	if len(problems) != 7 {
		t.Errorf("problems = %q, want 7", problems)
	}

	vals := map[string]any{"postgres": map[string]any{"password": "hunter2", "username": "crowsnest"},
		"global":     map[string]any{"database": map[string]any{"existingSecret": map[string]any{"name": "db", "key": "url"}}},
		"resultsApi": map[string]any{"writeToken": map[string]any{"existingSecret": "w", "key": "token"}},
		"nats":       map[string]any{"url": "nats://u:p@h:4222"}}
	vp := CheckValuesSecrets(vals)
	if len(vp) != 2 || !strings.Contains(strings.Join(vp, "\n"), "postgres.password") {
		t.Errorf("values problems = %q, want postgres.password and the NATS URL", vp)
	}
}
