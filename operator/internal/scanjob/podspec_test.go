package scanjob

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

func container(t *testing.T, job *batchv1.Job, name string) corev1.Container {
	t.Helper()
	spec := job.Spec.Template.Spec
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

func volume(job *batchv1.Job, name string) *corev1.Volume {
	for i, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return &job.Spec.Template.Spec.Volumes[i]
		}
	}
	return nil
}

func names(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func env(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// TestBuildPullSecrets: every pull secret of the scanned Pods is projected
// (both Secret types' keys, each in the Secret's own folder, in sorted
// order), merged by the docker-config init container before Grype runs, and
// Grype sees only the merged config.
func TestBuildPullSecrets(t *testing.T) {
	p := params(scanner())
	p.PullSecrets = []string{"zeta", "alpha", "alpha", "Not_A_Secret_Name", "beta.example"}
	job := Build(p)
	spec := job.Spec.Template.Spec
	if got := names(spec.InitContainers); !slices.Equal(got, []string{ContainerDockerConfig, ContainerGrype}) {
		t.Fatalf("init containers %v: docker-config must run before grype", got)
	}
	v := volume(job, "pull-secrets")
	if v == nil || v.Projected == nil {
		t.Fatalf("pull-secrets volume: %+v", v)
	}
	var projected []string
	for _, src := range v.Projected.Sources {
		sec := src.Secret
		projected = append(projected, sec.Name)
		if sec.Optional == nil || !*sec.Optional {
			t.Errorf("secret %s is not optional", sec.Name)
		}
		want := []corev1.KeyToPath{
			{Key: ".dockerconfigjson", Path: sec.Name + "/.dockerconfigjson"},
			{Key: ".dockercfg", Path: sec.Name + "/.dockercfg"},
		}
		if !slices.Equal(sec.Items, want) {
			t.Errorf("secret %s items %+v, want %+v", sec.Name, sec.Items, want)
		}
	}
	if want := []string{"alpha", "beta.example", "zeta"}; !slices.Equal(projected, want) {
		t.Errorf("projected %v, want %v (sorted, deduplicated, invalid names dropped)", projected, want)
	}
	if ra := volume(job, "registry-auth"); ra == nil || ra.EmptyDir == nil || ra.EmptyDir.Medium != corev1.StorageMediumMemory {
		t.Errorf("registry-auth volume %+v: want a memory-backed emptyDir", ra)
	}

	dc := container(t, job, ContainerDockerConfig)
	if dc.Image != p.UploaderImage || !slices.Equal(dc.Args, []string{"docker-config", "--from=" + PullSecretsDir, "--out=" + RegistryDir + "/config.json"}) {
		t.Errorf("docker-config container: image %s args %v", dc.Image, dc.Args)
	}
	g := container(t, job, ContainerGrype)
	if v, ok := env(g, "DOCKER_CONFIG"); !ok || v != RegistryDir {
		t.Errorf("grype DOCKER_CONFIG %q (set %v), want %s", v, ok, RegistryDir)
	}
	for _, m := range g.VolumeMounts {
		if m.Name == "pull-secrets" {
			t.Error("grype mounts the raw pull secrets; it needs only the merged config")
		}
		if m.Name == "registry-auth" && (!m.ReadOnly || m.MountPath != RegistryDir) {
			t.Errorf("grype registry-auth mount %+v", m)
		}
	}

	many := params(scanner())
	for i := range MaxPullSecrets + 5 {
		many.PullSecrets = append(many.PullSecrets, "s"+strings.Repeat("x", i))
	}
	if n := len(volume(Build(many), "pull-secrets").Projected.Sources); n != MaxPullSecrets {
		t.Errorf("%d secrets projected, want at most %d", n, MaxPullSecrets)
	}

	none := Build(params(scanner()))
	if got := names(none.Spec.Template.Spec.InitContainers); !slices.Equal(got, []string{ContainerGrype}) {
		t.Errorf("without pull secrets: init containers %v", got)
	}
	if volume(none, "pull-secrets") != nil || volume(none, "registry-auth") != nil {
		t.Error("without pull secrets: secret volumes present")
	}
	if _, ok := env(container(t, none, ContainerGrype), "DOCKER_CONFIG"); ok {
		t.Error("without pull secrets: DOCKER_CONFIG set")
	}
}

func TestBuildPlatform(t *testing.T) {
	for platform, want := range map[string][]string{
		"":                 nil,
		"linux/arm64":      {"--platform", "linux/arm64"},
		"linux/arm/v7":     {"--platform", "linux/arm/v7"},
		"linux":            nil,
		"linux/amd64 --x":  nil,
		"linux/arm64/v8/x": nil,
	} {
		p := params(scanner())
		p.Platform = platform
		args := container(t, Build(p), ContainerGrype).Args
		if got := args[5:]; !slices.Equal(got, want) {
			t.Errorf("platform %q: extra grype args %q, want %q", platform, got, want)
		}
	}
}

func TestValidPlatform(t *testing.T) {
	for _, ok := range []string{"linux/amd64", "linux/arm64", "linux/arm/v7", "linux/ppc64le", "linux/s390x", "windows/amd64", "linux/386", "linux/mips64le"} {
		if err := ValidPlatform(ok); err != nil {
			t.Errorf("ValidPlatform(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "linux", "Linux/AMD64", "/amd64", "linux/", "linux/arm/v7/x", "linux/amd64 ", "linux/amd64\n--output=x", strings.Repeat("a", 33) + "/amd64"} {
		if err := ValidPlatform(bad); err == nil {
			t.Errorf("ValidPlatform(%q) accepted", bad)
		}
	}
}

func quantity(rl corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := rl[name]
	if !ok {
		return ""
	}
	return q.String()
}

// TestBuildResources: every container has requests and limits, ephemeral
// storage included, each request within its limit; the Grype container's
// ephemeral-storage limit covers the disk emptyDirs at their size limits.
func TestBuildResources(t *testing.T) {
	p := params(scanner())
	p.PullSecrets = []string{"regcred"}
	job := Build(p)
	spec := job.Spec.Template.Spec
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			if _, ok := c.Resources.Requests[name]; !ok {
				t.Errorf("%s: no %s request", c.Name, name)
			}
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			if _, ok := c.Resources.Limits[name]; !ok {
				t.Errorf("%s: no %s limit", c.Name, name)
			}
		}
		for name, limit := range c.Resources.Limits {
			if req := c.Resources.Requests[name]; req.Cmp(limit) > 0 {
				t.Errorf("%s: %s request %s above limit %s", c.Name, name, req.String(), limit.String())
			}
		}
	}
	var disk resource.Quantity
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumMemory {
			disk.Add(*v.EmptyDir.SizeLimit)
		}
	}
	g := container(t, job, ContainerGrype)
	if limit := g.Resources.Limits[corev1.ResourceEphemeralStorage]; limit.Cmp(disk) < 0 {
		t.Errorf("grype ephemeral-storage limit %s below the emptyDirs' %s", limit.String(), disk.String())
	}
	if got := quantity(g.Resources.Requests, corev1.ResourceMemory) + "/" + quantity(g.Resources.Limits, corev1.ResourceMemory); got != "512Mi/2Gi" {
		t.Errorf("grype memory request/limit %s, want 512Mi/2Gi", got)
	}

	// A shared DB volume is not the Pod's ephemeral storage.
	shared := params(scanner())
	shared.DBCache = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "grype-db"}}
	sg := container(t, Build(shared), ContainerGrype)
	if a, b := sg.Resources.Limits[corev1.ResourceEphemeralStorage], g.Resources.Limits[corev1.ResourceEphemeralStorage]; a.Cmp(b) >= 0 {
		t.Errorf("with a shared DB volume the ephemeral-storage limit %s should be below %s", a.String(), b.String())
	}
}

func TestBuildResourceOverrides(t *testing.T) {
	res := func(req, lim corev1.ResourceList) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: req, Limits: lim}
	}
	q := resource.MustParse
	tests := []struct {
		name            string
		grype, uploader corev1.ResourceRequirements
		// container → "resource=request/limit" that must hold
		want map[string][]string
	}{
		{
			name: "defaults",
			want: map[string][]string{
				ContainerGrype:    {"cpu=250m/", "memory=512Mi/2Gi", "ephemeral-storage=3Gi/6912Mi"},
				ContainerUploader: {"cpu=10m/", "memory=32Mi/128Mi", "ephemeral-storage=16Mi/64Mi"},
			},
		},
		{
			name:  "one quantity replaces its default, the others stay",
			grype: res(corev1.ResourceList{corev1.ResourceCPU: q("1")}, corev1.ResourceList{corev1.ResourceCPU: q("2")}),
			want:  map[string][]string{ContainerGrype: {"cpu=1/2", "memory=512Mi/2Gi", "ephemeral-storage=3Gi/6912Mi"}},
		},
		{
			name:     "a limit below the default request lowers the request",
			grype:    res(nil, corev1.ResourceList{corev1.ResourceMemory: q("256Mi")}),
			uploader: res(nil, corev1.ResourceList{corev1.ResourceMemory: q("16Mi")}),
			want: map[string][]string{
				ContainerGrype:    {"memory=256Mi/256Mi"},
				ContainerUploader: {"memory=16Mi/16Mi"},
			},
		},
		{
			name:  "a request above the default limit raises the limit",
			grype: res(corev1.ResourceList{corev1.ResourceMemory: q("4Gi")}, nil),
			want:  map[string][]string{ContainerGrype: {"memory=4Gi/4Gi"}},
		},
		{
			name:  "an explicit pair is kept as given",
			grype: res(corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}, corev1.ResourceList{corev1.ResourceMemory: q("3Gi")}),
			want:  map[string][]string{ContainerGrype: {"memory=1Gi/3Gi"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scanner(func(s *crowsnestv1alpha1.Scanner) {
				s.Spec.Resources, s.Spec.UploaderResources = tt.grype, tt.uploader
			})
			job := Build(params(s))
			for name, checks := range tt.want {
				c := container(t, job, name)
				for _, check := range checks {
					rn, want, _ := strings.Cut(check, "=")
					got := quantity(c.Resources.Requests, corev1.ResourceName(rn)) + "/" + quantity(c.Resources.Limits, corev1.ResourceName(rn))
					if got != want {
						t.Errorf("%s %s: %s, want %s", name, rn, got, want)
					}
				}
			}
		})
	}
}
