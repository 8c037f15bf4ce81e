package store

import (
	"context"
	"time"
)

// PruneReports deletes, in batches of batch, the reports of digests that no
// namespace has run since before cutoff (digest_runtime.not_running_since),
// and returns how many it deleted. It writes no event: a report.deleted
// makes the operator scan the digest again (its report-deleted consumer
// requeues it), which is wrong for an image that no longer runs; a digest
// that runs again later is simply scanned as new. Reports of digests no
// inventory ever listed are kept.
func (s *Store) PruneReports(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	var total int64
	for {
		q := s.db.WithContext(ctx).Exec(`DELETE FROM reports WHERE digest IN (
 SELECT dr.digest FROM digest_runtime dr JOIN reports r ON r.digest = dr.digest
 WHERE dr.not_running_since < ? AND NOT EXISTS (SELECT 1 FROM inventory i WHERE i.digest = dr.digest)
 LIMIT ?)`, cutoff.UTC(), batch)
		if q.Error != nil {
			return total, s.fail("prune reports", q.Error)
		}
		total += q.RowsAffected
		if q.RowsAffected < int64(batch) {
			return total, nil
		}
	}
}
