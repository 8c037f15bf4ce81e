package store

import (
	"context"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// ApplyScan records a scan status from an operator event unless a newer one
// is stored. Events may arrive late or twice: an older event never
// overwrites a newer one, and a redelivered "scanning" for the same job and
// attempt never undoes its "done" or "failed". A retried Job keeps its name,
// so an event of an earlier attempt never overwrites a later attempt's. It
// reports whether the row changed.
func (s *Store) ApplyScan(ctx context.Context, st report.ScanStatus) (bool, error) {
	q := s.db.WithContext(ctx).Exec(`INSERT INTO scans AS s (digest, image, namespace, scanner, job, status, reason, message, attempt, updated_at)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
 ON CONFLICT (digest) DO UPDATE SET image = EXCLUDED.image, namespace = EXCLUDED.namespace, scanner = EXCLUDED.scanner,
  job = EXCLUDED.job, status = EXCLUDED.status, reason = EXCLUDED.reason, message = EXCLUDED.message,
  attempt = EXCLUDED.attempt, updated_at = EXCLUDED.updated_at
 WHERE NOT (s.job = EXCLUDED.job AND s.attempt > EXCLUDED.attempt)
   AND NOT (s.job = EXCLUDED.job AND s.attempt = EXCLUDED.attempt AND s.status IN ('done','failed') AND EXCLUDED.status NOT IN ('done','failed'))
   AND NOT (s.job = EXCLUDED.job AND s.attempt = EXCLUDED.attempt AND s.status = EXCLUDED.status)
   AND (s.updated_at <= EXCLUDED.updated_at OR (s.job = EXCLUDED.job AND EXCLUDED.status IN ('done','failed')))`,
		st.Digest, st.Image, st.Namespace, st.Scanner, st.Job, string(st.State), st.Reason, st.Message, st.Attempt, st.UpdatedAt)
	if q.Error != nil {
		return false, s.fail("apply scan status", q.Error)
	}
	return q.RowsAffected > 0, nil
}

// ListScans returns scan statuses, most recently updated first. Under a
// Scope it lists the digests running in the scope's namespaces, each
// redacted (report.ScanStatus.Redact) when its scan ran in a namespace
// outside the scope.
func (s *Store) ListScans(ctx context.Context, state report.ScanState, limit int) ([]report.ScanStatus, error) {
	q := s.db.WithContext(ctx).Order("updated_at DESC, digest").Limit(limit)
	if state != "" {
		q = q.Where("status = ?", string(state))
	}
	if f, args := scopeFilter(ctx, "scans.digest"); f != "" {
		q = q.Where(f, args...)
	}
	var rows []scanRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, s.fail("list scans", err)
	}
	out := make([]report.ScanStatus, len(rows))
	for i, r := range rows {
		out[i] = r.status()
		redactScan(ctx, &out[i])
	}
	return out, nil
}
