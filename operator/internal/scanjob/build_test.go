package scanjob

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func scanner(mods ...func(*crowsnestv1alpha1.Scanner)) *crowsnestv1alpha1.Scanner {
	s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "team-a", UID: "0f9d-uid"}}
	for _, m := range mods {
		m(s)
	}
	return s
}

func params(s *crowsnestv1alpha1.Scanner) Params {
	return Params{
		Scanner: s, Digest: testDigest, Image: "docker.io/library/nginx@" + testDigest,
		Attempt: 1, Reason: "new", GrypeImage: DefaultGrypeImage,
		UploaderImage: "ghcr.io/crowsnest-dev/uploader:v0.1.0", APIURL: "http://crowsnest-results-api.crowsnest:8080",
		TTL: 2 * time.Hour,
	}
}

func TestBuildGolden(t *testing.T) {
	custom := scanner(func(s *crowsnestv1alpha1.Scanner) {
		s.Spec.GrypeImage = "registry.example/grype:v0.121.2"
		s.Spec.ScanTimeout = &metav1.Duration{Duration: 3 * time.Minute}
		s.Spec.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		}
		s.Spec.UploaderResources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
		s.Spec.ScanPod = &crowsnestv1alpha1.ScanPodSpec{
			NodeSelector: map[string]crowsnestv1alpha1.LabelValue{"crowsnest.dev/node": "real", "kubernetes.io/os": "linux"},
			Tolerations: []crowsnestv1alpha1.Toleration{
				{Key: "crowsnest.dev/real-node", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
			},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.present", Operator: corev1.NodeSelectorOpDoesNotExist}},
				}}},
			}},
		}
	})
	withSecrets := params(custom)
	withSecrets.PullSecrets = []string{"regcred", "other"}
	withSecrets.Platform = "linux/arm64"
	withSecrets.Attempt, withSecrets.Reason, withSecrets.ServiceAccount = 3, "retry", "crowsnest-scan"
	withSecrets.VulnDBURL = "http://crowsnest-matcher.crowsnest:8080/vulndb"
	// Operator defaults: the Scanner's nodeSelector replaces this one, the
	// priority class (which the Scanner leaves unset) stays.
	withSecrets.Scheduling = Scheduling{NodeSelector: map[string]string{"pool": "scans"}, PriorityClassName: "crowsnest-scan"}
	cases := map[string]Params{"default": params(scanner()), "custom": withSecrets}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := yaml.Marshal(Build(p))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/scanjob -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("job differs from %s (run with -update if intended):\n%s", path, got)
			}
		})
	}
}

// TestBuildIsRestricted checks the Pod Security "restricted" rules directly,
// so a golden-file update cannot quietly weaken them.
func TestBuildIsRestricted(t *testing.T) {
	p := params(scanner())
	p.PullSecrets = []string{"regcred"}
	job := Build(p)
	spec := job.Spec.Template.Spec
	if *job.Spec.BackoffLimit != 0 || *job.Spec.ActiveDeadlineSeconds != 600 || *job.Spec.TTLSecondsAfterFinished != 7200 {
		t.Errorf("job limits: backoff %d deadline %d ttl %d", *job.Spec.BackoffLimit, *job.Spec.ActiveDeadlineSeconds, *job.Spec.TTLSecondsAfterFinished)
	}
	if *spec.AutomountServiceAccountToken || !*spec.SecurityContext.RunAsNonRoot || spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context: %+v", spec.SecurityContext)
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		sc := c.SecurityContext
		if *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 {
			t.Errorf("container %s security context: %+v", c.Name, sc)
		}
	}
	if g := container(t, job, ContainerGrype); g.Image != DefaultGrypeImage || g.Args[0] != "registry:"+p.Image {
		t.Errorf("grype container: %+v", g)
	}
	var token *corev1.ServiceAccountTokenProjection
	for _, v := range spec.Volumes {
		if v.Projected != nil && v.Projected.Sources[0].ServiceAccountToken != nil {
			token = v.Projected.Sources[0].ServiceAccountToken
		}
	}
	if token == nil || token.Audience != TokenAudience {
		t.Errorf("projected token: %+v", token)
	}
	if o := job.OwnerReferences[0]; o.Kind != "Scanner" || !*o.Controller || o.UID != "0f9d-uid" {
		t.Errorf("owner: %+v", o)
	}
	if job.Labels[LabelDigestHash] != DigestHash(testDigest) || job.Annotations[AnnotationDigest] != testDigest {
		t.Errorf("labels %v annotations %v", job.Labels, job.Annotations)
	}
	// The finalizer keeps the Job's state until the operator is done with it.
	if len(job.Finalizers) != 1 || job.Finalizers[0] != Finalizer {
		t.Errorf("finalizers %v, want [%s]", job.Finalizers, Finalizer)
	}
}

func TestJobName(t *testing.T) {
	dns := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	for _, scanner := range []string{"default", "a.b.c", strings.Repeat("long-name-", 6) + "x", "x-" + strings.Repeat("y", 61)} {
		n := JobName(scanner, testDigest)
		if len(n) > 63 || !dns.MatchString(n) {
			t.Errorf("JobName(%q) = %q: not a DNS label of at most 63 characters", scanner, n)
		}
		if n != JobName(scanner, testDigest) {
			t.Errorf("JobName(%q) is not deterministic", scanner)
		}
	}
	if JobName("s", testDigest) == JobName("s", strings.Replace(testDigest, "0", "1", 1)) || JobName("s", testDigest) == JobName("t", testDigest) {
		t.Error("different inputs gave the same name")
	}
}
