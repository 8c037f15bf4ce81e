package dbwrite

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"
	"github.com/anchore/grype/grype/db/v6/distribution"
	"github.com/klauspost/compress/zstd"
	"github.com/spf13/afero"
)

// ArchiveExtension is the compression of Grype's published DB archives (the
// default of grype/db/v6/build.CreateArchive).
const ArchiveExtension = "tar.zst"

// ArchiveName is the file name Grype's packager (grype/db/v6/build
// CreateArchive) gives a DB archive:
// vulnerability-db_v<model.revision.addition>_<oldest provider capture,
// RFC 3339>_<build time, Unix seconds>.tar.zst.
func ArchiveName(meta v6.DBMetadata, oldestCapture time.Time) string {
	var built int64
	if meta.BuildTimestamp != nil {
		built = meta.BuildTimestamp.Unix()
	}
	return fmt.Sprintf("vulnerability-db_v%d.%d.%d_%s_%d.%s",
		meta.Model, meta.Revision, meta.Addition,
		oldestCapture.UTC().Format(time.RFC3339), built, ArchiveExtension)
}

// WriteArchive packages a copy of dbDir/vulnerability.db and its import
// metadata (import.json) into outDir the way Grype's packager does, and
// returns the listing entry for it (schema, build time,
// archive file name and its "sha256:<hex>" checksum, from
// distribution.NewArchive) and the archive's path.
//
// Grype's own CreateArchive shells out to the zstd binary and changes the
// process's working directory; this writes the same tar entries with the
// zstd encoder Grype's downloader decodes with (klauspost/compress), so it is
// safe in tests and needs no external tool. Like a published DB, the packed
// copy has no indexes (Grype's writer drops them to save space and every
// importer hydrates the DB again); dbDir is left as it was. Entries carry the
// build time as their modification time.
func WriteArchive(dbDir, outDir string) (*distribution.Archive, string, error) {
	meta, oldest, err := describe(dbDir)
	if err != nil {
		return nil, "", err
	}
	stage, err := os.MkdirTemp("", "dbwrite-archive-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(stage)
	if err := copyFile(filepath.Join(dbDir, v6.VulnerabilityDBFileName), filepath.Join(stage, v6.VulnerabilityDBFileName)); err != nil {
		return nil, "", err
	}
	if err := stripIndexes(filepath.Join(stage, v6.VulnerabilityDBFileName)); err != nil {
		return nil, "", err
	}
	if _, err := v6.WriteImportMetadata(afero.NewOsFs(), stage, ""); err != nil {
		return nil, "", fmt.Errorf("write import metadata: %w", err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, "", err
	}
	path := filepath.Join(outDir, ArchiveName(meta, oldest))
	built := meta.BuildTimestamp.UTC()
	if err := writeTarZst(path, stage, built, v6.VulnerabilityDBFileName, v6.ImportMetadataFileName); err != nil {
		_ = os.Remove(path)
		return nil, "", err
	}
	a, err := distribution.NewArchive(path, built, meta.Model, meta.Revision, meta.Addition)
	if err != nil {
		return nil, "", fmt.Errorf("describe archive %s: %w", path, err)
	}
	return a, path, nil
}

// describe reads the DB metadata and the oldest provider capture date, as
// CreateArchive does before naming the archive.
func describe(dbDir string) (v6.DBMetadata, time.Time, error) {
	r, err := v6.NewReader(v6.Config{DBDirPath: dbDir})
	if err != nil {
		return v6.DBMetadata{}, time.Time{}, fmt.Errorf("open %s: %w", dbDir, err)
	}
	defer r.Close()
	meta, err := r.GetDBMetadata()
	if err != nil {
		return v6.DBMetadata{}, time.Time{}, fmt.Errorf("read DB metadata in %s: %w", dbDir, err)
	}
	if meta == nil || meta.BuildTimestamp == nil {
		return v6.DBMetadata{}, time.Time{}, fmt.Errorf("no DB metadata in %s", dbDir)
	}
	providers, err := r.AllProviders()
	if err != nil {
		return v6.DBMetadata{}, time.Time{}, fmt.Errorf("read providers in %s: %w", dbDir, err)
	}
	if len(providers) == 0 {
		return v6.DBMetadata{}, time.Time{}, fmt.Errorf("no providers in %s", dbDir)
	}
	var oldest time.Time
	for _, p := range providers {
		if p.DateCaptured == nil {
			return v6.DBMetadata{}, time.Time{}, fmt.Errorf("provider %s has no capture date", p.ID)
		}
		if oldest.IsZero() || p.DateCaptured.Before(oldest) {
			oldest = *p.DateCaptured
		}
	}
	return *meta, oldest, nil
}

func writeTarZst(path, dir string, modTime time.Time, names ...string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	zw, err := zstd.NewWriter(f, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, name := range names {
		if err := addFile(tw, filepath.Join(dir, name), name, modTime); err != nil {
			_ = zw.Close()
			return fmt.Errorf("archive %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		_ = zw.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Sync()
}

func addFile(tw *tar.Writer, path, name string, modTime time.Time) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o644,
		Size:     fi.Size(),
		ModTime:  modTime.Truncate(time.Second),
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.Copy(tw, src)
	return err
}

// stripIndexes drops every index and compacts the DB, as Grype's writer does
// when it closes a new DB. Opening it writable makes gorm create the indexes
// first.
func stripIndexes(path string) error {
	db, err := v6.NewLowLevelDB(path, false, true, false)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	var names []string
	if err := db.Raw("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'").Scan(&names).Error; err != nil {
		return fmt.Errorf("list indexes: %w", err)
	}
	for _, n := range names {
		if err := db.Exec(`DROP INDEX IF EXISTS "` + strings.ReplaceAll(n, `"`, `""`) + `"`).Error; err != nil {
			return fmt.Errorf("drop index %s: %w", n, err)
		}
	}
	if err := db.Exec("VACUUM").Error; err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	return sqlDB.Close()
}

func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(out, in)
	return err
}
