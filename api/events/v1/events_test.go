package v1_test

import (
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// TestSubjectsPinned fails when a subject, type, source or the stream's
// settings change: other tools subscribe to these names.
func TestSubjectsPinned(t *testing.T) {
	want := map[string]string{
		"dev.crowsnest.image.needed.v1":     "crowsnest.image.needed",
		"dev.crowsnest.job.done.v1":         "crowsnest.job.done",
		"dev.crowsnest.report.stored.v1":    "crowsnest.report.stored",
		"dev.crowsnest.report.deleted.v1":   "crowsnest.report.deleted",
		"dev.crowsnest.findings.changed.v1": "crowsnest.findings.changed",
		"dev.crowsnest.vulndb.updated.v1":   "crowsnest.vulndb.updated",
		"dev.crowsnest.rematch.done.v1":     "crowsnest.rematch.done",
	}
	consts := map[string]string{
		eventsv1.TypeImageNeeded:   eventsv1.SubjectImageNeeded,
		eventsv1.TypeJobDone:       eventsv1.SubjectJobDone,
		eventsv1.TypeReportStored:  eventsv1.SubjectReportStored,
		eventsv1.TypeReportDeleted: eventsv1.SubjectReportDeleted,

		eventsv1.TypeFindingsChanged: eventsv1.SubjectFindingsChanged,
		eventsv1.TypeVulnDBUpdated:   eventsv1.SubjectVulnDBUpdated,
		eventsv1.TypeRematchDone:     eventsv1.SubjectRematchDone,
	}
	if len(consts) != len(want) {
		t.Fatalf("%d types declared, the contract has %d", len(consts), len(want))
	}
	for typ, subject := range want {
		if consts[typ] != subject {
			t.Errorf("type %s maps to subject %q in the constants, the contract says %q", typ, consts[typ], subject)
		}
		got, ok := eventsv1.SubjectFor(typ)
		if !ok || got != subject {
			t.Errorf("SubjectFor(%s) = %q, %v; want %q", typ, got, ok, subject)
		}
	}
	if _, ok := eventsv1.SubjectFor("dev.crowsnest.unknown.v1"); ok {
		t.Error("SubjectFor accepted an unknown type")
	}
	if eventsv1.StreamName != "CROWSNEST" || eventsv1.StreamSubjects != "crowsnest.>" || eventsv1.SpecVersion != "1.0" {
		t.Errorf("stream %q subjects %q specversion %q changed", eventsv1.StreamName, eventsv1.StreamSubjects, eventsv1.SpecVersion)
	}
	if eventsv1.SourceOperator != "crowsnest/operator" || eventsv1.SourceResultsAPI != "crowsnest/results-api" || eventsv1.SourceMatcher != "crowsnest/matcher" {
		t.Errorf("sources changed: %q %q %q", eventsv1.SourceOperator, eventsv1.SourceResultsAPI, eventsv1.SourceMatcher)
	}
	cfg := eventsv1.StreamConfig()
	if cfg.Name != eventsv1.StreamName || len(cfg.Subjects) != 1 || cfg.Subjects[0] != eventsv1.StreamSubjects || cfg.Duplicates != 30*time.Minute {
		t.Errorf("stream config changed: %+v", cfg)
	}
}

// TestIDDeterministic checks the Nats-Msg-Id rule: same facts, same id;
// different facts or type, different id.
func TestIDDeterministic(t *testing.T) {
	a := eventsv1.ID(eventsv1.TypeJobDone, "uid-1")
	if a != eventsv1.ID(eventsv1.TypeJobDone, "uid-1") {
		t.Fatal("same inputs gave two ids")
	}
	if a == eventsv1.ID(eventsv1.TypeJobDone, "uid-2") || a == eventsv1.ID(eventsv1.TypeImageNeeded, "uid-1") {
		t.Fatal("different inputs gave the same id")
	}
	// Parts are separated, so ("ab","c") and ("a","bc") differ.
	if eventsv1.ID("t", "ab", "c") == eventsv1.ID("t", "a", "bc") {
		t.Fatal("part boundaries are not part of the id")
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.FixedZone("x", 3600))
	ev, err := eventsv1.New(eventsv1.SourceOperator, eventsv1.TypeJobDone, "id", "sha256:ab", at, eventsv1.JobDone{Digest: "sha256:ab", Outcome: eventsv1.OutcomeSucceeded})
	if err != nil {
		t.Fatal(err)
	}
	if ev.SpecVersion != "1.0" || ev.DataContentType != "application/json" || !ev.Time.Equal(at) || ev.Time.Location() != time.UTC {
		t.Fatalf("envelope: %+v", ev)
	}
	var got eventsv1.JobDone
	if err := ev.Decode(&got); err != nil || got.Digest != "sha256:ab" || got.Outcome != eventsv1.OutcomeSucceeded {
		t.Fatalf("decode: %+v %v", got, err)
	}
	if err := (eventsv1.Event{Type: "x", Data: []byte("{")}).Decode(&got); err == nil {
		t.Fatal("bad data decoded without an error")
	}
}
