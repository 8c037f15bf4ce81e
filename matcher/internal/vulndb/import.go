package vulndb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"
	"github.com/spf13/afero"
)

// ImportOptions qualify one import.
type ImportOptions struct {
	// Checksum, when set, must match the archive ("sha256:<hex>", as in
	// Grype's listing).
	Checksum string
	// Force activates a DB that is not newer than the active one (a
	// deliberate rollback).
	Force bool
	// Source is recorded as DB.Source; empty means "file".
	Source string
	// Name is the archive's file name to keep and serve; empty means the
	// base name of the imported path (see archiveName).
	Name string
	// Move lets the store move the file instead of copying it; it must be
	// one the store handed out (CreateTemp).
	Move bool
}

// Import checks the DB archive at path and makes it the active DB; path is
// copied, not moved, unless o.Move says otherwise. Importing the archive that is already active does
// nothing and returns the active DB. Every refusal leaves the active DB as
// it was.
//
// One import runs at a time, within Limits.MaxImportTime from taking the
// lock: past it the import is abandoned with ErrTimeout. (Hydration, which
// builds the indexes of a DB already checked against the size limit, is
// Grype's code and is not interruptible; it is bounded by the DB's size.)
func (s *Store) Import(ctx context.Context, path string, o ImportOptions) (DB, error) {
	s.importMu.Lock()
	limit := s.opts.Limits.MaxImportTime
	ictx, cancel := context.WithTimeoutCause(ctx, limit, fmt.Errorf("import not done within %s: %w", limit, ErrTimeout))
	db, activated, err := s.importLocked(ictx, path, o)
	if cause := context.Cause(ictx); err != nil && errors.Is(cause, ErrTimeout) && !errors.Is(err, ErrTimeout) {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	cancel()
	s.importMu.Unlock()
	if err != nil {
		return DB{}, err
	}
	if activated {
		s.log.Info("vulnerability DB activated", "db", db.ID, "built", db.Built, "schema", db.Schema, "source", db.Source)
		if s.opts.OnActivate != nil {
			s.opts.OnActivate(db)
		}
	}
	return db, nil
}

// CreateTemp creates a file in the store's staging area (same filesystem,
// emptied when the store opens) for an archive to Import with Move.
func (s *Store) CreateTemp() (*os.File, error) {
	return os.CreateTemp(filepath.Join(s.dir, tmpDir), "upload-")
}

func (s *Store) importLocked(ctx context.Context, path string, o ImportOptions) (DB, bool, error) {
	if o.Name == "" {
		o.Name = filepath.Base(path)
	}
	if o.Source == "" {
		o.Source = "file"
	}
	fi, err := os.Stat(path)
	if err != nil {
		return DB{}, false, err
	}
	if fi.Size() > s.opts.Limits.MaxArchiveBytes {
		return DB{}, false, fmt.Errorf("%d bytes (limit %d): %w", fi.Size(), s.opts.Limits.MaxArchiveBytes, ErrTooLarge)
	}
	sum, err := fileChecksum(path)
	if err != nil {
		return DB{}, false, err
	}
	if o.Checksum != "" && !strings.EqualFold(o.Checksum, sum) {
		return DB{}, false, fmt.Errorf("listed %s, archive has %s: %w", o.Checksum, sum, ErrChecksum)
	}
	if cur, ok := s.Active(); ok && cur.Checksum == sum {
		return cur, false, nil
	}

	stage, err := os.MkdirTemp(filepath.Join(s.dir, tmpDir), "stage-")
	if err != nil {
		return DB{}, false, err
	}
	keep := false
	defer func() {
		if !keep {
			_ = os.RemoveAll(stage)
		}
	}()
	ext, err := unpack(ctx, path, stage, s.opts.Limits.MaxDBBytes)
	if err != nil {
		return DB{}, false, err
	}
	desc, err := inspect(ctx, stage)
	if err != nil {
		return DB{}, false, err
	}
	if cur, ok := s.Active(); ok && !o.Force && !desc.built.After(cur.Built) {
		return DB{}, false, fmt.Errorf("built %s, active built %s: %w",
			desc.built.Format(timeFormat), cur.Built.Format(timeFormat), ErrNotNewer)
	}
	s.crash("unpacked")
	// Hydrate as Grype's installer does: build the indexes its reader needs
	// and record the DB digest it validates later.
	if err := v6.Hydrater()(stage); err != nil {
		return DB{}, false, fmt.Errorf("hydrate DB: %w", err)
	}
	if _, err := v6.WriteImportMetadata(afero.NewOsFs(), stage, o.Source); err != nil {
		return DB{}, false, fmt.Errorf("write import metadata: %w", err)
	}
	s.crash("hydrated")

	db := DB{
		ID:       desc.built.Format("20060102T150405Z") + "-" + strings.TrimPrefix(sum, "sha256:")[:12],
		Archive:  archiveName(o.Name, ext, desc),
		Size:     fi.Size(),
		Checksum: sum,
		Built:    desc.built,
		Schema:   desc.schema,
		Source:   o.Source,
		Imported: s.opts.Now().UTC().Truncate(time.Second),
	}
	if err := placeArchive(path, filepath.Join(stage, db.Archive), o.Move); err != nil {
		return DB{}, false, err
	}
	if err := writeMeta(stage, db); err != nil {
		return DB{}, false, err
	}
	if err := syncTree(stage); err != nil {
		return DB{}, false, err
	}
	s.crash("staged")
	final := filepath.Join(s.dir, dbsDir, db.ID)
	if err := os.RemoveAll(final); err != nil { // a forced re-import of a pruned-then-kept ID
		return DB{}, false, err
	}
	if err := os.Rename(stage, final); err != nil {
		return DB{}, false, fmt.Errorf("move DB into place: %w", err)
	}
	keep = true
	if err := syncDir(filepath.Join(s.dir, dbsDir)); err != nil {
		return DB{}, false, err
	}
	s.crash("placed")
	db.Dir = final
	db.ArchivePath = filepath.Join(final, db.Archive)
	if err := s.activate(db); err != nil {
		return DB{}, false, err
	}
	return db, true, nil
}

const timeFormat = "2006-01-02T15:04:05Z07:00"

// archiveName is the name the archive is kept and served under. Grype's
// downloader picks the decompressor by the name's extension, so a given name
// is kept only when its extension matches the format found in the archive;
// otherwise (an upload, a download with an odd name) the name follows
// Grype's pattern with the right extension.
func archiveName(given, ext string, d description) string {
	given = filepath.Base(given)
	if strings.HasSuffix(given, ext) && len(given) > len(ext) && !strings.HasPrefix(given, ".") {
		return given
	}
	return fmt.Sprintf("vulnerability-db_%s_%d%s", d.schema, d.built.Unix(), ext)
}

func placeArchive(src, dst string, owned bool) error {
	if owned {
		if err := os.Rename(src, dst); err == nil {
			return nil
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy archive: %w", err)
	}
	return out.Close()
}

func writeMeta(dir string, db DB) error {
	b, err := json.MarshalIndent(db, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, metaFile), b, 0o640)
}

func fileChecksum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checksum %s: %w", filepath.Base(path), err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func (s *Store) crash(step string) {
	if s.opts.crash != nil {
		s.opts.crash(step)
	}
}

// errorsIsAny reports whether err is one of the refusals of a bad archive
// (as opposed to an I/O problem on this side).
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
