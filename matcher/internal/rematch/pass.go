package rematch

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/crowsnest-dev/crowsnest/api/finding"
)

// Pass re-matches every stored report against one DB. Its fields are its
// configuration; a Pass may run again (resuming from its progress file).
type Pass struct {
	Client Client
	// Dir holds the progress file (ProgressFile); it must exist.
	Dir string
	// Concurrency is how many reports are handled at once (default 2). The
	// Matcher bounds the matches themselves.
	Concurrency int
	// PageSize is how many reports are listed at once (default 100).
	PageSize int
	// CheckpointEvery bounds the work a kill loses: within a page, the
	// unchanged reports are recorded (one request for all of them) and the
	// progress saved at most this often (default 5s); always at the end of
	// a page. Whatever was not saved is matched again on resume, which
	// changes nothing (see progress).
	CheckpointEvery time.Duration
	// Skip, when set, lets a pass skip the reports the DB update cannot
	// change (skip.go); nil matches every report.
	Skip    *Skip
	Metrics Metrics      // default: none
	Logger  *slog.Logger // default: discard
	Now     func() time.Time
}

func (p *Pass) defaults() {
	if p.Concurrency <= 0 {
		p.Concurrency = 2
	}
	if p.PageSize <= 0 {
		p.PageSize = 100
	}
	if p.CheckpointEvery <= 0 {
		p.CheckpointEvery = 5 * time.Second
	}
	if p.Metrics == nil {
		p.Metrics = nopMetrics{}
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	if p.Now == nil {
		p.Now = time.Now
	}
}

// Run re-matches every stored report with m, resuming the pass over m's DB
// recorded in the progress file if there is one. It returns when every
// report was handled (Result.Finished), or with an error when ctx ends
// (the progress so far is kept) or results-api cannot list reports. A
// report that fails is counted and the pass goes on.
func (p *Pass) Run(ctx context.Context, m *Matcher) (Result, error) {
	p.defaults()
	db := m.DB()
	prog, err := loadProgress(p.Dir)
	if err != nil {
		return Result{DB: db}, err
	}
	switch {
	case prog.forDB(db) && prog.FinishedAt != nil:
		r := p.result(prog)
		r.Repeated = true
		return r, nil
	case prog.forDB(db):
		p.Logger.InfoContext(ctx, "resuming rematch pass", "db_built", db.Built, "done", prog.Counts.Total)
	default:
		prog = &progress{Version: progressVersion, DBBuilt: db.Built, DBSchema: db.Schema, StartedAt: p.Now().UTC()}
		if err := saveProgress(p.Dir, prog); err != nil {
			return p.result(prog), err
		}
		p.Logger.InfoContext(ctx, "starting rematch pass", "db_built", db.Built, "db_schema", db.Schema)
	}

	plan := p.planSkip(ctx, m)
	for {
		page, err := p.Client.ListReports(ctx, prog.Cursor, p.PageSize)
		if err != nil {
			return p.result(prog), fmt.Errorf("list reports: %w", err)
		}
		if err := p.runPage(ctx, m, plan, prog, page.Items); err != nil {
			return p.result(prog), err
		}
		prog.Cursor, prog.Done, prog.Uploading = page.NextCursor, nil, nil
		if page.NextCursor == "" {
			now := p.Now().UTC()
			prog.FinishedAt = &now
		}
		if err := saveProgress(p.Dir, prog); err != nil {
			return p.result(prog), err
		}
		if prog.FinishedAt != nil {
			r := p.result(prog)
			p.Metrics.PassDone(r)
			p.Logger.InfoContext(ctx, "rematch pass done", "db_built", db.Built, "total", r.Total,
				"changed", r.Changed, "unchanged", r.Unchanged, "failed", r.Failed, "duration", r.Duration)
			return r, nil
		}
	}
}

func (p *Pass) result(prog *progress) Result {
	r := Result{DB: DB{Built: prog.DBBuilt, Schema: prog.DBSchema}, Counts: prog.Counts, StartedAt: prog.StartedAt}
	end := p.Now().UTC()
	if prog.FinishedAt != nil {
		r.Finished, r.FinishedAt, end = true, *prog.FinishedAt, *prog.FinishedAt
	}
	r.Duration = end.Sub(prog.StartedAt)
	return r
}

// handle re-matches one report. A report deleted since it was listed is
// not counted: it is no longer part of the pass. An unchanged report
// (same findings fingerprint as stored) comes back with record set: its DB
// build is recorded in a batch at the next checkpoint. wasUploading says an
// earlier run of this pass started uploading it.
func (p *Pass) handle(ctx context.Context, m *Matcher, plan *skipPlan, ref ReportRef, wasUploading bool,
	beforeUpload func(digest string) error) handled {
	h := handled{digest: ref.Digest, counted: true}
	db := m.DB()
	log := p.Logger.With("digest", ref.Digest, "image", ref.Image)
	if t, err := time.Parse(time.RFC3339, ref.DBBuilt); err == nil && t.Equal(db.Built) {
		// Already matched against this DB: scanned with it, or re-matched
		// by a run of this pass that was killed before it could record it.
		h.outcome = OutcomeUnchanged
		if wasUploading {
			h.outcome = OutcomeChanged
		}
		return h
	}
	if plan != nil {
		if fp, ok := plan.skippable(ref); ok {
			if !plan.check() {
				h.outcome, h.record, h.skipped = OutcomeUnchanged, true, true
				h.footprint = &footprint{Built: db.Built, Findings: fp.Findings, ids: fp.ids}
				return h
			}
			h.checked = true
		}
	}
	bom, err := p.Client.GetBOM(ctx, ref.Digest)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && se.Status == http.StatusNotFound {
			log.DebugContext(ctx, "report deleted during rematch")
			h.counted = false
			return h
		}
		h.outcome = p.fail(ctx, log, "fetch BOM", err)
		return h
	}
	out, err := m.MatchOutput(ctx, bom)
	if err != nil {
		h.outcome = p.fail(ctx, log, "match", err)
		return h
	}
	same, err := unchanged(ref, bom, out)
	if err != nil {
		h.outcome = p.fail(ctx, log, "compare findings", err)
		return h
	}
	if h.checked && !same {
		p.Metrics.SkipMismatch()
		log.ErrorContext(ctx, "rematch skip check: a report the DB diff would have skipped has other findings; uploading it")
	}
	if fs := out.Footprint(); fs != nil && p.Skip != nil {
		if now, err := out.Fingerprint(); err == nil {
			h.footprint = &footprint{Built: db.Built, Findings: now, Keys: fs}
		}
	}
	if same {
		h.outcome, h.record = OutcomeUnchanged, true
		return h
	}
	enc, err := out.Encode()
	if err != nil {
		h.outcome = p.fail(ctx, log, "encode", err)
		return h
	}
	if err := beforeUpload(ref.Digest); err != nil {
		h.outcome = p.fail(ctx, log, "save progress", err)
		return h
	}
	if err := p.Client.PutReport(ctx, ref, enc); err != nil {
		h.outcome = p.fail(ctx, log, "upload report", err)
		return h
	}
	log.InfoContext(ctx, "report re-matched", "findings", len(out.Findings()))
	h.outcome = OutcomeChanged
	return h
}

// unchanged reports whether out has the findings results-api stores for
// ref: the same contract fingerprint. A report stored before results-api
// kept fingerprints has none listed; its stored BOM (the match's input) is
// read for it then.
func unchanged(ref ReportRef, stored []byte, out *Output) (bool, error) {
	now, err := out.Fingerprint()
	if err != nil {
		// results-api judges such a report (a vulnerability without an
		// id); uploading it lets it.
		return false, nil //nolint:nilerr // not comparable: changed
	}
	if ref.FindingsSHA256 != "" {
		was, err := hex.DecodeString(ref.FindingsSHA256)
		if err != nil {
			return false, fmt.Errorf("findingsSha256 %q: %w", ref.FindingsSHA256, err)
		}
		return bytes.Equal(was, now), nil
	}
	var bom cdx.BOM
	work.bomBytesParsed.Add(int64(len(stored)))
	if err := json.Unmarshal(stored, &bom); err != nil {
		return false, fmt.Errorf("decode stored BOM: %w", err)
	}
	fs, err := finding.Of(&bom, 0)
	if err != nil {
		return false, nil //nolint:nilerr // not comparable: changed
	}
	return bytes.Equal(finding.Fingerprint(fs), now), nil
}

func (p *Pass) fail(ctx context.Context, log *slog.Logger, what string, err error) Outcome {
	if ctx.Err() == nil {
		log.WarnContext(ctx, "rematch of report failed", "step", what, "error", err)
	}
	return OutcomeFailed
}
