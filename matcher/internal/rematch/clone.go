package rematch

import (
	"reflect"
	"regexp"
	"time"
	"unsafe"
)

// The match cache hands the same matcher result to many reports, and Grype
// treats the matches it gets as its own: it merges them (appending to their
// slices), normalizes them and sorts their details. So a cached result is
// deep-copied into the cache and again out of it, and no two reports ever
// share mutable memory. Grype's match types keep state in unexported fields
// (distro versions, parsed constraints), which reflection can only write
// through unsafe; a copy that skipped them would match differently.

// shared are types that are immutable or meant to be shared, and are
// copied by reference: time.Location is compared by address (UTC, Local).
var shared = map[reflect.Type]bool{
	reflect.TypeFor[time.Time]():      true,
	reflect.TypeFor[*time.Location](): true,
	reflect.TypeFor[*regexp.Regexp](): true,
	reflect.TypeFor[reflect.Type]():   true,
}

// copier deep-copies values and adds up the memory the copies hold.
type copier struct {
	// seen maps a source pointer to its copy, so aliasing is kept and a
	// cycle does not recurse forever.
	seen  map[seenKey]reflect.Value
	bytes int64
}

type seenKey struct {
	ptr uintptr
	typ reflect.Type
}

// deepCopy returns a copy of v that shares no mutable memory with it, and
// the approximate number of bytes the copy holds.
func deepCopy[T any](v T) (T, int64) {
	c := copier{seen: map[seenKey]reflect.Value{}}
	src := reflect.ValueOf(&v).Elem()
	out := c.copy(src)
	c.bytes += int64(src.Type().Size())
	return out.Interface().(T), c.bytes
}

func (c *copier) copy(v reflect.Value) reflect.Value {
	t := v.Type()
	if shared[t] {
		return v
	}
	switch v.Kind() {
	case reflect.String:
		c.bytes += int64(v.Len())
		return v
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		key := seenKey{ptr: v.Pointer(), typ: t}
		if p, ok := c.seen[key]; ok {
			return p
		}
		p := reflect.New(t.Elem())
		c.seen[key] = p
		c.bytes += int64(t.Elem().Size())
		p.Elem().Set(c.copy(v.Elem()))
		return p
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t).Elem()
		out.Set(c.copy(v.Elem()))
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		n := v.Len()
		out := reflect.MakeSlice(t, n, n)
		c.bytes += int64(n) * int64(t.Elem().Size())
		for i := range n {
			out.Index(i).Set(c.copy(v.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(t).Elem()
		for i := range v.Len() {
			out.Index(i).Set(c.copy(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(t, v.Len())
		c.bytes += int64(v.Len()) * int64(t.Key().Size()+t.Elem().Size()+16)
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(c.copy(it.Key()), c.copy(it.Value()))
		}
		return out
	case reflect.Struct:
		out := reflect.New(t).Elem()
		out.Set(v)
		for i := range out.NumField() {
			f := writable(out.Field(i))
			f.Set(c.copy(f))
		}
		return out
	default:
		// Booleans and numbers are values; funcs and channels are shared
		// (Grype's match types hold none).
		return v
	}
}

// writable makes a field of an addressable struct settable and readable,
// exported or not.
func writable(f reflect.Value) reflect.Value {
	if f.CanSet() {
		return f
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}
