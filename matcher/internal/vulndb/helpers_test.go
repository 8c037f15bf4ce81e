package vulndb

import (
	"archive/tar"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"
	"github.com/klauspost/compress/zstd"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite"
	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// Build times of the test DBs, oldest first.
var (
	t0 = time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC)
	t1 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	t2 = time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	t3 = time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
)

// upstreams caches one written upstream per build time for the whole test
// binary: writing a DB is the slow part of these tests (seconds under -race).
var upstreams = struct {
	sync.Mutex
	dir   string
	built map[time.Time]dbwrite.Upstream
}{built: map[time.Time]dbwrite.Upstream{}}

// upstream returns a small real DB built at built, packaged and listed the
// way Grype distributes it, copied under root (a fresh temp dir when empty).
func upstream(t *testing.T, root string, built time.Time) dbwrite.Upstream {
	t.Helper()
	upstreams.Lock()
	src, ok := upstreams.built[built]
	if !ok {
		if upstreams.dir == "" {
			dir, err := os.MkdirTemp("", "vulndb-test-")
			if err != nil {
				upstreams.Unlock()
				t.Fatal(err)
			}
			upstreams.dir = dir
		}
		var err error
		src, err = dbwrite.WriteUpstream(filepath.Join(upstreams.dir, built.Format("20060102T150405")), advisory.All(1), built)
		if err != nil {
			upstreams.Unlock()
			t.Fatal(err)
		}
		upstreams.built[built] = src
	}
	upstreams.Unlock()
	if root == "" {
		root = t.TempDir()
	}
	dir := filepath.Join(root, dbwrite.ListingDir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	up := dbwrite.Upstream{Root: root, Archive: src.Archive,
		ListingPath: filepath.Join(dir, filepath.Base(src.ListingPath)),
		ArchivePath: filepath.Join(dir, filepath.Base(src.ArchivePath))}
	writeFile(t, up.ListingPath, readFile(t, src.ListingPath))
	writeFile(t, up.ArchivePath, readFile(t, src.ArchivePath))
	return up
}

// dbDir writes an unpacked DB built at built and returns its directory.
func dbDir(t *testing.T, built time.Time) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := dbwrite.Write(dir, advisory.All(1), built); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pack writes files (name -> content) as a .tar.zst archive.
func pack(t *testing.T, files map[string][]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crafted.tar.zst")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw, err := zstd.NewWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for _, name := range []string{v6.VulnerabilityDBFileName, v6.ImportMetadataFileName} {
		b, ok := files[name]
		if !ok {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openStore(t *testing.T, dir string, o Options) *Store {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// checkUsable opens db the way the re-matcher and Grype do and checks its
// build time, hydration and archive checksum.
func checkUsable(t *testing.T, db DB, built time.Time) {
	t.Helper()
	r, err := v6.NewReader(v6.Config{DBDirPath: db.Dir})
	if err != nil {
		t.Fatalf("open active DB %s: %v", db.ID, err)
	}
	defer r.Close()
	meta, err := r.GetDBMetadata()
	if err != nil || !meta.BuildTimestamp.Equal(built) || !db.Built.Equal(built) {
		t.Fatalf("active DB %s: metadata %+v (err %v), record built %s; want built %s", db.ID, meta, err, db.Built, built)
	}
	low, err := v6.NewLowLevelDB(filepath.Join(db.Dir, v6.VulnerabilityDBFileName), false, false, false)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := low.DB()
	defer sqlDB.Close()
	var n int64
	if err := low.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'").Scan(&n).Error; err != nil || n == 0 {
		t.Fatalf("active DB %s: %d indexes (err %v), want it hydrated", db.ID, n, err)
	}
	if sum, err := fileChecksum(db.ArchivePath); err != nil || sum != db.Checksum {
		t.Fatalf("archive %s: checksum %s (err %v), recorded %s", db.ArchivePath, sum, err, db.Checksum)
	}
}

// dbDirs lists db/ and tmp/ of a data directory.
func dbDirs(t *testing.T, dir string) (dbs, tmp []string) {
	t.Helper()
	for _, sub := range []struct {
		name string
		out  *[]string
	}{{dbsDir, &dbs}, {tmpDir, &tmp}} {
		entries, err := os.ReadDir(filepath.Join(dir, sub.name))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			*sub.out = append(*sub.out, e.Name())
		}
	}
	return dbs, tmp
}
