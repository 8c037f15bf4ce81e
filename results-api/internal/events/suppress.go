package events

import (
	"strings"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// vulnScope is where the decisions naming one vulnerability id apply:
// cluster-wide, and in which namespaces.
type vulnScope struct {
	cluster    bool
	namespaces map[string]bool
}

// markSuppressed marks the listed new and KEV-added findings of p (c's, in
// the same order) with where set suppresses them now, as a read decides
// them (exception.Set.Decide): SuppressedEverywhere when a cluster-wide
// decision applies, else SuppressedIn with each namespace running the
// digest whose own view (its decisions and the cluster's) suppresses it.
// Only findings whose id an active exception or a suppressing imported
// statement names are decided (exception.Set.SuppressingVulns, as counting
// does), and runsIn is read once, only when a namespaced one does: a
// change without such findings costs no statement. Resolved findings are
// never marked (nobody is told about them as a risk).
func markSuppressed(p *eventsv1.FindingsChanged, c report.Change, set *exception.Set, runsIn store.RunsIn) error {
	if set == nil || p.Baseline || len(p.New)+len(p.KEVAdded) == 0 {
		return nil
	}
	scopes := map[string]*vulnScope{}
	for _, v := range set.SuppressingVulns() {
		sc := scopes[v.VulnID]
		if sc == nil {
			sc = &vulnScope{namespaces: map[string]bool{}}
			scopes[v.VulnID] = sc
		}
		if v.Namespace == "" {
			sc.cluster = true
		} else {
			sc.namespaces[v.Namespace] = true
		}
	}
	if len(scopes) == 0 {
		return nil
	}
	var (
		running []string
		loaded  bool
	)
	mark := func(pf *eventsv1.ChangedFinding, cf *report.ChangedFinding) error {
		sc := scopes[strings.ToUpper(cf.ID)]
		if sc == nil {
			return nil
		}
		f := exception.Finding{Digest: c.Digest, VulnID: cf.ID, PURL: cf.PURL, FixedIn: cf.FixedIn}
		if sc.cluster && set.Decide(f, nil) != nil {
			pf.SuppressedEverywhere = true
			return nil
		}
		if len(sc.namespaces) == 0 {
			return nil
		}
		if !loaded {
			var err error
			if running, err = runsIn(); err != nil {
				return err
			}
			loaded = true
		}
		for _, ns := range running {
			if len(pf.SuppressedIn) == eventsv1.MaxSuppressedIn {
				break
			}
			if sc.namespaces[ns] && set.Decide(f, []string{ns}) != nil {
				pf.SuppressedIn = append(pf.SuppressedIn, ns)
			}
		}
		return nil
	}
	for i := range p.New {
		if err := mark(&p.New[i], &c.New[i]); err != nil {
			return err
		}
	}
	for i := range p.KEVAdded {
		if err := mark(&p.KEVAdded[i], &c.KEVAdded[i]); err != nil {
			return err
		}
	}
	return nil
}
