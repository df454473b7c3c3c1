package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// Defaults: what a call sets on In without re-encoding the arguments.

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
