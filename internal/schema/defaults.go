package schema

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Defaults and flat In types: what a call sets on In without re-encoding
// the arguments.

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// prepareFlat decides whether In is flat and records its fields.
func (cs *compiledSchema) prepareFlat(t reflect.Type) {
	for _, p := range cs.root.props {
		f := t.FieldByIndex(p.index)
		ft := f.Type
		if reflect.PointerTo(ft).Implements(unmarshalerType) || reflect.PointerTo(ft).Implements(textUnmarshalerType) ||
			strings.Contains(f.Tag.Get("json"), ",string") {
			return
		}
		switch ft.Kind() {
		case reflect.String, reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
		default:
			return
		}
		ff := flatField{name: p.name, index: p.index, kind: ft.Kind()}
		if k := ft.Kind(); k != reflect.String && k != reflect.Bool {
			ff.bits = ft.Bits()
		}
		cs.fields = append(cs.fields, ff)
	}
	cs.flat = true
}

// fillFlat sets the fields of in (a pointer to a flat In) from the decoded
// argument object m, as json.Unmarshal would. It reports false, having
// possibly set some fields, when a value needs encoding/json's own
// handling (a number out of range, say); the caller then decodes the JSON
// into a fresh value's worth of fields, which overwrites every one set.
func (cs *compiledSchema) fillFlat(in any, m map[string]any) bool {
	v := reflect.ValueOf(in).Elem()
	for _, f := range cs.fields {
		x, ok := m[f.name]
		if !ok || x == nil {
			continue
		}
		fv := v.FieldByIndex(f.index)
		switch f.kind {
		case reflect.String:
			s, ok := x.(string)
			if !ok {
				return false
			}
			fv.SetString(s)
		case reflect.Bool:
			b, ok := x.(bool)
			if !ok {
				return false
			}
			fv.SetBool(b)
		default:
			n, ok := x.(json.Number)
			if !ok {
				return false
			}
			switch f.kind {
			case reflect.Float32, reflect.Float64:
				x, err := strconv.ParseFloat(string(n), f.bits)
				if err != nil {
					return false
				}
				fv.SetFloat(x)
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				x, err := strconv.ParseUint(string(n), 10, f.bits)
				if err != nil {
					return false
				}
				fv.SetUint(x)
			default:
				x, err := strconv.ParseInt(string(n), 10, f.bits)
				if err != nil {
					return false
				}
				fv.SetInt(x)
			}
		}
	}
	return true
}

// prepareDefaults decodes each top-level default into a value of its
// field's type, once.
func (cs *compiledSchema) prepareDefaults(t reflect.Type) {
	if len(cs.root.props) > 64 {
		cs.nestedDefaults = true // more than the bit set holds: use the JSON path
		return
	}
	for i, p := range cs.root.props {
		if p.schema.hasDefaults() {
			cs.nestedDefaults = true
		}
		if p.schema.def == nil {
			continue
		}
		f := t.FieldByIndex(p.index)
		v := reflect.New(f.Type)
		if err := json.Unmarshal(p.schema.def, v.Interface()); err != nil {
			panic(fmt.Sprintf("llmtool: In field %s: default %s: %v", f.Name, p.schema.def, err))
		}
		cs.defaults = append(cs.defaults, fieldDefault{name: p.name, prop: i, index: p.index, value: v.Elem()})
	}
}

// hasDefaults reports whether a default sits anywhere below n.
func (n *schemaNode) hasDefaults() bool {
	for _, p := range n.props {
		if p.schema.def != nil || p.schema.hasDefaults() {
			return true
		}
	}
	return (n.items != nil && n.items.hasDefaults()) || (n.additional != nil && n.additional.hasDefaults())
}

// missingDefaults returns the set of top-level defaults whose fields are
// absent from the argument object v, as bits of cs.defaults.
func (cs *compiledSchema) missingDefaults(v any) uint64 {
	m, _ := v.(map[string]any)
	var bits uint64
	for i, d := range cs.defaults {
		if _, ok := m[d.name]; !ok {
			bits |= 1 << i
		}
	}
	return bits
}

// setDefaults sets the fields named by bits on in, a pointer to an In.
func (cs *compiledSchema) setDefaults(in any, bits uint64) {
	if bits == 0 {
		return
	}
	v := reflect.ValueOf(in).Elem()
	for i, d := range cs.defaults {
		if bits&(1<<i) != 0 {
			v.FieldByIndex(d.index).Set(d.value)
		}
	}
}

// dropNulls removes, at any depth, null values of optional properties whose
// schema does not accept null, and reports whether it removed any.
func (n *schemaNode) dropNulls(v any) bool {
	if n == nil {
		return false
	}
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for _, p := range n.props {
			cur, ok := x[p.name]
			if !ok {
				continue
			}
			if cur == nil && !p.required && !p.schema.any && !p.schema.is("null") {
				delete(x, p.name)
				changed = true
				continue
			}
			if p.schema.dropNulls(cur) {
				changed = true
			}
		}
	case []any:
		for _, e := range x {
			if n.items.dropNulls(e) {
				changed = true
			}
		}
	}
	return changed
}

// applyDefaults fills absent properties that have defaults, at any depth,
// and reports whether it changed v.
func (n *schemaNode) applyDefaults(v any) bool {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for _, p := range n.props {
			if cur, ok := x[p.name]; ok {
				if p.schema.applyDefaults(cur) {
					changed = true
				}
			} else if p.schema.def != nil {
				x[p.name] = p.schema.defValue
				changed = true
			}
		}
		if n.additional != nil {
			for _, e := range x {
				if n.additional.applyDefaults(e) {
					changed = true
				}
			}
		}
	case []any:
		if n.items != nil {
			for _, e := range x {
				if n.items.applyDefaults(e) {
					changed = true
				}
			}
		}
	}
	return changed
}
