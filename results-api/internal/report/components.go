package report

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// bomComponent is the part of a CycloneDX component that says which
// package it is.
type bomComponent struct {
	Type       string         `json:"type"`
	Name       string         `json:"name"`
	Version    string         `json:"version"`
	PURL       string         `json:"purl"`
	Components []bomComponent `json:"components"`
}

// ComponentsFingerprint reads a CycloneDX JSON BOM from r and returns the
// SHA-256 of its component list as a multiset: each component's type,
// name, version and purl, nested components flattened, in sorted order.
// Two BOMs that list the same packages have the same fingerprint whatever
// their order, bom-refs, properties or findings.
//
// It is what tells a re-match apart from a new scan: Grype matching a
// stored BOM again (`grype sbom:FILE`, the matcher) lists exactly the
// components it was given, and only the vulnerabilities change.
func ComponentsFingerprint(r io.Reader) ([32]byte, error) {
	var bom struct {
		Components []bomComponent `json:"components"`
	}
	if err := json.NewDecoder(r).Decode(&bom); err != nil {
		return [32]byte{}, fmt.Errorf("read bom components: %w", err)
	}
	var keys []string
	var walk func([]bomComponent)
	walk = func(cs []bomComponent) {
		for _, c := range cs {
			keys = append(keys, lengthPrefixed(c.Type, c.Name, c.Version, c.PURL))
			walk(c.Components)
		}
	}
	walk(bom.Components)
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// lengthPrefixed joins fields so that no two different field lists give
// the same string.
func lengthPrefixed(fields ...string) string {
	var b []byte
	for _, f := range fields {
		b = strconv.AppendInt(b, int64(len(f)), 10)
		b = append(b, ':')
		b = append(b, f...)
	}
	return string(b)
}
