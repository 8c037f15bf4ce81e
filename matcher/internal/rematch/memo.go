package rematch

import (
	"fmt"
	"slices"

	"gorm.io/gorm"

	v6 "github.com/anchore/grype/grype/db/v6"
	"github.com/anchore/syft/syft/cpe"
)

// Grype's v6 store answers every lookup with fresh SQL through the pure-Go
// SQLite driver — hundreds of statements per package — and most lookups
// repeat: the same package name, CPE, OS and CVE come back for every
// version of a package and every report that has it. The DB of one build
// never changes, so memoReader remembers, per Matcher (one DB build), what
// the store answered for each query, and answers a repeated query from
// memory.
//
// It memoizes only queries whose SQL does not read the package version:
// Grype filters the rows by version afterwards, in Go, on every call
// (vulnerabilityProvider.fetchAndProcess*, v0.121.2), so every package
// still goes through Grype's own matchers and version filters and the
// output is Grype's. A key is the query's arguments, canonically encoded
// (memoKey); the CPE's version and update, which the query does not read,
// are left out, which is what lets packages sharing a name but not a
// version share answers. Answers are deep-copied in and out (Grype fills
// the handles it gets with references and blobs), errors are never kept,
// and the memory is bounded by bytes (least recently used first out).

// DefaultMemoBytes bounds a Matcher's DB memo when Options.MemoBytes is
// zero.
const DefaultMemoBytes = 64 << 20

// memoReader is a v6.Reader that answers repeated queries from a memo and
// asks the store it embeds otherwise. Embedding promotes the Reader's
// unexported methods (blob and provider fills), so it is a v6.Reader.
type memoReader struct {
	v6.Reader
	db   *gorm.DB // the store's, for Grype's reference fills (refs.go asks the reader for GetDB)
	memo *lru[memoID, any]
}

// lowLevelReader is what Grype's reference fills assert the reader to
// (v6/refs.go); the store implements it.
type lowLevelReader interface{ GetDB() *gorm.DB }

func newMemoReader(rdr v6.Reader, maxBytes int64) (*memoReader, error) {
	ll, ok := rdr.(lowLevelReader)
	if !ok {
		return nil, fmt.Errorf("grype's v6 reader %T has no GetDB: the DB memo needs revisiting for this Grype version", rdr)
	}
	return &memoReader{Reader: rdr, db: ll.GetDB(), memo: newLRU[memoID, any](maxBytes)}, nil
}

// GetDB is the store's (Grype's reference fills read through it).
func (r *memoReader) GetDB() *gorm.DB { return r.db }

// memoized answers the query keyed key from the memo, or asks load and
// keeps a copy of a successful answer; a query whose key could not be
// encoded (ok false) always asks load. A hit hands out a deep copy.
func memoized[T any](r *memoReader, key memoID, ok bool, load func() (T, error)) (T, error) {
	return memoizedOut(r, key, ok, load, copyOut[T])
}

// memoizedOut is memoized with out making what a hit hands out of the
// kept answer, which nobody may change.
func memoizedOut[T any](r *memoReader, key memoID, ok bool, load func() (T, error), out func(T) T) (T, error) {
	if !ok {
		return load()
	}
	if v, hit := r.memo.get(key); hit {
		return out(v.(T)), nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	kept, size := deepCopy(v)
	r.memo.add(key, kept, size+int64(len(key))+entryOverhead)
	return v, nil
}

// pkgAnswer is a package query's rows and the ecosystem the store left in
// the specifier: it rewrites an aliased ecosystem in place
// (packageStore.applyPackageAlias), and a hit does the same.
type pkgAnswer[H any] struct {
	Handles   []H
	Ecosystem string
}

func getPackages[H any](r *memoReader, method string, spec *v6.PackageSpecifier, opts *v6.GetPackageOptions,
	load func(*v6.PackageSpecifier, *v6.GetPackageOptions) ([]H, error)) ([]H, error) {
	var keySpec *v6.PackageSpecifier
	if spec != nil {
		s := *spec
		s.CPE = withoutVersion(s.CPE)
		keySpec = &s
	}
	key, ok := memoKey(method, keySpec, opts)
	a, err := memoizedOut(r, key, ok, func() (pkgAnswer[H], error) {
		hs, err := load(spec, opts)
		a := pkgAnswer[H]{Handles: hs}
		if spec != nil {
			a.Ecosystem = spec.Ecosystem
		}
		return a, err
	}, func(a pkgAnswer[H]) pkgAnswer[H] {
		return pkgAnswer[H]{Handles: handlesOut(a.Handles), Ecosystem: a.Ecosystem}
	})
	if err == nil && spec != nil {
		spec.Ecosystem = a.Ecosystem
	}
	return a.Handles, err
}

// GetAffectedPackages is the store's, memoized: the query reads the
// package's name, ecosystem and CPE (without version), the OSs and the
// vulnerability specifiers (packageStore.handlePackage, handleOSOptions,
// handleVulnerabilityOptions), never a version.
func (r *memoReader) GetAffectedPackages(spec *v6.PackageSpecifier, opts *v6.GetPackageOptions) ([]v6.AffectedPackageHandle, error) {
	return getPackages(r, "GetAffectedPackages", spec, opts, r.Reader.GetAffectedPackages)
}

// GetUnaffectedPackages is the store's, memoized (as GetAffectedPackages).
func (r *memoReader) GetUnaffectedPackages(spec *v6.PackageSpecifier, opts *v6.GetPackageOptions) ([]v6.UnaffectedPackageHandle, error) {
	return getPackages(r, "GetUnaffectedPackages", spec, opts, r.Reader.GetUnaffectedPackages)
}

// GetAffectedCPEs is the store's, memoized: the query reads the CPE's
// attributes but its version and update (cpeStore.handleCPE,
// handleCPEOptions), and the vulnerability specifiers.
func (r *memoReader) GetAffectedCPEs(c *cpe.Attributes, opts *v6.GetCPEOptions) ([]v6.AffectedCPEHandle, error) {
	key, ok := memoKey("GetAffectedCPEs", withoutVersion(c), opts)
	return memoizedOut(r, key, ok, func() ([]v6.AffectedCPEHandle, error) { return r.Reader.GetAffectedCPEs(c, opts) }, handlesOut)
}

// GetUnaffectedCPEs is the store's, memoized (as GetAffectedCPEs).
func (r *memoReader) GetUnaffectedCPEs(c *cpe.Attributes, opts *v6.GetCPEOptions) ([]v6.UnaffectedCPEHandle, error) {
	key, ok := memoKey("GetUnaffectedCPEs", withoutVersion(c), opts)
	return memoizedOut(r, key, ok, func() ([]v6.UnaffectedCPEHandle, error) { return r.Reader.GetUnaffectedCPEs(c, opts) }, handlesOut)
}

// handlesOut hands out a kept package or CPE lookup's handles: the handles
// themselves copied, what they point to shared with the memo. That is what
// Grype changes and what it only reads (v0.121.2, vulnerabilityProvider's
// fetchAndProcess*): the version filters read each handle's blob and build
// a new slice of copies of the handles they keep; the fills set the
// handle's own pointers (blob, OS, package, CPE, vulnerability) to rows
// read by id, which rowsByID hands out as copies, and write only into
// those; the conversion to vulnerability.Vulnerability reads the blob and
// the rows and builds new values. The deep copy of every hit was 4.4 % of
// a distinct report's CPU and most of its copied bytes
// (docs/benchmarks.md). TestMemoAnswersStayAsKept matches reports on
// hits and fails if anything a kept answer points to changed; the race
// detector sees a write to one from two reports matched at once.
func handlesOut[H any](hs []H) []H { return slices.Clone(hs) }

// GetVulnerabilities is the store's, memoized (Grype's presenter asks it
// for related vulnerabilities by name and provider).
func (r *memoReader) GetVulnerabilities(spec *v6.VulnerabilitySpecifier, opts *v6.GetVulnerabilityOptions) ([]v6.VulnerabilityHandle, error) {
	key, ok := memoKey("GetVulnerabilities", spec, opts)
	return memoized(r, key, ok, func() ([]v6.VulnerabilityHandle, error) { return r.Reader.GetVulnerabilities(spec, opts) })
}

// GetOperatingSystems is the store's, memoized (EOL lookups).
func (r *memoReader) GetOperatingSystems(spec v6.OSSpecifier) ([]v6.OperatingSystem, error) {
	key, ok := memoKey("GetOperatingSystems", spec)
	return memoized(r, key, ok, func() ([]v6.OperatingSystem, error) { return r.Reader.GetOperatingSystems(spec) })
}

// GetKnownExploitedVulnerabilities is the store's, memoized: the provider
// asks it for every CVE of every match.
func (r *memoReader) GetKnownExploitedVulnerabilities(cve string) ([]v6.KnownExploitedVulnerabilityHandle, error) {
	key, ok := memoKey("GetKnownExploitedVulnerabilities", cve)
	return memoized(r, key, ok, func() ([]v6.KnownExploitedVulnerabilityHandle, error) {
		return r.Reader.GetKnownExploitedVulnerabilities(cve)
	})
}

// GetEpss is the store's, memoized (per CVE, as KEV).
func (r *memoReader) GetEpss(cve string) ([]v6.EpssHandle, error) {
	key, ok := memoKey("GetEpss", cve)
	return memoized(r, key, ok, func() ([]v6.EpssHandle, error) { return r.Reader.GetEpss(cve) })
}

// GetCWEs is the store's, memoized (per CVE, as KEV).
func (r *memoReader) GetCWEs(cve string) ([]v6.CWEHandle, error) {
	key, ok := memoKey("GetCWEs", cve)
	return memoized(r, key, ok, func() ([]v6.CWEHandle, error) { return r.Reader.GetCWEs(cve) })
}

// GetProvider is the store's, memoized.
func (r *memoReader) GetProvider(name string) (*v6.Provider, error) {
	key, ok := memoKey("GetProvider", name)
	return memoized(r, key, ok, func() (*v6.Provider, error) { return r.Reader.GetProvider(name) })
}

// AllProviders is the store's, memoized.
func (r *memoReader) AllProviders() ([]v6.Provider, error) {
	key, ok := memoKey("AllProviders")
	return memoized(r, key, ok, r.Reader.AllProviders)
}

// stats reports the memo's use.
func (r *memoReader) stats() CacheStats { return r.memo.snapshot() }
