package rematch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
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
	Metrics  Metrics      // default: none
	Logger   *slog.Logger // default: discard
	Now      func() time.Time
}

func (p *Pass) defaults() {
	if p.Concurrency <= 0 {
		p.Concurrency = 2
	}
	if p.PageSize <= 0 {
		p.PageSize = 100
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

	for {
		page, err := p.Client.ListReports(ctx, prog.Cursor, p.PageSize)
		if err != nil {
			return p.result(prog), fmt.Errorf("list reports: %w", err)
		}
		if err := p.runPage(ctx, m, prog, page.Items); err != nil {
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

// runPage handles the reports of one page that are not done yet, with
// p.Concurrency workers, recording each in the progress file as it ends.
func (p *Pass) runPage(ctx context.Context, m *Matcher, prog *progress, items []ReportRef) error {
	done := make(map[string]bool, len(prog.Done))
	for _, d := range prog.Done {
		done[d] = true
	}
	uploading := make(map[string]bool, len(prog.Uploading))
	for _, d := range prog.Uploading {
		uploading[d] = true
	}
	work := make(chan ReportRef)
	var (
		mu      sync.Mutex
		saveErr error
		wg      sync.WaitGroup
	)
	// beforeUpload records that ref's upload starts, so that a resumed
	// pass can tell an upload that landed from a report already current.
	beforeUpload := func(digest string) error {
		mu.Lock()
		defer mu.Unlock()
		prog.Uploading = append(prog.Uploading, digest)
		return saveProgress(p.Dir, prog)
	}
	for range p.Concurrency {
		wg.Go(func() {
			for ref := range work {
				start := time.Now()
				o, counted := p.handle(ctx, m, ref, uploading[ref.Digest], beforeUpload)
				if ctx.Err() != nil {
					// Not recorded: the report is redone on resume, and
					// skipped then if its upload had landed.
					continue
				}
				if counted {
					p.Metrics.Report(o, time.Since(start))
				}
				mu.Lock()
				prog.Done = append(prog.Done, ref.Digest)
				prog.Uploading = slices.DeleteFunc(prog.Uploading, func(d string) bool { return d == ref.Digest })
				if counted {
					prog.Counts.add(o)
				}
				if err := saveProgress(p.Dir, prog); err != nil && saveErr == nil {
					saveErr = err
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, ref := range items {
		if done[ref.Digest] {
			continue
		}
		select {
		case work <- ref:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return saveErr
}

// handle re-matches one report. counted is false for a report deleted
// since it was listed: it is no longer part of the pass. wasUploading says
// an earlier run of this pass started uploading it.
func (p *Pass) handle(ctx context.Context, m *Matcher, ref ReportRef, wasUploading bool,
	beforeUpload func(digest string) error) (o Outcome, counted bool) {
	db := m.DB()
	log := p.Logger.With("digest", ref.Digest, "image", ref.Image)
	if t, err := time.Parse(time.RFC3339, ref.DBBuilt); err == nil && t.Equal(db.Built) {
		// Already matched against this DB: scanned with it, or re-matched
		// by a run of this pass that was killed before it could record it.
		if wasUploading {
			return OutcomeChanged, true
		}
		return OutcomeUnchanged, true
	}
	bom, err := p.Client.GetBOM(ctx, ref.Digest)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && se.Status == http.StatusNotFound {
			log.DebugContext(ctx, "report deleted during rematch")
			return "", false
		}
		return p.fail(ctx, log, "fetch BOM", err), true
	}
	var stored cdx.BOM
	if err := json.Unmarshal(bom, &stored); err != nil {
		return p.fail(ctx, log, "decode stored BOM", err), true
	}
	prev := FindingsOf(&stored)
	stored = cdx.BOM{} // let it go before matching

	out, next, err := m.Match(ctx, bom)
	if err != nil {
		return p.fail(ctx, log, "match", err), true
	}
	if SameFindings(prev, next) {
		if err := p.Client.PutVulnDB(ctx, ref.Digest, db); err != nil {
			return p.fail(ctx, log, "record DB build", err), true
		}
		return OutcomeUnchanged, true
	}
	if err := beforeUpload(ref.Digest); err != nil {
		return p.fail(ctx, log, "save progress", err), true
	}
	if err := p.Client.PutReport(ctx, ref, out); err != nil {
		return p.fail(ctx, log, "upload report", err), true
	}
	added, resolved := Diff(prev, next)
	log.InfoContext(ctx, "report re-matched", "new", len(added), "resolved", len(resolved), "findings", len(next))
	return OutcomeChanged, true
}

func (p *Pass) fail(ctx context.Context, log *slog.Logger, what string, err error) Outcome {
	if ctx.Err() == nil {
		log.WarnContext(ctx, "rematch of report failed", "step", what, "error", err)
	}
	return OutcomeFailed
}
