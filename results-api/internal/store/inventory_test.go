package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

func inv(ns string, at time.Time, id string, entries ...store.InventoryEntry) store.Inventory {
	return store.Inventory{Namespace: ns, Time: at, EventID: id, Entries: entries, Labels: map[string]string{"team": ns}}
}

func entry(kind, name, container string, n, pods int) store.InventoryEntry {
	return store.InventoryEntry{Kind: kind, Name: name, Container: container, Digest: digest(n), Image: "img" + name, Pods: pods}
}

func apply(t *testing.T, st *store.Store, i store.Inventory) bool {
	t.Helper()
	ok, err := st.ApplyInventory(ctx(t), i)
	if err != nil {
		t.Fatalf("apply %s: %v", i.Namespace, err)
	}
	return ok
}

// rows renders the stored inventory as "ns kind/name container digest#n pods".
func rows(t *testing.T, st *store.Store, ns string) map[string]int {
	t.Helper()
	rs, err := st.InventoryOf(ctx(t), ns)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rs {
		out[r.Namespace+" "+r.Kind+"/"+r.Name+" "+r.Container+" "+r.Digest[len(r.Digest)-2:]] = r.Pods
	}
	return out
}

func runtime(t *testing.T, st *store.Store, n int) store.DigestRuntime {
	t.Helper()
	r, err := st.Runtime(ctx(t), digest(n))
	if err != nil {
		t.Fatalf("runtime of %d: %v", n, err)
	}
	return r
}

func sameRows(t *testing.T, got, want map[string]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Fatalf("rows %v, want %v", got, want)
		}
	}
}

func TestApplyInventoryReplacesNamespace(t *testing.T) {
	st, _ := open(t)
	t1, t2, t3 := t0, t0.Add(time.Minute), t0.Add(2*time.Minute)
	if !apply(t, st, inv("a", t1, "e1", entry("Deployment", "web", "nginx", 1, 3), entry("Deployment", "web", "sidecar", 2, 3))) {
		t.Fatal("first inventory not applied")
	}
	apply(t, st, inv("b", t1, "e2", entry("StatefulSet", "db", "pg", 2, 1)))
	sameRows(t, rows(t, st, "a"), map[string]int{"a Deployment/web nginx 01": 3, "a Deployment/web sidecar 02": 3})

	// Replace: digest 1 goes, 3 comes; 2 stays (and runs in b too).
	apply(t, st, inv("a", t2, "e3", entry("Deployment", "web", "sidecar", 2, 2), entry("Job", "batch", "run", 3, 1)))
	sameRows(t, rows(t, st, ""), map[string]int{"a Deployment/web sidecar 02": 2, "a Job/batch run 03": 1, "b StatefulSet/db pg 02": 1})
	if r := runtime(t, st, 1); r.NotRunningSince == nil || !r.NotRunningSince.Equal(t2) || !r.FirstSeen.Equal(t1) || !r.LastSeenRunning.Equal(t1) {
		t.Fatalf("digest 1 after it stopped: %+v, want not running since %s", r, t2)
	}
	if r := runtime(t, st, 2); r.NotRunningSince != nil || !r.FirstSeen.Equal(t1) || !r.LastSeenRunning.Equal(t2) {
		t.Fatalf("digest 2: %+v", r)
	}

	// Empty namespace a: 3 stops, 2 keeps running in b.
	apply(t, st, inv("a", t3, "e4"))
	sameRows(t, rows(t, st, ""), map[string]int{"b StatefulSet/db pg 02": 1})
	if r := runtime(t, st, 3); r.NotRunningSince == nil || !r.NotRunningSince.Equal(t3) {
		t.Fatalf("digest 3: %+v", r)
	}
	if r := runtime(t, st, 2); r.NotRunningSince != nil {
		t.Fatalf("digest 2 still runs in b: %+v", r)
	}
	ns, err := st.Namespaces(ctx(t))
	if err != nil || len(ns) != 2 || ns[0] != "a" || ns[1] != "b" {
		t.Fatalf("namespaces %v, %v", ns, err)
	}
	// Running again: not_running_since clears, first_seen stays.
	apply(t, st, inv("a", t3.Add(time.Minute), "e5", entry("Pod", "p", "c", 1, 1)))
	if r := runtime(t, st, 1); r.NotRunningSince != nil || !r.FirstSeen.Equal(t1) || !r.LastSeenRunning.Equal(t3.Add(time.Minute)) {
		t.Fatalf("digest 1 back: %+v", r)
	}
}

func TestApplyInventoryIgnoresOlderAndRedelivered(t *testing.T) {
	st, _ := open(t)
	newer := inv("a", t0.Add(time.Minute), "new", entry("Deployment", "web", "nginx", 2, 1))
	if !apply(t, st, newer) {
		t.Fatal("not applied")
	}
	if apply(t, st, inv("a", t0, "old", entry("Deployment", "web", "nginx", 1, 1))) {
		t.Fatal("an older inventory was applied")
	}
	if apply(t, st, newer) {
		t.Fatal("a redelivered inventory was applied again")
	}
	sameRows(t, rows(t, st, "a"), map[string]int{"a Deployment/web nginx 02": 1})
	if _, err := st.Runtime(ctx(t), digest(1)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("digest of the ignored inventory: %v, want not found", err)
	}
}

func TestApplyInventorySumsRepeatedEntries(t *testing.T) {
	st, _ := open(t)
	apply(t, st, inv("a", t0, "e", entry("Deployment", "web", "nginx", 1, 2), entry("Deployment", "web", "nginx", 1, 3)))
	sameRows(t, rows(t, st, "a"), map[string]int{"a Deployment/web nginx 01": 5})
}
