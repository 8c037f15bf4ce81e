package rematch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/anchore/clio"
	"gorm.io/gorm"

	v6 "github.com/anchore/grype/grype/db/v6"
	"github.com/anchore/grype/grype/pkg"
	"github.com/anchore/grype/grype/presenter/models"
	"github.com/anchore/grype/grype/vulnerability"
)

// Metadata property names that carry the DB build in a re-matched report
// (results-api reads them into dbBuilt and dbSchema).
const (
	PropertyDBBuilt  = "grype:db:built"
	PropertyDBSchema = "grype:db:schema"
)

// ErrNotCycloneDX is returned by Match for input that is not a CycloneDX
// JSON BOM (cyclonedx-go and syft would decode other JSON into an empty one).
var ErrNotCycloneDX = errors.New("not a CycloneDX JSON BOM")

// ErrNotHydrated is returned by Open for a DB file without its indexes (as
// Grype's writer leaves it): `grype db import` and Grype's curator hydrate a
// DB before use; matching without indexes would scan whole tables.
var ErrNotHydrated = errors.New("vulnerability DB is not hydrated (no indexes)")

// DB identifies a vulnerability DB build.
type DB struct {
	Built  time.Time // build timestamp, UTC
	Schema string    // schema version, e.g. v6.1.4
}

// Options tune a Matcher.
type Options struct {
	// MaxConcurrent bounds the Match calls that run at once; the others
	// wait. Zero means 2. Each Match holds one decoded SBOM and its matches.
	MaxConcurrent int
	// CacheBytes bounds the match cache: what Grype's matchers answered for
	// each package, kept for this DB so that a package many reports share is
	// matched once (least recently used answers go first). Zero means
	// DefaultCacheBytes; a negative value turns the cache off.
	CacheBytes int64
	// MemoBytes bounds the DB memo: what Grype's DB store answered for each
	// query that does not depend on a package's version, kept for this DB
	// (memoReader), the rows Grype's fills read by id (rowsByID), and its
	// providers table read once. Zero means
	// DefaultMemoBytes; a negative value turns the memo off.
	MemoBytes int64
	// Footprints makes every match record its footprint (footprint.go):
	// the keys of the DB lookups it made, which a pass keeps to skip the
	// reports a DB update cannot change (Output.Footprint).
	Footprints bool
}

// Matcher matches CycloneDX SBOMs against one Grype v6 DB, opened
// read-only. It is safe for concurrent use; at most Options.MaxConcurrent
// matches run at a time.
type Matcher struct {
	db         DB
	path       string
	id         clio.Identification
	cfg        *grypeConfig
	reader     v6.Reader
	provider   vulnerability.Provider
	dbInfo     any
	sem        chan struct{}
	cache      *matchCache // nil when off
	memo       *memoReader // nil when off
	base       v6.Reader   // what the provider reads: the memo or the store
	gdb        *gorm.DB    // the store's handle (Grype's reference fills)
	footprints bool
}

// Open opens dir/vulnerability.db (a hydrated Grype v6 DB, as `grype db
// import` or Grype's curator leave it) read-only.
func Open(dir string, o Options) (*Matcher, error) {
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 2
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.MemoBytes == 0 {
		o.MemoBytes = DefaultMemoBytes
	}
	path := filepath.Join(dir, v6.VulnerabilityDBFileName)
	desc, err := v6.ReadDescription(path)
	if err != nil {
		return nil, fmt.Errorf("read DB description %s: %w", path, err)
	}
	if desc == nil {
		return nil, fmt.Errorf("read DB description %s: no DB", path)
	}
	id := identification()
	cfg, err := defaultGrypeConfig(id)
	if err != nil {
		return nil, err
	}
	rdr, err := v6.NewReader(v6.Config{DBDirPath: dir})
	if err != nil {
		return nil, fmt.Errorf("open DB %s: %w", path, err)
	}
	m := &Matcher{
		footprints: o.Footprints,
		db:         DB{Built: desc.Built.UTC(), Schema: desc.SchemaVersion.String()},
		path:       path,
		id:         id,
		cfg:        cfg,
		reader:     rdr,
		sem:        make(chan struct{}, o.MaxConcurrent),
	}
	if o.CacheBytes > 0 {
		m.cache = newMatchCache(o.CacheBytes)
	}
	if err := checkHydrated(path); err != nil {
		_ = rdr.Close()
		return nil, err
	}
	// Grype's store loads the EPSS date lazily and unguarded on its first
	// GetEpss (grype/db/v6 vulnerability_decorator_store.go), so two first
	// matches running at once race on it (the race detector caught it in
	// TestMatchCacheConcurrent). Ask once here, before any match can run:
	// that write then happens before them all. A DB without EPSS metadata
	// fails here as it will in every match, and writes nothing.
	_, _ = rdr.GetEpss("CVE-0000-0000")
	vr := rdr
	if ll, ok := rdr.(lowLevelReader); ok {
		m.gdb = ll.GetDB()
		countStatements(m.gdb)
	}
	if o.MemoBytes > 0 {
		if m.memo, err = newMemoReader(rdr, o.MemoBytes); err == nil {
			err = answerGlobalTables(m.memo.db, m.memo.memo)
		}
		if err != nil {
			_ = rdr.Close()
			return nil, fmt.Errorf("open DB %s: %w", path, err)
		}
		vr = m.memo
	}
	m.base = vr
	m.provider = v6.NewVulnerabilityProvider(vr)
	m.dbInfo = dbInfo(m.provider, &vulnerability.ProviderStatus{
		Built: m.db.Built, SchemaVersion: m.db.Schema, From: "", Path: path,
	})
	return m, nil
}

func checkHydrated(path string) error {
	db, err := v6.NewLowLevelDB(path, false, false, false)
	if err != nil {
		return fmt.Errorf("open DB %s: %w", path, err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer sqlDB.Close()
	}
	var n int64
	err = db.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'").Scan(&n).Error
	if err != nil {
		return fmt.Errorf("inspect DB %s: %w", path, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", path, ErrNotHydrated)
	}
	return nil
}

// DB returns the build this Matcher matches against.
func (m *Matcher) DB() DB { return m.db }

// CacheStats reports the match cache's use; zero when it is off.
func (m *Matcher) CacheStats() CacheStats {
	if m.cache == nil {
		return CacheStats{}
	}
	return m.cache.snapshot()
}

// MemoStats reports the DB memo's use; zero when it is off.
func (m *Matcher) MemoStats() CacheStats {
	if m.memo == nil {
		return CacheStats{}
	}
	return m.memo.stats()
}

// Close releases the DB, the match cache and the DB memo. Calls to Match must have
// returned.
func (m *Matcher) Close() error {
	if m.cache != nil {
		m.cache.clear()
	}
	if m.memo != nil {
		m.memo.memo.clear()
	}
	if c, ok := m.provider.(io.Closer); ok {
		return c.Close()
	}
	return m.reader.Close()
}

// Match matches bom (CycloneDX JSON, e.g. a stored Grype report) and returns
// Grype's CycloneDX JSON for it, as `grype sbom:FILE -o cyclonedx-json`
// writes it plus the DB build in the metadata properties, and the findings
// of that output. It waits for a free slot (Options.MaxConcurrent) and
// returns ctx's error if ctx ends first or while matching.
func (m *Matcher) Match(ctx context.Context, bom []byte) ([]byte, []Finding, error) {
	o, err := m.MatchOutput(ctx, bom)
	if err != nil {
		return nil, nil, err
	}
	out, err := o.Encode()
	if err != nil {
		return nil, nil, err
	}
	return out, o.Findings(), nil
}

// MatchOutput is Match without the encoding. bom is parsed once, by
// Grype's SBOM provider, without its findings (sbomPart); the check that
// it is CycloneDX reads its first members only.
func (m *Matcher) MatchOutput(ctx context.Context, bom []byte) (*Output, error) {
	if err := checkCycloneDX(bom); err != nil {
		return nil, err
	}
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-m.sem }()

	// A stored report's findings are most of its bytes, and Grype's
	// provider would decode them only to drop them.
	packages, pkgContext, s, err := pkg.ProvideFromReader(newSBOMReader(sbomPart(bom)), m.cfg.provider)
	if err != nil {
		return nil, fmt.Errorf("decode SBOM: %w", err)
	}
	vp, rec := m.provider, (*recorder)(nil)
	if m.footprints {
		rec = newRecorder()
		vp = v6.NewVulnerabilityProvider(&recordingReader{Reader: m.base, db: m.gdb, rec: rec})
	}
	vm, err := m.cfg.vulnerabilityMatcher(vp, m.cache, rec)
	if err != nil {
		return nil, err
	}
	remaining, ignored, err := vm.FindMatchesContext(ctx, packages, pkgContext)
	// Grype logs and drops matcher errors, including cancellation, so a
	// cancelled match may look complete: never use it.
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, ctxErr
	}
	if err != nil {
		return nil, fmt.Errorf("match: %w", err)
	}
	doc, err := models.NewDocument(m.id, packages, pkgContext, *remaining, ignored, vp, nil, m.dbInfo,
		models.SortStrategy(m.cfg.opts.SortBy.Criteria), m.cfg.opts.Timestamp, nil)
	if err != nil {
		return nil, fmt.Errorf("build report: %w", err)
	}
	o := &Output{bom: m.present(doc, s)}
	if rec != nil {
		o.footprint = rec.sorted()
	}
	return o, nil
}

// checkCycloneDX refuses JSON that is not a CycloneDX BOM before syft's
// format detection sees it (it would accept SPDX or Syft JSON too). It
// reads the top-level members up to bomFormat and specVersion only (Grype
// writes them first), not the whole document: Grype's provider parses it
// next and refuses what is not valid JSON.
func checkCycloneDX(bom []byte) error {
	dec := json.NewDecoder(parsedReader{bytes.NewReader(bom)})
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("%w: not a JSON object", ErrNotCycloneDX)
	}
	var format, spec string
	for (format == "" || spec == "") && dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrNotCycloneDX, err)
		}
		var into any = &json.RawMessage{}
		switch t {
		case "bomFormat":
			into = &format
		case "specVersion":
			into = &spec
		}
		if err := dec.Decode(into); err != nil {
			return fmt.Errorf("%w: %w", ErrNotCycloneDX, err)
		}
	}
	if format != cdx.BOMFormat || spec == "" {
		return fmt.Errorf("%w: bomFormat %q, specVersion %q", ErrNotCycloneDX, format, spec)
	}
	return nil
}

// dbInfo is root.go's dbInfo: the JSON document's descriptor.db (unused in
// CycloneDX, kept so the document equals the CLI's).
func dbInfo(vp vulnerability.Provider, status *vulnerability.ProviderStatus) any {
	providers := map[string]vulnerability.DataProvenance{}
	if dpr, ok := vp.(vulnerability.StoreMetadataProvider); ok {
		if dps, err := dpr.DataProvenance(); err == nil {
			providers = dps
		}
	}
	return struct {
		Status    *vulnerability.ProviderStatus           `json:"status"`
		Providers map[string]vulnerability.DataProvenance `json:"providers"`
	}{Status: status, Providers: providers}
}
