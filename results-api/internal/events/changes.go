package events

import (
	"net/url"
	"strconv"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// ChangesPath is the REST path of a digest's change history.
func ChangesPath(digest string) string {
	return "/api/v1/reports/" + url.PathEscape(digest) + "/changes"
}

// changedPayload renders a recorded change as the findings.changed
// payload: a baseline with its counts only, any other change with at most
// eventsv1.MaxChangedFindings new, resolved and KEV-added findings each
// (worst first), marked truncated, with the path of the full list, when
// there are more.
func changedPayload(c report.Change) eventsv1.FindingsChanged {
	p := eventsv1.FindingsChanged{ChangeID: c.ID, Digest: c.Digest, Image: c.Image, Cause: eventsv1.Cause(c.Cause),
		DBBuilt: c.DBBuilt, DBSchema: c.DBSchema, ChangedAt: c.ChangedAt.UTC(), Baseline: c.Baseline,
		NewCounts: counts(c.NewCounts), ResolvedCounts: counts(c.ResolvedCounts)}
	if c.Baseline {
		return p
	}
	p.New = changedFindings(c.New)
	p.Resolved = changedFindings(c.Resolved)
	p.KEVAdded, p.KEVAddedCount = changedFindings(c.KEVAdded), c.KEVAddedCount
	if len(c.New) > eventsv1.MaxChangedFindings || len(c.Resolved) > eventsv1.MaxChangedFindings ||
		len(c.KEVAdded) > eventsv1.MaxChangedFindings {
		p.Truncated, p.ChangesPath = true, ChangesPath(c.Digest)
	}
	return p
}

func changedFindings(fs []report.ChangedFinding) []eventsv1.ChangedFinding {
	fs = fs[:min(len(fs), eventsv1.MaxChangedFindings)]
	if len(fs) == 0 {
		return nil
	}
	out := make([]eventsv1.ChangedFinding, len(fs))
	for i, f := range fs {
		out[i] = eventsv1.ChangedFinding{ID: f.ID, Severity: f.Severity.String(),
			Package: eventsv1.ChangedPackage{Name: f.Name, Version: f.Version, Type: f.Type}, FixedIn: f.FixedIn,
			KEV: f.Risk.KEV, EPSS: f.Risk.EPSS}
		if f.Risk.Rated() {
			score := f.Risk.Score
			out[i].Risk = &score
		}
	}
	return out
}

func counts(c report.Counts) eventsv1.SeverityCounts {
	return eventsv1.SeverityCounts{Critical: c.Critical, High: c.High, Medium: c.Medium, Low: c.Low, Negligible: c.Negligible, Unknown: c.Unknown}
}

// changedEvent builds the CloudEvent of a recorded change. Its id is
// derived from the digest and the change's id: one change, one event,
// however often the relay publishes it.
func changedEvent(c report.Change, now time.Time) (eventsv1.Event, error) {
	return changedEventOf(changedPayload(c), now)
}

// changedEventOf is changedEvent of a payload built already.
func changedEventOf(p eventsv1.FindingsChanged, now time.Time) (eventsv1.Event, error) {
	id := eventsv1.ID(eventsv1.TypeFindingsChanged, p.Digest, strconv.FormatInt(p.ChangeID, 10))
	return eventsv1.New(eventsv1.SourceResultsAPI, eventsv1.TypeFindingsChanged, id, p.Digest, now, p)
}
