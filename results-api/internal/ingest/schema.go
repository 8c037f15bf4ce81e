package ingest

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// The fast decoder (decode.go) reads only the fields Parse uses, but it must
// accept exactly the documents json.Unmarshal into cdx.BOM accepts: a BOM
// whose unread fields are mistyped (a number where cyclonedx-go has a
// string) is refused today, and the API serves the stored document to
// clients that decode it with cyclonedx-go. So every value the decoder
// skips is checked against the Go type json.Unmarshal would decode it
// into. This file builds those checks, once, from cdx.BOM's own type by
// reflection, so they follow cyclonedx-go's types when the module is
// upgraded.

type shapeKind uint8

const (
	shapeAny    shapeKind = iota // interface{}: any value (numbers must fit a float64)
	shapeString                  // string kinds
	shapeBool
	shapeInt
	shapeUint
	shapeFloat
	shapePtr    // null, or elem
	shapeArray  // slices and arrays: null or an array of elem
	shapeMap    // map[string]X: null or an object of elem
	shapeStruct // null or an object; keys matched as encoding/json matches them
	shapeCustom // a type with its own UnmarshalJSON or UnmarshalText: checked by json.Unmarshal itself
)

// shape is what encoding/json accepts for one Go type.
type shape struct {
	kind   shapeKind
	bits   int // shapeInt, shapeUint, shapeFloat
	elem   *shape
	fields map[string]int // shapeStruct: exact JSON key → index in field
	field  []structField
	typ    reflect.Type // shapeCustom
}

type structField struct {
	name  string
	shape *shape
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

var bomShape = sync.OnceValue(func() *shape {
	return shapeOf(reflect.TypeFor[cdx.BOM](), map[reflect.Type]*shape{})
})

func shapeOf(t reflect.Type, seen map[reflect.Type]*shape) *shape {
	if s, ok := seen[t]; ok {
		return s
	}
	s := &shape{}
	seen[t] = s // before recursing: cdx.Component contains []cdx.Component
	if t.Kind() != reflect.Pointer && (reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType)) {
		s.kind, s.typ = shapeCustom, t
		return s
	}
	switch t.Kind() {
	case reflect.String:
		s.kind = shapeString
	case reflect.Bool:
		s.kind = shapeBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s.kind, s.bits = shapeInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		s.kind, s.bits = shapeUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		s.kind, s.bits = shapeFloat, t.Bits()
	case reflect.Pointer:
		// null leaves a pointer nil without calling its element's
		// UnmarshalJSON, as encoding/json does for a settable pointer.
		s.kind, s.elem = shapePtr, shapeOf(t.Elem(), seen)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 || t.Kind() == reflect.Array {
			// []byte is base64 and arrays have a fixed length: rare, so exact by json.Unmarshal.
			s.kind, s.typ = shapeCustom, t
			return s
		}
		s.kind, s.elem = shapeArray, shapeOf(t.Elem(), seen)
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Key().Implements(textUnmarshalerType) || reflect.PointerTo(t.Key()).Implements(textUnmarshalerType) {
			s.kind, s.typ = shapeCustom, t
			return s
		}
		s.kind, s.elem = shapeMap, shapeOf(t.Elem(), seen)
	case reflect.Interface:
		if t.NumMethod() > 0 {
			s.kind, s.typ = shapeCustom, t
			return s
		}
		s.kind = shapeAny
	case reflect.Struct:
		s.kind, s.fields = shapeStruct, map[string]int{}
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous || strings.Contains(","+opts+",", ",string,") {
				// Promoted fields and ",string" follow rules this check does
				// not model: such a struct is checked by json.Unmarshal.
				*s = shape{kind: shapeCustom, typ: t}
				return s
			}
			if !f.IsExported() || tag == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := s.fields[name]; dup {
				*s = shape{kind: shapeCustom, typ: t}
				return s
			}
			s.fields[name] = len(s.field)
			s.field = append(s.field, structField{name: name, shape: shapeOf(f.Type, seen)})
		}
		if len(s.field) > 64 { // the decoder's duplicate-key set is a uint64
			*s = shape{kind: shapeCustom, typ: t}
		}
	default:
		s.kind, s.typ = shapeCustom, t
	}
	return s
}

// lookup finds the field a key names, as encoding/json does: the exact
// name, else one equal under case folding. fold reports a key that only
// matches under folding (the decoder leaves such documents to
// json.Unmarshal rather than model which field wins).
func (s *shape) lookup(key []byte) (i int, ok, fold bool) {
	if i, ok := s.fields[string(key)]; ok {
		return i, true, false
	}
	for _, f := range s.field {
		if strings.EqualFold(f.name, string(key)) {
			return 0, false, true
		}
	}
	return 0, false, false
}

// fieldIndex is the index of a field the decoder reads; it panics at start-up
// when cyclonedx-go renames one.
func (s *shape) fieldIndex(name string) int {
	i, ok := s.fields[name]
	if !ok {
		panic("ingest: cyclonedx-go has no JSON field " + name)
	}
	return i
}
