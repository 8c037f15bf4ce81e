package v1

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Limits a consumer holds an event to (see Validate).
const (
	// DefaultMaxSkew is how far in the future an event's time may lie: the
	// clock difference tolerated between producer and consumer.
	DefaultMaxSkew = 2 * time.Minute
	// MaxEventAge is the oldest an event's time may be. The stream keeps
	// events for seven days; older ones are not replays but forgeries or a
	// broken clock.
	MaxEventAge = 30 * 24 * time.Hour
	// MaxIDLength bounds the CloudEvents id (ID makes 32 hex characters).
	MaxIDLength = 128
)

// ErrInvalidEvent is wrapped by every error Validate and Parse return.
var ErrInvalidEvent = errors.New("invalid event")

// Reasons an event is invalid, one per rule; Reason returns them. They are
// few and fixed, so they serve as a metric label.
const (
	ReasonEnvelope    = "envelope"    // not a CloudEvents JSON envelope
	ReasonSubject     = "subject"     // a subject this contract does not define
	ReasonSpecVersion = "specversion" // not CloudEvents 1.0
	ReasonType        = "type"        // not the type of the subject it came on
	ReasonSource      = "source"      // not the producer of that subject
	ReasonID          = "id"          // empty, too long or not printable ASCII
	ReasonTime        = "time"        // zero, in the future or too old
	ReasonPayload     = "payload"     // data is not the subject's payload with a valid digest
)

// invalidError is an ErrInvalidEvent with the rule that failed.
type invalidError struct {
	reason string
	detail string
}

func (e *invalidError) Error() string {
	return fmt.Sprintf("%s: %s: %s", ErrInvalidEvent, e.reason, e.detail)
}

func (e *invalidError) Is(target error) bool { return target == ErrInvalidEvent }

func invalid(reason, format string, args ...any) error {
	return &invalidError{reason: reason, detail: fmt.Sprintf(format, args...)}
}

// Reason returns the rule an invalid event broke (one of the Reason*
// constants), or "" when err is not an ErrInvalidEvent.
func Reason(err error) string {
	var ie *invalidError
	if errors.As(err, &ie) {
		return ie.reason
	}
	return ""
}

// producers maps each subject to the only source that may publish it.
var producers = map[string]string{
	SubjectImageNeeded:   SourceOperator,
	SubjectJobDone:       SourceOperator,
	SubjectReportStored:  SourceResultsAPI,
	SubjectReportDeleted: SourceResultsAPI,

	SubjectFindingsChanged:   SourceResultsAPI,
	SubjectVulnDBUpdated:     SourceMatcher,
	SubjectRematchDone:       SourceMatcher,
	SubjectInventorySnapshot: SourceOperator,
}

// ProducerOf returns the CloudEvents source of the component that publishes
// subject; false for a subject without a payload in this package.
func ProducerOf(subject string) (string, bool) {
	s, ok := producers[subject]
	return s, ok
}

// Parse decodes a message received on subject and validates it (Validate).
func Parse(subject string, data []byte, now time.Time, maxSkew time.Duration) (Event, error) {
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return Event{}, invalid(ReasonEnvelope, "%v", err)
	}
	return ev, Validate(subject, ev, now, maxSkew)
}

// Validate checks an event received on subject before a consumer acts on
// it: CloudEvents 1.0; the type of that subject; the source of its producer
// (ProducerOf); an id of 1 to MaxIDLength printable ASCII characters; a time
// neither more than maxSkew after now nor more than MaxEventAge before it;
// and data that decodes into the subject's payload with a digest of the form
// sha256:<64 lowercase hex> (for the matcher's vulndb.updated and
// rematch.done, which name no digest: with a DB build time). The error
// wraps ErrInvalidEvent and names the rule that failed (Reason). Authenticated publishers make these checks
// defence in depth: one forged job.done dated far ahead would otherwise pin
// a digest's scan status, since only newer events replace it.
func Validate(subject string, ev Event, now time.Time, maxSkew time.Duration) error {
	producer, ok := ProducerOf(subject)
	if !ok {
		return invalid(ReasonSubject, "no contract for subject %q", clip(subject))
	}
	if ev.SpecVersion != SpecVersion {
		return invalid(ReasonSpecVersion, "specversion %q, want %q", clip(ev.SpecVersion), SpecVersion)
	}
	if s, ok := SubjectFor(ev.Type); !ok || s != subject {
		return invalid(ReasonType, "type %q on subject %s", clip(ev.Type), subject)
	}
	if ev.Source != producer {
		return invalid(ReasonSource, "source %q on subject %s, want %q", clip(ev.Source), subject, producer)
	}
	if err := validID(ev.ID); err != nil {
		return err
	}
	switch {
	case ev.Time.IsZero():
		return invalid(ReasonTime, "no time")
	case ev.Time.After(now.Add(maxSkew)):
		return invalid(ReasonTime, "time %s is more than %s after %s", ev.Time.UTC().Format(time.RFC3339), maxSkew, now.UTC().Format(time.RFC3339))
	case ev.Time.Before(now.Add(-MaxEventAge)):
		return invalid(ReasonTime, "time %s is more than %s before %s", ev.Time.UTC().Format(time.RFC3339), MaxEventAge, now.UTC().Format(time.RFC3339))
	}
	return validPayload(subject, ev)
}

func validID(id string) error {
	if id == "" || len(id) > MaxIDLength {
		return invalid(ReasonID, "id of %d bytes, want 1 to %d", len(id), MaxIDLength)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return invalid(ReasonID, "id has a byte 0x%02x outside printable ASCII", id[i])
		}
	}
	return nil
}

func validPayload(subject string, ev Event) error {
	if ev.DataContentType != "" && ev.DataContentType != "application/json" {
		return invalid(ReasonPayload, "datacontenttype %q", clip(ev.DataContentType))
	}
	var digest string
	var err error
	switch subject {
	case SubjectImageNeeded:
		var p ImageNeeded
		err = json.Unmarshal(ev.Data, &p)
		digest = p.Digest
	case SubjectJobDone:
		var p JobDone
		err = json.Unmarshal(ev.Data, &p)
		digest = p.Digest
	case SubjectReportStored:
		var p ReportStored
		err = json.Unmarshal(ev.Data, &p)
		digest = p.Digest
	case SubjectReportDeleted:
		var p ReportDeleted
		err = json.Unmarshal(ev.Data, &p)
		digest = p.Digest
	case SubjectFindingsChanged:
		var p FindingsChanged
		err = json.Unmarshal(ev.Data, &p)
		digest = p.Digest
		if err == nil && (len(p.New) > MaxChangedFindings || len(p.Resolved) > MaxChangedFindings || len(p.KEVAdded) > MaxChangedFindings) {
			return invalid(ReasonPayload, "more than %d new, resolved or KEV-added findings listed", MaxChangedFindings)
		}
		if err == nil && p.KEVAddedCount < len(p.KEVAdded) {
			return invalid(ReasonPayload, "kevAddedCount %d is less than the %d KEV-added findings listed", p.KEVAddedCount, len(p.KEVAdded))
		}
		if err == nil {
			if msg := validSuppression(p); msg != "" {
				return invalid(ReasonPayload, "%s", msg)
			}
		}
	case SubjectVulnDBUpdated, SubjectRematchDone:
		return validMatcherPayload(subject, ev.Data)
	case SubjectInventorySnapshot:
		var p InventorySnapshot
		if err := json.Unmarshal(ev.Data, &p); err != nil {
			return invalid(ReasonPayload, "decode %s data: %v", subject, err)
		}
		return validInventory(p)
	default:
		return invalid(ReasonSubject, "no payload for subject %s", subject)
	}
	if err != nil {
		return invalid(ReasonPayload, "decode %s data: %v", subject, err)
	}
	if !ValidDigest(digest) {
		return invalid(ReasonPayload, "digest %q is not sha256:<64 lowercase hex>", clip(digest))
	}
	return nil
}

// validMatcherPayload checks the matcher's payloads, which name a
// vulnerability DB rather than a digest: it must say when that DB was built.
func validMatcherPayload(subject string, data json.RawMessage) error {
	var built time.Time
	var err error
	switch subject {
	case SubjectVulnDBUpdated:
		var p VulnDBUpdated
		err = json.Unmarshal(data, &p)
		built = p.Built
	default:
		var p RematchDone
		err = json.Unmarshal(data, &p)
		built = p.DBBuilt
	}
	if err != nil {
		return invalid(ReasonPayload, "decode %s data: %v", subject, err)
	}
	if built.IsZero() {
		return invalid(ReasonPayload, "%s names no DB build time", subject)
	}
	return nil
}

// ValidDigest reports whether d is sha256: followed by 64 lowercase hex
// digits.
func ValidDigest(d string) bool {
	const prefix = "sha256:"
	if len(d) != len(prefix)+64 || d[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(d); i++ {
		if c := d[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// clip bounds attacker-chosen text quoted in an error.
func clip(s string) string {
	const limit = 80
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}

// validSuppression checks the suppression marks of a findings.changed: at
// most MaxSuppressedIn namespaces per finding, none empty.
func validSuppression(p FindingsChanged) string {
	for _, fs := range [][]ChangedFinding{p.New, p.KEVAdded} {
		for _, f := range fs {
			if len(f.SuppressedIn) > MaxSuppressedIn {
				return fmt.Sprintf("more than %d namespaces in suppressedIn", MaxSuppressedIn)
			}
			if slices.Contains(f.SuppressedIn, "") {
				return "an empty namespace in suppressedIn"
			}
		}
	}
	return ""
}
