package vulndb

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Refusals of an upstream (Fetch) that are not about the archive.
var (
	// ErrInsecureUpstream: the upstream is plain HTTP and Upstream.AllowInsecure
	// is not set. Over plain HTTP anyone on the path can swap the listing,
	// and with it the checksum the archive is verified against.
	ErrInsecureUpstream = errors.New("plain HTTP upstream refused: use https or allow it explicitly")
	// ErrRedirect: the upstream redirected to another host (or from HTTPS
	// to plain HTTP).
	ErrRedirect = errors.New("upstream redirect refused")
)

// maxRedirects is how many same-host redirects a request follows (Go's
// default policy allows ten).
const maxRedirects = 10

// checksumPattern is the only checksum form Grype's listing writer produces
// (distribution.NewArchive): the archive's SHA-256.
var checksumPattern = regexp.MustCompile(`^sha256:[0-9a-fA-F]{64}$`)

// CheckUpstreamURL says whether the matcher may fetch from the update URL
// raw: an http(s) URL, and https unless allowInsecure.
func CheckUpstreamURL(raw string, allowInsecure bool) error {
	if _, err := ListingURL(raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	if u.Scheme != "https" && !allowInsecure {
		return fmt.Errorf("upstream URL %s: %w", Redact(raw), ErrInsecureUpstream)
	}
	return nil
}

// checkListedChecksum refuses a listing entry without a SHA-256 checksum:
// the listing is the one thing trusted (it is fetched over HTTPS from the
// configured host), and its checksum is what ties the archive to it.
func checkListedChecksum(sum string) error {
	if !checksumPattern.MatchString(sum) {
		return fmt.Errorf("listing carries checksum %q, want sha256:<hex>: %w", sum, ErrChecksum)
	}
	return nil
}

// upstreamClient returns a copy of c (http.DefaultClient when nil) whose
// redirects stay on the host of the first request, never go from HTTPS to
// plain HTTP unless allowInsecure, and stop after maxRedirects. A redirect
// to another host would let whoever controls a path on the upstream (or an
// open redirect there) serve the listing, and with it the checksum.
func upstreamClient(c *http.Client, allowInsecure bool) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	cc := *c
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		first := via[0].URL
		switch {
		case len(via) >= maxRedirects:
			return fmt.Errorf("%d redirects from %s: %w", len(via), Redact(first.String()), ErrRedirect)
		case !strings.EqualFold(req.URL.Host, first.Host):
			return fmt.Errorf("%s redirects to another host, %s: %w", Redact(first.String()), Redact(req.URL.String()), ErrRedirect)
		case req.URL.Scheme != "https" && !allowInsecure:
			return fmt.Errorf("%s redirects to plain HTTP, %s: %w", Redact(first.String()), Redact(req.URL.String()), ErrInsecureUpstream)
		}
		if c.CheckRedirect != nil {
			return c.CheckRedirect(req, via)
		}
		return nil
	}
	return &cc
}
