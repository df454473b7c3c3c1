package schema

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Ref locates the IDs one ref-tagged field holds.
type Ref struct {
	Kind     string    // the entity kind
	SystemOK bool      // tagged system-ok: the field does not change the entity
	Field    string    // for messages: "noteId", "items[].noteId"
	steps    []refStep // from the In value to the field
	Optional bool      // skip the zero value
}

// refStep is one step from a value to the IDs: a struct field, or every
// element of a slice or array. Pointers are followed on the way.
type refStep struct {
	index []int // struct field; nil means every element
}

// RefKind returns the entity kind of a ref tag ("note,system-ok" → "note").
func RefKind(tag string) string {
	k, _, _ := strings.Cut(tag, ",")
	return k
}

// Refs finds the ref-tagged fields of an input type, at any depth,
// and panics on a ref tag that cannot work, naming the field and the fix.
func Refs(tool string, root *schemaNode, t reflect.Type) []Ref {
	var refs []Ref
	// optional is true below an optional field: its zero value means absent.
	var walk func(n *schemaNode, t reflect.Type, steps []refStep, path string, optional bool)
	walk = func(n *schemaNode, t reflect.Type, steps []refStep, path string, optional bool) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for _, p := range n.props {
			f := t.FieldByIndex(p.index)
			fpath := p.name
			if path != "" {
				fpath = path + "." + p.name
			}
			fsteps := append(append([]refStep(nil), steps...), refStep{index: p.index})
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if p.ref == "" {
				switch {
				case ft.Kind() == reflect.Struct && p.schema.props != nil:
					walk(p.schema, ft, fsteps, fpath, optional || !p.required)
				case (ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array) && p.schema.items != nil:
					walk(p.schema.items, ft.Elem(), append(fsteps, refStep{}), fpath+"[]", false)
				}
				continue
			}
			kind, opts, _ := strings.Cut(p.ref, ",")
			ref := Ref{Kind: kind, Field: fpath, Optional: optional || !p.required}
			if kind == "" {
				panic(fmt.Sprintf("llmtool: tool %q: In field %s: ref tag %q names no entity kind; write ref:\"note\"", tool, fpath, p.ref))
			}
			for _, o := range strings.Split(opts, ",") {
				switch strings.TrimSpace(o) {
				case "":
				case "system-ok":
					ref.SystemOK = true
				default:
					panic(fmt.Sprintf("llmtool: tool %q: In field %s: ref tag %q has unknown option %q; the only option is system-ok", tool, fpath, p.ref, o))
				}
			}
			leaf := ft
			if leaf.Kind() == reflect.Slice || leaf.Kind() == reflect.Array {
				leaf = leaf.Elem()
				for leaf.Kind() == reflect.Pointer {
					leaf = leaf.Elem()
				}
				fsteps = append(fsteps, refStep{})
				ref.Field += "[]"
			}
			if !isIDKind(leaf.Kind()) {
				panic(fmt.Sprintf("llmtool: tool %q: In field %s: ref tag on type %s; an entity reference must be a string or integer ID (or a slice of them)", tool, fpath, f.Type))
			}
			ref.steps = fsteps
			refs = append(refs, ref)
		}
	}
	walk(root, t, nil, "", false)
	return refs
}

func isIDKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// RefID is one referenced ID of a call.
type RefID struct {
	Ref   *Ref
	Field string // with element positions: "items[2].noteId"
	ID    string
}

// IDs appends the IDs ref finds in v, each with the element positions of
// its path ("[2][0]"); idsNamed turns those into a full path.
func (ref *Ref) IDs(v reflect.Value, out []RefID) []RefID {
	var walk func(v reflect.Value, steps []refStep, field string)
	walk = func(v reflect.Value, steps []refStep, field string) {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return
			}
			v = v.Elem()
		}
		if len(steps) == 0 {
			if ref.Optional && v.IsZero() && !strings.HasSuffix(ref.Field, "[]") {
				return
			}
			out = append(out, RefID{Ref: ref, Field: field, ID: idString(v)})
			return
		}
		s := steps[0]
		if s.index == nil {
			for i := range v.Len() {
				walk(v.Index(i), steps[1:], field+"["+strconv.Itoa(i)+"]")
			}
			return
		}
		walk(v.FieldByIndex(s.index), steps[1:], field)
	}
	walk(v, ref.steps, "")
	return out
}

func idString(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	default:
		return strconv.FormatUint(v.Uint(), 10)
	}
}

// IDsNamed is IDs with fields named by their JSON paths.
func (ref *Ref) IDsNamed(v reflect.Value, out []RefID) []RefID {
	start := len(out)
	out = ref.IDs(v, out)
	if !strings.Contains(ref.Field, "[]") {
		for i := start; i < len(out); i++ {
			out[i].Field = ref.Field
		}
		return out
	}
	// Replace each "[]" of the path with the positions the walk recorded.
	for i := start; i < len(out); i++ {
		out[i].Field = fillPositions(ref.Field, out[i].Field)
	}
	return out
}

// fillPositions turns "items[].noteIds[]" and positions "[2][0]" into
// "items[2].noteIds[0]".
func fillPositions(path, positions string) string {
	var b strings.Builder
	for {
		i := strings.Index(path, "[]")
		if i < 0 {
			b.WriteString(path)
			return b.String()
		}
		b.WriteString(path[:i])
		j := strings.IndexByte(positions, ']')
		if j < 0 {
			b.WriteString(path[i:])
			return b.String()
		}
		b.WriteString(positions[:j+1])
		positions = positions[j+1:]
		path = path[i+2:]
	}
}
