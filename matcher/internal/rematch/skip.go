package rematch

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"
)

// A daily DB update changes the rows of a few thousand packages and
// vulnerabilities; most reports look none of them up. Skip lets a pass
// match only the reports whose footprint (footprint.go) meets the diff
// between the DB build they were last matched against and the new one
// (dbdiff.go), and record the others as unchanged, in batch, as it records
// a report whose re-match found the same findings.
//
// A report is skipped only when all of these hold: the builds agree on
// their schema and on the tables every answer depends on (DBDiff.Full is
// empty); results-api lists the report as matched against the previous
// build, with the findings fingerprint its footprint was recorded with (so
// the stored findings are that match's); the footprint store was written by
// this Grype version; and no key of the footprint is in the diff. Anything
// else is matched in full. As a guard, a random sample of the reports that
// would be skipped (Sample, and the first of each run) is matched in full
// anyway, at most SampleMax of them per run, so that at 10,000 images the
// guard costs a few dozen matches rather than hundreds; one whose findings
// differ is uploaded like any changed report and counted
// (Metrics.SkipMismatch: crowsnest_rematch_skip_mismatch_total). The pass
// walks the reports in digest order, which says nothing of their content, so
// the capped sample is still a random one.

// Skip configures skipping in a Pass. The Pass's Matcher must record
// footprints (Options.Footprints).
type Skip struct {
	// Footprints keeps the reports' footprints (OpenFootprints in Dir).
	Footprints *FootprintStore
	// Previous returns the directory of the DB build that was active before
	// the one a pass runs for; false when there is none.
	Previous func() (dir string, ok bool)
	// Sample is the fraction of skippable reports matched in full to check
	// the skip; zero means 0.02, negative none but the first of a run.
	Sample float64
	// SampleMax caps the sampled checks of a run, the first one aside; zero
	// means no cap.
	SampleMax int
	// Disabled records footprints but skips nothing (--rematch-skip=false).
	Disabled bool
	// Rand returns a number in [0, 1); nil means math/rand/v2.
	Rand func() float64
}

// skipPlan is what a pass run skips by.
type skipPlan struct {
	s        *Skip
	oldBuilt time.Time
	ids      map[uint64]struct{}
	first    atomic.Bool  // the first skippable report was checked
	sampled  atomic.Int64 // sampled checks so far, the first aside
}

// planSkip diffs the previous DB with m's and returns what the pass can
// skip by; nil when it matches every report (the reason is logged).
func (p *Pass) planSkip(ctx context.Context, m *Matcher) *skipPlan {
	s := p.Skip
	if s == nil || s.Disabled || s.Footprints == nil || !m.footprints {
		return nil
	}
	log := p.Logger.With("db_built", m.DB().Built)
	prev, ok := "", false
	if s.Previous != nil {
		prev, ok = s.Previous()
	}
	if !ok {
		log.InfoContext(ctx, "rematch matches every report: no previous DB")
		return nil
	}
	desc, err := v6.ReadDescription(filepath.Join(prev, v6.VulnerabilityDBFileName))
	if err != nil || desc == nil {
		log.WarnContext(ctx, "rematch matches every report: previous DB unreadable", "error", err)
		return nil
	}
	oldBuilt := desc.Built.UTC()
	if !oldBuilt.Before(m.DB().Built) {
		log.InfoContext(ctx, "rematch matches every report: previous DB is not older", "previous_built", oldBuilt)
		return nil
	}
	start := time.Now()
	d, err := DiffDBs(prev, filepath.Dir(m.path))
	if err != nil {
		log.WarnContext(ctx, "rematch matches every report: DB diff failed", "error", err)
		return nil
	}
	if d.Full != "" {
		log.InfoContext(ctx, "rematch matches every report", "reason", d.Full)
		return nil
	}
	ids, err := s.Footprints.keyIDs(d.Keys)
	if err != nil {
		log.WarnContext(ctx, "rematch matches every report: footprints unreadable", "error", err)
		return nil
	}
	log.InfoContext(ctx, "rematch skips reports the DB update cannot change", "previous_built", oldBuilt,
		"changed_keys", len(d.Keys)-1, "diff_took", time.Since(start).Round(time.Millisecond))
	return &skipPlan{s: s, oldBuilt: oldBuilt, ids: ids}
}

// skippable returns ref's footprint when the plan lets the pass skip ref.
func (sp *skipPlan) skippable(ref ReportRef) (footprint, bool) {
	t, err := time.Parse(time.RFC3339, ref.DBBuilt)
	if err != nil || t.Unix() != sp.oldBuilt.Unix() || ref.FindingsSHA256 == "" {
		return footprint{}, false
	}
	fp, ok, err := sp.s.Footprints.get(ref.Digest)
	if err != nil || !ok || fp.Built.Unix() != sp.oldBuilt.Unix() || hex.EncodeToString(fp.Findings) != ref.FindingsSHA256 {
		return footprint{}, false
	}
	return fp, !fp.meets(sp.ids)
}

// check says whether a skippable report is matched in full anyway.
func (sp *skipPlan) check() bool {
	if sp.first.CompareAndSwap(false, true) {
		return true
	}
	rate := sp.s.Sample
	if rate == 0 {
		rate = 0.02
	}
	r := sp.s.Rand
	if r == nil {
		r = rand.Float64
	}
	if r() >= rate {
		return false
	}
	if max := int64(sp.s.SampleMax); max > 0 && sp.sampled.Add(1) > max {
		return false
	}
	return true
}
