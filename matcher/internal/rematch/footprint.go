package rematch

import (
	"slices"
	"strings"
	"sync"

	"gorm.io/gorm"

	v6 "github.com/anchore/grype/grype/db/v6"
	"github.com/anchore/syft/syft/cpe"
)

// A report's footprint is the set of keys of the DB lookups its match made:
// while Grype matches it, a recordingReader stands between Grype's
// vulnerability provider and the store (or the DB memo) and writes down a
// key for every query. A key names what the query's rows are selected by,
// coarsened so that a DB diff can name it too (dbdiff.go):
//
//	p:<name>     a package query by name (any ecosystem, OS or version)
//	c:<product>  a CPE query, or a package query by CPE, by product
//	v:<id>       a vulnerability, or its KEV, EPSS or CWE rows, by id
//	*            a query the keys above cannot bound: always meets a diff
//
// All in lower case: Grype compares names, products and ids with SQLite's
// NOCASE collation (ASCII case folding), so two strings the query treats as
// equal have the same key. Queries whose tables must be equal in both DB
// builds for a pass to skip anything (operating systems and their aliases,
// package-specifier overrides, architecture aliases, providers) leave no
// key. A CPE key also adds c:*, which a diff names when a row with the
// product "*" (which a broad CPE query matches for any product) changed.
//
// Grype matches a report's packages one after the other, so a report's
// recorder can also tell which keys one package's matcher call recorded:
// that is what the match cache keeps with its answer, so an answer from the
// cache adds the keys its lookups would have made.

// Footprint key prefixes and the key that meets every diff.
const (
	keyPackage = "p:"
	keyCPE     = "c:"
	keyVuln    = "v:"
	keyAll     = "*"
	keyAnyCPE  = keyCPE + "*"
)

// recorder collects one match's footprint keys.
type recorder struct {
	mu        sync.Mutex
	keys      map[string]struct{}
	capturing bool
	captured  []string
}

func newRecorder() *recorder { return &recorder{keys: map[string]struct{}{}} }

func (r *recorder) add(keys ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		r.keys[k] = struct{}{}
		if r.capturing {
			r.captured = append(r.captured, k)
		}
	}
}

// capture starts writing down the keys added until the returned function
// is called, which returns them (sorted, without duplicates).
func (r *recorder) capture() func() []string {
	r.mu.Lock()
	r.capturing, r.captured = true, nil
	r.mu.Unlock()
	return func() []string {
		r.mu.Lock()
		defer r.mu.Unlock()
		out := r.captured
		r.capturing, r.captured = false, nil
		slices.Sort(out)
		return slices.Compact(out)
	}
}

// sorted returns the footprint's keys in order.
func (r *recorder) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.keys))
	for k := range r.keys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func nameKey(prefix, s string) string { return prefix + strings.ToLower(s) }

// cpeKeys are the keys of a query by the CPE c: its product, and c:*.
func cpeKeys(c *cpe.Attributes) []string {
	if c == nil || c.Product == "" || c.Product == cpe.Any {
		return []string{keyAll}
	}
	return []string{nameKey(keyCPE, c.Product), keyAnyCPE}
}

// vulnKeys are the keys of a query narrowed by vulnerability specifiers;
// false when one of them has no id (it could select any vulnerability) or
// matches aliases too (the diff names a changed record, not its aliases;
// Grype v0.121.2 sends no such query while matching).
func vulnKeys(specs []v6.VulnerabilitySpecifier) ([]string, bool) {
	if len(specs) == 0 {
		return nil, false
	}
	out := make([]string, 0, len(specs))
	for _, s := range specs {
		if s.Name == "" || s.IncludeAliases {
			return nil, false
		}
		out = append(out, nameKey(keyVuln, s.Name))
	}
	return out, true
}

// packageQueryKeys are the keys of a package query: its name, else its CPE,
// else the vulnerabilities it is narrowed to.
func packageQueryKeys(spec *v6.PackageSpecifier, opts *v6.GetPackageOptions) []string {
	switch {
	case spec != nil && spec.Name != "":
		return []string{nameKey(keyPackage, spec.Name)}
	case spec != nil && spec.CPE != nil:
		return cpeKeys(spec.CPE)
	}
	if opts != nil {
		if ks, ok := vulnKeys(opts.Vulnerabilities); ok {
			return ks
		}
	}
	return []string{keyAll}
}

// recordingReader is a v6.Reader that records the footprint keys of the
// queries it passes on to the reader it embeds (the store or the DB memo;
// embedding promotes their unexported fills, so it is a v6.Reader).
type recordingReader struct {
	v6.Reader
	db  *gorm.DB
	rec *recorder
}

// GetDB is the store's (Grype's reference fills read through it).
func (r *recordingReader) GetDB() *gorm.DB { return r.db }

func (r *recordingReader) GetAffectedPackages(spec *v6.PackageSpecifier, opts *v6.GetPackageOptions) ([]v6.AffectedPackageHandle, error) {
	r.rec.add(packageQueryKeys(spec, opts)...)
	return r.Reader.GetAffectedPackages(spec, opts)
}

func (r *recordingReader) GetUnaffectedPackages(spec *v6.PackageSpecifier, opts *v6.GetPackageOptions) ([]v6.UnaffectedPackageHandle, error) {
	r.rec.add(packageQueryKeys(spec, opts)...)
	return r.Reader.GetUnaffectedPackages(spec, opts)
}

func (r *recordingReader) recordCPEQuery(c *cpe.Attributes, opts *v6.GetCPEOptions) {
	if c == nil && opts != nil {
		if ks, ok := vulnKeys(opts.Vulnerabilities); ok {
			r.rec.add(ks...)
			return
		}
	}
	r.rec.add(cpeKeys(c)...)
}

func (r *recordingReader) GetAffectedCPEs(c *cpe.Attributes, opts *v6.GetCPEOptions) ([]v6.AffectedCPEHandle, error) {
	r.recordCPEQuery(c, opts)
	return r.Reader.GetAffectedCPEs(c, opts)
}

func (r *recordingReader) GetUnaffectedCPEs(c *cpe.Attributes, opts *v6.GetCPEOptions) ([]v6.UnaffectedCPEHandle, error) {
	r.recordCPEQuery(c, opts)
	return r.Reader.GetUnaffectedCPEs(c, opts)
}

func (r *recordingReader) GetVulnerabilities(spec *v6.VulnerabilitySpecifier, opts *v6.GetVulnerabilityOptions) ([]v6.VulnerabilityHandle, error) {
	if spec == nil || spec.Name == "" || spec.IncludeAliases {
		r.rec.add(keyAll)
	} else {
		r.rec.add(nameKey(keyVuln, spec.Name))
	}
	return r.Reader.GetVulnerabilities(spec, opts)
}

func (r *recordingReader) GetKnownExploitedVulnerabilities(cve string) ([]v6.KnownExploitedVulnerabilityHandle, error) {
	r.rec.add(nameKey(keyVuln, cve))
	return r.Reader.GetKnownExploitedVulnerabilities(cve)
}

func (r *recordingReader) GetEpss(cve string) ([]v6.EpssHandle, error) {
	r.rec.add(nameKey(keyVuln, cve))
	return r.Reader.GetEpss(cve)
}

func (r *recordingReader) GetCWEs(cve string) ([]v6.CWEHandle, error) {
	r.rec.add(nameKey(keyVuln, cve))
	return r.Reader.GetCWEs(cve)
}

func (r *recordingReader) GetSsvcs(cve string) ([]v6.SsvcHandle, error) {
	r.rec.add(nameKey(keyVuln, cve))
	return r.Reader.GetSsvcs(cve)
}
