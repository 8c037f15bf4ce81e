package vulndb

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"
	"github.com/mholt/archives"
)

// unpack extracts vulnerability.db and import.json from a DB archive into
// dir. It identifies the format the way `grype db import` does
// (mholt/archives), accepts only tar archives (compressed with zstd, gzip or
// xz, or not at all), takes only those two regular files at the archive's
// root and caps their size.
//
// Every decompressed byte counts against maxDB plus unpackSlack, whether
// unpack keeps its entry or skips it (tar skips an entry by reading it
// through the decompressor), and every read checks ctx: a small archive
// holding a huge entry that is never kept stops at the limit or at the
// import's deadline instead of decompressing for hours under the import
// lock.
//
// It returns the format's extension (".tar.zst", ".tar.gz", …).
func unpack(ctx context.Context, archivePath, dir string, maxDB int64) (string, error) {
	f, err := os.Open(archivePath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// The name is left out on purpose: uploads and downloads have none, and
	// the content decides.
	format, stream, err := archives.Identify(ctx, "", f)
	if err != nil {
		return "", fmt.Errorf("identify archive: %w: %w", ErrCorrupt, err)
	}
	if !strings.HasPrefix(format.Extension(), ".tar") {
		return "", fmt.Errorf("not a tar archive (identified as %s): %w", format.Extension(), ErrCorrupt)
	}
	tarball, err := decompressed(format, stream)
	if err != nil {
		return "", err
	}
	defer tarball.Close()
	bounded := &boundedReader{ctx: ctx, r: tarball, left: maxDB + unpackSlack, max: maxDB + unpackSlack}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	var total int64
	found := map[string]bool{}
	err = (archives.Tar{}).Extract(ctx, bounded, func(_ context.Context, fi archives.FileInfo) error {
		name := path.Clean(strings.TrimPrefix(fi.NameInArchive, "./"))
		if name != v6.VulnerabilityDBFileName && name != v6.ImportMetadataFileName {
			return nil
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file: %w", name, ErrCorrupt)
		}
		if found[name] {
			return fmt.Errorf("%s twice in archive: %w", name, ErrCorrupt)
		}
		found[name] = true
		n, err := extractFile(root, name, fi, maxDB-total)
		total += n
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("extract archive: %w", context.Cause(ctx))
		}
		if errorsIsAny(err, ErrCorrupt, ErrTooLarge) {
			return "", err
		}
		return "", fmt.Errorf("extract archive: %w: %w", ErrCorrupt, err)
	}
	if !found[v6.VulnerabilityDBFileName] {
		return "", fmt.Errorf("no %s in archive: %w", v6.VulnerabilityDBFileName, ErrCorrupt)
	}
	return format.Extension(), nil
}

func extractFile(root *os.Root, name string, fi archives.FileInfo, limit int64) (int64, error) {
	in, err := fi.Open()
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(in, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, err
	}
	if n > limit {
		return n, fmt.Errorf("unpacked DB over %d bytes: %w", limit, ErrTooLarge)
	}
	return n, nil
}

type description struct {
	built  time.Time
	schema string
}

// inspect opens the unpacked DB the way Grype will and checks that this
// Grype can use it: a SQLite file, v6 metadata with this Grype's model
// version, a build time, Grype's v6 reader opens it, and SQLite's quick
// integrity check passes.
func inspect(ctx context.Context, dir string) (description, error) {
	file := filepath.Join(dir, v6.VulnerabilityDBFileName)
	low, err := v6.NewLowLevelDB(file, false, false, false)
	if err != nil {
		return description{}, fmt.Errorf("open: %w: %w", ErrNotDB, err)
	}
	sqlDB, err := low.DB()
	if err != nil {
		return description{}, err
	}
	defer sqlDB.Close()
	var meta v6.DBMetadata
	if err := low.WithContext(ctx).Raw("SELECT * FROM db_metadata LIMIT 1").Scan(&meta).Error; err != nil {
		return description{}, fmt.Errorf("read DB metadata: %w: %w", ErrNotDB, err)
	}
	if meta.Model != v6.ModelVersion {
		return description{}, fmt.Errorf("schema model %d, this Grype reads model %d: %w", meta.Model, v6.ModelVersion, ErrSchema)
	}
	if meta.BuildTimestamp == nil || meta.BuildTimestamp.IsZero() {
		return description{}, fmt.Errorf("no build time in DB metadata: %w", ErrNotDB)
	}
	var check string
	if err := low.WithContext(ctx).Raw("PRAGMA quick_check").Scan(&check).Error; err != nil {
		return description{}, fmt.Errorf("integrity check: %w: %w", ErrNotDB, err)
	}
	if check != "ok" {
		return description{}, fmt.Errorf("integrity check: %.200s: %w", check, ErrNotDB)
	}
	if err := sqlDB.Close(); err != nil {
		return description{}, err
	}
	r, err := v6.NewReader(v6.Config{DBDirPath: dir})
	if err != nil {
		return description{}, fmt.Errorf("grype reader: %w: %w", ErrNotDB, err)
	}
	defer r.Close()
	got, err := r.GetDBMetadata()
	if err != nil {
		return description{}, fmt.Errorf("grype reader metadata: %w: %w", ErrNotDB, err)
	}
	if got == nil || got.BuildTimestamp == nil {
		return description{}, fmt.Errorf("grype reader: no metadata: %w", ErrNotDB)
	}
	d := v6.DescriptionFromMetadata(got)
	return description{built: d.Built.UTC().Round(time.Second), schema: d.SchemaVersion.String()}, nil
}
