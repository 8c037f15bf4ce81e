package events

import (
	"fmt"
	"log/slog"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/rematch"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/vulndb"
)

// SourceImport is VulnDBUpdated.Source for a DB that was not fetched from a
// listing (an upload or `matcher db import`).
const SourceImport = "import"

// VulnDBUpdated builds crowsnest.vulndb.updated for db, which replaced prev
// (nil for the first DB). Its id and time derive from the DB alone, so the
// same activation always gives the same event.
func VulnDBUpdated(db vulndb.DB, prev *vulndb.DB) (eventsv1.Event, error) {
	p := eventsv1.VulnDBUpdated{Built: db.Built.UTC(), Schema: db.Schema, Checksum: db.Checksum, Source: db.Source,
		GrypeVersion: rematch.GrypeVersion()}
	if db.Source == "upload" || db.Source == "file" || db.Source == "" {
		p.Source = SourceImport
	}
	if prev != nil {
		b := prev.Built.UTC()
		p.PreviousBuilt = &b
	}
	at := db.Imported
	if at.IsZero() {
		at = db.Built
	}
	id := eventsv1.ID(eventsv1.TypeVulnDBUpdated, db.Built.UTC().Format(time.RFC3339Nano), db.Schema, db.Checksum)
	return eventsv1.New(eventsv1.SourceMatcher, eventsv1.TypeVulnDBUpdated, id, db.ID, at, p)
}

// RematchDone builds crowsnest.rematch.done for a finished pass. Its id
// derives from the DB and the pass's start, which a resumed pass keeps.
func RematchDone(r rematch.Result) (eventsv1.Event, error) {
	if !r.Finished {
		return eventsv1.Event{}, fmt.Errorf("rematch pass over DB %s is not finished", r.DB.Built)
	}
	p := eventsv1.RematchDone{
		DBBuilt: r.DB.Built.UTC(), ReportsTotal: r.Total, ReportsChanged: r.Changed,
		ReportsUnchanged: r.Unchanged, ReportsFailed: r.Failed,
		StartedAt: r.StartedAt.UTC(), FinishedAt: r.FinishedAt.UTC(),
	}
	id := eventsv1.ID(eventsv1.TypeRematchDone, r.DB.Built.UTC().Format(time.RFC3339Nano), r.DB.Schema, r.StartedAt.UTC().Format(time.RFC3339Nano))
	return eventsv1.New(eventsv1.SourceMatcher, eventsv1.TypeRematchDone, id, "", r.FinishedAt, p)
}

// Recorder queues events in an Outbox; a nil Recorder (events off) drops
// them. It never blocks on NATS.
type Recorder struct {
	Outbox  *Outbox
	Metrics Metrics
	Logger  *slog.Logger
	Now     func() time.Time
}

// Record validates ev as a consumer would and queues it. An event already
// queued (the same id) is not queued again, and one older than consumers
// accept (eventsv1.MaxEventAge: a fact recovered at start-up long after it
// happened) is not queued at all.
func (r *Recorder) Record(ev eventsv1.Event) error {
	if r == nil || r.Outbox == nil || r.Outbox.Has(ev.ID) {
		return nil
	}
	subject, _ := eventsv1.SubjectFor(ev.Type)
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	if now().Sub(ev.Time) > eventsv1.MaxEventAge {
		if r.Logger != nil {
			r.Logger.Info("event too old to publish", "subject", subject, "id", ev.ID, "time", ev.Time)
		}
		return nil
	}
	if err := eventsv1.Validate(subject, ev, now(), time.Minute); err != nil {
		return fmt.Errorf("event %s: %w", subject, err)
	}
	added, dropped, err := r.Outbox.Add(ev)
	if err != nil {
		return err
	}
	if r.Metrics != nil {
		if dropped > 0 {
			r.Metrics.Dropped(dropped)
		}
		r.Metrics.Pending(r.Outbox.Len())
	}
	if dropped > 0 && r.Logger != nil {
		r.Logger.Warn("pending events file full: dropped the oldest", "dropped", dropped)
	}
	if added && r.Logger != nil {
		r.Logger.Debug("event queued", "subject", subject, "id", ev.ID)
	}
	return nil
}
