package scanjob

import (
	"strconv"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/scan"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// Paths inside the scan Pod.
const (
	ScanDir      = scan.ScanDir
	BOMFile      = scan.BOMFile
	GrypeJSON    = scan.GrypeJSONFile
	TokenDir     = scan.TokenDir
	TokenFile    = scan.TokenFile
	DBCacheDir   = scan.DBCacheDir
	RegistryDir  = scan.RegistryDir
	tmpDir       = "/tmp"
	tokenSeconds = scan.TokenExpirationSeconds
	runAsUser    = 65532
)

// Finalizer is on every scan Job the operator creates. The Job's
// annotations are the scan's state (attempt, outcome, which events were
// delivered), and the TTL controller, a user or the garbage collector may
// delete a finished Job at any time: the finalizer keeps it until the
// operator has recorded its outcome, delivered its job.done and, for a failed
// scan, replaced it with the next attempt. The operator removes it then, and
// from every Job of a Scanner that is being deleted.
const Finalizer = "crowsnest.dev/scan-outcome"

// Params is everything one scan Job depends on.
type Params struct {
	Scanner        *crowsnestv1alpha1.Scanner
	Digest         string   // sha256:<hex>
	Image          string   // repository@sha256:<hex>
	PullSecrets    []string // the scanned Pods' imagePullSecrets, all merged for Grype
	Attempt        int
	Reason         string // new, rescan or retry
	GrypeImage     string // operator default; spec.grypeImage wins
	UploaderImage  string
	APIURL         string
	ServiceAccount string        // empty: the namespace's default
	TTL            time.Duration // ttlSecondsAfterFinished
	// Platform is the os/arch[/variant] of a node running the digest, e.g.
	// "linux/arm64": Grype scans that image of a multi-platform index. Empty
	// or not of that shape (ValidPlatform): Grype's default.
	Platform string
	// VulnDBURL is the base URL Grype fetches its vulnerability DB listing
	// from (GRYPE_DB_UPDATE_URL), e.g. the matcher's
	// http://crowsnest-matcher:8080/vulndb, so that no scan downloads the DB
	// from the internet. Empty: Grype's public default.
	VulnDBURL string
	// InsecureRegistries are registry hosts Grype reaches over plain HTTP
	// (GRYPE_REGISTRY_INSECURE_USE_HTTP for images there): a development
	// registry such as kind's localhost:5001 or the local stack's.
	InsecureRegistries []string
	// DBCache is where Grype keeps its vulnerability DB. An emptyDir today;
	// a shared, pre-populated volume can replace it without touching the rest.
	DBCache corev1.VolumeSource
	// Scheduling is the operator-wide default of where scan Pods run; the
	// Scanner's spec.scanPod replaces it field by field (Override).
	Scheduling Scheduling
}

// DefaultDBCache is an emptyDir bounded to 2 GiB.
func DefaultDBCache() corev1.VolumeSource {
	return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(dbCacheSize.DeepCopy())}}
}

// Build renders the scan Job. It is pure: the same Params give the same Job.
func Build(p Params) *batchv1.Job {
	s := p.Scanner
	labels := SelectorLabels(s.Name)
	labels[LabelName] = AppName
	labels[LabelDigestHash] = DigestHash(p.Digest)
	grype := p.GrypeImage
	if s.Spec.GrypeImage != "" {
		grype = s.Spec.GrypeImage
	}
	if grype == "" {
		grype = DefaultGrypeImage
	}
	dbCache := p.DBCache
	if dbCache == (corev1.VolumeSource{}) {
		dbCache = DefaultDBCache()
	}
	secrets := pullSecrets(p.PullSecrets)
	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:       JobName(s.Name, p.Digest),
			Namespace:  s.Namespace,
			Labels:     labels,
			Finalizers: []string{Finalizer},
			Annotations: map[string]string{
				AnnotationDigest:  p.Digest,
				AnnotationImage:   p.Image,
				AnnotationAttempt: strconv.Itoa(max(p.Attempt, 1)),
				AnnotationReason:  p.Reason,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         crowsnestv1alpha1.GroupVersion.String(),
				Kind:               "Scanner",
				Name:               s.Name,
				UID:                s.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0), // the operator retries, with its own backoff
			ActiveDeadlineSeconds:   ptr.To(int64(s.Spec.EffectiveScanTimeout().Seconds())),
			TTLSecondsAfterFinished: ptr.To(int32(p.TTL.Seconds())),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           serviceAccount(p.ServiceAccount),
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](runAsUser),
						RunAsGroup:     ptr.To[int64](runAsUser),
						FSGroup:        ptr.To[int64](runAsUser),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					InitContainers: initContainers(grype, p, secrets, dbCache),
					Containers:     []corev1.Container{uploaderContainer(p)},
					Volumes:        volumes(secrets, dbCache),
				},
			},
		},
	}
	p.Scheduling.Override(s.Spec.ScanPod).apply(&job.Spec.Template.Spec)
	return job
}

func initContainers(grype string, p Params, secrets []string, dbCache corev1.VolumeSource) []corev1.Container {
	g := grypeContainer(grype, p, len(secrets) > 0, grypeResources(dbCache, p.Scanner.Spec.Resources))
	if len(secrets) == 0 {
		return []corev1.Container{g}
	}
	return []corev1.Container{dockerConfigContainer(p.UploaderImage), g}
}

func grypeContainer(image string, p Params, registryAuth bool, res corev1.ResourceRequirements) corev1.Container {
	env := []corev1.EnvVar{
		{Name: "GRYPE_CHECK_FOR_APP_UPDATE", Value: "false"},
		{Name: "GRYPE_DB_CACHE_DIR", Value: DBCacheDir},
		{Name: "TMPDIR", Value: tmpDir},
		{Name: "HOME", Value: tmpDir},
		{Name: "XDG_CACHE_HOME", Value: tmpDir + "/.cache"},
	}
	if p.VulnDBURL != "" {
		env = append(env, corev1.EnvVar{Name: "GRYPE_DB_UPDATE_URL", Value: p.VulnDBURL})
	}
	if insecure(p.Image, p.InsecureRegistries) {
		env = append(env, corev1.EnvVar{Name: "GRYPE_REGISTRY_INSECURE_USE_HTTP", Value: "true"})
	}
	mounts := []corev1.VolumeMount{
		{Name: "scan", MountPath: ScanDir},
		{Name: "grype-db", MountPath: DBCacheDir},
		{Name: "tmp", MountPath: tmpDir},
	}
	if registryAuth {
		env = append(env, corev1.EnvVar{Name: "DOCKER_CONFIG", Value: RegistryDir})
		mounts = append(mounts, corev1.VolumeMount{Name: "registry-auth", MountPath: RegistryDir, ReadOnly: true})
	}
	// "registry:" makes Grype pull by digest itself over the registry API:
	// the kubelet never pulls the scanned image, only the scan Pod's own
	// (Grype's and the uploader's), so a kubelet pull failure is always one
	// of those.
	// Grype's own JSON report of the same run names the DB it matched
	// against (descriptor.db.status); the uploader sends that with the BOM.
	args := []string{"registry:" + p.Image, "--output", "cyclonedx-json=" + BOMFile, "--output", "json=" + GrypeJSON}
	if ValidPlatform(p.Platform) == nil {
		args = append(args, "--platform", p.Platform)
	}
	return corev1.Container{
		Name:                     ContainerGrype,
		Image:                    image,
		Args:                     args,
		Env:                      env,
		Resources:                res,
		VolumeMounts:             mounts,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext:          restricted(),
	}
}

func uploaderContainer(p Params) corev1.Container {
	return corev1.Container{
		Name:  ContainerUploader,
		Image: p.UploaderImage,
		Args: []string{
			"--api-url=" + p.APIURL,
			"--digest=" + p.Digest,
			"--image=" + p.Image,
			"--bom-file=" + BOMFile,
			"--grype-json=" + GrypeJSON,
			"--token-file=" + TokenFile,
		},
		Resources: uploaderResources(p.Scanner.Spec.UploaderResources),
		VolumeMounts: []corev1.VolumeMount{
			{Name: "scan", MountPath: ScanDir, ReadOnly: true},
			{Name: "token", MountPath: TokenDir, ReadOnly: true},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext:          restricted(),
	}
}

func volumes(secrets []string, dbCache corev1.VolumeSource) []corev1.Volume {
	vols := []corev1.Volume{
		{Name: "scan", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(scanDirSize.DeepCopy())}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(tmpDirSize.DeepCopy())}}},
		{Name: "grype-db", VolumeSource: dbCache},
		{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: TokenAudience, ExpirationSeconds: ptr.To[int64](tokenSeconds), Path: "token",
			}}},
		}}},
	}
	if len(secrets) > 0 {
		vols = append(vols, pullSecretsVolume(secrets), registryAuthVolume())
	}
	return vols
}

func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// serviceAccount names the scan Pod's service account explicitly: its
// projected token is what results-api authenticates, so the Pod spec should
// not depend on admission filling in "default".
func serviceAccount(name string) string {
	if name == "" {
		return "default"
	}
	return name
}
