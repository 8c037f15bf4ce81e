package dbserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"
	"github.com/anchore/grype/grype/db/v6/distribution"
	"github.com/anchore/grype/grype/db/v6/installation"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite"
	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/vulndb"
)

var (
	t1 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	t2 = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
)

func writeUpstream(t *testing.T, built time.Time) dbwrite.Upstream {
	t.Helper()
	up, err := dbwrite.WriteUpstream(t.TempDir(), advisory.All(1), built)
	if err != nil {
		t.Fatal(err)
	}
	return up
}

func newStore(t *testing.T) *vulndb.Store {
	t.Helper()
	s, err := vulndb.Open(t.TempDir(), vulndb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// countingServer serves h on 127.0.0.1 and counts archive GETs.
func countingServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	var archiveGets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".tar.zst") {
			archiveGets.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &archiveGets
}

// grypeUpdate does what `grype db update` does in a scan Job, with Grype's
// own distribution client and installer, against updateURL
// (GRYPE_DB_UPDATE_URL), into the Grype cache dir root.
func grypeUpdate(t *testing.T, updateURL, root string) (bool, installation.Config) {
	t.Helper()
	client, err := distribution.NewClient(distribution.Config{
		LatestURL: updateURL, RequireUpdateCheck: true,
		CheckTimeout: 10 * time.Second, UpdateTimeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := installation.Config{DBRootDir: root, ValidateChecksum: true}
	cur, err := installation.NewCurator(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	updated, err := cur.Update()
	if err != nil {
		t.Fatalf("grype db update against %s: %v", updateURL, err)
	}
	if st := cur.Status(); st.Error != nil {
		t.Fatalf("grype db status after update: %+v", st)
	}
	return updated, cfg
}

// TestGrypeClientUpdatesFromMatcher is the interoperability promise: Grype's
// own client finds the matcher's DB in the listing, downloads the archive
// (verifying the listed checksum) and Grype's installer imports it; once
// current, it downloads nothing; a newer DB in the matcher is picked up.
func TestGrypeClientUpdatesFromMatcher(t *testing.T) {
	store := newStore(t)
	first := writeUpstream(t, t1)
	if _, err := store.Import(context.Background(), first.ArchivePath, vulndb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h := New(store, "")
	var served sync.Map // file -> *atomic.Int64
	h.Served = func(file string) {
		n, _ := served.LoadOrStore(file, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}
	mux.Handle(DefaultPrefix+"/", h)
	srv, archiveGets := countingServer(t, mux)
	updateURL := srv.URL + DefaultPrefix // GRYPE_DB_UPDATE_URL of a scan Job
	servedArchives := func() int64 {
		n, ok := served.Load("archive")
		if !ok {
			return 0
		}
		return n.(*atomic.Int64).Load()
	}

	grypeRoot := t.TempDir()
	start := time.Now()
	updated, cfg := grypeUpdate(t, updateURL, grypeRoot)
	t.Logf("grype db update from the matcher: %s", time.Since(start).Round(time.Millisecond))
	if !updated || archiveGets.Load() != 1 || servedArchives() != 1 {
		t.Fatalf("updated=%v after %d archive GETs (%d counted by Served)", updated, archiveGets.Load(), servedArchives())
	}
	desc, err := v6.ReadDescription(cfg.DBFilePath())
	if err != nil || !desc.Built.Equal(t1) {
		t.Fatalf("installed DB %v err %v, want built %s", desc, err, t1)
	}

	// A Job that already has this build downloads nothing.
	if again, _ := grypeUpdate(t, updateURL, grypeRoot); again || archiveGets.Load() != 1 {
		t.Fatalf("second update: updated=%v, %d archive GETs", again, archiveGets.Load())
	}

	second := writeUpstream(t, t2)
	if _, err := store.Import(context.Background(), second.ArchivePath, vulndb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if updated, _ := grypeUpdate(t, updateURL, grypeRoot); !updated {
		t.Fatal("newer DB in the matcher not picked up")
	}
	if desc, err := v6.ReadDescription(cfg.DBFilePath()); err != nil || !desc.Built.Equal(t2) {
		t.Fatalf("installed DB %v err %v, want built %s", desc, err, t2)
	}
}

func TestListingAndArchive(t *testing.T) {
	store := newStore(t)
	h := New(store, "/vulndb")
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp := get(t, srv.URL+"/vulndb/v6/latest.json", nil)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("listing with no DB: %s", resp.Status)
	}

	up := writeUpstream(t, t1)
	db, err := store.Import(context.Background(), up.ArchivePath, vulndb.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resp = get(t, srv.URL+"/vulndb/v6/latest.json", nil)
	body := readAll(t, resp)
	doc, err := distribution.NewLatestFromReader(bytes.NewReader(body))
	if err != nil || doc == nil {
		t.Fatalf("listing %s: %v", body, err)
	}
	if doc.Path != db.Archive || doc.Checksum != up.Archive.Checksum || !doc.Built.Equal(t1) ||
		doc.SchemaVersion.String() != db.Schema || doc.Status != distribution.StatusActive {
		t.Fatalf("listing %s\nwant path %s checksum %s", body, db.Archive, up.Archive.Checksum)
	}
	t.Logf("listing: %s", body)
	etag := resp.Header.Get("ETag")
	if r := get(t, srv.URL+"/vulndb/v6/latest.json", http.Header{"If-None-Match": {etag}}); r.StatusCode != http.StatusNotModified {
		t.Fatalf("listing If-None-Match: %s", r.Status)
	}

	archive := srv.URL + "/vulndb/v6/" + db.Archive
	resp = get(t, archive, nil)
	b := readAll(t, resp)
	want, _ := os.ReadFile(up.ArchivePath)
	if !bytes.Equal(b, want) || resp.Header.Get("Content-Length") != fmt.Sprint(len(want)) {
		t.Fatalf("archive: %d bytes, Content-Length %s; want %d", len(b), resp.Header.Get("Content-Length"), len(want))
	}
	if r := get(t, archive, http.Header{"If-None-Match": {resp.Header.Get("ETag")}}); r.StatusCode != http.StatusNotModified {
		t.Fatalf("archive If-None-Match: %s", r.Status)
	}
	for _, p := range []string{"/vulndb/v6/other.tar.zst", "/vulndb/v5/latest.json", "/vulndb/v6/../../etc/passwd"} {
		if r := get(t, srv.URL+p, nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %s, want 404", p, r.Status)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/vulndb/v6/latest.json", nil)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST listing: %v %v", r, err)
	} else {
		r.Body.Close()
	}

	// After the next activation the previous archive is still served.
	if _, err := store.Import(context.Background(), writeUpstream(t, t2).ArchivePath, vulndb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := get(t, archive, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("previous archive: %s", r.Status)
	}
}

func get(t *testing.T, url string, h http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s", resp.Request.URL, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode[T any](t *testing.T, r io.Reader) T {
	t.Helper()
	var v T
	if err := json.NewDecoder(r).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
