package vulndb

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// These tests play a network neighbour or whoever controls part of the
// upstream: each tries to make the matcher take a DB from somewhere other
// than the configured listing, or one the listing does not vouch for.

// TestFetchRefusesPlainHTTP: an http:// upstream, which anyone on the path
// can answer, is refused before any request unless explicitly allowed.
func TestFetchRefusesPlainHTTP(t *testing.T) {
	root := t.TempDir()
	upstream(t, root, t1)
	up := startUpstream(t, root, httptest.NewServer)
	s := openStore(t, t.TempDir(), Options{Upstream: Upstream{URL: up.URL}})
	_, err := s.Fetch(context.Background())
	if !errors.Is(err, ErrInsecureUpstream) {
		t.Fatalf("err %v, want ErrInsecureUpstream", err)
	}
	if n := up.total(); n != 0 {
		t.Fatalf("%d requests reached the plain HTTP upstream", n)
	}
	if _, ok := s.Active(); ok {
		t.Fatal("a DB was activated")
	}
	t.Logf("refused: %v", err)

	// Allowed explicitly (a mirror on a trusted network), it fetches.
	s2 := openStore(t, t.TempDir(), Options{Upstream: Upstream{URL: up.URL, AllowInsecure: true}})
	if res, err := s2.Fetch(context.Background()); err != nil || !res.Updated {
		t.Fatalf("with AllowInsecure: %+v err %v", res, err)
	}
}

// TestFetchRefusesRedirectToAnotherHost: the configured upstream answers
// with a redirect to a server the attacker runs, which serves a valid
// listing and archive of its own. The matcher does not follow it; a
// redirect within the upstream's host still works.
func TestFetchRefusesRedirectToAnotherHost(t *testing.T) {
	evilRoot := t.TempDir()
	upstream(t, evilRoot, t2)
	evil := newUpstream(t, evilRoot)
	redirector := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, evil.URL+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(redirector.Close)

	// httptest's TLS servers share one certificate: the client trusts both.
	s := openStore(t, t.TempDir(), Options{Upstream: Upstream{URL: redirector.URL, Client: redirector.Client()}})
	_, err := s.Fetch(context.Background())
	if !errors.Is(err, ErrRedirect) {
		t.Fatalf("err %v, want ErrRedirect", err)
	}
	if n := evil.total(); n != 0 {
		t.Fatalf("%d requests reached the other host", n)
	}
	if _, ok := s.Active(); ok {
		t.Fatal("a DB was activated")
	}
	t.Logf("refused: %v", err)

	// Redirects on the same host (a moved site) are followed.
	mux := http.NewServeMux()
	mux.Handle("/v6/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mirror"+r.URL.Path, http.StatusMovedPermanently)
	}))
	mux.Handle("/mirror/", http.StripPrefix("/mirror", http.FileServer(http.Dir(evilRoot))))
	same := httptest.NewTLSServer(mux)
	t.Cleanup(same.Close)
	s2 := openStore(t, t.TempDir(), Options{Upstream: Upstream{URL: same.URL, Client: same.Client()}})
	if res, err := s2.Fetch(context.Background()); err != nil || !res.Updated {
		t.Fatalf("same-host redirect: %+v err %v", res, err)
	}
}

// TestFetchRequiresListedChecksum: a listing that names an archive without
// its checksum (or with one that is not SHA-256) is refused; the archive is
// never downloaded. A listed checksum the archive does not match is
// refused too (TestFetchRefusals).
func TestFetchRequiresListedChecksum(t *testing.T) {
	for name, sum := range map[string]string{
		"no checksum": "",
		"md5":         "md5:0123456789abcdef0123456789abcdef",
		"short":       "sha256:abcd",
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			w := upstream(t, root, t1)
			listing := string(readFile(t, w.ListingPath))
			writeFile(t, w.ListingPath, []byte(strings.Replace(listing, `"`+w.Archive.Checksum+`"`, `"`+sum+`"`, 1)))
			up := newUpstream(t, root)
			s := openStore(t, t.TempDir(), Options{Upstream: upstreamOf(up)})
			_, err := s.Fetch(context.Background())
			if !errors.Is(err, ErrChecksum) {
				t.Fatalf("err %v, want ErrChecksum", err)
			}
			if n := up.archiveGets(); n != 0 {
				t.Fatalf("archive downloaded %d times", n)
			}
			if _, ok := s.Active(); ok {
				t.Fatal("a DB was activated")
			}
			t.Logf("refused: %v", err)
		})
	}
}
