package rematch

import "time"

// Outcome is what a pass did with one report.
type Outcome string

// Outcomes of one report.
const (
	// OutcomeChanged: the findings changed and the new report was uploaded.
	OutcomeChanged Outcome = "changed"
	// OutcomeUnchanged: the findings stayed; only the DB build was recorded
	// (or the report was already matched against this DB).
	OutcomeUnchanged Outcome = "unchanged"
	// OutcomeFailed: the report could not be fetched, matched or stored.
	OutcomeFailed Outcome = "failed"
)

// Metrics receives what a pass does, for the binary to expose (e.g. as
// crowsnest_matcher_rematch_reports_total{outcome} and
// crowsnest_matcher_rematch_report_duration_seconds). Calls come from
// several goroutines.
type Metrics interface {
	// Report is called once per report handled, with the time it took.
	Report(o Outcome, took time.Duration)
	// PassDone is called when a pass has handled every report.
	PassDone(r Result)
	// Skipped is called once per report recorded unchanged without a match
	// because the DB diff cannot change it (Pass.Skip).
	Skipped()
	// SkipMismatch is called when a report the DB diff would have skipped,
	// matched in full as a check, had other findings.
	SkipMismatch()
}

type nopMetrics struct{}

func (nopMetrics) Skipped()      {}
func (nopMetrics) SkipMismatch() {}

func (nopMetrics) Report(Outcome, time.Duration) {}
func (nopMetrics) PassDone(Result)               {}

// Counts are a pass's report counts; Total = Changed + Unchanged + Failed.
// Skipped counts the unchanged reports recorded without a match (Pass.Skip).
type Counts struct {
	Total     int `json:"total"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped,omitempty"`
}

func (c *Counts) add(o Outcome) {
	c.Total++
	switch o {
	case OutcomeChanged:
		c.Changed++
	case OutcomeUnchanged:
		c.Unchanged++
	case OutcomeFailed:
		c.Failed++
	}
}

// Result is a pass's outcome: what crowsnest.rematch.done reports.
type Result struct {
	DB DB
	Counts
	StartedAt  time.Time     // when the pass over this DB started (before any restart)
	FinishedAt time.Time     // zero unless the pass finished
	Duration   time.Duration // FinishedAt (or now) − StartedAt
	// Finished is true when every report was handled; false when the pass
	// stopped early (its error says why) and can be resumed.
	Finished bool
	// Repeated is true when the progress file said this DB's pass had
	// already finished: nothing was done this time.
	Repeated bool
}
