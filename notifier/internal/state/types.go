package state

import "time"

// Finding is a finding as a notification shows it.
type Finding struct {
	ID       string   `json:"id"`
	Severity string   `json:"severity"`
	Package  string   `json:"package"`
	Version  string   `json:"version"`
	FixedIn  []string `json:"fixedIn,omitempty"`
	KEV      bool     `json:"kev,omitempty"`  // listed in CISA KEV
	EPSS     *float64 `json:"epss,omitempty"` // EPSS probability, when scored
}

// Item is one thing a message says: one kind, for one digest (or, for
// scan failures, one namespace), in one namespace.
type Item struct {
	// Key identifies the item within its group (kind, event, digest,
	// namespace), so merging an event twice adds it once.
	Key       string    `json:"key"`
	EventID   string    `json:"eventId"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace"`
	Digest    string    `json:"digest,omitempty"`
	Image     string    `json:"image,omitempty"`
	Cause     string    `json:"cause,omitempty"`
	Workloads []string  `json:"workloads,omitempty"` // Kind/name
	Findings  []Finding `json:"findings,omitempty"`
	// Counts are the severities counted but not listed (a first scan, or
	// the critical findings of a digest whose baseline listed none).
	Counts map[string]int `json:"counts,omitempty"`
	// Failures and Reason describe repeated scan failures.
	Failures int       `json:"failures,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// Group is what one route collected in one debounce window; its ID is the
// idempotency key receivers see (CloudEvents id, Alertmanager label).
type Group struct {
	ID       string    `json:"id"`
	Route    string    `json:"route"`
	Receiver string    `json:"receiver"`
	Opened   time.Time `json:"opened"`
	Due      time.Time `json:"due"`
	Items    []Item    `json:"items"`
	// Omitted counts items dropped because the group was full.
	Omitted int `json:"omitted,omitempty"`
}

// OpenGroups is the "open" key: every route's open group, and the event ids of
// the items of recently sealed groups (newest last, bounded).
type OpenGroups struct {
	Groups map[string]*Group `json:"groups"`
	Sealed []string          `json:"sealed"`
}

// Namespace is a namespace's latest inventory.
type Namespace struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	// Digests maps each running digest to its workloads (Kind/name) and
	// the image reference of its first container.
	Digests map[string]Running `json:"digests"`
}

// Running is where a digest runs in one namespace.
type Running struct {
	Image     string   `json:"image"`
	Workloads []string `json:"workloads"`
}

// Criticals are a digest's current critical findings.
type Criticals struct {
	Image string `json:"image"`
	// Count is the number of critical findings: the baseline's count plus
	// new minus resolved.
	Count int `json:"count"`
	// Listed are the critical findings findings.changed listed (a baseline
	// lists none), at most MaxListed.
	Listed []Finding `json:"listed,omitempty"`
	// Suppressed says, per listed finding (its key), where results-api
	// marked it suppressed when it was listed or KEV-listed: namespaces,
	// or SuppressedEverywhere.
	Suppressed map[string][]string `json:"suppressed,omitempty"`
	// ChangeID is the last change applied: an older or equal one is a
	// replay and is skipped.
	ChangeID int64 `json:"changeId"`
}

// SuppressedEverywhere in Criticals.Suppressed marks a finding a cluster
// decision suppresses (no namespace is named "*").
const SuppressedEverywhere = "*"

// SuppressedIn reports whether the listed finding with key is suppressed
// in namespace ns.
func (c *Criticals) SuppressedIn(key, ns string) bool {
	for _, n := range c.Suppressed[key] {
		if n == ns || n == SuppressedEverywhere {
			return true
		}
	}
	return false
}

// Failures are recent failed scans of a namespace.
type Failures struct {
	Events map[string]time.Time `json:"events"` // event id → time
}
