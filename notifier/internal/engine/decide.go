package engine

import (
	"slices"
	"sort"
	"strings"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/config"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

// MaxListed bounds the findings kept per digest and per item.
const MaxListed = 100

// routed is an item for one route.
type routed struct {
	route string
	item  state.Item
}

func finding(f eventsv1.ChangedFinding) state.Finding {
	return state.Finding{ID: f.ID, Severity: f.Severity, Package: f.Package.Name, Version: f.Package.Version, FixedIn: f.FixedIn,
		KEV: f.KEV, EPSS: f.EPSS}
}

// matches reports whether route r notifies finding f.
func matches(r *config.Route, f state.Finding) bool {
	return r.MatchFinding(config.Finding{Severity: f.Severity, Fixable: len(f.FixedIn) > 0, KEV: f.KEV, EPSS: f.EPSS})
}

func itemKey(parts ...string) string { return strings.Join(parts, "|") }

// suppressed is what triage exceptions took out of one route's item: the
// ids of the findings the route would have been told about in namespace.
type suppressed struct {
	route, namespace, kind string
	ids                    []string
}

// findingsItems decides what a findings.changed says to each route: the
// new findings (or, for a first scan, the counts) the route matches in
// every namespace that runs the digest, the findings it matches that were
// newly listed in CISA KEV, and resolved criticals. A new or KEV-added
// finding that results-api marked suppressed in a namespace (by one of
// its exceptions or a cluster one: eventsv1.ChangedFinding.SuppressedFor)
// is left out of that namespace's items, and returned as suppressed; an
// item left with nothing is not made.
func findingsItems(cfg *config.Config, ev eventsv1.Event, p eventsv1.FindingsChanged, inv map[string]*state.Namespace) ([]routed, []suppressed) {
	var out []routed
	var sup []suppressed
	for _, ns := range sortedNamespaces(inv) {
		n := inv[ns]
		run, ok := n.Digests[p.Digest]
		if !ok {
			continue
		}
		for i := range cfg.Routes {
			r := &cfg.Routes[i]
			if !r.MatchNamespace(ns, n.Labels) || !r.MatchCause(string(p.Cause)) {
				continue
			}
			base := state.Item{EventID: ev.ID, Namespace: ns, Digest: p.Digest, Image: p.Image, Cause: string(p.Cause), Workloads: run.Workloads, At: p.ChangedAt}
			if r.Has(config.KindNew) {
				it := base
				it.Kind = config.KindNew
				if p.Baseline {
					it.Counts = countsAtLeast(p.NewCounts, r.MinSeverity)
				}
				var ids []string
				it.Findings, ids = matching(r, p.New, ns)
				if len(ids) > 0 {
					sup = append(sup, suppressed{r.Name, ns, it.Kind, ids})
				}
				if len(it.Findings) > 0 || len(it.Counts) > 0 && !r.FiltersFindings() {
					it.Key = itemKey(it.Kind, ev.ID, p.Digest, ns)
					out = append(out, routed{r.Name, it})
				}
			}
			if r.Has(config.KindKEV) {
				it := base
				it.Kind = config.KindKEV
				var ids []string
				if it.Findings, ids = matching(r, p.KEVAdded, ns); len(ids) > 0 {
					sup = append(sup, suppressed{r.Name, ns, it.Kind, ids})
				}
				if len(it.Findings) > 0 {
					it.Key = itemKey(it.Kind, ev.ID, p.Digest, ns)
					out = append(out, routed{r.Name, it})
				}
			}
			if r.Has(config.KindResolved) {
				it := base
				it.Kind = config.KindResolved
				for _, f := range p.Resolved {
					if f.Severity == "critical" && len(it.Findings) < MaxListed {
						it.Findings = append(it.Findings, finding(f))
					}
				}
				if len(it.Findings) > 0 {
					it.Key = itemKey(it.Kind, ev.ID, p.Digest, ns)
					out = append(out, routed{r.Name, it})
				}
			}
		}
	}
	return out, sup
}

// matching returns the findings of fs route r notifies in namespace ns, at
// most MaxListed, and the ids of those it would notify but that are
// suppressed in ns.
func matching(r *config.Route, fs []eventsv1.ChangedFinding, ns string) (out []state.Finding, suppressedIDs []string) {
	for i := range fs {
		sf := finding(fs[i])
		if !matches(r, sf) {
			continue
		}
		if fs[i].SuppressedFor(ns) {
			suppressedIDs = append(suppressedIDs, sf.ID)
			continue
		}
		if len(out) < MaxListed {
			out = append(out, sf)
		}
	}
	return out, suppressedIDs
}

func countsAtLeast(c eventsv1.SeverityCounts, min string) map[string]int {
	out := map[string]int{}
	for sev, n := range map[string]int{"critical": c.Critical, "high": c.High, "medium": c.Medium, "low": c.Low, "negligible": c.Negligible, "unknown": c.Unknown} {
		if n > 0 && config.Rank(sev) >= config.Rank(min) {
			out[sev] = n
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// applyCriticals returns a digest's critical findings after the change,
// and false when the change was applied already (a replay).
func applyCriticals(c state.Criticals, p eventsv1.FindingsChanged) (state.Criticals, bool) {
	if p.ChangeID != 0 && p.ChangeID <= c.ChangeID {
		return c, false
	}
	c.ChangeID, c.Image = p.ChangeID, p.Image
	if p.Baseline {
		c.Count, c.Listed, c.Suppressed = p.NewCounts.Critical, nil, nil
		return c, true
	}
	c.Count += p.NewCounts.Critical - p.ResolvedCounts.Critical
	c.Count = max(c.Count, 0)
	gone := map[string]bool{}
	for _, f := range p.Resolved {
		gone[findingKey(finding(f))] = true
	}
	kept := c.Listed[:0:0]
	for _, f := range c.Listed {
		if !gone[findingKey(f)] {
			kept = append(kept, f)
		}
	}
	marks := map[string][]string{}
	for _, f := range c.Listed {
		if k := findingKey(f); !gone[k] && c.Suppressed[k] != nil {
			marks[k] = c.Suppressed[k]
		}
	}
	for _, f := range p.New {
		if f.Severity == "critical" && len(kept) < MaxListed {
			kept = append(kept, finding(f))
			mark(marks, f)
		}
	}
	listed := map[string]eventsv1.ChangedFinding{}
	for _, f := range p.KEVAdded {
		listed[findingKey(finding(f))] = f
	}
	for i := range kept {
		if f, ok := listed[findingKey(kept[i])]; ok {
			kept[i].KEV = true
			mark(marks, f) // the newer decision
		}
	}
	c.Listed, c.Suppressed = kept, marks
	if len(marks) == 0 {
		c.Suppressed = nil
	}
	return c, true
}

// mark records where f is suppressed (nowhere: no entry).
func mark(marks map[string][]string, f eventsv1.ChangedFinding) {
	k := findingKey(finding(f))
	switch {
	case f.SuppressedEverywhere:
		marks[k] = []string{state.SuppressedEverywhere}
	case len(f.SuppressedIn) > 0:
		marks[k] = slices.Clone(f.SuppressedIn)
	default:
		delete(marks, k)
	}
}

func findingKey(f state.Finding) string { return itemKey(f.ID, f.Package, f.Version) }

// namespaceOf summarises a snapshot: digest → workloads running it.
func namespaceOf(p eventsv1.InventorySnapshot) *state.Namespace {
	n := &state.Namespace{Name: p.Namespace, Labels: p.Labels, Digests: map[string]state.Running{}}
	for _, w := range p.Workloads {
		wl := w.Kind + "/" + w.Name
		for _, c := range w.Containers {
			r := n.Digests[c.Digest]
			if r.Image == "" {
				r.Image = c.Image
			}
			if len(r.Workloads) == 0 || r.Workloads[len(r.Workloads)-1] != wl {
				r.Workloads = append(r.Workloads, wl)
			}
			n.Digests[c.Digest] = r
		}
	}
	return n
}

// runningItems decides what a new snapshot says: for every digest with
// critical findings, the workloads that run it now and did not before.
func runningItems(cfg *config.Config, ev eventsv1.Event, prev, next *state.Namespace, crit func(digest string) state.Criticals) []routed {
	var out []routed
	digests := make([]string, 0, len(next.Digests))
	for d := range next.Digests {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		var added []string
		before := map[string]bool{}
		if prev != nil {
			for _, w := range prev.Digests[d].Workloads {
				before[w] = true
			}
		}
		for _, w := range next.Digests[d].Workloads {
			if !before[w] {
				added = append(added, w)
			}
		}
		if len(added) == 0 {
			continue
		}
		c := crit(d)
		if c.Count == 0 {
			continue
		}
		for i := range cfg.Routes {
			r := &cfg.Routes[i]
			if !r.Has(config.KindRunning) || !r.MatchNamespace(next.Name, next.Labels) {
				continue
			}
			it := state.Item{Key: itemKey(config.KindRunning, ev.ID, d, next.Name), EventID: ev.ID, Kind: config.KindRunning,
				Namespace: next.Name, Digest: d, Image: c.Image, Workloads: added, At: ev.Time}
			if it.Image == "" {
				it.Image = next.Digests[d].Image
			}
			for _, f := range c.Listed {
				if matches(r, f) && !c.SuppressedIn(findingKey(f), next.Name) {
					it.Findings = append(it.Findings, f)
				}
			}
			if r.FiltersFindings() && len(it.Findings) == 0 {
				continue
			}
			if unlisted := c.Count - len(c.Listed); unlisted > 0 {
				it.Counts = map[string]int{"critical": c.Count}
			}
			if len(it.Findings) == 0 && len(it.Counts) == 0 {
				continue // every critical suppressed in this namespace
			}
			out = append(out, routed{r.Name, it})
		}
	}
	return out
}

// failureItems records a failed scan and, when the namespace reached the
// threshold within the window, says so to its routes (and starts counting
// again).
func failureItems(cfg *config.Config, ev eventsv1.Event, p eventsv1.JobDone, f state.Failures, labels map[string]string, now time.Time) ([]routed, state.Failures) {
	window := time.Duration(cfg.ScanFailures.Window)
	events := map[string]time.Time{}
	for id, at := range f.Events {
		if now.Sub(at) <= window {
			events[id] = at
		}
	}
	events[ev.ID] = ev.Time
	f.Events = events
	if len(events) < cfg.ScanFailures.Threshold {
		return nil, f
	}
	f.Events = nil
	var out []routed
	for i := range cfg.Routes {
		r := &cfg.Routes[i]
		if !r.Has(config.KindScanFailures) || !r.MatchNamespace(p.Namespace, labels) {
			continue
		}
		out = append(out, routed{r.Name, state.Item{Key: itemKey(config.KindScanFailures, ev.ID, p.Namespace), EventID: ev.ID,
			Kind: config.KindScanFailures, Namespace: p.Namespace, Digest: p.Digest, Image: p.Image,
			Failures: len(events), Reason: p.Reason, At: ev.Time}})
	}
	return out, f
}

func sortedNamespaces(inv map[string]*state.Namespace) []string {
	out := make([]string, 0, len(inv))
	for ns := range inv {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}
