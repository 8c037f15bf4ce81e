package vulndb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"
	"github.com/anchore/grype/grype/db/v6/distribution"
)

// DefaultUpstreamURL is Grype's own update URL (distribution.DefaultConfig
// in grype v0.121.2): the listing is at <URL>/v6/latest.json.
const DefaultUpstreamURL = "https://grype.anchore.io/databases"

// maxListingBytes bounds the listing document (a few hundred bytes in practice).
const maxListingBytes = 1 << 20

// FetchResult says what a Fetch did.
type FetchResult struct {
	// Listed is the newest DB the upstream listing names.
	Listed distribution.Archive
	// Updated is true when the listed DB was downloaded and activated.
	Updated bool
	// DB is the active DB after the fetch (zero when there is none).
	DB DB
}

// Fetch reads the upstream listing and, when it names a DB built after the
// active one, downloads the archive, verifies the listed checksum and
// imports it. A listing naming the active build or an older one downloads
// nothing.
//
// The listing is trusted: it is read over HTTPS (plain HTTP only with
// Upstream.AllowInsecure) from the configured host, redirects never leave
// that host, and its SHA-256 checksum, required, is what the archive must
// match. Nothing signs the listing itself (Grype's does not carry a
// signature), so whoever controls the upstream host controls the DB; the
// archive is then checked like any import (format, size, unpack time,
// Grype's reader, schema, integrity, a newer build).
func (s *Store) Fetch(ctx context.Context) (FetchResult, error) {
	up := s.opts.Upstream
	if up.URL == "" {
		return FetchResult{}, errors.New("no upstream URL configured")
	}
	if err := CheckUpstreamURL(up.URL, up.AllowInsecure); err != nil {
		return FetchResult{}, err
	}
	listingURL, err := ListingURL(up.URL)
	if err != nil {
		return FetchResult{}, err
	}
	doc, err := s.readListing(ctx, listingURL)
	if err != nil {
		return FetchResult{}, err
	}
	res := FetchResult{Listed: doc.Archive}
	switch doc.Status {
	case distribution.StatusDeprecated, distribution.StatusEndOfLife:
		s.log.Warn("upstream says this Grype's DB schema is going away; upgrade Grype", "status", doc.Status, "upstream", Redact(listingURL))
	}
	if doc.SchemaVersion.Model != v6.ModelVersion {
		return res, fmt.Errorf("listing offers schema %s, this Grype reads model %d: %w", doc.SchemaVersion, v6.ModelVersion, ErrSchema)
	}
	if cur, ok := s.Active(); ok {
		res.DB = cur
		if !doc.Built.After(cur.Built) {
			return res, nil
		}
	}
	archiveURL, err := ArchiveURL(listingURL, doc.Path)
	if err != nil {
		return res, err
	}
	tmp, err := s.download(ctx, archiveURL, doc.Checksum)
	if err != nil {
		return res, err
	}
	defer os.Remove(tmp) // gone already once imported (moved)
	db, err := s.Import(ctx, tmp, ImportOptions{
		Checksum: doc.Checksum,
		Source:   Redact(archiveURL),
		Name:     path.Base(doc.Path),
		Move:     true,
	})
	if err != nil {
		return res, err
	}
	res.DB, res.Updated = db, true
	return res, nil
}

func (s *Store) readListing(ctx context.Context, listingURL string) (*distribution.LatestDocument, error) {
	ctx, cancel := context.WithTimeout(ctx, orDefault(s.opts.Upstream.ListingTimeout, 30*time.Second))
	defer cancel()
	body, err := s.get(ctx, listingURL)
	if err != nil {
		return nil, fmt.Errorf("read listing: %w", err)
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, maxListingBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read listing %s: %w", Redact(listingURL), err)
	}
	if len(b) > maxListingBytes {
		return nil, fmt.Errorf("listing %s over %d bytes: %w", Redact(listingURL), maxListingBytes, ErrTooLarge)
	}
	doc, err := distribution.NewLatestFromReader(strings.NewReader(string(b)))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", Redact(listingURL), err)
	}
	if doc == nil || doc.Path == "" || doc.Built.IsZero() {
		return nil, fmt.Errorf("listing %s names no DB", Redact(listingURL))
	}
	if err := checkListedChecksum(doc.Checksum); err != nil {
		return nil, fmt.Errorf("listing %s: %w", Redact(listingURL), err)
	}
	return doc, nil
}

// download streams the archive into tmp/, hashing as it goes, and returns
// the file's path.
func (s *Store) download(ctx context.Context, archiveURL, checksum string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, orDefault(s.opts.Upstream.DownloadTimeout, 10*time.Minute))
	defer cancel()
	body, err := s.get(ctx, archiveURL)
	if err != nil {
		return "", fmt.Errorf("download DB: %w", err)
	}
	defer body.Close()
	f, err := s.CreateTemp()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	limit := s.opts.Limits.MaxArchiveBytes
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(body, limit+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		err = fmt.Errorf("download %s: %w", Redact(archiveURL), err)
	case n > limit:
		err = fmt.Errorf("%s: over %d bytes: %w", Redact(archiveURL), limit, ErrTooLarge)
	case !strings.EqualFold(checksum, "sha256:"+hex.EncodeToString(h.Sum(nil))):
		err = fmt.Errorf("%s: listed %s: %w", Redact(archiveURL), checksum, ErrChecksum)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	s.log.Info("downloaded vulnerability DB", "url", Redact(archiveURL), "bytes", n)
	return f.Name(), nil
}

func (s *Store) get(ctx context.Context, u string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", Redact(u), err)
	}
	req.Header.Set("User-Agent", "crowsnest-matcher")
	resp, err := upstreamClient(s.opts.Upstream.Client, s.opts.Upstream.AllowInsecure).Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its message repeats the URL, credentials and all
		}
		return nil, fmt.Errorf("GET %s: %w", Redact(u), err)
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", Redact(u), resp.Status)
	}
	return resp.Body, nil
}

// ListingURL resolves a Grype update URL to its listing's URL as Grype's
// client does: a URL ending in .json is the listing itself; any other gets
// /v6/latest.json appended.
func ListingURL(updateURL string) (string, error) {
	u, err := url.Parse(updateURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("upstream URL %q: want an http(s) URL", Redact(updateURL))
	}
	if strings.HasSuffix(u.Path, ".json") {
		return u.String(), nil
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/v" + strconv.Itoa(v6.ModelVersion) + "/" + distribution.LatestFileName
	return u.String(), nil
}

// ArchiveURL resolves a listing's archive path against the listing's URL as
// Grype's client does (distribution.client.ResolveArchiveURL: the path is
// joined to the listing's directory, never taken as absolute).
func ArchiveURL(listingURL, archivePath string) (string, error) {
	u, err := url.Parse(listingURL)
	if err != nil {
		return "", err
	}
	u.Path = path.Join(path.Dir(u.Path), path.Clean(archivePath))
	u.RawPath = ""
	return u.String(), nil
}

// Redact drops credentials and the query from a URL for logs and DB.Source.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
