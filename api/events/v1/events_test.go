package v1_test

import (
	"testing"
	"time"

	v1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
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
		v1.TypeImageNeeded:   v1.SubjectImageNeeded,
		v1.TypeJobDone:       v1.SubjectJobDone,
		v1.TypeReportStored:  v1.SubjectReportStored,
		v1.TypeReportDeleted: v1.SubjectReportDeleted,

		v1.TypeFindingsChanged: v1.SubjectFindingsChanged,
		v1.TypeVulnDBUpdated:   v1.SubjectVulnDBUpdated,
		v1.TypeRematchDone:     v1.SubjectRematchDone,
	}
	if len(consts) != len(want) {
		t.Fatalf("%d types declared, the contract has %d", len(consts), len(want))
	}
	for typ, subject := range want {
		if consts[typ] != subject {
			t.Errorf("type %s maps to subject %q in the constants, the contract says %q", typ, consts[typ], subject)
		}
		got, ok := v1.SubjectFor(typ)
		if !ok || got != subject {
			t.Errorf("SubjectFor(%s) = %q, %v; want %q", typ, got, ok, subject)
		}
	}
	if _, ok := v1.SubjectFor("dev.crowsnest.unknown.v1"); ok {
		t.Error("SubjectFor accepted an unknown type")
	}
	if v1.StreamName != "CROWSNEST" || v1.StreamSubjects != "crowsnest.>" || v1.SpecVersion != "1.0" {
		t.Errorf("stream %q subjects %q specversion %q changed", v1.StreamName, v1.StreamSubjects, v1.SpecVersion)
	}
	if v1.SourceOperator != "crowsnest/operator" || v1.SourceResultsAPI != "crowsnest/results-api" || v1.SourceMatcher != "crowsnest/matcher" {
		t.Errorf("sources changed: %q %q %q", v1.SourceOperator, v1.SourceResultsAPI, v1.SourceMatcher)
	}
	cfg := v1.StreamConfig()
	if cfg.Name != v1.StreamName || len(cfg.Subjects) != 1 || cfg.Subjects[0] != v1.StreamSubjects || cfg.Duplicates != 30*time.Minute {
		t.Errorf("stream config changed: %+v", cfg)
	}
}

// TestIDDeterministic checks the Nats-Msg-Id rule: same facts, same id;
// different facts or type, different id.
func TestIDDeterministic(t *testing.T) {
	a := v1.ID(v1.TypeJobDone, "uid-1")
	if a != v1.ID(v1.TypeJobDone, "uid-1") {
		t.Fatal("same inputs gave two ids")
	}
	if a == v1.ID(v1.TypeJobDone, "uid-2") || a == v1.ID(v1.TypeImageNeeded, "uid-1") {
		t.Fatal("different inputs gave the same id")
	}
	// Parts are separated, so ("ab","c") and ("a","bc") differ.
	if v1.ID("t", "ab", "c") == v1.ID("t", "a", "bc") {
		t.Fatal("part boundaries are not part of the id")
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.FixedZone("x", 3600))
	ev, err := v1.New(v1.SourceOperator, v1.TypeJobDone, "id", "sha256:ab", at, v1.JobDone{Digest: "sha256:ab", Outcome: v1.OutcomeSucceeded})
	if err != nil {
		t.Fatal(err)
	}
	if ev.SpecVersion != "1.0" || ev.DataContentType != "application/json" || !ev.Time.Equal(at) || ev.Time.Location() != time.UTC {
		t.Fatalf("envelope: %+v", ev)
	}
	var got v1.JobDone
	if err := ev.Decode(&got); err != nil || got.Digest != "sha256:ab" || got.Outcome != v1.OutcomeSucceeded {
		t.Fatalf("decode: %+v %v", got, err)
	}
	if err := (v1.Event{Type: "x", Data: []byte("{")}).Decode(&got); err == nil {
		t.Fatal("bad data decoded without an error")
	}
}
