package vulndb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"
)

func TestImportActivates(t *testing.T) {
	up := upstream(t, "", t1)
	var activated []DB
	s := openStore(t, t.TempDir(), Options{OnActivate: func(db DB) { activated = append(activated, db) }})
	if _, ok := s.Active(); ok {
		t.Fatal("fresh store has an active DB")
	}
	db, err := s.Import(context.Background(), up.ArchivePath, ImportOptions{Checksum: up.Archive.Checksum})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("v%d.%d.%d", v6.ModelVersion, v6.Revision, v6.Addition)
	if db.Schema != want || db.Checksum != up.Archive.Checksum || db.Archive != filepath.Base(up.ArchivePath) || db.Source != "file" {
		t.Fatalf("imported %+v; want schema %s, checksum %s", db, want, up.Archive.Checksum)
	}
	checkUsable(t, db, t1)
	if !bytes.Equal(readFile(t, db.ArchivePath), readFile(t, up.ArchivePath)) {
		t.Fatal("stored archive differs from the imported one")
	}
	if act, ok := s.Active(); !ok || act != db {
		t.Fatalf("Active %+v, want %+v", act, db)
	}
	if len(activated) != 1 || activated[0] != db {
		t.Fatalf("OnActivate calls %v", activated)
	}
	// The same archive again changes nothing.
	again, err := s.Import(context.Background(), up.ArchivePath, ImportOptions{})
	if err != nil || again != db || len(activated) != 1 {
		t.Fatalf("re-import: %+v err %v, %d activations", again, err, len(activated))
	}
	if got, err := ReadActive(s.Dir()); err != nil || got != db {
		t.Fatalf("ReadActive %+v err %v", got, err)
	}
	if _, err := os.Stat(up.ArchivePath); err != nil {
		t.Fatalf("Import must copy, not move, the given file: %v", err)
	}
}

// TestImportRefusals: each bad archive is refused with its own error, and the
// active DB, its files and the data directory stay exactly as they were.
func TestImportRefusals(t *testing.T) {
	good := upstream(t, "", t1)
	newer := upstream(t, "", t2)
	older := upstream(t, "", t0)

	wrongSchema := dbDir(t, t2)
	tweakModel(t, filepath.Join(wrongSchema, v6.VulnerabilityDBFileName), 5)

	cases := []struct {
		name    string
		archive func(t *testing.T) string
		opts    ImportOptions
		want    error
	}{
		{"truncated zstd", func(t *testing.T) string {
			b := readFile(t, newer.ArchivePath)
			p := filepath.Join(t.TempDir(), "truncated.tar.zst")
			writeFile(t, p, b[:len(b)/2])
			return p
		}, ImportOptions{}, ErrCorrupt},
		{"wrong checksum", func(*testing.T) string { return newer.ArchivePath },
			ImportOptions{Checksum: "sha256:" + strings.Repeat("0", 64)}, ErrChecksum},
		{"not a DB", func(t *testing.T) string {
			return pack(t, map[string][]byte{v6.VulnerabilityDBFileName: bytes.Repeat([]byte("not sqlite "), 500)})
		}, ImportOptions{}, ErrNotDB},
		{"no DB in archive", func(t *testing.T) string {
			return pack(t, map[string][]byte{v6.ImportMetadataFileName: []byte("{}")})
		}, ImportOptions{}, ErrCorrupt},
		{"not an archive", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "plain.tar.zst")
			writeFile(t, p, []byte("hello, this is not an archive"))
			return p
		}, ImportOptions{}, ErrCorrupt},
		{"wrong schema model", func(t *testing.T) string {
			return pack(t, map[string][]byte{v6.VulnerabilityDBFileName: readFile(t, filepath.Join(wrongSchema, v6.VulnerabilityDBFileName))})
		}, ImportOptions{}, ErrSchema},
		{"older build", func(*testing.T) string { return older.ArchivePath }, ImportOptions{}, ErrNotNewer},
		{"unpacked DB too large", func(*testing.T) string { return newer.ArchivePath }, ImportOptions{}, ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, Options{})
			before, err := s.Import(context.Background(), good.ArchivePath, ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == ErrTooLarge { //nolint:errorlint // selecting the case, not matching an error
				s.opts.Limits.MaxDBBytes = 4096
			}
			var calls int
			s.opts.OnActivate = func(DB) { calls++ }
			_, err = s.Import(context.Background(), tc.archive(t), tc.opts)
			if !errors.Is(err, tc.want) || !Refused(err) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			t.Logf("refused: %v", err)
			if after, ok := s.Active(); !ok || after != before || calls != 0 {
				t.Fatalf("active %+v after refusal, want %+v untouched (%d activations)", after, before, calls)
			}
			checkUsable(t, before, t1)
			dbs, tmp := dbDirs(t, dir)
			if !slices.Equal(dbs, []string{before.ID}) || len(tmp) != 0 {
				t.Fatalf("db/ %v tmp/ %v after refusal", dbs, tmp)
			}
		})
	}
}

// TestKeepsCurrentAndPrevious: three imports keep the last two; a reopened
// store sees the same; a forced import rolls back to an older build.
func TestKeepsCurrentAndPrevious(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	var ids []string
	for _, built := range []time.Time{t1, t2, t3} {
		db, err := s.Import(context.Background(), upstream(t, "", built).ArchivePath, ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, db.ID)
	}
	cur, _ := s.Active()
	prev, ok := s.Previous()
	if cur.ID != ids[2] || !ok || prev.ID != ids[1] {
		t.Fatalf("active %s previous %s, want %s and %s", cur.ID, prev.ID, ids[2], ids[1])
	}
	dbs, _ := dbDirs(t, dir)
	if want := []string{ids[1], ids[2]}; !slices.Equal(dbs, want) {
		t.Fatalf("db/ holds %v, want %v (oldest pruned)", dbs, want)
	}
	checkUsable(t, prev, t2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openStore(t, dir, Options{})
	if c, _ := s2.Active(); c != cur {
		t.Fatalf("reopened active %+v, want %+v", c, cur)
	}
	if p, _ := s2.Previous(); p != prev {
		t.Fatalf("reopened previous %+v, want %+v", p, prev)
	}
	// Rolling back needs Force.
	old := upstream(t, "", t1)
	if _, err := s2.Import(context.Background(), old.ArchivePath, ImportOptions{}); !errors.Is(err, ErrNotNewer) {
		t.Fatalf("older without force: %v", err)
	}
	db, err := s2.Import(context.Background(), old.ArchivePath, ImportOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	checkUsable(t, db, t1)
	if p, _ := s2.Previous(); p.ID != cur.ID {
		t.Fatalf("after rollback previous is %s, want %s", p.ID, cur.ID)
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if _, err := ReadActive(dir); !errors.Is(err, ErrNoDB) {
		t.Fatalf("ReadActive with no DB: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	openStore(t, dir, Options{})
}

func tweakModel(t *testing.T, path string, model int) {
	t.Helper()
	db, err := v6.NewLowLevelDB(path, false, true, false)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	if err := db.Exec("UPDATE db_metadata SET model = ?", model).Error; err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
