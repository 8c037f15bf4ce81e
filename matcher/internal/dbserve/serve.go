package dbserve

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"
	"github.com/anchore/grype/grype/db/v6/distribution"

	"github.com/crowsnest-dev/crowsnest/matcher/internal/vulndb"
)

// DefaultPrefix is where Handler serves unless told otherwise; scan Jobs use
// GRYPE_DB_UPDATE_URL=http://<matcher>/vulndb.
const DefaultPrefix = "/vulndb"

// Source gives the DBs to serve (a *vulndb.Store).
type Source interface {
	Active() (vulndb.DB, bool)
	Previous() (vulndb.DB, bool)
}

// Handler serves the listing and archives under Prefix.
type Handler struct {
	src    Source
	prefix string

	// Served, when set, is called once per listing or archive GET answered
	// from a DB ("listing" or "archive"), for metrics.
	Served func(file string)

	mu      sync.Mutex
	listing *listing // cached per active DB
}

type listing struct {
	id   string
	body []byte
	etag string
	mod  time.Time
}

// New returns a Handler serving src's DBs under prefix ("" means
// DefaultPrefix). Mount it at prefix+"/".
func New(src Source, prefix string) *Handler {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Handler{src: src, prefix: "/" + strings.Trim(prefix, "/")}
}

// ListingPath is the path Grype's client requests for an update URL ending
// in prefix: <prefix>/v6/latest.json.
func (h *Handler) ListingPath() string {
	return path.Join(h.prefix, fmt.Sprintf("v%d", v6.ModelVersion), distribution.LatestFileName)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	dir := path.Dir(h.ListingPath())
	p := path.Clean(r.URL.Path)
	switch {
	case p == h.ListingPath():
		h.serveListing(w, r)
	case path.Dir(p) == dir:
		h.serveArchive(w, r, path.Base(p))
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) serveListing(w http.ResponseWriter, r *http.Request) {
	db, ok := h.src.Active()
	if !ok {
		w.Header().Set("Retry-After", "60")
		http.Error(w, "no vulnerability DB yet", http.StatusServiceUnavailable)
		return
	}
	l, err := h.listingFor(db)
	if err != nil {
		http.Error(w, "listing unavailable", http.StatusInternalServerError)
		return
	}
	h.served(r, "listing")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", l.etag)
	http.ServeContent(w, r, "", l.mod, bytes.NewReader(l.body))
}

// listingFor renders (once per DB) Grype's listing for db: the archive path
// is the bare file name, which Grype's client joins to the listing's own
// directory, so the download comes back here whatever host name the Job used.
func (h *Handler) listingFor(db vulndb.DB) (*listing, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.listing != nil && h.listing.id == db.ID {
		return h.listing, nil
	}
	var model, revision, addition int
	if _, err := fmt.Sscanf(db.Schema, "v%d.%d.%d", &model, &revision, &addition); err != nil {
		return nil, fmt.Errorf("schema %q: %w", db.Schema, err)
	}
	built := db.Built
	desc := v6.DescriptionFromMetadata(&v6.DBMetadata{BuildTimestamp: &built, Model: model, Revision: revision, Addition: addition})
	doc := distribution.LatestDocument{
		Status:  distribution.LifecycleStatus,
		Archive: distribution.Archive{Description: *desc, Path: db.Archive, Checksum: db.Checksum},
	}
	var buf bytes.Buffer
	if err := doc.Write(&buf); err != nil {
		return nil, err
	}
	h.listing = &listing{id: db.ID, body: buf.Bytes(), etag: `"` + db.ID + `"`, mod: db.Imported}
	return h.listing, nil
}

func (h *Handler) serveArchive(w http.ResponseWriter, r *http.Request, name string) {
	var db vulndb.DB
	for _, get := range []func() (vulndb.DB, bool){h.src.Active, h.src.Previous} {
		if d, ok := get(); ok && d.Archive == name {
			db = d
			break
		}
	}
	if db.ID == "" {
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(db.ArchivePath)
	if err != nil {
		// Pruned between the lookup and the open: two activations ago.
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	h.served(r, "archive")
	w.Header().Set("Content-Type", contentType(name))
	w.Header().Set("ETag", `"`+strings.TrimPrefix(db.Checksum, "sha256:")+`"`)
	w.Header().Set("Cache-Control", "public, max-age=86400, immutable")
	http.ServeContent(w, r, "", db.Imported, f)
}

func (h *Handler) served(r *http.Request, file string) {
	if h.Served != nil && r.Method == http.MethodGet { // not Grype's HEAD before the download
		h.Served(file)
	}
}

func contentType(name string) string {
	switch {
	case strings.HasSuffix(name, ".zst"):
		return "application/zstd"
	case strings.HasSuffix(name, ".gz"), strings.HasSuffix(name, ".tgz"):
		return "application/gzip"
	case strings.HasSuffix(name, ".xz"):
		return "application/x-xz"
	default:
		return "application/x-tar"
	}
}
