package rematch

import (
	"crypto/sha256"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/anchore/syft/syft/cpe"
)

// memoKey encodes the arguments of one DB query canonically: the method's
// name, then every argument walked field by field (types' names, nil
// pointers, lengths and values all written out), so two encodings are
// equal only when the arguments are. A field Grype adds to an options struct in a
// later version is encoded too, which can only make keys differ more. It
// refuses (false) what it cannot encode faithfully: maps (unordered),
// functions, channels and unexported fields.
//
// The key is the encoding's SHA-256 (memoID), not the encoding: a package
// query's encoding is a few hundred bytes, which the memo's map hashed and
// compared on every lookup and copied into a string for each (~6 % of a
// distinct report's CPU with the encoding itself, docs/benchmarks.md).
// A collision-resistant hash keeps two queries from sharing an answer even
// when an image's package names are chosen to make them: a report's
// packages come from whoever built the image.
//
// It runs for every lookup Grype's matchers make, so what reflection would
// find out again each time — a struct's name and its fields' — is worked
// out once per type (structKeyPlan) and the encoding is built in a pooled
// buffer.
func memoKey(method string, args ...any) (memoID, bool) {
	bp := keyBufs.Get().(*[]byte)
	b, ok := memoKeyText((*bp)[:0], method, args...)
	var id memoID
	if ok {
		id = sha256.Sum256(b)
	}
	*bp = b
	keyBufs.Put(bp)
	return id, ok
}

// memoID is a memo entry's key: the SHA-256 of its query's canonical
// encoding (memoKey) or of a row's table and id (rowKey).
type memoID [sha256.Size]byte

// memoKeyText appends the canonical encoding memoKey hashes to b.
func memoKeyText(b []byte, method string, args ...any) ([]byte, bool) {
	b = append(b, method...)
	ok := true
	for _, a := range args {
		b = append(b, '|')
		if b, ok = encodeKey(b, reflect.ValueOf(a)); !ok {
			break
		}
	}
	return b, ok
}

var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

var timeType = reflect.TypeFor[time.Time]()

func encodeKey(b []byte, v reflect.Value) ([]byte, bool) {
	if !v.IsValid() {
		return append(b, "nil"...), true
	}
	switch v.Kind() {
	case reflect.String:
		// length-prefixed, as it is: no escaping to scan for, and no
		// string's bytes can be read as the encoding around them
		str := v.String()
		b = append(strconv.AppendInt(append(b, '"'), int64(len(str)), 10), ':')
		return append(b, str...), true
	case reflect.Bool:
		return strconv.AppendBool(b, v.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(b, v.Uint(), 10), true
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(b, "nil"...), true
		}
		b = append(b, '&')
		if v.Kind() == reflect.Interface {
			// the dynamic type's name: an int 1 and a uint 1 differ
			b = append(append(b, v.Elem().Type().String()...), '=')
		}
		return encodeKey(b, v.Elem())
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return append(b, "nil"...), true
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(v.Len()), 10)
		b = append(b, ':')
		for i := range v.Len() {
			var ok bool
			if b, ok = encodeKey(b, v.Index(i)); !ok {
				return b, false
			}
			b = append(b, ',')
		}
		return append(b, ']'), true
	case reflect.Struct:
		if v.Type() == timeType {
			return v.Interface().(time.Time).AppendFormat(b, time.RFC3339Nano), true
		}
		p := structKeyPlan(v.Type())
		if p.unexported {
			return b, false
		}
		b = append(b, p.open...)
		for i := range p.fields {
			var ok bool
			if b, ok = encodeKey(b, v.Field(i)); !ok {
				return b, false
			}
			b = append(b, ',')
		}
		return append(b, '}'), true
	default: // maps, floats, funcs, channels: not needed, not encoded
		return b, false
	}
}

// keyPlan is what a struct's key writes besides its fields' values: its
// type's name and "{". The fields follow in their declared order, which
// is the type's: their names would add nothing that tells two values of
// the type apart.
type keyPlan struct {
	open       string
	fields     int
	unexported bool // a field is unexported: the struct cannot be encoded
}

var keyPlans sync.Map // reflect.Type -> *keyPlan

func structKeyPlan(t reflect.Type) *keyPlan {
	if p, ok := keyPlans.Load(t); ok {
		return p.(*keyPlan)
	}
	p := &keyPlan{open: t.String() + "{", fields: t.NumField()}
	for i := range t.NumField() {
		p.unexported = p.unexported || !t.Field(i).IsExported()
	}
	keyPlans.Store(t, p)
	return p
}

// withoutVersion returns a copy of c without the attributes Grype's CPE
// query does not read (v6 handleCPEOptions, v0.121.2: part, vendor,
// product, edition, language, software edition, target software, target
// hardware and other — not version, not update). The rows it returns are
// the same for every version; Grype filters them by version afterwards, in
// Go (filterAffectedCPEVersions, filterAffectedPackageRanges).
func withoutVersion(c *cpe.Attributes) *cpe.Attributes {
	if c == nil {
		return nil
	}
	out := *c
	out.Version, out.Update = "", ""
	return &out
}
