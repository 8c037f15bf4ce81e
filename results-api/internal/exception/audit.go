package exception

import (
	"context"
	"slices"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// AuditState is what the audit says of one exception.
type AuditState string

// Audit states, worst first. An exception is in exactly one.
const (
	AuditExpired       AuditState = "expired"        // expiresAt has passed
	AuditInvalidExpiry AuditState = "invalid_expiry" // expiresAt beyond the maximum lifetime
	AuditLapsedOnFix   AuditState = "lapsed_on_fix"  // expiredOnFix, and every finding it covers has a fix
	AuditStale         AuditState = "stale"          // covers no finding of any report (in the view)
	AuditExpiring      AuditState = "expiring"       // applies, and expires within ExpiringWithin
	AuditActive        AuditState = "active"         // applies
)

// AuditStates lists every state, in the order above.
var AuditStates = []AuditState{AuditExpired, AuditInvalidExpiry, AuditLapsedOnFix, AuditStale, AuditExpiring, AuditActive}

// ExpiringWithin is how close to expiry an exception is "expiring".
const ExpiringWithin = 7 * 24 * time.Hour

// AuditEntry is one exception's audit.
type AuditEntry struct {
	*Exception
	State AuditState
	// Covered counts the findings its selectors select (in its namespace,
	// for a namespaced one); Applied those it suppresses (a fix makes an
	// expiredOnFix exception lapse).
	Covered, Applied int
}

// Located is a finding with the namespaces its image runs in.
type Located struct {
	Finding
	Namespaces []string
}

// Audit judges every exception of s against the findings. A namespaced
// exception covers only findings of images running in its namespace; a
// cluster one every finding given. Imported statements are not audited
// one by one: their documents are (Set.Documents).
func (s *Set) Audit(findings []Located) []AuditEntry {
	now := s.policy.now()
	byVuln := map[string][]int{}
	for i, f := range findings {
		byVuln[upper(f.VulnID)] = append(byVuln[upper(f.VulnID)], i)
	}
	out := make([]AuditEntry, 0, s.Len())
	for _, e := range s.All() {
		if e.VEX != nil {
			continue
		}
		a := AuditEntry{Exception: e}
		for _, id := range e.Vulnerabilities {
			for _, i := range byVuln[id] {
				f := &findings[i]
				if !e.Covers(f.Finding) || (!e.Cluster() && !slices.Contains(f.Namespaces, e.Namespace)) {
					continue
				}
				a.Covered++
				if !e.LapsedOnFix(f.Finding) {
					a.Applied++
				}
			}
		}
		switch st := e.State(now, s.policy.MaxLifetime); {
		case st == Expired:
			a.State = AuditExpired
		case st == TooLong:
			a.State = AuditInvalidExpiry
		case a.Covered == 0:
			a.State = AuditStale
		case a.Applied == 0:
			a.State = AuditLapsedOnFix
		case e.ExpiresAt.Sub(now) <= ExpiringWithin:
			a.State = AuditExpiring
		default:
			a.State = AuditActive
		}
		out = append(out, a)
	}
	return out
}

// Gather reads the findings of every vulnerability id of s from st, with
// the namespaces their images run in, narrowed to namespaces unless all:
// a finding of an image that runs in none of them is left out.
func (s *Set) Gather(ctx context.Context, st *store.Store, all bool, namespaces []string) ([]Located, error) {
	var ids []string
	for _, e := range s.All() {
		if e.VEX == nil {
			ids = append(ids, e.Vulnerabilities...)
		}
	}
	slices.Sort(ids)
	keys, err := st.FindingsOfVulns(ctx, slices.Compact(ids))
	if err != nil {
		return nil, err
	}
	digests := make([]string, 0, len(keys))
	for _, k := range keys {
		digests = append(digests, k.Digest)
	}
	slices.Sort(digests)
	running, err := st.NamespacesOfDigests(ctx, slices.Compact(digests))
	if err != nil {
		return nil, err
	}
	out := make([]Located, 0, len(keys))
	for _, k := range keys {
		ns := running[k.Digest]
		if !all {
			ns = slices.DeleteFunc(slices.Clone(ns), func(n string) bool { return !slices.Contains(namespaces, n) })
			if len(ns) == 0 {
				continue
			}
		}
		out = append(out, Located{Finding: Finding{Digest: k.Digest, VulnID: k.VulnID, PURL: k.PURL, FixedIn: k.FixedIn}, Namespaces: ns})
	}
	return out, nil
}
