package discovery

import (
	"errors"
	"sort"
	"unique"
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
	Node        string   // a node running it (the smallest name), whose platform the scan takes
	lastPod     *Pod
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
// It reads the cache's Pods in place and never copies them.
func Collect(pods []*Pod, ignoreLabel string) Inventory {
	inv := Inventory{Targets: map[string]*Target{}, NotPullable: map[string]*Target{}}
	// Thousands of containers share a few hundred imageIDs: parse each
	// once, found by the container's handle (a pointer) rather than by
	// hashing its imageID.
	type parsed struct {
		img Image
		err error
	}
	seen := map[unique.Handle[Container]]parsed{}
	for _, p := range pods {
		if v, _ := p.Label(ignoreLabel); v == "true" {
			continue
		}
		if v, _ := p.Label(ManagedByLabel); v == ManagedByValue {
			continue
		}
		if p.Finished() {
			continue
		}
		for _, h := range p.containers {
			pr, ok := seen[h]
			if !ok {
				pr.img, pr.err = Normalize(h.Value().ImageID)
				seen[h] = pr
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
	for _, m := range []map[string]*Target{inv.Targets, inv.NotPullable} {
		for _, t := range m {
			t.lastPod = nil
			sort.Strings(t.Pods)
			sort.Strings(t.PullSecrets)
		}
	}
	return inv
}

func add(t *Target, img Image, p *Pod) *Target {
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
	if node := p.NodeName(); t.Node == "" || (node != "" && node < t.Node) {
		t.Node = node
	}
	if len(t.Pods) < MaxPodsPerDigest {
		t.Pods = append(t.Pods, p.Name)
	}
	for s := range p.PullSecrets() {
		if len(t.PullSecrets) >= MaxSecretsPerDigest {
			break
		}
		if !contains(t.PullSecrets, s) {
			t.PullSecrets = append(t.PullSecrets, s)
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
