package schema

import (
	"reflect"
	"strings"
)

// Empty lists and maps in results. encoding/json writes a nil slice or map
// as null, which would make every list of an Out type ["array","null"] in
// its output schema (strict MCP clients warn about those). Instead output
// schemas declare "array" and "object", and results are encoded with every
// nil slice (including []byte, which becomes "") and nil map replaced by an
// empty one, at every depth that encoding/json writes out: fields, nested
// structs, elements of slices and arrays, pointees, map values. A field
// that omitempty or omitzero would leave out keeps being left out. Values
// behind an interface (any) and types with their own MarshalJSON or
// MarshalText encode as they are: their schema is theirs.
//
// A pointer to a slice or map is how an Out field says it can be null: a
// nil pointer encodes as null and is declared ["array","null"], a pointer
// to a nil slice as [].
//
// The plan is built once per Out type, when the tool is defined: a type
// with no slice or map anywhere gets none, and its results are encoded
// without a look. Otherwise the walk copies on write: it shares whatever it
// does not change and never writes to the handler's slices, maps or
// pointees, which may be shared with its caches.

// EmptyNils returns a function that returns v (a value of type t) with its
// nil slices and maps, at every depth encoding/json writes, replaced by
// empty ones; v itself when it has none. It returns nil when values of t
// cannot hold a nil slice or map that would be encoded, so callers can skip
// the call. t must be a type Infer accepted.
func EmptyNils(t reflect.Type) func(v any) any {
	e := emptier(t)
	if e == nil {
		return nil
	}
	return func(v any) any {
		rv := reflect.ValueOf(v)
		if !e.needs(rv) {
			return v
		}
		cp := reflect.New(t).Elem()
		cp.Set(rv)
		e.fill(cp)
		return cp.Interface()
	}
}

// empties is what EmptyNils knows of one type. needs walks a value without
// writing or allocating, and only a value that needs it gets copied: fill
// fixes dst in place, where dst's own memory is a copy the walk owns (a
// struct's fields, an array's elements, a slice or map variable), while
// what dst points to (a slice's elements, a map, a pointee) is the
// handler's, so fill replaces it with a fixed copy rather than write to it.
type empties struct {
	needs func(v reflect.Value) bool // v holds a nil slice or map that is encoded
	fill  func(dst reflect.Value)    // fix dst, addressable; a no-op unless needs(dst)
}

// emptier builds the empties of type t, or nil when values of t have
// nothing to fix.
func emptier(t reflect.Type) *empties {
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface &&
		(t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) ||
			t.Implements(textMarshalType) || reflect.PointerTo(t).Implements(textMarshalType)) {
		return nil // encodes itself
	}
	switch t.Kind() {
	case reflect.Pointer:
		elem := emptier(t.Elem())
		if elem == nil {
			return nil
		}
		e := &empties{needs: func(v reflect.Value) bool { return !v.IsNil() && elem.needs(v.Elem()) }}
		e.fill = func(dst reflect.Value) {
			if e.needs(dst) {
				p := reflect.New(t.Elem())
				p.Elem().Set(dst.Elem())
				elem.fill(p.Elem())
				dst.Set(p)
			}
		}
		return e
	case reflect.Slice:
		// One empty slice of the type serves every call: it has no
		// elements to write to, and an append to it allocates.
		empty := reflect.MakeSlice(t, 0, 0)
		elem := emptier(t.Elem())
		first := func(v reflect.Value) int { // the first element to fix, or -1
			if elem != nil {
				for i := range v.Len() {
					if elem.needs(v.Index(i)) {
						return i
					}
				}
			}
			return -1
		}
		return &empties{
			needs: func(v reflect.Value) bool { return v.IsNil() || first(v) >= 0 },
			fill: func(dst reflect.Value) {
				if dst.IsNil() {
					dst.Set(empty)
					return
				}
				i := first(dst)
				if i < 0 {
					return
				}
				cp := reflect.MakeSlice(t, dst.Len(), dst.Len())
				reflect.Copy(cp, dst)
				for ; i < cp.Len(); i++ {
					elem.fill(cp.Index(i))
				}
				dst.Set(cp)
			},
		}
	case reflect.Array:
		elem := emptier(t.Elem())
		if elem == nil || t.Len() == 0 {
			return nil
		}
		return &empties{
			needs: func(v reflect.Value) bool {
				for i := range v.Len() {
					if elem.needs(v.Index(i)) {
						return true
					}
				}
				return false
			},
			fill: func(dst reflect.Value) {
				for i := range dst.Len() {
					elem.fill(dst.Index(i))
				}
			},
		}
	case reflect.Map:
		// One empty map of the type serves every call: it is only read,
		// by the encoder.
		empty := reflect.MakeMap(t)
		elem := emptier(t.Elem())
		if elem == nil {
			return &empties{
				needs: func(v reflect.Value) bool { return v.IsNil() },
				fill: func(dst reflect.Value) {
					if dst.IsNil() {
						dst.Set(empty)
					}
				},
			}
		}
		// it.Value() would copy each value to the heap; a scratch value
		// per walk holds them in turn instead.
		needs := func(v reflect.Value) bool {
			if v.IsNil() {
				return true
			}
			var it reflect.MapIter
			it.Reset(v)
			var ev reflect.Value
			for it.Next() {
				if !ev.IsValid() {
					ev = reflect.New(t.Elem()).Elem()
				}
				ev.SetIterValue(&it)
				if elem.needs(ev) {
					return true
				}
			}
			return false
		}
		return &empties{
			needs: needs,
			fill: func(dst reflect.Value) {
				if dst.IsNil() {
					dst.Set(empty)
					return
				}
				if !needs(dst) {
					return
				}
				cp := reflect.MakeMapWithSize(t, dst.Len())
				var it reflect.MapIter
				it.Reset(dst)
				for it.Next() {
					ev := reflect.New(t.Elem()).Elem()
					ev.SetIterValue(&it)
					elem.fill(ev)
					cp.SetMapIndex(it.Key(), ev)
				}
				dst.Set(cp)
			},
		}
	case reflect.Struct:
		fields := emptierFields(t, nil, nil)
		if len(fields) == 0 {
			return nil
		}
		return &empties{
			needs: func(v reflect.Value) bool {
				for i := range fields {
					f := &fields[i]
					if fv := v.FieldByIndex(f.index); !f.omitted(fv) && f.empties.needs(fv) {
						return true
					}
				}
				return false
			},
			fill: func(dst reflect.Value) {
				for i := range fields {
					f := &fields[i]
					if fv := dst.FieldByIndex(f.index); !f.omitted(fv) {
						f.empties.fill(fv)
					}
				}
			},
		}
	}
	return nil // scalars and interfaces
}

// emptyField is a struct field, perhaps of an embedded struct, whose value
// may hold a nil slice or map.
type emptyField struct {
	index     []int
	empties   *empties
	omitEmpty bool
	omitZero  bool
	isZero    func(reflect.Value) bool // the type's IsZero method, for omitzero; nil if none
}

// emptierFields lists t's fields that need a fixer, flattening embedded
// structs as encoding/json and the reflector do.
func emptierFields(t reflect.Type, index []int, fields []emptyField) []emptyField {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		idx := append(append([]int(nil), index...), i)
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			fields = emptierFields(f.Type, idx, fields)
			continue
		}
		if !f.IsExported() {
			continue
		}
		e := emptier(f.Type)
		if e == nil {
			continue
		}
		opts = "," + opts + ","
		ef := emptyField{index: idx, empties: e, omitEmpty: strings.Contains(opts, ",omitempty,"), omitZero: strings.Contains(opts, ",omitzero,")}
		if ef.omitZero {
			ef.isZero = isZeroMethod(f.Type)
		}
		fields = append(fields, ef)
	}
	return fields
}

// omitted reports whether encoding/json leaves the field with value v out,
// so that it must stay as it is: an empty slice is not zero, and a struct
// whose nil slices were filled would no longer be either.
func (f *emptyField) omitted(v reflect.Value) bool {
	if f.omitEmpty {
		switch v.Kind() {
		case reflect.Slice, reflect.Map, reflect.Array:
			if v.Len() == 0 {
				return true
			}
		case reflect.Pointer:
			if v.IsNil() {
				return true
			}
		}
	}
	if f.omitZero {
		if f.isZero != nil {
			return f.isZero(v)
		}
		return v.IsZero()
	}
	return false
}

type isZeroer interface{ IsZero() bool }

var isZeroerType = reflect.TypeFor[isZeroer]()

// isZeroMethod returns how encoding/json calls t's IsZero method for
// omitzero, or nil if t has none (then reflect's IsZero decides).
func isZeroMethod(t reflect.Type) func(reflect.Value) bool {
	switch {
	case t.Kind() == reflect.Pointer && t.Implements(isZeroerType):
		return func(v reflect.Value) bool { return v.IsNil() || v.Interface().(isZeroer).IsZero() }
	case t.Implements(isZeroerType):
		return func(v reflect.Value) bool { return v.Interface().(isZeroer).IsZero() }
	case reflect.PointerTo(t).Implements(isZeroerType):
		return func(v reflect.Value) bool {
			if !v.CanAddr() {
				c := reflect.New(t).Elem()
				c.Set(v)
				v = c
			}
			return v.Addr().Interface().(isZeroer).IsZero()
		}
	}
	return nil
}
