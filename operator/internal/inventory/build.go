package inventory

import (
	"cmp"
	"errors"
	"slices"
	"sort"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
)

// Resolve maps a Pod (by name) and its controller owner to its workload
// (Owners.Workload).
type Resolve func(namespace, pod string, owner discovery.Owner) (kind, name string)

type workloadKey struct{ kind, name string }

type containerKey struct {
	name, image, digest string
	init                bool
}

// Build is the inventory of one namespace: every workload of pods with the
// digests its running containers run and how many Pods run each. Pods that
// finished or are being deleted, and containers that have not started (no
// imageID) or whose imageID holds no digest, are left out; init and
// ephemeral containers count, as they do for scanning. The result is sorted
// and bounded as eventsv1.InventorySnapshot documents; pods are the pod
// cache's own and are only read.
func Build(namespace string, labels map[string]string, pods []*discovery.Pod, resolve Resolve) eventsv1.InventorySnapshot {
	counts := map[workloadKey]map[containerKey]int{}
	digests := map[string]string{} // imageID → digest ("" when it holds none)
	for _, p := range pods {
		if p.Finished() || p.NumContainers() == 0 {
			continue
		}
		var w workloadKey
		for c := range p.Containers() {
			d, ok := digests[c.ImageID]
			if !ok {
				d = digestOf(c.ImageID)
				digests[c.ImageID] = d
			}
			if d == "" {
				continue
			}
			if w.kind == "" {
				w.kind, w.name = resolve(namespace, p.Name, p.Owner())
			}
			if counts[w] == nil {
				counts[w] = map[containerKey]int{}
			}
			counts[w][containerKey{name: c.Name, image: c.Image, digest: d, init: c.Init}]++
		}
	}
	snap := eventsv1.InventorySnapshot{Namespace: namespace, Labels: boundLabels(labels), Workloads: []eventsv1.InventoryWorkload{}}
	keys := make([]workloadKey, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b workloadKey) int { return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.name, b.name)) })
	entries := 0
	for _, k := range keys {
		if entries == eventsv1.MaxInventoryEntries {
			snap.Truncated = true
			break
		}
		w := eventsv1.InventoryWorkload{Kind: k.kind, Name: k.name, Containers: make([]eventsv1.InventoryContainer, 0, len(counts[k]))}
		for c, n := range counts[k] {
			w.Containers = append(w.Containers, eventsv1.InventoryContainer{Name: c.name, Image: c.image, Digest: c.digest, Init: c.init, Pods: n})
		}
		slices.SortFunc(w.Containers, func(a, b eventsv1.InventoryContainer) int {
			return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Digest, b.Digest), cmp.Compare(a.Image, b.Image), compareBool(a.Init, b.Init))
		})
		if room := eventsv1.MaxInventoryEntries - entries; len(w.Containers) > room {
			w.Containers, snap.Truncated = w.Containers[:room], true
		}
		entries += len(w.Containers)
		snap.Workloads = append(snap.Workloads, w)
	}
	return snap
}

// digestOf is the sha256 digest an imageID names, or "".
func digestOf(imageID string) string {
	img, err := discovery.Normalize(imageID)
	if err != nil && !errors.Is(err, discovery.ErrNotPullable) {
		return ""
	}
	if !eventsv1.ValidDigest(img.Digest) {
		return ""
	}
	return img.Digest
}

// boundLabels keeps the first MaxInventoryLabels labels in key order.
func boundLabels(labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return nil
	}
	if len(labels) <= eventsv1.MaxInventoryLabels {
		return labels
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, eventsv1.MaxInventoryLabels)
	for _, k := range keys[:eventsv1.MaxInventoryLabels] {
		out[k] = labels[k]
	}
	return out
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}
