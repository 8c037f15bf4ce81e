package rematch

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// handled is a report a page handled whose outcome is not saved yet.
type handled struct {
	digest    string
	outcome   Outcome
	counted   bool
	record    bool // unchanged: its DB build is still to be recorded
	took      time.Duration
	skipped   bool       // by the DB diff, not matched
	checked   bool       // skippable, matched in full as a check
	footprint *footprint // to keep once the outcome is committed
}

// page runs the reports of one page that are not done yet with
// Pass.Concurrency workers. It commits what they did at checkpoints
// (Pass.CheckpointEvery, and the page's end): the unchanged reports' DB
// build recorded in one request, then their outcomes counted and the
// progress saved once. A changed report's upload is announced in the
// progress (Uploading) before it starts.
type page struct {
	p    *Pass
	db   DB
	prog *progress

	mu       sync.Mutex
	pending  []handled
	lastSave time.Time
	err      error // the first checkpoint error
}

// runPage handles items; the caller saves the progress after it returns
// nil (the page's last checkpoint has recorded and counted everything but
// not saved it, so that the page's end and the next cursor are saved
// together).
func (p *Pass) runPage(ctx context.Context, m *Matcher, plan *skipPlan, prog *progress, items []ReportRef) error {
	done := make(map[string]bool, len(prog.Done))
	for _, d := range prog.Done {
		done[d] = true
	}
	uploading := make(map[string]bool, len(prog.Uploading))
	for _, d := range prog.Uploading {
		uploading[d] = true
	}
	pg := &page{p: p, db: m.DB(), prog: prog, lastSave: p.Now()}
	work := make(chan ReportRef)
	var wg sync.WaitGroup
	for range p.Concurrency {
		wg.Go(func() {
			for ref := range work {
				start := time.Now()
				h := p.handle(ctx, m, plan, ref, uploading[ref.Digest], pg.beforeUpload)
				if ctx.Err() != nil {
					// Not recorded: the report is redone on resume, and
					// skipped then if its upload had landed.
					continue
				}
				h.took = time.Since(start)
				pg.finish(ctx, h)
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
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.err != nil {
		return pg.err
	}
	return pg.commit(ctx, false)
}

// beforeUpload records that digest's upload starts, so that a resumed pass
// can tell an upload that landed from a report unchanged.
func (pg *page) beforeUpload(digest string) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.prog.Uploading = append(pg.prog.Uploading, digest)
	return saveProgress(pg.p.Dir, pg.prog)
}

// finish adds h to the page's pending outcomes and commits them when the
// last checkpoint is CheckpointEvery ago.
func (pg *page) finish(ctx context.Context, h handled) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.pending = append(pg.pending, h)
	if pg.err == nil && pg.p.Now().Sub(pg.lastSave) >= pg.p.CheckpointEvery {
		pg.err = pg.commit(ctx, true)
	}
}

// commit records the pending unchanged reports' DB build (in batches of
// MaxRecordBatch), counts every pending outcome, marks those reports done
// and, when save is set, saves the progress. Called with pg.mu held.
func (pg *page) commit(ctx context.Context, save bool) error {
	var record []string
	for _, h := range pg.pending {
		if h.record {
			record = append(record, h.digest)
		}
	}
	missing, recErr := pg.record(ctx, record)
	if recErr != nil && ctx.Err() != nil {
		return ctx.Err() // not committed: redone on resume
	}
	prog := pg.prog
	fps := map[string]footprint{}
	for _, h := range pg.pending {
		if h.record {
			switch _, gone := slices.BinarySearch(missing, h.digest); {
			case recErr != nil:
				h.outcome = OutcomeFailed
			case gone:
				h.counted = false // deleted since it was listed
			}
		}
		if h.counted {
			pg.p.Metrics.Report(h.outcome, h.took)
			prog.Counts.add(h.outcome)
			if h.skipped && h.outcome == OutcomeUnchanged {
				prog.Counts.Skipped++
				pg.p.Metrics.Skipped()
			}
			if h.footprint != nil && h.outcome != OutcomeFailed {
				fps[h.digest] = *h.footprint
			}
		}
		prog.Done = append(prog.Done, h.digest)
		prog.Uploading = slices.DeleteFunc(prog.Uploading, func(d string) bool { return d == h.digest })
	}
	pg.pending = pg.pending[:0]
	if pg.p.Skip != nil && pg.p.Skip.Footprints != nil {
		// A cache: a footprint not kept means a full match next time.
		if err := pg.p.Skip.Footprints.put(fps); err != nil {
			pg.p.Logger.WarnContext(ctx, "keeping report footprints failed", "reports", len(fps), "error", err)
		}
	}
	if recErr != nil {
		pg.p.Logger.WarnContext(ctx, "recording the DB build of unchanged reports failed", "reports", len(record), "error", recErr)
	}
	if !save {
		return nil
	}
	pg.lastSave = pg.p.Now()
	return saveProgress(pg.p.Dir, prog)
}

// MaxRecordBatch is the most unchanged reports recorded in one request
// (results-api's limit).
const MaxRecordBatch = 1000

// record records pg.db as the DB of the unchanged reports digests, in
// requests of at most MaxRecordBatch, and returns those results-api did
// not have (sorted).
func (pg *page) record(ctx context.Context, digests []string) ([]string, error) {
	var missing []string
	for chunk := range slices.Chunk(digests, MaxRecordBatch) {
		gone, err := pg.p.Client.PutVulnDBs(ctx, chunk, pg.db)
		if err != nil {
			return nil, fmt.Errorf("record DB build: %w", err)
		}
		missing = append(missing, gone...)
	}
	slices.Sort(missing)
	return missing, nil
}
