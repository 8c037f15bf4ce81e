package events

import (
	"fmt"
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/rematch"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/vulndb"
)

func event(t *testing.T, n int) eventsv1.Event {
	t.Helper()
	b := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Hour)
	ev, err := VulnDBUpdated(vulndb.DB{ID: fmt.Sprint(n), Built: b, Schema: "v6.1.4", Checksum: "sha256:00", Source: "upload", Imported: b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestOutboxSurvivesReopen: what was added and not done is pending after a
// reopen, in order; an id seen recently is refused; the file is bounded.
func TestOutboxSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	o, err := OpenOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if added, _, err := o.Add(event(t, i)); err != nil || !added {
			t.Fatalf("add %d: %v %v", i, added, err)
		}
	}
	if added, _, _ := o.Add(event(t, 1)); added {
		t.Fatal("the same event was queued twice")
	}
	if err := o.Done(event(t, 0).ID); err != nil {
		t.Fatal(err)
	}
	o, err = OpenOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := o.Pending()
	if len(p) != 2 || p[0].ID != event(t, 1).ID || p[1].ID != event(t, 2).ID {
		t.Fatalf("pending after reopen: %v", p)
	}
	if added, _, _ := o.Add(event(t, 0)); added || !o.Has(event(t, 0).ID) {
		t.Fatal("a published event was queued again after a reopen")
	}
	dropped := 0
	for i := 3; i < MaxPending+5; i++ {
		_, d, err := o.Add(event(t, i))
		if err != nil {
			t.Fatal(err)
		}
		dropped += d
	}
	if o.Len() != MaxPending || dropped != 4 { // 2 pending + MaxPending+2 added
		t.Fatalf("%d pending, %d dropped", o.Len(), dropped)
	}
}

// TestEventIDs: the same activation or pass always gives the same id, a
// different one another, and both pass the consumers' validation.
func TestEventIDs(t *testing.T) {
	a, b := event(t, 1), event(t, 1)
	if a.ID != b.ID || a.ID == event(t, 2).ID {
		t.Fatal("vulndb.updated ids are not deterministic per DB")
	}
	start := time.Now().Add(-time.Minute).UTC()
	res := rematch.Result{DB: rematch.DB{Built: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Schema: "v6.1.4"},
		Counts: rematch.Counts{Total: 3, Changed: 1, Unchanged: 1, Failed: 1}, StartedAt: start, FinishedAt: start.Add(time.Minute), Finished: true}
	d1, err := RematchDone(res)
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := RematchDone(res)
	res.StartedAt = res.StartedAt.Add(time.Second)
	d3, _ := RematchDone(res)
	if d1.ID != d2.ID || d1.ID == d3.ID {
		t.Fatal("rematch.done ids are not deterministic per pass")
	}
	if err := eventsv1.Validate(eventsv1.SubjectRematchDone, d1, time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	res.Finished = false
	if _, err := RematchDone(res); err == nil {
		t.Fatal("an unfinished pass made an event")
	}
}
