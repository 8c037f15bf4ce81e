package service

import (
	"context"
	"log/slog"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/ingest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// backfillRisk fills, once at start and in the background, the risk
// columns of reports stored before findings had them (migration 00007),
// by parsing their stored BOMs again. Until it is done those reports sort
// as unrated; a failure is logged and left to the next start.
func backfillRisk(ctx context.Context, st *store.Store, log *slog.Logger) {
	start := time.Now()
	n, err := st.BackfillRisk(ctx, parseStored, 100)
	switch {
	case err != nil && ctx.Err() == nil:
		log.Warn("backfill risk of stored reports", "error", err, "reports", n)
	case n > 0:
		log.Info("backfilled risk of stored reports", "reports", n, "seconds", time.Since(start).Seconds())
	}
}

// parseStored parses a stored BOM as ingest did when it was uploaded; the
// findings cap does not apply to what is already stored.
func parseStored(digest string, raw []byte) ([]report.Finding, error) {
	r, err := ingest.Parse(raw, ingest.Options{Digest: digest, Now: time.Now(), MaxFindings: 1 << 30})
	if err != nil {
		return nil, err
	}
	return r.FindingList, nil
}
