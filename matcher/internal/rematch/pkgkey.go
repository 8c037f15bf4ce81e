package rematch

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"math"
	"reflect"
	"slices"

	"github.com/anchore/grype/grype/match"
	"github.com/anchore/grype/grype/pkg"
)

// cacheKey identifies what one Grype matcher is asked about one package.
type cacheKey [sha256.Size]byte

// packageFieldsNotMatched are the pkg.Package fields no Grype matcher reads
// (v0.121: matchers get one package and search the DB by its name, version,
// type, language, distro, CPEs, PURL, upstreams and metadata). They differ
// from image to image for the same package, so keying on them would defeat
// the cache. ID does reach the result, and the cache rewrites it there
// (see matchCache.store).
var packageFieldsNotMatched = map[string]bool{
	"ID":              true, // per SBOM
	"Locations":       true, // where the package sits in this image
	"RelatedPackages": true, // file-ownership links within this image, used after matching
}

// keyOf derives the cache key of asking matcher about p from every field of
// p a matcher may read, exported or not (distro.Distro keeps its parsed
// version in unexported fields), including the dynamic type of Metadata.
// The key is false for a package holding something it cannot encode (a
// func or channel): such a package is always matched afresh.
func keyOf(matcher match.MatcherType, p pkg.Package) (cacheKey, bool) {
	h := sha256.New()
	e := keyEncoder{w: h}
	e.str(string(matcher))
	v := reflect.ValueOf(p)
	t := v.Type()
	for i := range t.NumField() {
		if packageFieldsNotMatched[t.Field(i).Name] {
			continue
		}
		e.str(t.Field(i).Name)
		e.value(v.Field(i), 0)
	}
	var k cacheKey
	h.Sum(k[:0])
	return k, !e.bad
}

// maxKeyDepth bounds the walk; Grype's package types are a few levels deep.
const maxKeyDepth = 32

// keyEncoder writes an unambiguous encoding of a value (kind and length
// prefixes, map entries sorted), usually into a hash.
type keyEncoder struct {
	w   io.Writer
	buf [8]byte
	bad bool // met something it cannot encode
}

func (e *keyEncoder) u64(n uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], n)
	_, _ = e.w.Write(e.buf[:])
}

func (e *keyEncoder) str(s string) {
	e.u64(uint64(len(s)))
	_, _ = io.WriteString(e.w, s)
}

func (e *keyEncoder) value(v reflect.Value, depth int) {
	if depth > maxKeyDepth {
		e.bad = true
		return
	}
	e.u64(uint64(v.Kind()))
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			e.u64(1)
		} else {
			e.u64(0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.u64(uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.u64(v.Uint())
	case reflect.Float32, reflect.Float64:
		e.u64(math.Float64bits(v.Float()))
	case reflect.String:
		e.str(v.String())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			e.u64(0)
			return
		}
		e.u64(1)
		if v.Kind() == reflect.Interface {
			e.str(v.Elem().Type().String())
		}
		e.value(v.Elem(), depth+1)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			e.u64(math.MaxUint64)
			return
		}
		e.u64(uint64(v.Len()))
		for i := range v.Len() {
			e.value(v.Index(i), depth+1)
		}
	case reflect.Map:
		e.mapValue(v, depth)
	case reflect.Struct:
		e.str(v.Type().String())
		for i := range v.NumField() {
			e.value(v.Field(i), depth+1)
		}
	default:
		e.bad = true
	}
}

// mapValue encodes a map's entries in the order of their encoded keys.
func (e *keyEncoder) mapValue(v reflect.Value, depth int) {
	if v.IsNil() {
		e.u64(math.MaxUint64)
		return
	}
	type entry struct{ k, v []byte }
	entries := make([]entry, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		var kb, vb bytes.Buffer
		ke := keyEncoder{w: &kb}
		ke.value(it.Key(), depth+1)
		ve := keyEncoder{w: &vb}
		ve.value(it.Value(), depth+1)
		e.bad = e.bad || ke.bad || ve.bad
		entries = append(entries, entry{kb.Bytes(), vb.Bytes()})
	}
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.k, b.k) })
	e.u64(uint64(len(entries)))
	for _, en := range entries {
		_, _ = e.w.Write(en.k)
		_, _ = e.w.Write(en.v)
	}
}
