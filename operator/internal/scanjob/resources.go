package scanjob

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Sizes of the scan Pod's emptyDirs. The kubelet counts emptyDirs against
// the Pod's ephemeral-storage, whose request and limit are the Grype init
// container's (an init container's resources count alone, not summed with
// the uploader's): so Grype's request reserves the DB and a typical image,
// and its limit covers every emptyDir at its size limit, plus the logs.
var (
	scanDirSize     = resource.MustParse("512Mi") // the BOM, at most 32 MiB
	tmpDirSize      = resource.MustParse("4Gi")   // image layers Grype unpacks
	dbCacheSize     = resource.MustParse("2Gi")   // the default grype-db emptyDir
	registryDirSize = resource.MustParse("16Mi")  // the merged Docker config, in memory
	logsHeadroom    = resource.MustParse("256Mi")
	typicalUnpack   = resource.MustParse("1Gi") // tmp use of a typical image
	grypeCPU        = resource.MustParse("250m")
	grypeMemory     = resource.MustParse("512Mi")
	grypeMemoryMax  = resource.MustParse("2Gi")
)

// grypeResources are Grype's defaults, merged with the Scanner's
// spec.resources. dbCache is the grype-db volume: an emptyDir's size counts
// against the Pod's ephemeral-storage, a shared volume's does not.
func grypeResources(dbCache corev1.VolumeSource, override corev1.ResourceRequirements) corev1.ResourceRequirements {
	request := typicalUnpack.DeepCopy()
	limit := scanDirSize.DeepCopy()
	limit.Add(tmpDirSize)
	limit.Add(logsHeadroom)
	if ed := dbCache.EmptyDir; ed != nil && ed.Medium != corev1.StorageMediumMemory {
		size := dbCacheSize
		if ed.SizeLimit != nil {
			size = *ed.SizeLimit
		}
		request.Add(size)
		limit.Add(size)
	}
	def := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: grypeCPU, corev1.ResourceMemory: grypeMemory, corev1.ResourceEphemeralStorage: request},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: grypeMemoryMax, corev1.ResourceEphemeralStorage: limit},
	}
	return mergeResources(def, override)
}

// uploaderResources are the uploader's defaults, merged with the Scanner's
// spec.uploaderResources. It writes only its log.
func uploaderResources(override corev1.ResourceRequirements) corev1.ResourceRequirements {
	def := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("16Mi"),
		},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi"), corev1.ResourceEphemeralStorage: resource.MustParse("64Mi")},
	}
	return mergeResources(def, override)
}

// dockerConfigResources are the docker-config step's: it reads a few small
// files and writes one into a memory-backed emptyDir, which its memory
// limit covers.
func dockerConfigResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("16Mi"),
		},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceEphemeralStorage: resource.MustParse("64Mi")},
	}
}

// mergeResources lays override over def, quantity by quantity: what the
// override sets wins, the rest keeps the default. A default request above a
// limit the override sets is lowered to that limit, so that setting only a
// small limit still gives a valid Pod; an override that contradicts itself
// is left for the API server to refuse (reported as PodRejected). A request
// set above a default limit raises that limit to it.
func mergeResources(def, override corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}, Claims: override.Claims}
	for name, q := range def.Requests {
		out.Requests[name] = q.DeepCopy()
	}
	for name, q := range def.Limits {
		out.Limits[name] = q.DeepCopy()
	}
	for name, q := range override.Requests {
		out.Requests[name] = q.DeepCopy()
	}
	for name, q := range override.Limits {
		out.Limits[name] = q.DeepCopy()
	}
	for name, limit := range override.Limits {
		if _, set := override.Requests[name]; set {
			continue
		}
		if req, ok := out.Requests[name]; ok && req.Cmp(limit) > 0 {
			out.Requests[name] = limit.DeepCopy()
		}
	}
	for name, req := range override.Requests {
		if _, set := override.Limits[name]; set {
			continue
		}
		if limit, ok := out.Limits[name]; ok && req.Cmp(limit) > 0 {
			out.Limits[name] = req.DeepCopy()
		}
	}
	return out
}
