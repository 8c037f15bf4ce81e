package vulndb

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// bomb writes a .tar.zst archive whose first entry, "padding", is pad zero
// bytes that unpack skips, followed by the entries of the valid archive
// valid (a real DB, so that only the padding can make the import fail).
//
// The padding is one compressed frame of 1 MiB of zeros repeated: zstd
// decoders read concatenated frames as one stream, so the archive stays a
// few bytes per MiB of padding and is written in microseconds, while its
// reader has to decompress every byte of it to reach the DB behind.
func bomb(t *testing.T, valid string, pad int64) string {
	t.Helper()
	if pad%(1<<20) != 0 {
		t.Fatalf("padding %d: want whole MiB", pad)
	}
	dec, err := zstd.NewReader(bytes.NewReader(readFile(t, valid)))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var rest bytes.Buffer // the valid archive's tar stream, trailer included
	if _, err := rest.ReadFrom(dec); err != nil {
		t.Fatal(err)
	}
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Name: "padding", Mode: 0o644, Size: pad, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	zeros := enc.EncodeAll(make([]byte, 1<<20), nil)
	out := enc.EncodeAll(hdr.Bytes(), nil) // the header only: tw is not closed
	for range pad >> 20 {
		out = append(out, zeros...)
	}
	out = append(out, enc.EncodeAll(rest.Bytes(), nil)...)
	path := filepath.Join(t.TempDir(), "bomb.tar.zst")
	writeFile(t, path, out)
	return path
}

// TestImportSkippedEntryBomb plays an attacker who uploads (or lists) a
// small archive with a huge entry unpack does not keep: the skipped bytes
// count against the unpacked limit, so the import stops at the limit with
// ErrTooLarge instead of decompressing everything under the import lock.
func TestImportSkippedEntryBomb(t *testing.T) {
	good := upstream(t, "", t1)
	const limit = 8 << 20
	archive := bomb(t, good.ArchivePath, 64<<20)
	fi, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 64<<10 {
		t.Fatalf("bomb is %d bytes; the test wants a small archive", fi.Size())
	}
	s := openStore(t, t.TempDir(), Options{Limits: Limits{MaxDBBytes: limit}})
	start := time.Now()
	_, err = s.Import(context.Background(), archive, ImportOptions{})
	t.Logf("%d-byte archive with a 64 MiB skipped entry, limit %d: %v after %s", fi.Size(), limit, err, time.Since(start))
	if !errors.Is(err, ErrTooLarge) || !Refused(err) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
	if _, ok := s.Active(); ok {
		t.Fatal("a DB was activated")
	}
	checkReleased(t, s, good.ArchivePath)
}

// TestImportDeadline: an archive that stays under the byte limits but takes
// longer to unpack than the import's deadline is abandoned at the deadline
// with ErrTimeout, and the import lock is released.
func TestImportDeadline(t *testing.T) {
	good := upstream(t, "", t1)
	// 6 GiB of zeros under the default limits (8 GiB for the DB, 2 GiB for
	// the archive): more than any machine decompresses in 200 ms.
	archive := bomb(t, good.ArchivePath, 6<<30)
	fi, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, t.TempDir(), Options{Limits: Limits{MaxImportTime: 200 * time.Millisecond}})
	start := time.Now()
	_, err = s.Import(context.Background(), archive, ImportOptions{})
	took := time.Since(start)
	t.Logf("%d-byte archive with a 6 GiB skipped entry, deadline 200ms: %v after %s", fi.Size(), err, took)
	if !errors.Is(err, ErrTimeout) || !Refused(err) {
		t.Fatalf("err %v, want ErrTimeout", err)
	}
	s.opts.Limits.MaxImportTime = time.Minute // a good import under -race takes more than 200 ms
	checkReleased(t, s, good.ArchivePath)
}

// checkReleased: after a refused import the lock is free and the next
// import of a good archive works.
func checkReleased(t *testing.T, s *Store, good string) {
	t.Helper()
	if !s.importMu.TryLock() {
		t.Fatal("import lock still held after the refusal")
	}
	s.importMu.Unlock()
	db, err := s.Import(context.Background(), good, ImportOptions{})
	if err != nil {
		t.Fatalf("import after the refusal: %v", err)
	}
	checkUsable(t, db, t1)
	if _, tmp := dbDirs(t, s.Dir()); len(tmp) != 0 {
		t.Fatalf("tmp/ %v after the refusal", tmp)
	}
}
