package v1_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

const digest = "sha256:3f1e000000000000000000000000000000000000000000000000000000000001"

var now = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// valid builds a valid event for subject, as its producer publishes it.
func valid(t *testing.T, subject string) v1.Event {
	t.Helper()
	var typ, source string
	var payload any
	switch subject {
	case v1.SubjectImageNeeded:
		typ, source = v1.TypeImageNeeded, v1.SourceOperator
		payload = v1.ImageNeeded{Digest: digest, Image: "demo@" + digest, Reason: v1.NeedNew, Attempt: 1}
	case v1.SubjectJobDone:
		typ, source = v1.TypeJobDone, v1.SourceOperator
		payload = v1.JobDone{Digest: digest, Image: "demo@" + digest, Outcome: v1.OutcomeSucceeded, Attempt: 1}
	case v1.SubjectReportStored:
		typ, source = v1.TypeReportStored, v1.SourceResultsAPI
		payload = v1.ReportStored{Digest: digest, Image: "demo@" + digest, ScannedAt: now}
	case v1.SubjectReportDeleted:
		typ, source = v1.TypeReportDeleted, v1.SourceResultsAPI
		payload = v1.ReportDeleted{Digest: digest, Image: "demo@" + digest}
	case v1.SubjectFindingsChanged:
		typ, source = v1.TypeFindingsChanged, v1.SourceResultsAPI
		payload = v1.FindingsChanged{ChangeID: 7, Digest: digest, Image: "demo@" + digest, Cause: v1.CauseRematch,
			ChangedAt: now, NewCounts: v1.SeverityCounts{High: 1},
			New: []v1.ChangedFinding{{ID: "CVE-2026-1", Severity: "high", Package: v1.ChangedPackage{Name: "musl", Version: "1.2.5", Type: "apk"}}}}
	case v1.SubjectVulnDBUpdated:
		typ, source = v1.TypeVulnDBUpdated, v1.SourceMatcher
		payload = v1.VulnDBUpdated{Built: now.Add(-time.Hour), Schema: "v6.0.2", Checksum: "sha256:ab", Source: "import"}
	case v1.SubjectRematchDone:
		typ, source = v1.TypeRematchDone, v1.SourceMatcher
		payload = v1.RematchDone{DBBuilt: now.Add(-time.Hour), ReportsTotal: 3, ReportsChanged: 1, ReportsUnchanged: 2,
			StartedAt: now.Add(-time.Minute), FinishedAt: now}
	case v1.SubjectInventorySnapshot:
		typ, source = v1.TypeInventorySnapshot, v1.SourceOperator
		payload = v1.InventorySnapshot{Namespace: "shop", Labels: map[string]string{"team": "a"}, Workloads: []v1.InventoryWorkload{
			{Kind: v1.KindDeployment, Name: "web", Containers: []v1.InventoryContainer{{Name: "nginx", Image: "nginx:1.27", Digest: digest, Pods: 3}}}}}
	default:
		t.Fatalf("no valid event for %s", subject)
	}
	ev, err := v1.New(source, typ, v1.ID(typ, "uid"), digest, now, payload)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestValidateAcceptsWhatProducersPublish(t *testing.T) {
	for _, subject := range []string{v1.SubjectImageNeeded, v1.SubjectJobDone, v1.SubjectReportStored, v1.SubjectReportDeleted,
		v1.SubjectFindingsChanged, v1.SubjectVulnDBUpdated, v1.SubjectRematchDone, v1.SubjectInventorySnapshot} {
		ev := valid(t, subject)
		if err := v1.Validate(subject, ev, now, v1.DefaultMaxSkew); err != nil {
			t.Errorf("%s: %v", subject, err)
		}
		// Within the tolerated skew and age, and without datacontenttype
		// (CloudEvents' JSON format defaults it).
		for _, at := range []time.Time{now.Add(v1.DefaultMaxSkew), now.Add(-v1.MaxEventAge)} {
			ev.Time, ev.DataContentType = at, ""
			if err := v1.Validate(subject, ev, now, v1.DefaultMaxSkew); err != nil {
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
		edit    func(*v1.Event)
		reason  string
	}{
		{"unknown subject", "crowsnest.findings.removed", nil, v1.ReasonSubject},
		{"no subject", "", nil, v1.ReasonSubject},
		{"specversion 0.3", v1.SubjectJobDone, func(e *v1.Event) { e.SpecVersion = "0.3" }, v1.ReasonSpecVersion},
		{"no specversion", v1.SubjectJobDone, func(e *v1.Event) { e.SpecVersion = "" }, v1.ReasonSpecVersion},
		{"type of another subject", v1.SubjectJobDone, func(e *v1.Event) { e.Type = v1.TypeImageNeeded }, v1.ReasonType},
		{"deleted type on stored", v1.SubjectReportStored, func(e *v1.Event) { e.Type = v1.TypeReportDeleted }, v1.ReasonType},
		{"unknown type", v1.SubjectJobDone, func(e *v1.Event) { e.Type = "dev.crowsnest.job.done.v2" }, v1.ReasonType},
		{"job.done from results-api", v1.SubjectJobDone, func(e *v1.Event) { e.Source = v1.SourceResultsAPI }, v1.ReasonSource},
		{"image.needed from elsewhere", v1.SubjectImageNeeded, func(e *v1.Event) { e.Source = "attacker" }, v1.ReasonSource},
		{"report.deleted from operator", v1.SubjectReportDeleted, func(e *v1.Event) { e.Source = v1.SourceOperator }, v1.ReasonSource},
		{"report.stored without source", v1.SubjectReportStored, func(e *v1.Event) { e.Source = "" }, v1.ReasonSource},
		{"empty id", v1.SubjectJobDone, func(e *v1.Event) { e.ID = "" }, v1.ReasonID},
		{"id too long", v1.SubjectJobDone, func(e *v1.Event) { e.ID = strings.Repeat("a", v1.MaxIDLength+1) }, v1.ReasonID},
		{"id with a newline", v1.SubjectJobDone, func(e *v1.Event) { e.ID = "abc\nlevel=error" }, v1.ReasonID},
		{"id with a space", v1.SubjectJobDone, func(e *v1.Event) { e.ID = "a b" }, v1.ReasonID},
		{"zero time", v1.SubjectJobDone, func(e *v1.Event) { e.Time = time.Time{} }, v1.ReasonTime},
		{"year 9999", v1.SubjectJobDone, func(e *v1.Event) { e.Time = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) }, v1.ReasonTime},
		{"just beyond the skew", v1.SubjectJobDone, func(e *v1.Event) { e.Time = now.Add(v1.DefaultMaxSkew + time.Second) }, v1.ReasonTime},
		{"older than 30 days", v1.SubjectReportDeleted, func(e *v1.Event) { e.Time = now.Add(-v1.MaxEventAge - time.Second) }, v1.ReasonTime},
		{"year 1970", v1.SubjectImageNeeded, func(e *v1.Event) { e.Time = time.Unix(0, 0) }, v1.ReasonTime},
		{"no data", v1.SubjectJobDone, func(e *v1.Event) { e.Data = nil }, v1.ReasonPayload},
		{"null data", v1.SubjectJobDone, func(e *v1.Event) { e.Data = json.RawMessage("null") }, v1.ReasonPayload},
		{"data of the wrong shape", v1.SubjectJobDone, func(e *v1.Event) { e.Data = json.RawMessage(`{"digest":"` + digest + `","attempt":"one"}`) }, v1.ReasonPayload},
		{"data not an object", v1.SubjectReportDeleted, func(e *v1.Event) { e.Data = json.RawMessage(`"` + digest + `"`) }, v1.ReasonPayload},
		{"no digest", v1.SubjectReportDeleted, func(e *v1.Event) { e.Data = data(v1.ReportDeleted{Image: "x"}) }, v1.ReasonPayload},
		{"uppercase digest", v1.SubjectReportDeleted, func(e *v1.Event) { e.Data = data(v1.ReportDeleted{Digest: strings.ToUpper(digest)}) }, v1.ReasonPayload},
		{"short digest", v1.SubjectJobDone, func(e *v1.Event) { e.Data = data(v1.JobDone{Digest: digest[:70]}) }, v1.ReasonPayload},
		{"sha512 digest", v1.SubjectImageNeeded, func(e *v1.Event) { e.Data = data(v1.ImageNeeded{Digest: "sha512:" + digest[7:]}) }, v1.ReasonPayload},
		{"digest with a path", v1.SubjectReportStored, func(e *v1.Event) { e.Data = data(v1.ReportStored{Digest: digest[:69] + "/../x"}) }, v1.ReasonPayload},
		{"findings.changed from the matcher", v1.SubjectFindingsChanged, func(e *v1.Event) { e.Source = v1.SourceMatcher }, v1.ReasonSource},
		{"findings.changed without digest", v1.SubjectFindingsChanged, func(e *v1.Event) { e.Data = data(v1.FindingsChanged{Image: "x"}) }, v1.ReasonPayload},
		{"findings.changed list over the cap", v1.SubjectFindingsChanged, func(e *v1.Event) {
			e.Data = data(v1.FindingsChanged{Digest: digest, New: make([]v1.ChangedFinding, v1.MaxChangedFindings+1)})
		}, v1.ReasonPayload},
		{"vulndb.updated from results-api", v1.SubjectVulnDBUpdated, func(e *v1.Event) { e.Source = v1.SourceResultsAPI }, v1.ReasonSource},
		{"vulndb.updated without build time", v1.SubjectVulnDBUpdated, func(e *v1.Event) { e.Data = data(v1.VulnDBUpdated{Schema: "v6.0.2"}) }, v1.ReasonPayload},
		{"rematch.done without build time", v1.SubjectRematchDone, func(e *v1.Event) { e.Data = data(v1.RematchDone{ReportsTotal: 1}) }, v1.ReasonPayload},
		{"rematch.done of the wrong shape", v1.SubjectRematchDone, func(e *v1.Event) { e.Data = json.RawMessage(`{"dbBuilt":"yesterday"}`) }, v1.ReasonPayload},
		{"xml content type", v1.SubjectJobDone, func(e *v1.Event) { e.DataContentType = "application/xml" }, v1.ReasonPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			subject := tc.subject
			base := v1.SubjectJobDone
			if _, ok := v1.ProducerOf(subject); ok {
				base = subject
			}
			ev := valid(t, base)
			if tc.edit != nil {
				tc.edit(&ev)
			}
			err := v1.Validate(subject, ev, now, v1.DefaultMaxSkew)
			if !errors.Is(err, v1.ErrInvalidEvent) {
				t.Fatalf("Validate = %v, want an ErrInvalidEvent", err)
			}
			if got := v1.Reason(err); got != tc.reason {
				t.Errorf("Reason = %q, want %q (%v)", got, tc.reason, err)
			}
			// The reason survives wrapping.
			if got := v1.Reason(fmt.Errorf("consume: %w", err)); got != tc.reason {
				t.Errorf("wrapped Reason = %q, want %q", got, tc.reason)
			}
		})
	}
}

func TestParse(t *testing.T) {
	ev := valid(t, v1.SubjectJobDone)
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v1.Parse(v1.SubjectJobDone, raw, now, v1.DefaultMaxSkew)
	if err != nil || got.ID != ev.ID || !got.Time.Equal(ev.Time) {
		t.Fatalf("Parse = %+v, %v", got, err)
	}
	// The same bytes on another subject are refused, with the event decoded
	// so that the consumer can log its id.
	got, err = v1.Parse(v1.SubjectReportDeleted, raw, now, v1.DefaultMaxSkew)
	if v1.Reason(err) != v1.ReasonType || got.ID != ev.ID {
		t.Errorf("Parse on report.deleted = %+v, %v", got, err)
	}
	for _, data := range []string{"", "not json", `{"time":"10000-01-01T00:00:00Z"}`, `[]`} {
		if _, err := v1.Parse(v1.SubjectJobDone, []byte(data), now, v1.DefaultMaxSkew); v1.Reason(err) != v1.ReasonEnvelope {
			t.Errorf("Parse(%q) = %v, want reason %q", data, err, v1.ReasonEnvelope)
		}
	}
}

func TestReasonOfOtherErrors(t *testing.T) {
	if r := v1.Reason(nil); r != "" {
		t.Errorf("Reason(nil) = %q", r)
	}
	if r := v1.Reason(errors.New("database down")); r != "" {
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
		if got, ok := v1.ProducerOf(subject); !ok || got != want {
			t.Errorf("ProducerOf(%s) = %q, %v; want %q", subject, got, ok, want)
		}
	}
	if _, ok := v1.ProducerOf("crowsnest.something.else"); ok {
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
		if got := v1.ValidDigest(d); got != want {
			t.Errorf("ValidDigest(%q) = %v, want %v", d, got, want)
		}
	}
}
