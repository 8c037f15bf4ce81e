package events

import (
	"encoding/json"
	"fmt"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/render"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// Message is one WebSocket frame (the EventMessage schema of openapi.yaml).
type Message struct {
	Type string    `json:"type"`
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	Data any       `json:"data"`
}

// WebSocket message types.
const (
	TypeReportStored  = "report.stored"
	TypeReportDeleted = "report.deleted"
	TypeScanStatus    = "scan.status"
	// TypeFindingsChanged carries the crowsnest.findings.changed payload
	// (eventsv1.FindingsChanged) as it is.
	TypeFindingsChanged = "findings.changed"
)

func storedPayload(s report.Summary) eventsv1.ReportStored {
	c := s.Counts
	return eventsv1.ReportStored{Digest: s.Digest, Image: s.Image, ScannedAt: s.ScannedAt, Fixable: s.Fixable, Findings: s.Findings,
		Counts: eventsv1.SeverityCounts{Critical: c.Critical, High: c.High, Medium: c.Medium, Low: c.Low, Negligible: c.Negligible, Unknown: c.Unknown}}
}

// storedEvent builds the CloudEvent for a stored report. The id depends on
// the report's content, so re-uploading the same report is deduplicated.
func storedEvent(s report.Summary, now time.Time) (eventsv1.Event, error) {
	c := s.Counts
	id := eventsv1.ID(eventsv1.TypeReportStored, s.Digest, s.ScannedAt.UTC().Format(time.RFC3339Nano),
		fmt.Sprint(c.Critical, c.High, c.Medium, c.Low, c.Negligible, c.Unknown, s.Fixable, s.Findings))
	return eventsv1.New(eventsv1.SourceResultsAPI, eventsv1.TypeReportStored, id, s.Digest, now, storedPayload(s))
}

func deletedEvent(s report.Summary, now time.Time) (eventsv1.Event, error) {
	id := eventsv1.ID(eventsv1.TypeReportDeleted, s.Digest, s.StoredAt.UTC().Format(time.RFC3339Nano))
	return eventsv1.New(eventsv1.SourceResultsAPI, eventsv1.TypeReportDeleted, id, s.Digest, now,
		eventsv1.ReportDeleted{Digest: s.Digest, Image: s.Image})
}

// scanStatus turns an operator event into the scan status it implies.
// image.needed means the scan Job exists: the digest is being scanned.
func scanStatus(ev eventsv1.Event) (report.ScanStatus, error) {
	switch ev.Type {
	case eventsv1.TypeImageNeeded:
		var p eventsv1.ImageNeeded
		if err := ev.Decode(&p); err != nil {
			return report.ScanStatus{}, err
		}
		return report.ScanStatus{Digest: p.Digest, Image: p.Image, Namespace: p.Namespace, Scanner: p.Scanner,
			Job: p.Job, State: report.ScanScanning, Reason: string(p.Reason), Attempt: p.Attempt, UpdatedAt: ev.Time.UTC()}, nil
	case eventsv1.TypeJobDone:
		var p eventsv1.JobDone
		if err := ev.Decode(&p); err != nil {
			return report.ScanStatus{}, err
		}
		st := report.ScanDone
		if p.Outcome != eventsv1.OutcomeSucceeded {
			st = report.ScanFailed
		}
		return report.ScanStatus{Digest: p.Digest, Image: p.Image, Namespace: p.Namespace, Scanner: p.Scanner,
			Job: p.Job, State: st, Reason: p.Reason, Message: p.Message, Attempt: p.Attempt, UpdatedAt: ev.Time.UTC()}, nil
	}
	return report.ScanStatus{}, fmt.Errorf("unexpected event type %q", ev.Type)
}

// frame renders a CloudEvent from the stream as a WebSocket frame (nil for
// an event that has none) and names the digest it is about.
func frame(ev eventsv1.Event) (msg []byte, digest string, err error) {
	m := Message{ID: ev.ID, Time: ev.Time}
	switch ev.Type {
	case eventsv1.TypeReportStored:
		var p eventsv1.ReportStored
		if err := ev.Decode(&p); err != nil {
			return nil, "", err
		}
		m.Type, m.Data, digest = TypeReportStored, p, p.Digest
	case eventsv1.TypeReportDeleted:
		var p eventsv1.ReportDeleted
		if err := ev.Decode(&p); err != nil {
			return nil, "", err
		}
		m.Type, m.Data, digest = TypeReportDeleted, p, p.Digest
	case eventsv1.TypeFindingsChanged:
		var p eventsv1.FindingsChanged
		if err := ev.Decode(&p); err != nil {
			return nil, "", err
		}
		m.Type, m.Data, digest = TypeFindingsChanged, p, p.Digest
	case eventsv1.TypeImageNeeded, eventsv1.TypeJobDone:
		st, err := scanStatus(ev)
		if err != nil {
			return nil, "", err
		}
		m.Type, m.Data, digest = TypeScanStatus, render.ScanStatus(&st), st.Digest
	case eventsv1.TypeVulnDBUpdated, eventsv1.TypeRematchDone, eventsv1.TypeInventorySnapshot:
		return nil, "", nil // no WebSocket frame
	default:
		return nil, "", fmt.Errorf("unknown event type %q", ev.Type)
	}
	msg, err = json.Marshal(m)
	return msg, digest, err
}

// unmarkedChangedFrame renders the findings.changed frame of ev without
// the namespaces where its findings are suppressed (SuppressedIn: which
// namespaces' exceptions decided what is theirs alone), for clients
// limited to namespaces; marked is false when no finding names any (the
// frame is then the same for every client, and msg is nil).
func unmarkedChangedFrame(ev eventsv1.Event) (msg []byte, marked bool, err error) {
	var p eventsv1.FindingsChanged
	if err := ev.Decode(&p); err != nil {
		return nil, false, err
	}
	for _, fs := range [][]eventsv1.ChangedFinding{p.New, p.KEVAdded, p.Resolved} {
		for i := range fs {
			if fs[i].SuppressedIn != nil {
				fs[i].SuppressedIn, marked = nil, true
			}
		}
	}
	if !marked {
		return nil, false, nil
	}
	msg, err = json.Marshal(Message{Type: TypeFindingsChanged, ID: ev.ID, Time: ev.Time, Data: p})
	return msg, true, err
}

// redactedScanFrame renders the scan.status frame of ev (image.needed or
// job.done) without the namespace its Job ran in, the Scanner, the Job and
// the failure text (report.ScanStatus.Redact), for clients that see the
// digest but not that namespace, and returns that namespace.
func redactedScanFrame(ev eventsv1.Event) (msg []byte, origin string, err error) {
	st, err := scanStatus(ev)
	if err != nil {
		return nil, "", err
	}
	origin = st.Namespace
	st.Redact()
	msg, err = json.Marshal(Message{Type: TypeScanStatus, ID: ev.ID, Time: ev.Time, Data: render.ScanStatus(&st)})
	return msg, origin, err
}
