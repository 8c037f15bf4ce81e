package rematch

import (
	"reflect"
	"regexp"
	"sync"
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
//
// Every memo and cache hit copies its answer, so what a copy needs to know
// about a type — which of its parts hold memory that can change — is worked
// out once per type (copyPlan), and a part that holds none is copied as a
// value, without walking it.

// shared are types that are immutable or meant to be shared, and are
// copied by reference: time.Location is compared by address (UTC, Local).
var shared = map[reflect.Type]bool{
	reflect.TypeFor[time.Time]():      true,
	reflect.TypeFor[*time.Location](): true,
	reflect.TypeFor[*regexp.Regexp](): true,
	reflect.TypeFor[reflect.Type]():   true,
}

// copyPlan is what copying a value of one type takes.
type copyPlan struct {
	t    reflect.Type
	kind reflect.Kind
	// shared: copied by reference (the shared types).
	shared bool
	// flat: the type holds no pointer but strings, which are immutable, so
	// a value copy is a deep copy; only counting its bytes walks it.
	flat bool
	// pure: flat and without strings, so there are no bytes to count
	// beyond the type's size either.
	pure   bool
	elem   *copyPlan   // pointer, slice, array: the element's; map: the value's
	key    *copyPlan   // map: the key's
	fields []fieldCopy // struct: the fields that are not pure
}

type fieldCopy struct {
	index int
	plan  *copyPlan
}

var (
	copyPlans  sync.Map // reflect.Type -> *copyPlan, complete
	copyPlanMu sync.Mutex
)

// planFor returns t's plan, working it (and the plans of the types it
// holds) out on first use.
func planFor(t reflect.Type) *copyPlan {
	if p, ok := copyPlans.Load(t); ok {
		return p.(*copyPlan)
	}
	copyPlanMu.Lock()
	defer copyPlanMu.Unlock()
	building := map[reflect.Type]*copyPlan{}
	p := buildPlan(t, building)
	for bt, bp := range building {
		copyPlans.Store(bt, bp)
	}
	return p
}

// buildPlan works out t's plan. A type met again while its plan is being
// built (a pointer cycle) gets the unfinished plan, which is never flat: a
// type can only reach itself through a pointer, slice or map.
func buildPlan(t reflect.Type, building map[reflect.Type]*copyPlan) *copyPlan {
	if p, ok := copyPlans.Load(t); ok {
		return p.(*copyPlan)
	}
	if p, ok := building[t]; ok {
		return p
	}
	p := &copyPlan{t: t, kind: t.Kind()}
	building[t] = p
	switch {
	case shared[t]:
		p.shared = true
	case p.kind == reflect.String:
		p.flat = true
	case p.kind == reflect.Pointer || p.kind == reflect.Slice:
		p.elem = buildPlan(t.Elem(), building)
	case p.kind == reflect.Map:
		p.key, p.elem = buildPlan(t.Key(), building), buildPlan(t.Elem(), building)
	case p.kind == reflect.Array:
		p.elem = buildPlan(t.Elem(), building)
		p.flat, p.pure = p.elem.flat, p.elem.pure
	case p.kind == reflect.Struct:
		p.flat, p.pure = true, true
		for i := range t.NumField() {
			f := buildPlan(t.Field(i).Type, building)
			p.flat = p.flat && f.flat
			p.pure = p.pure && f.pure
			if !f.pure {
				p.fields = append(p.fields, fieldCopy{index: i, plan: f})
			}
		}
	case p.kind == reflect.Interface, p.kind == reflect.Func, p.kind == reflect.Chan, p.kind == reflect.UnsafePointer:
		// not flat: an interface holds a value of any type; funcs and
		// channels are shared (Grype's match types hold none)
	default: // booleans and numbers
		p.flat, p.pure = true, true
	}
	return p
}

// copier deep-copies values and, when count is set, adds up the memory the
// copies hold.
type copier struct {
	// seen maps a source pointer to its copy, so aliasing is kept and a
	// cycle does not recurse forever.
	seen  map[seenKey]reflect.Value
	count bool
	bytes int64
}

type seenKey struct {
	ptr uintptr
	typ reflect.Type
}

// deepCopy returns a copy of v that shares no mutable memory with it, and
// the approximate number of bytes the copy holds.
func deepCopy[T any](v T) (T, int64) {
	c := copier{count: true}
	src := reflect.ValueOf(&v).Elem()
	out := c.copy(src, planFor(src.Type()))
	c.bytes += int64(src.Type().Size())
	return out.Interface().(T), c.bytes
}

// copyOut returns a copy of v that shares no mutable memory with it, as
// deepCopy does without counting its bytes (a hit hands it out).
func copyOut[T any](v T) T {
	c := copier{}
	src := reflect.ValueOf(&v).Elem()
	return c.copy(src, planFor(src.Type())).Interface().(T)
}

func (c *copier) copy(v reflect.Value, p *copyPlan) reflect.Value {
	if p.shared || p.pure || (p.flat && !c.count) {
		return v
	}
	switch p.kind {
	case reflect.String:
		c.bytes += int64(v.Len())
		return v
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		key := seenKey{ptr: v.Pointer(), typ: p.t}
		if q, ok := c.seen[key]; ok {
			return q
		}
		if c.seen == nil {
			c.seen = map[seenKey]reflect.Value{}
		}
		q := reflect.New(p.elem.t)
		c.seen[key] = q
		if c.count {
			c.bytes += int64(p.elem.t.Size())
		}
		q.Elem().Set(c.copy(v.Elem(), p.elem))
		return q
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(p.t).Elem()
		e := v.Elem()
		out.Set(c.copy(e, planFor(e.Type())))
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		n := v.Len()
		out := reflect.MakeSlice(p.t, n, n)
		if c.count {
			c.bytes += int64(n) * int64(p.elem.t.Size())
		}
		if p.elem.pure || (p.elem.flat && !c.count) {
			reflect.Copy(out, v)
			return out
		}
		for i := range n {
			out.Index(i).Set(c.copy(v.Index(i), p.elem))
		}
		return out
	case reflect.Array:
		out := reflect.New(p.t).Elem()
		for i := range v.Len() {
			out.Index(i).Set(c.copy(v.Index(i), p.elem))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(p.t, v.Len())
		if c.count {
			c.bytes += int64(v.Len()) * int64(p.key.t.Size()+p.elem.t.Size()+16)
		}
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(c.copy(it.Key(), p.key), c.copy(it.Value(), p.elem))
		}
		return out
	case reflect.Struct:
		out := reflect.New(p.t).Elem()
		out.Set(v)
		for _, f := range p.fields {
			if f.plan.flat && !c.count {
				continue
			}
			fv := writable(out.Field(f.index))
			fv.Set(c.copy(fv, f.plan))
		}
		return out
	default:
		// funcs and channels are shared (Grype's match types hold none)
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
