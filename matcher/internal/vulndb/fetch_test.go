package vulndb

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite"
)

// countingUpstream serves root like Grype's DB site (over HTTPS) and counts
// GETs per path.
type countingUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	gets map[string]int
}

func newUpstream(t *testing.T, root string) *countingUpstream {
	return startUpstream(t, root, httptest.NewTLSServer)
}

// startUpstream serves root with start (httptest.NewServer for plain HTTP).
func startUpstream(t *testing.T, root string, start func(http.Handler) *httptest.Server) *countingUpstream {
	u := &countingUpstream{gets: map[string]int{}}
	files := http.FileServer(http.Dir(root))
	u.Server = start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			u.mu.Lock()
			u.gets[r.URL.Path]++
			u.mu.Unlock()
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

// upstreamOf is the Upstream of u: its URL and a client that trusts its
// certificate.
func upstreamOf(u *countingUpstream) Upstream {
	return Upstream{URL: u.URL, Client: u.Client()}
}

// total counts every GET u answered.
func (u *countingUpstream) total() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, c := range u.gets {
		n += c
	}
	return n
}

// archiveGets counts GETs of any archive.
func (u *countingUpstream) archiveGets() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for p, c := range u.gets {
		if strings.HasSuffix(p, ".tar.zst") {
			n += c
		}
	}
	return n
}

func (u *countingUpstream) listingGets() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.gets["/"+dbwrite.ListingDir+"/latest.json"]
}

func TestFetch(t *testing.T) {
	root := t.TempDir()
	upstream(t, root, t1)
	up := newUpstream(t, root)
	var activations int
	s := openStore(t, t.TempDir(), Options{
		Upstream:   upstreamOf(up),
		OnActivate: func(DB) { activations++ },
	})
	ctx := context.Background()

	res, err := s.Fetch(ctx)
	if err != nil || !res.Updated {
		t.Fatalf("first fetch: %+v err %v", res, err)
	}
	checkUsable(t, res.DB, t1)
	if want := up.URL + "/v6/" + res.DB.Archive; res.DB.Source != want {
		t.Fatalf("source %q, want %q", res.DB.Source, want)
	}
	if up.archiveGets() != 1 || up.listingGets() != 1 {
		t.Fatalf("gets %v after first fetch", up.gets)
	}

	// Same build listed: the listing is read, nothing is downloaded.
	res, err = s.Fetch(ctx)
	if err != nil || res.Updated || !res.DB.Built.Equal(t1) {
		t.Fatalf("second fetch: %+v err %v", res, err)
	}
	if up.archiveGets() != 1 || up.listingGets() != 2 {
		t.Fatalf("gets %v after a fetch with nothing new", up.gets)
	}

	// A newer build is downloaded once and activated.
	upstream(t, root, t2)
	res, err = s.Fetch(ctx)
	if err != nil || !res.Updated {
		t.Fatalf("third fetch: %+v err %v", res, err)
	}
	checkUsable(t, res.DB, t2)
	if prev, _ := s.Previous(); !prev.Built.Equal(t1) {
		t.Fatalf("previous %+v", prev)
	}
	if up.archiveGets() != 2 || activations != 2 {
		t.Fatalf("gets %v, %d activations", up.gets, activations)
	}
	if _, tmp := dbDirs(t, s.Dir()); len(tmp) != 0 {
		t.Fatalf("tmp/ %v after fetches", tmp)
	}
}

func TestFetchRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("listed checksum mismatch", func(t *testing.T) {
		root := t.TempDir()
		w := upstream(t, root, t1)
		listing := readFile(t, w.ListingPath)
		writeFile(t, w.ListingPath, []byte(strings.Replace(string(listing), w.Archive.Checksum, "sha256:"+strings.Repeat("ab", 32), 1)))
		up := newUpstream(t, root)
		s := openStore(t, t.TempDir(), Options{Upstream: upstreamOf(up)})
		if _, err := s.Fetch(ctx); !errors.Is(err, ErrChecksum) {
			t.Fatalf("err %v, want ErrChecksum", err)
		}
		if _, ok := s.Active(); ok {
			t.Fatal("a DB was activated")
		}
		if _, tmp := dbDirs(t, s.Dir()); len(tmp) != 0 {
			t.Fatalf("tmp/ %v", tmp)
		}
	})
	t.Run("archive over the limit", func(t *testing.T) {
		root := t.TempDir()
		upstream(t, root, t1)
		up := newUpstream(t, root)
		s := openStore(t, t.TempDir(), Options{Upstream: upstreamOf(up), Limits: Limits{MaxArchiveBytes: 1024}})
		if _, err := s.Fetch(ctx); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("err %v, want ErrTooLarge", err)
		}
	})
	t.Run("listing not found", func(t *testing.T) {
		up := newUpstream(t, t.TempDir())
		s := openStore(t, t.TempDir(), Options{Upstream: upstreamOf(up)})
		if _, err := s.Fetch(ctx); err == nil || !strings.Contains(err.Error(), "404") {
			t.Fatalf("err %v, want a 404", err)
		}
	})
}

// TestFetchKeepsSecretsOutOfErrors: credentials and query tokens in the
// upstream URL appear neither in errors nor in the recorded source.
func TestFetchKeepsSecretsOutOfErrors(t *testing.T) {
	root := t.TempDir()
	upstream(t, root, t1)
	up := newUpstream(t, root)
	base := strings.Replace(up.URL, "https://", "https://user:hunter2@", 1)

	s := openStore(t, t.TempDir(), Options{Upstream: Upstream{URL: base + "/v6/latest.json?token=hunter2", Client: up.Client()}})
	res, err := s.Fetch(context.Background())
	if err != nil || !res.Updated {
		t.Fatalf("fetch via listing URL: %+v err %v", res, err)
	}
	if strings.Contains(res.DB.Source, "hunter2") {
		t.Fatalf("source %q carries the secret", res.DB.Source)
	}
	// The next build is listed but its archive is missing: the fetch fails.
	next := upstream(t, root, t2)
	if err := os.Remove(next.ArchivePath); err != nil {
		t.Fatal(err)
	}
	_, err = s.Fetch(context.Background())
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err %v: want a failure that does not carry the secret", err)
	}
	t.Logf("error: %v", err)
}

func TestListingAndArchiveURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://grype.anchore.io/databases":            "https://grype.anchore.io/databases/v6/latest.json",
		"https://grype.anchore.io/databases/":           "https://grype.anchore.io/databases/v6/latest.json",
		"http://matcher:8080/vulndb":                    "http://matcher:8080/vulndb/v6/latest.json",
		"http://mirror.example/custom/listing.json?x=1": "http://mirror.example/custom/listing.json?x=1",
	} {
		got, err := ListingURL(in)
		if err != nil || got != want {
			t.Errorf("ListingURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ListingURL("file:///tmp/x"); err == nil {
		t.Error("file URL accepted")
	}
	got, err := ArchiveURL("http://m:8080/vulndb/v6/latest.json", "vulnerability-db_v6.1.10_x_1.tar.zst")
	if err != nil || got != "http://m:8080/vulndb/v6/vulnerability-db_v6.1.10_x_1.tar.zst" {
		t.Errorf("ArchiveURL = %q, %v", got, err)
	}
	// Grype joins even an absolute-looking path to the listing's directory.
	got, _ = ArchiveURL("http://m/vulndb/v6/latest.json", "/../../etc/passwd.tar.zst")
	if got != "http://m/vulndb/v6/etc/passwd.tar.zst" {
		t.Errorf("ArchiveURL with an absolute path = %q", got)
	}
}
