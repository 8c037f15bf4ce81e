package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Stream and subjects.
const (
	// StreamName is the JetStream stream holding every Crowsnest event.
	StreamName = "CROWSNEST"
	// StreamSubjects is the wildcard the stream captures.
	StreamSubjects = "crowsnest.>"

	SubjectImageNeeded   = "crowsnest.image.needed"
	SubjectJobDone       = "crowsnest.job.done"
	SubjectReportStored  = "crowsnest.report.stored"
	SubjectReportDeleted = "crowsnest.report.deleted"

	// Subjects of the events the inventory, matcher and change-tracking
	// work adds; reserved here so NATS permissions cover them from the start.
	SubjectInventorySnapshot = "crowsnest.inventory.snapshot"
	SubjectFindingsChanged   = "crowsnest.findings.changed"
	SubjectVulnDBUpdated     = "crowsnest.vulndb.updated"
	SubjectRematchDone       = "crowsnest.rematch.done"

	// DuplicateWindow is how long JetStream remembers a Nats-Msg-Id. It is
	// longer than the default two minutes so that a publisher restarted after
	// a crash, which republishes what it cannot prove was sent, is still
	// deduplicated.
	DuplicateWindow = 30 * time.Minute
)

// CloudEvents types, one per subject.
const (
	TypeImageNeeded   = "dev.crowsnest.image.needed.v1"
	TypeJobDone       = "dev.crowsnest.job.done.v1"
	TypeReportStored  = "dev.crowsnest.report.stored.v1"
	TypeReportDeleted = "dev.crowsnest.report.deleted.v1"

	TypeFindingsChanged = "dev.crowsnest.findings.changed.v1"
	TypeVulnDBUpdated   = "dev.crowsnest.vulndb.updated.v1"
	TypeRematchDone     = "dev.crowsnest.rematch.done.v1"

	TypeInventorySnapshot = "dev.crowsnest.inventory.snapshot.v1"
)

// Sources, the CloudEvents "source" of each publisher.
const (
	SourceOperator   = "crowsnest/operator"
	SourceResultsAPI = "crowsnest/results-api"
	SourceMatcher    = "crowsnest/matcher"
)

// SpecVersion is the CloudEvents version used.
const SpecVersion = "1.0"

// Event is a structured-mode CloudEvents 1.0 envelope.
type Event struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Subject         string          `json:"subject,omitempty"`
	Time            time.Time       `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data"`
}

// New wraps a payload in an envelope. The id must be deterministic (see ID)
// so that republishing the same fact is deduplicated.
func New(source, typ, id, subject string, at time.Time, payload any) (Event, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return Event{}, fmt.Errorf("marshal %s payload: %w", typ, err)
	}
	return Event{
		SpecVersion:     SpecVersion,
		ID:              id,
		Source:          source,
		Type:            typ,
		Subject:         subject,
		Time:            at.UTC(),
		DataContentType: "application/json",
		Data:            data,
	}, nil
}

// Decode unmarshals the envelope's data into out.
func (e Event) Decode(out any) error {
	if err := json.Unmarshal(e.Data, out); err != nil {
		return fmt.Errorf("decode %s data: %w", e.Type, err)
	}
	return nil
}

// ID derives a deterministic event id from the event type and the facts that
// identify the occurrence (for example a Job's UID). The same inputs always
// give the same id.
func ID(typ string, parts ...string) string {
	h := sha256.Sum256([]byte(typ + "\x00" + strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:16])
}

// subjects maps each CloudEvents type to its NATS subject.
var subjects = map[string]string{
	TypeImageNeeded:   SubjectImageNeeded,
	TypeJobDone:       SubjectJobDone,
	TypeReportStored:  SubjectReportStored,
	TypeReportDeleted: SubjectReportDeleted,

	TypeFindingsChanged:   SubjectFindingsChanged,
	TypeVulnDBUpdated:     SubjectVulnDBUpdated,
	TypeRematchDone:       SubjectRematchDone,
	TypeInventorySnapshot: SubjectInventorySnapshot,
}

// SubjectFor maps a CloudEvents type to its NATS subject.
func SubjectFor(typ string) (string, bool) {
	s, ok := subjects[typ]
	return s, ok
}
