package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// MaxVulnDBBatch is the most digests RecordVulnDBs takes at once.
const MaxVulnDBBatch = 1000

// RecordVulnDBs is RecordVulnDB for many digests in one statement (UPDATE …
// WHERE digest = ANY($1), one autocommit): the matcher records a page of
// unchanged re-matches at once. It returns the digests that have no report
// (deleted since the matcher listed them), sorted. Every digest must be
// valid and there may be at most MaxVulnDBBatch of them.
func (s *Store) RecordVulnDBs(ctx context.Context, digests []string, rec VulnDBRecord) (missing []string, err error) {
	if len(digests) == 0 {
		return nil, nil
	}
	if len(digests) > MaxVulnDBBatch {
		return nil, fmt.Errorf("record vulndb: %d digests, at most %d", len(digests), MaxVulnDBBatch)
	}
	for _, d := range digests {
		if _, err := report.ParseDigest(d); err != nil {
			return nil, err
		}
	}
	var updated []string
	err = s.db.WithContext(ctx).Raw(`UPDATE reports SET db_built = ?, db_schema = ?, matched_at = ?
 WHERE digest = ANY(?::text[]) RETURNING digest`, rec.Built, rec.Schema, rec.MatchedAt, textArray(digests)).Scan(&updated).Error
	if err != nil {
		return nil, s.fail("record vulndb", err)
	}
	slices.Sort(updated)
	for _, d := range digests {
		if _, found := slices.BinarySearch(updated, d); !found {
			missing = append(missing, d)
		}
	}
	slices.Sort(missing)
	return slices.Compact(missing), nil
}
