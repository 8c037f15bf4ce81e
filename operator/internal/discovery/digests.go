package discovery

import (
	"errors"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Bounds on what is remembered per digest.
const (
	MaxPodsPerDigest    = 20
	MaxSecretsPerDigest = 8
)

// ManagedByLabel / ManagedByValue mark objects the operator created; their
// Pods (the scan Jobs' own) are never scanned.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "crowsnest-operator"
)

// Target is one image digest running in the namespace.
type Target struct {
	Image       Image    // the reference to scan: smallest repository by name when several run the digest
	Pods        []string // Pod names running it, sorted, at most MaxPodsPerDigest
	PodCount    int      // all Pods running it
	PullSecrets []string // imagePullSecrets of those Pods, sorted, at most MaxSecretsPerDigest
	lastPod     *corev1.Pod
}

// Inventory is what the Pods of a namespace run.
type Inventory struct {
	Targets     map[string]*Target // by digest: pullable images
	NotPullable map[string]*Target // by digest: bare local digests (Image.Repository empty)
	Invalid     int                // imageIDs that could not be parsed
}

// Collect gathers the digests run by pods. Pods with ignoreLabel="true", Pods
// of the operator's own scan Jobs, finished Pods and containers without an
// imageID (not started yet) are skipped. Init and ephemeral containers count.
func Collect(pods []corev1.Pod, ignoreLabel string) Inventory {
	inv := Inventory{Targets: map[string]*Target{}, NotPullable: map[string]*Target{}}
	// Thousands of containers share a few hundred imageIDs: parse each once.
	type parsed struct {
		img Image
		err error
	}
	seen := map[string]parsed{}
	for i := range pods {
		p := &pods[i]
		if p.Labels[ignoreLabel] == "true" || p.Labels[ManagedByLabel] == ManagedByValue {
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
			continue
		}
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
			for _, cs := range list {
				if cs.ImageID == "" {
					continue
				}
				pr, ok := seen[cs.ImageID]
				if !ok {
					pr.img, pr.err = Normalize(cs.ImageID)
					seen[cs.ImageID] = pr
				}
				img, err := pr.img, pr.err
				switch {
				case errors.Is(err, ErrNotPullable):
					inv.NotPullable[img.Digest] = add(inv.NotPullable[img.Digest], img, p)
				case err != nil:
					inv.Invalid++
				default:
					inv.Targets[img.Digest] = add(inv.Targets[img.Digest], img, p)
				}
			}
		}
	}
	for _, m := range []map[string]*Target{inv.Targets, inv.NotPullable} {
		for _, t := range m {
			t.lastPod = nil
			sort.Strings(t.Pods)
			sort.Strings(t.PullSecrets)
		}
	}
	return inv
}

func add(t *Target, img Image, p *corev1.Pod) *Target {
	if t == nil {
		t = &Target{Image: img}
	} else if img.Repository != "" && (t.Image.Repository == "" || img.Repository < t.Image.Repository) {
		t.Image = img
	}
	if t.lastPod == p {
		return t // another container of the same Pod
	}
	t.lastPod = p
	t.PodCount++
	if len(t.Pods) < MaxPodsPerDigest {
		t.Pods = append(t.Pods, p.Name)
	}
	for _, s := range p.Spec.ImagePullSecrets {
		if len(t.PullSecrets) >= MaxSecretsPerDigest {
			break
		}
		if !contains(t.PullSecrets, s.Name) && s.Name != "" {
			t.PullSecrets = append(t.PullSecrets, s.Name)
		}
	}
	return t
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
