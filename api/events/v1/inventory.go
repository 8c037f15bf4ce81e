package v1

import (
	"sort"
	"strconv"
)

// Workload kinds in an InventorySnapshot. A Pod is resolved to the top of
// its owner chain the operator knows: a Deployment through its ReplicaSet, a
// CronJob through its Job. A Pod without a controller owner is KindPod; a
// Pod whose owner is of a kind not listed here (an operator's own
// controller, for example) keeps that owner's kind.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindCronJob     = "CronJob"
	KindJob         = "Job"
	KindReplicaSet  = "ReplicaSet"
	KindPod         = "Pod"
)

// Bounds of an InventorySnapshot: a namespace with more (workload,
// container, digest) entries lists the first MaxInventoryEntries in sort
// order and sets Truncated.
const (
	MaxInventoryEntries = 5000
	MaxInventoryLabels  = 64
)

// InventoryContainer is one container of a workload running one digest.
type InventoryContainer struct {
	Name   string `json:"name"`
	Image  string `json:"image"`  // the reference as written in the Pod spec, e.g. nginx:1.27
	Digest string `json:"digest"` // sha256:<64 hex> the kubelet reports as running
	// Init is true for an init container (a restartable "sidecar" init
	// container keeps running, so it is listed while it runs).
	Init bool `json:"init,omitempty"`
	// Pods counts the workload's running Pods with this container on this
	// digest.
	Pods int `json:"pods"`
}

// InventoryWorkload is one workload of a namespace and the digests its
// running Pods run.
type InventoryWorkload struct {
	Kind       string               `json:"kind"` // KindDeployment, …
	Name       string               `json:"name"`
	Containers []InventoryContainer `json:"containers"` // sorted by Name, then Digest
}

// InventorySnapshot is published by the operator on
// crowsnest.inventory.snapshot: every workload of one namespace with the
// digests its running Pods run, now. It replaces the namespace's previous
// snapshot as a whole: a workload or digest missing from it no longer runs
// there, and an empty Workloads means nothing runs in the namespace any
// more. It is published when the namespace's content changes and once per
// namespace when the operator starts (so a consumer that missed a snapshot
// catches up), with an id derived from the content and Previous
// (InventoryID): a retried publish is deduplicated, while content that goes
// back to an earlier state (A, B, A) is a new event, not a duplicate
// JetStream would drop.
type InventorySnapshot struct {
	Namespace string `json:"namespace"`
	// Previous is the id of the snapshot of this namespace the publisher
	// sent before this one; after the publisher starts, "start:" and the
	// start time (RFC 3339), so each start's first snapshots are delivered.
	Previous string `json:"previous,omitempty"`
	// Labels are the namespace's labels (at most MaxInventoryLabels), so that
	// consumers can route by label selector without reading the API server.
	Labels    map[string]string   `json:"labels,omitempty"`
	Workloads []InventoryWorkload `json:"workloads"` // sorted by Kind, then Name
	Truncated bool                `json:"truncated,omitempty"`
}

// Digests returns the distinct digests of the snapshot, sorted.
func (s InventorySnapshot) Digests() []string {
	seen := map[string]struct{}{}
	for _, w := range s.Workloads {
		for _, c := range w.Containers {
			seen[c.Digest] = struct{}{}
		}
	}
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// InventoryID is the deterministic event id of a snapshot: it hashes the
// namespace, Previous and the sorted content (labels included), so the same
// snapshot after the same predecessor always gets the same id. The snapshot
// must be sorted as documented. With Previous empty it identifies the
// content alone (what a publisher compares to skip an unchanged namespace).
func InventoryID(s InventorySnapshot) string {
	parts := []string{s.Namespace, s.Previous, strconv.FormatBool(s.Truncated)}
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, "l", k, s.Labels[k])
	}
	for _, w := range s.Workloads {
		parts = append(parts, "w", w.Kind, w.Name)
		for _, c := range w.Containers {
			parts = append(parts, "c", c.Name, c.Image, c.Digest, strconv.FormatBool(c.Init), strconv.Itoa(c.Pods))
		}
	}
	return ID(TypeInventorySnapshot, parts...)
}

// validInventory checks an inventory snapshot's payload.
func validInventory(p InventorySnapshot) error {
	if p.Namespace == "" || len(p.Namespace) > 63 {
		return invalid(ReasonPayload, "namespace of %d bytes, want 1 to 63", len(p.Namespace))
	}
	if len(p.Labels) > MaxInventoryLabels {
		return invalid(ReasonPayload, "%d namespace labels, want at most %d", len(p.Labels), MaxInventoryLabels)
	}
	entries := 0
	for _, w := range p.Workloads {
		if w.Kind == "" || w.Name == "" {
			return invalid(ReasonPayload, "workload without kind or name")
		}
		for _, c := range w.Containers {
			entries++
			if !ValidDigest(c.Digest) {
				return invalid(ReasonPayload, "digest %q of %s/%s is not sha256:<64 lowercase hex>", clip(c.Digest), clip(w.Kind), clip(w.Name))
			}
			if c.Pods < 0 {
				return invalid(ReasonPayload, "negative pod count")
			}
		}
	}
	if entries > MaxInventoryEntries {
		return invalid(ReasonPayload, "%d entries, want at most %d", entries, MaxInventoryEntries)
	}
	return nil
}
