package scanjob

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// The pull secrets of the scanned Pods reach Grype without the operator
// reading a Secret: the Job projects them all, each into its own folder,
// and the docker-config init container (the uploader binary) merges them
// into one Docker config in a memory-backed emptyDir, which Grype reads
// through $DOCKER_CONFIG.
const (
	// ContainerDockerConfig is the init container that merges the pull
	// secrets; ContainerGrype and ContainerUploader are the other two.
	ContainerDockerConfig = "docker-config"
	ContainerGrype        = "grype"
	ContainerUploader     = "uploader"

	// PullSecretsDir holds the projected pull secrets, one folder per
	// Secret; only the docker-config container mounts it.
	PullSecretsDir = "/var/run/secrets/crowsnest/pull-secrets"
	// MaxPullSecrets bounds the Secrets projected into one scan Pod.
	MaxPullSecrets = 16

	dockerConfigJSONKey = corev1.DockerConfigJsonKey // kubernetes.io/dockerconfigjson
	dockerCfgKey        = corev1.DockerConfigKey     // legacy kubernetes.io/dockercfg
)

// pullSecrets are the names a scan Pod can project: sorted (the merge's
// first-wins order), without duplicates, at most MaxPullSecrets. A Pod's
// imagePullSecrets are not validated by the API server, but a name that is
// not a DNS subdomain cannot name a Secret: it is dropped, which also makes
// every name a safe folder name.
func pullSecrets(names []string) []string {
	var out []string
	for _, n := range names {
		if len(validation.IsDNS1123Subdomain(n)) == 0 {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	out = compact(out)
	if len(out) > MaxPullSecrets {
		out = out[:MaxPullSecrets]
	}
	return out
}

func compact(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// pullSecretsVolume projects each Secret's two possible keys into
// <name>/.dockerconfigjson and <name>/.dockercfg. Optional Secrets and
// optional keys: a Secret of either type has only one of them, and a
// missing Secret fails the pull of the image it was for, not the Pod.
func pullSecretsVolume(names []string) corev1.Volume {
	sources := make([]corev1.VolumeProjection, 0, len(names))
	for _, n := range names {
		sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: n},
			Items: []corev1.KeyToPath{
				{Key: dockerConfigJSONKey, Path: n + "/" + dockerConfigJSONKey},
				{Key: dockerCfgKey, Path: n + "/" + dockerCfgKey},
			},
			Optional: ptr.To(true),
		}})
	}
	return corev1.Volume{Name: "pull-secrets", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}
}

// registryAuthVolume holds the merged Docker config. In memory, like the
// Secret volumes it comes from, so credentials never touch the node's disk.
func registryAuthVolume() corev1.Volume {
	return corev1.Volume{Name: "registry-auth", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(registryDirSize.DeepCopy()),
	}}}
}

// dockerConfigContainer runs `uploader docker-config`.
func dockerConfigContainer(image string) corev1.Container {
	return corev1.Container{
		Name:  ContainerDockerConfig,
		Image: image,
		Args:  []string{"docker-config", "--from=" + PullSecretsDir, "--out=" + RegistryDir + "/config.json"},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "pull-secrets", MountPath: PullSecretsDir, ReadOnly: true},
			{Name: "registry-auth", MountPath: RegistryDir},
		},
		Resources:                dockerConfigResources(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext:          restricted(),
	}
}
