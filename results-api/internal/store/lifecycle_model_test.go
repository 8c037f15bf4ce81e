package store_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// lifecycleModel is the finding lifecycle's contract in plain Go, one
// entry per key a digest's reports ever held: a key is first seen by the
// first report that holds it; a report that lacks an open key resolves it
// at its store time (its severity and KEV listing as last seen); a report
// that holds a resolved key opens it again with its first sighting kept;
// the severity is the worst of the key's findings in the report that holds
// it; a KEV listing starts with the first report that lists it (kept while
// listed, also over a resolution) and ends with one that does not.
type lifecycleModel map[report.FindingKey]store.LifecycleEntry

func (m lifecycleModel) put(at time.Time, fs []report.Finding) {
	held := map[report.FindingKey]bool{}
	for _, f := range fs {
		k := f.Key()
		e, ok := m[k]
		if !ok {
			e = store.LifecycleEntry{FindingKey: k, Seen: report.Seen{FirstSeen: at}}
		}
		if !held[k] {
			e.Severity, e.ResolvedAt = f.Severity, time.Time{}
			if !anyKEV(fs, k) {
				e.Seen.KEVSince = time.Time{}
			} else if e.Seen.KEVSince.IsZero() {
				e.Seen.KEVSince = at
			}
		}
		e.Severity = max(e.Severity, f.Severity)
		held[k] = true
		m[k] = e
	}
	for k, e := range m {
		if !held[k] && e.ResolvedAt.IsZero() {
			e.ResolvedAt = at
			m[k] = e
		}
	}
}

func anyKEV(fs []report.Finding, k report.FindingKey) bool {
	for _, f := range fs {
		if f.Key() == k && f.Risk.KEV {
			return true
		}
	}
	return false
}

// TestLifecycleFollowsModel stores random report histories (keys from a
// small set so that they come and go, listed twice at different
// severities, KEV-listed on some copies only, lists repeated unchanged)
// and checks after every report that FindingLifecycle and each findings
// row's sightings are the model's. The store keeps an open key's lifecycle
// in its findings rows and only the resolved keys in finding_lifecycle
// (migration 00012); this is what must hold across that split.
func TestLifecycleFollowsModel(t *testing.T) {
	st, _ := open(t)
	rng := rand.New(rand.NewPCG(7, 30))
	for d := 1; d <= 6; d++ {
		model := lifecycleModel{}
		var fs []report.Finding
		for step := range 10 {
			at := t0.Add(time.Duration(step) * report.Day).Add(time.Duration(rng.IntN(1e6)) * time.Microsecond)
			if step == 0 || rng.IntN(5) > 0 { // else: the same list again
				fs = nil
				for range rng.IntN(12) {
					f := finding(fmt.Sprintf("CVE-%d", rng.IntN(6)), report.Severity(rng.IntN(6)), fmt.Sprintf("p%d", rng.IntN(2)), "")
					f.Risk.KEV = rng.IntN(3) == 0
					fs = append(fs, f)
				}
			}
			r := newReport(d, "app", at.Add(-time.Minute), fmt.Sprintf("d%d-r%d", d, step), fs...)
			r.StoredAt = at
			put(t, st, r)
			model.put(at, fs)
			checkLifecycle(t, st, d, step, model)
		}
	}
}

func checkLifecycle(t *testing.T, st *store.Store, d, step int, model lifecycleModel) {
	t.Helper()
	es, err := st.FindingLifecycle(ctx(t), digest(d))
	if err != nil {
		t.Fatal(err)
	}
	got := lifecycleModel{}
	for _, e := range es {
		if _, dup := got[e.FindingKey]; dup {
			t.Fatalf("digest %d report %d: key %v listed twice: %+v", d, step, e.FindingKey, es)
		}
		got[e.FindingKey] = e
	}
	if !reflect.DeepEqual(got, model) {
		t.Fatalf("digest %d report %d: lifecycle\n%+v\nwant\n%+v", d, step, got, model)
	}
	page, err := st.GetReport(ctx(t), digest(d), store.FindingQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range page.FindingList {
		if e := model[f.Key()]; f.Seen != e.Seen || !e.ResolvedAt.IsZero() {
			t.Fatalf("digest %d report %d: findings row %v seen %+v, want %+v (open)", d, step, f.Key(), f.Seen, e)
		}
	}
}
