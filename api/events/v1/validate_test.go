package v1_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

const digest = "sha256:3f1e000000000000000000000000000000000000000000000000000000000001"

var now = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// valid builds a valid event for subject, as its producer publishes it.
func valid(t *testing.T, subject string) eventsv1.Event {
	t.Helper()
	var typ, source string
	var payload any
	switch subject {
	case eventsv1.SubjectImageNeeded:
		typ, source = eventsv1.TypeImageNeeded, eventsv1.SourceOperator
		payload = eventsv1.ImageNeeded{Digest: digest, Image: "demo@" + digest, Reason: eventsv1.NeedNew, Attempt: 1}
	case eventsv1.SubjectJobDone:
		typ, source = eventsv1.TypeJobDone, eventsv1.SourceOperator
		payload = eventsv1.JobDone{Digest: digest, Image: "demo@" + digest, Outcome: eventsv1.OutcomeSucceeded, Attempt: 1}
	case eventsv1.SubjectReportStored:
		typ, source = eventsv1.TypeReportStored, eventsv1.SourceResultsAPI
		payload = eventsv1.ReportStored{Digest: digest, Image: "demo@" + digest, ScannedAt: now}
	case eventsv1.SubjectReportDeleted:
		typ, source = eventsv1.TypeReportDeleted, eventsv1.SourceResultsAPI
		payload = eventsv1.ReportDeleted{Digest: digest, Image: "demo@" + digest}
	case eventsv1.SubjectFindingsChanged:
		typ, source = eventsv1.TypeFindingsChanged, eventsv1.SourceResultsAPI
		payload = eventsv1.FindingsChanged{ChangeID: 7, Digest: digest, Image: "demo@" + digest, Cause: eventsv1.CauseRematch,
			ChangedAt: now, NewCounts: eventsv1.SeverityCounts{High: 2},
			New: []eventsv1.ChangedFinding{{ID: "CVE-2026-1", Severity: "high", Package: eventsv1.ChangedPackage{Name: "musl", Version: "1.2.5", Type: "apk"}},
				{ID: "CVE-2026-2", Severity: "high", Package: eventsv1.ChangedPackage{Name: "musl", Version: "1.2.5", Type: "apk"},
					SuppressedIn: []string{"team-a"}}}}
	case eventsv1.SubjectVulnDBUpdated:
		typ, source = eventsv1.TypeVulnDBUpdated, eventsv1.SourceMatcher
		payload = eventsv1.VulnDBUpdated{Built: now.Add(-time.Hour), Schema: "v6.0.2", Checksum: "sha256:ab", Source: "import"}
	case eventsv1.SubjectRematchDone:
		typ, source = eventsv1.TypeRematchDone, eventsv1.SourceMatcher
		payload = eventsv1.RematchDone{DBBuilt: now.Add(-time.Hour), ReportsTotal: 3, ReportsChanged: 1, ReportsUnchanged: 2,
			StartedAt: now.Add(-time.Minute), FinishedAt: now}
	case eventsv1.SubjectInventorySnapshot:
		typ, source = eventsv1.TypeInventorySnapshot, eventsv1.SourceOperator
		payload = eventsv1.InventorySnapshot{Namespace: "shop", Labels: map[string]string{"team": "a"}, Workloads: []eventsv1.InventoryWorkload{
			{Kind: eventsv1.KindDeployment, Name: "web", Containers: []eventsv1.InventoryContainer{{Name: "nginx", Image: "nginx:1.27", Digest: digest, Pods: 3}}}}}
	default:
		t.Fatalf("no valid event for %s", subject)
	}
	ev, err := eventsv1.New(source, typ, eventsv1.ID(typ, "uid"), digest, now, payload)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestValidateAcceptsWhatProducersPublish(t *testing.T) {
	for _, subject := range []string{eventsv1.SubjectImageNeeded, eventsv1.SubjectJobDone, eventsv1.SubjectReportStored, eventsv1.SubjectReportDeleted,
		eventsv1.SubjectFindingsChanged, eventsv1.SubjectVulnDBUpdated, eventsv1.SubjectRematchDone, eventsv1.SubjectInventorySnapshot} {
		ev := valid(t, subject)
		if err := eventsv1.Validate(subject, ev, now, eventsv1.DefaultMaxSkew); err != nil {
			t.Errorf("%s: %v", subject, err)
		}
		// Within the tolerated skew and age, and without datacontenttype
		// (CloudEvents' JSON format defaults it).
		for _, at := range []time.Time{now.Add(eventsv1.DefaultMaxSkew), now.Add(-eventsv1.MaxEventAge)} {
			ev.Time, ev.DataContentType = at, ""
			if err := eventsv1.Validate(subject, ev, now, eventsv1.DefaultMaxSkew); err != nil {
				t.Errorf("%s at %s: %v", subject, at, err)
			}
		}
	}
}

func TestValidateRejects(t *testing.T) {
	data := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name    string
		subject string
		edit    func(*eventsv1.Event)
		reason  string
	}{
		{"unknown subject", "crowsnest.findings.removed", nil, eventsv1.ReasonSubject},
		{"no subject", "", nil, eventsv1.ReasonSubject},
		{"specversion 0.3", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.SpecVersion = "0.3" }, eventsv1.ReasonSpecVersion},
		{"no specversion", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.SpecVersion = "" }, eventsv1.ReasonSpecVersion},
		{"type of another subject", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.Type = eventsv1.TypeImageNeeded }, eventsv1.ReasonType},
		{"deleted type on stored", eventsv1.SubjectReportStored, func(e *eventsv1.Event) { e.Type = eventsv1.TypeReportDeleted }, eventsv1.ReasonType},
		{"unknown type", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.Type = "dev.crowsnest.job.done.v2" }, eventsv1.ReasonType},
		{"job.done from results-api", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.Source = eventsv1.SourceResultsAPI }, eventsv1.ReasonSource},
		{"image.needed from elsewhere", eventsv1.SubjectImageNeeded, func(e *eventsv1.Event) { e.Source = "attacker" }, eventsv1.ReasonSource},
		{"report.deleted from operator", eventsv1.SubjectReportDeleted, func(e *eventsv1.Event) { e.Source = eventsv1.SourceOperator }, eventsv1.ReasonSource},
		{"report.stored without source", eventsv1.SubjectReportStored, func(e *eventsv1.Event) { e.Source = "" }, eventsv1.ReasonSource},
		{"empty id", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.ID = "" }, eventsv1.ReasonID},
		{"id too long", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.ID = strings.Repeat("a", eventsv1.MaxIDLength+1) }, eventsv1.ReasonID},
		{"id with a newline", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.ID = "abc\nlevel=error" }, eventsv1.ReasonID},
		{"id with a space", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.ID = "a b" }, eventsv1.ReasonID},
		{"zero time", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.Time = time.Time{} }, eventsv1.ReasonTime},
		{"year 9999", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.Time = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) }, eventsv1.ReasonTime},
		{"just beyond the skew", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.Time = now.Add(eventsv1.DefaultMaxSkew + time.Second) }, eventsv1.ReasonTime},
		{"older than 30 days", eventsv1.SubjectReportDeleted, func(e *eventsv1.Event) { e.Time = now.Add(-eventsv1.MaxEventAge - time.Second) }, eventsv1.ReasonTime},
		{"year 1970", eventsv1.SubjectImageNeeded, func(e *eventsv1.Event) { e.Time = time.Unix(0, 0) }, eventsv1.ReasonTime},
		{"no data", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.Data = nil }, eventsv1.ReasonPayload},
		{"null data", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.Data = json.RawMessage("null") }, eventsv1.ReasonPayload},
		{"data of the wrong shape", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.Data = json.RawMessage(`{"digest":"` + digest + `","attempt":"one"}`) }, eventsv1.ReasonPayload},
		{"data not an object", eventsv1.SubjectReportDeleted, func(e *eventsv1.Event) { e.Data = json.RawMessage(`"` + digest + `"`) }, eventsv1.ReasonPayload},
		{"no digest", eventsv1.SubjectReportDeleted, func(e *eventsv1.Event) { e.Data = data(eventsv1.ReportDeleted{Image: "x"}) }, eventsv1.ReasonPayload},
		{"uppercase digest", eventsv1.SubjectReportDeleted, func(e *eventsv1.Event) { e.Data = data(eventsv1.ReportDeleted{Digest: strings.ToUpper(digest)}) }, eventsv1.ReasonPayload},
		{"short digest", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.Data = data(eventsv1.JobDone{Digest: digest[:70]}) }, eventsv1.ReasonPayload},
		{"sha512 digest", eventsv1.SubjectImageNeeded, func(e *eventsv1.Event) { e.Data = data(eventsv1.ImageNeeded{Digest: "sha512:" + digest[7:]}) }, eventsv1.ReasonPayload},
		{"digest with a path", eventsv1.SubjectReportStored, func(e *eventsv1.Event) { e.Data = data(eventsv1.ReportStored{Digest: digest[:69] + "/../x"}) }, eventsv1.ReasonPayload},
		{"findings.changed from the matcher", eventsv1.SubjectFindingsChanged, func(e *eventsv1.Event) { e.Source = eventsv1.SourceMatcher }, eventsv1.ReasonSource},
		{"findings.changed without digest", eventsv1.SubjectFindingsChanged, func(e *eventsv1.Event) { e.Data = data(eventsv1.FindingsChanged{Image: "x"}) }, eventsv1.ReasonPayload},
		{"findings.changed list over the cap", eventsv1.SubjectFindingsChanged, func(e *eventsv1.Event) {
			e.Data = data(eventsv1.FindingsChanged{Digest: digest, New: make([]eventsv1.ChangedFinding, eventsv1.MaxChangedFindings+1)})
		}, eventsv1.ReasonPayload},
		{"findings.changed kevAdded over the cap", eventsv1.SubjectFindingsChanged, func(e *eventsv1.Event) {
			e.Data = data(eventsv1.FindingsChanged{Digest: digest, KEVAdded: make([]eventsv1.ChangedFinding, eventsv1.MaxChangedFindings+1),
				KEVAddedCount: eventsv1.MaxChangedFindings + 1})
		}, eventsv1.ReasonPayload},
		{"findings.changed kevAddedCount below its list", eventsv1.SubjectFindingsChanged, func(e *eventsv1.Event) {
			e.Data = data(eventsv1.FindingsChanged{Digest: digest, KEVAdded: make([]eventsv1.ChangedFinding, 2), KEVAddedCount: 1})
		}, eventsv1.ReasonPayload},
		{"findings.changed suppressedIn over the cap", eventsv1.SubjectFindingsChanged, func(e *eventsv1.Event) {
			e.Data = data(eventsv1.FindingsChanged{Digest: digest, New: []eventsv1.ChangedFinding{{ID: "CVE-2026-1",
				SuppressedIn: make([]string, eventsv1.MaxSuppressedIn+1)}}})
		}, eventsv1.ReasonPayload},
		{"findings.changed suppressed in an empty namespace", eventsv1.SubjectFindingsChanged, func(e *eventsv1.Event) {
			e.Data = data(eventsv1.FindingsChanged{Digest: digest, KEVAdded: []eventsv1.ChangedFinding{{ID: "CVE-2026-1",
				SuppressedIn: []string{"team-a", ""}}}, KEVAddedCount: 1})
		}, eventsv1.ReasonPayload},
		{"vulndb.updated from results-api", eventsv1.SubjectVulnDBUpdated, func(e *eventsv1.Event) { e.Source = eventsv1.SourceResultsAPI }, eventsv1.ReasonSource},
		{"vulndb.updated without build time", eventsv1.SubjectVulnDBUpdated, func(e *eventsv1.Event) { e.Data = data(eventsv1.VulnDBUpdated{Schema: "v6.0.2"}) }, eventsv1.ReasonPayload},
		{"rematch.done without build time", eventsv1.SubjectRematchDone, func(e *eventsv1.Event) { e.Data = data(eventsv1.RematchDone{ReportsTotal: 1}) }, eventsv1.ReasonPayload},
		{"rematch.done of the wrong shape", eventsv1.SubjectRematchDone, func(e *eventsv1.Event) { e.Data = json.RawMessage(`{"dbBuilt":"yesterday"}`) }, eventsv1.ReasonPayload},
		{"xml content type", eventsv1.SubjectJobDone, func(e *eventsv1.Event) { e.DataContentType = "application/xml" }, eventsv1.ReasonPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			subject := tc.subject
			base := eventsv1.SubjectJobDone
			if _, ok := eventsv1.ProducerOf(subject); ok {
				base = subject
			}
			ev := valid(t, base)
			if tc.edit != nil {
				tc.edit(&ev)
			}
			err := eventsv1.Validate(subject, ev, now, eventsv1.DefaultMaxSkew)
			if !errors.Is(err, eventsv1.ErrInvalidEvent) {
				t.Fatalf("Validate = %v, want an ErrInvalidEvent", err)
			}
			if got := eventsv1.Reason(err); got != tc.reason {
				t.Errorf("Reason = %q, want %q (%v)", got, tc.reason, err)
			}
			// The reason survives wrapping.
			if got := eventsv1.Reason(fmt.Errorf("consume: %w", err)); got != tc.reason {
				t.Errorf("wrapped Reason = %q, want %q", got, tc.reason)
			}
		})
	}
}

func TestParse(t *testing.T) {
	ev := valid(t, eventsv1.SubjectJobDone)
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := eventsv1.Parse(eventsv1.SubjectJobDone, raw, now, eventsv1.DefaultMaxSkew)
	if err != nil || got.ID != ev.ID || !got.Time.Equal(ev.Time) {
		t.Fatalf("Parse = %+v, %v", got, err)
	}
	// The same bytes on another subject are refused, with the event decoded
	// so that the consumer can log its id.
	got, err = eventsv1.Parse(eventsv1.SubjectReportDeleted, raw, now, eventsv1.DefaultMaxSkew)
	if eventsv1.Reason(err) != eventsv1.ReasonType || got.ID != ev.ID {
		t.Errorf("Parse on report.deleted = %+v, %v", got, err)
	}
	for _, data := range []string{"", "not json", `{"time":"10000-01-01T00:00:00Z"}`, `[]`} {
		if _, err := eventsv1.Parse(eventsv1.SubjectJobDone, []byte(data), now, eventsv1.DefaultMaxSkew); eventsv1.Reason(err) != eventsv1.ReasonEnvelope {
			t.Errorf("Parse(%q) = %v, want reason %q", data, err, eventsv1.ReasonEnvelope)
		}
	}
}

func TestReasonOfOtherErrors(t *testing.T) {
	if r := eventsv1.Reason(nil); r != "" {
		t.Errorf("Reason(nil) = %q", r)
	}
	if r := eventsv1.Reason(errors.New("database down")); r != "" {
		t.Errorf("Reason(other) = %q", r)
	}
}

func TestProducers(t *testing.T) {
	for subject, want := range map[string]string{
		"crowsnest.image.needed":       "crowsnest/operator",
		"crowsnest.job.done":           "crowsnest/operator",
		"crowsnest.report.stored":      "crowsnest/results-api",
		"crowsnest.report.deleted":     "crowsnest/results-api",
		"crowsnest.findings.changed":   "crowsnest/results-api",
		"crowsnest.vulndb.updated":     "crowsnest/matcher",
		"crowsnest.rematch.done":       "crowsnest/matcher",
		"crowsnest.inventory.snapshot": "crowsnest/operator",
	} {
		if got, ok := eventsv1.ProducerOf(subject); !ok || got != want {
			t.Errorf("ProducerOf(%s) = %q, %v; want %q", subject, got, ok, want)
		}
	}
	if _, ok := eventsv1.ProducerOf("crowsnest.something.else"); ok {
		t.Error("ProducerOf knows a subject without a payload")
	}
}

func TestValidDigest(t *testing.T) {
	for d, want := range map[string]bool{
		digest:                         true,
		strings.ToUpper(digest):        false,
		digest + "0":                   false,
		digest[:70]:                    false,
		"sha256:" + digest[7:70] + "g": false,
		"":                             false,
	} {
		if got := eventsv1.ValidDigest(d); got != want {
			t.Errorf("ValidDigest(%q) = %v, want %v", d, got, want)
		}
	}
}
