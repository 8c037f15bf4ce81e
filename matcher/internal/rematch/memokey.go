package rematch

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/anchore/syft/syft/cpe"
)

// memoKey encodes the arguments of one DB query canonically: the method's
// name, then every argument walked field by field (names, nil pointers,
// lengths and values all written out), so two keys are equal only when
// the arguments are. A field Grype adds to an options struct in a later
// version is encoded too, which can only make keys differ more. It refuses
// (false) what it cannot encode faithfully: maps (unordered), functions,
// channels and unexported fields.
func memoKey(method string, args ...any) (string, bool) {
	var b strings.Builder
	b.WriteString(method)
	for _, a := range args {
		b.WriteByte('|')
		if !encodeKey(&b, reflect.ValueOf(a)) {
			return "", false
		}
	}
	return b.String(), true
}

var timeType = reflect.TypeFor[time.Time]()

func encodeKey(b *strings.Builder, v reflect.Value) bool {
	if !v.IsValid() {
		b.WriteString("nil")
		return true
	}
	if v.Type() == timeType {
		b.WriteString(v.Interface().(time.Time).Format(time.RFC3339Nano))
		return true
	}
	switch v.Kind() {
	case reflect.String:
		b.WriteString(strconv.Quote(v.String()))
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return true
		}
		b.WriteByte('&')
		return encodeKey(b, v.Elem())
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("nil")
			return true
		}
		fmt.Fprintf(b, "[%d:", v.Len())
		for i := range v.Len() {
			if !encodeKey(b, v.Index(i)) {
				return false
			}
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case reflect.Struct:
		t := v.Type()
		b.WriteString(t.String())
		b.WriteByte('{')
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				return false
			}
			b.WriteString(t.Field(i).Name)
			b.WriteByte(':')
			if !encodeKey(b, v.Field(i)) {
				return false
			}
			b.WriteByte(',')
		}
		b.WriteByte('}')
	default: // maps, floats, funcs, channels: not needed, not encoded
		return false
	}
	return true
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
