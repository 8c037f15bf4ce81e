package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/klauspost/compress/zstd"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// The encoder is safe for concurrent EncodeAll; it holds a pool of
// GOMAXPROCS block encoders, so concurrent uploads do not queue on one.
// SpeedFastest: the constructed 1 MB BOM shrinks 12.6x (13.8x with
// SpeedDefault) in 3.3 ms instead of 3.8 ms. The 1 MiB window (SpeedFastest
// alone picks 4 MiB) is what a streaming reader of the BOM must hold, so it
// bounds the memory of every download; BOMs stored before it have windows
// of up to 4 MiB, which OpenBOM still reads.
var zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(bomWindow))

const (
	bomWindow    = 1 << 20
	maxBOMWindow = 4 << 20
)

// PutResult says what PutReport did.
type PutResult struct {
	Created   bool // no report existed for the digest
	Unchanged bool // the same bytes were stored already; only timestamps moved
	// FindingsKept: a replacement with the same findings (fingerprint)
	// kept the stored findings rows; only the summary and BOM were written.
	FindingsKept bool
	Summary      report.Summary
	// Change is the change the report made to its digest's findings, as
	// recorded (with its id): a baseline for a new digest, nil when the
	// finding keys stayed the same.
	Change *report.Change
}

// PutReport stores a report by digest in one transaction: a new digest is
// inserted; the same bytes again only refresh stored_at (and a newly given
// image reference); a different report replaces the summary, findings and
// BOM atomically. Each of the three writes its report.stored event into
// the outbox in the same transaction (when the store has an Announcer).
//
// The report's cause is CauseRematch when r.Cause says so (the rematch
// scope), else CauseScan for a new digest and CauseRescan for a
// replacement. A new digest records a baseline change; a replacement
// whose finding keys differ from the stored ones records a change with
// the new and resolved findings (report.Diff; so does one whose finding
// keys are the same but that lists one of them in CISA KEV for the first
// time: its KEV-added findings), and its findings.changed
// event follows report.stored in the outbox. A replacement with the same
// findings as stored (fingerprint) keeps the findings rows.
func (s *Store) PutReport(ctx context.Context, r *report.Report) (PutResult, error) {
	hash := sha256.Sum256(r.Raw)
	fp := fingerprint(r.FindingList) // outside the transaction: it holds the row lock
	var res PutResult
	// One pinned connection carries both gorm's transaction and the COPY of
	// the findings (copyFindings), so both run in the same transaction.
	err := s.db.WithContext(ctx).Connection(func(db *gorm.DB) error {
		conn, ok := db.Statement.ConnPool.(*sql.Conn)
		if !ok {
			return fmt.Errorf("connection pool is %T, want *sql.Conn", db.Statement.ConnPool)
		}
		return db.Transaction(func(tx *gorm.DB) error {
			res = PutResult{}
			if err := s.putTx(ctx, tx, conn, r, hash[:], fp, &res); err != nil {
				return err
			}
			if err := s.announce(tx, Announcer.ReportStored, res.Summary); err != nil {
				return err
			}
			if res.Change == nil {
				return nil
			}
			return s.announceChange(tx, *res.Change)
		})
	})
	return res, s.fail("put report", err)
}

// putTx is PutReport inside its transaction.
func (s *Store) putTx(ctx context.Context, tx *gorm.DB, conn *sql.Conn, r *report.Report, hash, fp []byte, res *PutResult) error {
	var cur reportRow
	found, err := lockReport(tx, r.Digest, &cur)
	if err != nil {
		return err
	}
	rematch := r.Cause == report.CauseRematch
	if rematch && !found {
		return fmt.Errorf("%w: %s has no report to match again", ErrRematchRefused, r.Digest)
	}
	if !found {
		row := summaryRow(&r.Summary, hash, fp)
		row.Cause = string(causeOf(rematch, false))
		ins := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
		if ins.Error != nil {
			return ins.Error
		}
		if ins.RowsAffected == 1 {
			res.Created = true
			res.Summary = row.summary()
			if err := writeContents(ctx, tx, conn, r, nil); err != nil {
				return err
			}
			ch := report.Baseline(r.FindingList)
			return recordChange(ctx, tx, conn, &res.Summary, &ch, res)
		}
		// A concurrent upload inserted it first: replace it instead.
		if found, err = lockReport(tx, r.Digest, &cur); err != nil || !found {
			return errors.Join(err, fmt.Errorf("report %s vanished during upsert", r.Digest))
		}
	}
	if bytes.Equal(cur.BOMSHA256, hash) {
		upd := map[string]any{"stored_at": r.StoredAt}
		if r.Image != "" && r.Image != cur.Image {
			upd["image"] = r.Image
			cur.Image = r.Image
		}
		// The same BOM uploaded with the DB it was matched against (the
		// scan Job's headers) where the stored one named none or another.
		if r.DBBuilt != "" && (r.DBBuilt != cur.DBBuilt || r.DBSchema != cur.DBSchema) {
			upd["db_built"], upd["db_schema"] = r.DBBuilt, r.DBSchema
			cur.DBBuilt, cur.DBSchema = r.DBBuilt, r.DBSchema
		}
		if err := tx.Model(&reportRow{}).Where("digest = ?", r.Digest).Updates(upd).Error; err != nil {
			return err
		}
		cur.StoredAt = r.StoredAt
		res.Unchanged = true
		res.Summary = cur.summary()
		return nil
	}
	if rematch {
		if err := sameComponents(tx, r); err != nil {
			return err
		}
	}
	row := summaryRow(&r.Summary, hash, fp)
	row.Cause = string(causeOf(rematch, true))
	if row.Image == "" {
		row.Image = cur.Image
	}
	row.CreatedAt = cur.CreatedAt
	if err := tx.Select("*").Where("digest = ?", r.Digest).Updates(&row).Error; err != nil {
		return err
	}
	res.Summary = row.summary()
	if bytes.Equal(cur.FindingsSHA256, fp) {
		// The same findings: no change, and the rows stay as they are.
		res.FindingsKept = true
		return writeBOM(tx, r)
	}
	prev, open, err := storedFindings(ctx, conn, r.Digest)
	if err != nil {
		return err
	}
	if err := tx.Where("digest = ?", r.Digest).Delete(&findingRow{}).Error; err != nil {
		return err
	}
	if err := writeContents(ctx, tx, conn, r, open); err != nil {
		return err
	}
	ch := report.Diff(prev, r.FindingList)
	if !cur.RiskParsed {
		// Stored before findings carried risk: their KEV column says
		// nothing yet, so a listing cannot be told from an added one.
		ch.KEVAdded, ch.KEVAddedCount = nil, 0
	}
	if ch.Empty() {
		return nil
	}
	return recordChange(ctx, tx, conn, &res.Summary, &ch, res)
}

// sameComponents refuses a rematch whose BOM lists other components than
// the stored BOM of its digest (report.ComponentsFingerprint): the rematch
// scope changes findings, never what an image contains. It reads the
// stored BOM inside the write's transaction, under the report's row lock.
func sameComponents(tx *gorm.DB, r *report.Report) error {
	var stored bomRow
	if err := tx.Where("digest = ?", r.Digest).Limit(1).Find(&stored).Error; err != nil {
		return err
	}
	if stored.Encoding != "zstd" {
		return fmt.Errorf("bom of %s: unknown encoding %q", r.Digest, stored.Encoding)
	}
	dec, err := zstd.NewReader(bytes.NewReader(stored.Data), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(maxBOMWindow))
	if err != nil {
		return fmt.Errorf("bom of %s: %w", r.Digest, err)
	}
	defer dec.Close()
	was, err := report.ComponentsFingerprint(dec)
	if err != nil {
		return fmt.Errorf("stored bom of %s: %w", r.Digest, err)
	}
	now, err := report.ComponentsFingerprint(bytes.NewReader(r.Raw))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRematchRefused, err)
	}
	if now != was {
		return fmt.Errorf("%w: the BOM lists other components than the stored BOM of %s: a rematch may change findings only", ErrRematchRefused, r.Digest)
	}
	return nil
}

// causeOf decides a report's cause from its writer, never from its body.
func causeOf(rematch, replaces bool) report.Cause {
	switch {
	case rematch:
		return report.CauseRematch
	case replaces:
		return report.CauseRescan
	}
	return report.CauseScan
}

func lockReport(tx *gorm.DB, digest string, into *reportRow) (bool, error) {
	q := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("digest = ?", digest).Limit(1).Find(into)
	return q.RowsAffected == 1, q.Error
}

// writeContents writes r's findings, carrying their lifecycle, and the
// compressed BOM of r. open is the lifecycle of the keys of the findings r
// replaces (storedFindings), nil for a digest's first report: it has no
// lifecycle yet (startLifecycle), else the keys r drops resolve and those
// it holds again reopen (touchLifecycle).
func writeContents(ctx context.Context, tx *gorm.DB, conn *sql.Conn, r *report.Report, open map[lifecycleKey]openKey) error {
	var seen map[lifecycleKey]report.Seen
	if open == nil {
		seen = startLifecycle(r.StoredAt, r.FindingList)
	} else {
		var err error
		if seen, err = touchLifecycle(ctx, conn, r.Digest, r.StoredAt, open, r.FindingList); err != nil {
			return err
		}
	}
	if err := copyFindings(ctx, conn, r.Digest, r.FindingList, seen); err != nil {
		return fmt.Errorf("insert findings: %w", err)
	}
	return writeBOM(tx, r)
}

// writeBOM writes the compressed BOM of r: the zstd frame it was uploaded
// as when a reader of it holds at most bomWindow (zstd's SpeedFastest, as
// the uploader writes it, compresses a BOM ~9x in ~1 ms per MB; the frame
// decodes to r.Raw, ingest checked), else r.Raw compressed here.
func writeBOM(tx *gorm.DB, r *report.Report) error {
	data := r.Frame
	if len(data) == 0 || r.FrameWindow > bomWindow {
		data = zenc.EncodeAll(r.Raw, nil)
	}
	bom := bomRow{Digest: r.Digest, Encoding: "zstd", Size: int64(len(r.Raw)), Data: data}
	return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&bom).Error
}

// GetSummary returns one report's summary with its scan status.
func (s *Store) GetSummary(ctx context.Context, digest string) (*report.Summary, error) {
	var rows []listRow
	err := s.db.WithContext(ctx).Raw(listSelect+" WHERE r.digest = ?", digest).Scan(&rows).Error
	if err != nil {
		return nil, s.fail("get report", err)
	}
	if len(rows) == 0 {
		return nil, ErrNotFound
	}
	sum := rows[0].summary(ctx)
	return &sum, nil
}

// BOMInfo sizes a stored BOM before it is read.
type BOMInfo struct {
	Size   int64 // decompressed bytes, as uploaded
	Stored int64 // compressed bytes OpenBOM loads
	Window int64 // the zstd window its decoder holds
}

// ReadMemory is what reading the BOM with OpenBOM holds at most: the
// compressed bytes (twice while pgx reads them: its read buffer and the
// copy kept) and the decoder's window and block buffers.
func (b BOMInfo) ReadMemory() int64 { return 2*b.Stored + b.Window + 512<<10 }

// StatBOM returns the sizes of a report's BOM, reading only its zstd frame
// header.
func (s *Store) StatBOM(ctx context.Context, digest string) (BOMInfo, error) {
	var rows []struct {
		Size, Stored int64
		Head         []byte
	}
	err := s.db.WithContext(ctx).Model(&bomRow{}).
		Select("size, octet_length(data) AS stored, substring(data FROM 1 FOR 18) AS head").
		Where("digest = ?", digest).Limit(1).Scan(&rows).Error
	if err != nil {
		return BOMInfo{}, s.fail("stat bom", err)
	}
	if len(rows) == 0 {
		return BOMInfo{}, ErrNotFound
	}
	r := rows[0]
	info := BOMInfo{Size: r.Size, Stored: r.Stored, Window: min(r.Size, maxBOMWindow)}
	var h zstd.Header
	if h.Decode(r.Head) == nil {
		if h.SingleSegment {
			info.Window = int64(h.FrameContentSize)
		} else {
			info.Window = int64(h.WindowSize)
		}
	}
	return info, nil
}

// OpenBOM returns a reader of the original bytes of a report's BOM. It
// loads only the compressed bytes (about a tenth of the BOM) and
// decompresses as the caller reads, holding at most BOMInfo.ReadMemory;
// the caller must Close it.
func (s *Store) OpenBOM(ctx context.Context, digest string) (*BOMReader, error) {
	// Straight through pgx: database/sql would copy the bytes once more.
	var row bomRow
	err := s.db.WithContext(ctx).Connection(func(db *gorm.DB) error {
		conn, ok := db.Statement.ConnPool.(*sql.Conn)
		if !ok {
			return fmt.Errorf("connection pool is %T, want *sql.Conn", db.Statement.ConnPool)
		}
		return withPgx(conn, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT encoding, size, data FROM report_boms WHERE digest = $1`, digest).
				Scan(&row.Encoding, &row.Size, &row.Data)
		})
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, s.fail("get bom", err)
	}
	if row.Encoding != "zstd" {
		return nil, fmt.Errorf("bom of %s: unknown encoding %q", digest, row.Encoding)
	}
	// Concurrency 1 decodes synchronously in Read: no goroutines, and
	// nothing decoded ahead of the client.
	dec, err := zstd.NewReader(bytes.NewReader(row.Data), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(maxBOMWindow))
	if err != nil {
		return nil, fmt.Errorf("bom of %s: %w", digest, err)
	}
	return &BOMReader{dec: dec, Size: row.Size, digest: digest}, nil
}

// BOMReader streams one decompressed BOM.
type BOMReader struct {
	Size   int64 // decompressed bytes
	dec    *zstd.Decoder
	digest string
}

func (b *BOMReader) Read(p []byte) (int, error) {
	n, err := b.dec.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("decompress bom of %s: %w", b.digest, err)
	}
	return n, err
}

// Close releases the decoder.
func (b *BOMReader) Close() error {
	b.dec.Close()
	return nil
}

// DeleteReport deletes a report with its findings and BOM and returns the
// deleted summary; its report.deleted event goes into the outbox in the
// same transaction (when the store has an Announcer). The digest's change
// history stays: it records what was seen, and the next report of the
// digest starts it again with a baseline.
func (s *Store) DeleteReport(ctx context.Context, digest string) (*report.Summary, error) {
	var sum report.Summary
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var rows []reportRow
		if err := tx.Clauses(clause.Returning{}).Where("digest = ?", digest).Delete(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return ErrNotFound
		}
		sum = rows[0].summary()
		return s.announce(tx, Announcer.ReportDeleted, sum)
	})
	if err != nil {
		return nil, s.fail("delete report", err)
	}
	return &sum, nil
}
