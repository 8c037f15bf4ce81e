package events

import (
	"encoding/json"
	"fmt"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// Announcer builds the outbox rows of report changes (store.Announcer):
// the contract's CloudEvents, with their deterministic ids, serialised in
// the transaction of the change and later published byte for byte.
type Announcer struct {
	// Now is the clock of the events' time (nil: time.Now).
	Now func() time.Time
	// Exceptions, when set, hands out the current triage decisions: a
	// findings.changed then marks where each listed new or KEV-added
	// finding is suppressed (markSuppressed). Nil: nothing is marked.
	Exceptions func() *exception.Set
}

var _ store.ChangeAnnouncer = Announcer{}

// ReportStored builds the crowsnest.report.stored event of a stored report.
func (a Announcer) ReportStored(s report.Summary) (store.OutboxEvent, error) {
	ev, err := storedEvent(s, a.now())
	return outboxEvent(eventsv1.SubjectReportStored, ev, err)
}

// ReportDeleted builds the crowsnest.report.deleted event of a deleted report.
func (a Announcer) ReportDeleted(s report.Summary) (store.OutboxEvent, error) {
	ev, err := deletedEvent(s, a.now())
	return outboxEvent(eventsv1.SubjectReportDeleted, ev, err)
}

// FindingsChanged builds the crowsnest.findings.changed event of a
// recorded change.
// With Exceptions set, its new and KEV-added findings carry where they
// are suppressed now (markSuppressed; runsIn is read only when a
// namespaced decision names one of their ids).
func (a Announcer) FindingsChanged(c report.Change, runsIn store.RunsIn) (store.OutboxEvent, error) {
	p := changedPayload(c)
	if a.Exceptions != nil {
		if err := markSuppressed(&p, c, a.Exceptions(), runsIn); err != nil {
			return store.OutboxEvent{}, err
		}
	}
	ev, err := changedEventOf(p, a.now())
	return outboxEvent(eventsv1.SubjectFindingsChanged, ev, err)
}

func (a Announcer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func outboxEvent(subject string, ev eventsv1.Event, err error) (store.OutboxEvent, error) {
	if err != nil {
		return store.OutboxEvent{}, err
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return store.OutboxEvent{}, fmt.Errorf("marshal %s event: %w", subject, err)
	}
	return store.OutboxEvent{Subject: subject, Digest: ev.Subject, EventID: ev.ID, Payload: data}, nil
}
