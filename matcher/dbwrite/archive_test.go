package dbwrite

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"
	"github.com/anchore/grype/grype/db/v6/distribution"
	"github.com/anchore/grype/grype/db/v6/installation"
	"github.com/klauspost/compress/zstd"
	"github.com/spf13/afero"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

var testBuilt = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func TestListingDirIsModelVersion(t *testing.T) {
	if want := fmt.Sprintf("v%d", v6.ModelVersion); ListingDir != want {
		t.Fatalf("ListingDir %q, want %q", ListingDir, want)
	}
}

// TestUpstreamGrypeUpdate serves a written upstream over HTTP and lets
// Grype's own distribution client and installer do what `grype db update`
// does: find the update, download and verify the archive, hydrate and
// activate it.
func TestUpstreamGrypeUpdate(t *testing.T) {
	up, err := WriteUpstream(t.TempDir(), advisory.All(0), testBuilt)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(up.ArchivePath)
	wantName := fmt.Sprintf("vulnerability-db_v%d.%d.%d_2026-11-01T00:00:00Z_%d.tar.zst",
		v6.ModelVersion, v6.Revision, v6.Addition, testBuilt.Unix())
	if name != wantName || up.Archive.Path != name {
		t.Fatalf("archive %q (listed %q), want %q", name, up.Archive.Path, wantName)
	}
	if !strings.HasPrefix(up.Archive.Checksum, "sha256:") {
		t.Fatalf("checksum %q", up.Archive.Checksum)
	}
	doc, err := distribution.NewLatestFromFile(afero.NewOsFs(), up.ListingPath)
	if err != nil || doc == nil {
		t.Fatalf("listing: %v", err)
	}
	if doc.Status != distribution.StatusActive || !doc.Built.Equal(testBuilt) || doc.Checksum != up.Archive.Checksum {
		t.Fatalf("listing %+v", doc)
	}

	srv := httptest.NewServer(http.FileServer(http.Dir(up.Root)))
	defer srv.Close()
	client, err := distribution.NewClient(distribution.Config{LatestURL: srv.URL, CheckTimeout: 10 * time.Second, UpdateTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := installation.Config{DBRootDir: t.TempDir(), ValidateChecksum: true}
	cur, err := installation.NewCurator(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	updated, err := cur.Update()
	if err != nil || !updated {
		t.Fatalf("update: updated=%v err=%v", updated, err)
	}
	st := cur.Status()
	if st.Error != nil || !st.Built.Equal(testBuilt) || st.SchemaVersion != fmt.Sprintf("v%d.%d.%d", v6.ModelVersion, v6.Revision, v6.Addition) {
		t.Fatalf("status %+v", st)
	}
	if again, err := cur.Update(); err != nil || again {
		t.Fatalf("second update: updated=%v err=%v, want no update", again, err)
	}
}

// TestArchiveContents: the archive holds exactly vulnerability.db and
// import.json, and the DB is packed without indexes, as Grype publishes it.
func TestArchiveContents(t *testing.T) {
	up, err := WriteUpstream(t.TempDir(), advisory.All(2), testBuilt)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(up.ArchivePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	out := t.TempDir()
	var names []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, h.Name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(names, ",") != "vulnerability.db,import.json" {
		t.Fatalf("entries %v", names)
	}
	im, err := v6.ReadImportMetadata(afero.NewOsFs(), out)
	if err != nil {
		t.Fatal(err)
	}
	if digest, err := v6.CalculateDBDigest(afero.NewOsFs(), filepath.Join(out, v6.VulnerabilityDBFileName)); err != nil || digest != im.Digest {
		t.Fatalf("import.json digest %s, DB digest %s (%v)", im.Digest, digest, err)
	}
	db, err := v6.NewLowLevelDB(filepath.Join(out, v6.VulnerabilityDBFileName), false, false, false)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	var n int64
	if err := db.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'").Scan(&n).Error; err != nil || n != 0 {
		t.Fatalf("%d indexes in the packed DB (err %v), want 0", n, err)
	}
	fi, _ := f.Stat()
	t.Logf("archive %s: %d bytes", filepath.Base(up.ArchivePath), fi.Size())
}
