package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Inference: the reflector that turns In and Out types and their struct
// tags into schema nodes, refusing tag mistakes where a tool is defined.

// reflector infers schemas and panics with a message naming the tool, the
// field path and the fix when a type cannot be represented.
type reflector struct {
	tool   string
	which  string // "In" or "Out"
	output bool
	stack  []reflect.Type
}

func (r *reflector) fail(path, format string, args ...any) {
	panic(fmt.Sprintf("llmtool: tool %q: %s field %s: %s", r.tool, r.which, path, fmt.Sprintf(format, args...)))
}

func (r *reflector) node(t reflect.Type, path string) *schemaNode {
	for _, s := range r.stack {
		if s == t {
			r.fail(path, "type %s refers to itself, which JSON Schema inference cannot express; use a flat list with parent IDs, or json.RawMessage", t)
		}
	}
	if t == timeType {
		n := newNode("string")
		n.format = "date-time"
		return n
	}
	if t == rawMessageType {
		return &schemaNode{any: true, minLength: -1, maxLength: -1}
	}
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		r.fail(path, "type %s cannot be sent as JSON and would run after the transaction ends; compute the values inside the handler and return them as plain fields (a slice instead of a channel or iterator)", t)
	case reflect.Complex64, reflect.Complex128, reflect.Uintptr:
		r.fail(path, "type %s has no JSON form; use a number or a string", t)
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
			return &schemaNode{any: true, minLength: -1, maxLength: -1}
		}
		if t.Implements(textMarshalType) || reflect.PointerTo(t).Implements(textMarshalType) {
			return newNode("string")
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return newNode("boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return newNode("integer")
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n := newNode("integer")
		n.minimum = "0"
		return n
	case reflect.Float32, reflect.Float64:
		return newNode("number")
	case reflect.String:
		return newNode("string")
	case reflect.Interface:
		return &schemaNode{any: true, minLength: -1, maxLength: -1}
	case reflect.Pointer:
		r.stack = append(r.stack, t)
		n := r.node(t.Elem(), path)
		r.stack = r.stack[:len(r.stack)-1]
		if !n.any {
			n.types = append(n.types, "null")
		}
		return n
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			n := newNode("string")
			n.encoding = "base64"
			return n
		}
		r.stack = append(r.stack, t)
		// Not nullable in outputs either: results are encoded with nil
		// slices as [] (EmptyNils). A *[]T field is the nullable list.
		n := newNode("array")
		n.items = r.node(t.Elem(), path+"[]")
		r.stack = r.stack[:len(r.stack)-1]
		return n
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			if !t.Key().Implements(textMarshalType) {
				r.fail(path, "map key type %s has no JSON form; use string keys", t.Key())
			}
		}
		r.stack = append(r.stack, t)
		n := newNode("object") // a nil map is encoded as {} (EmptyNils)
		n.additional = r.node(t.Elem(), path+"[key]")
		r.stack = r.stack[:len(r.stack)-1]
		return n
	case reflect.Struct:
		r.stack = append(r.stack, t)
		n := newNode("object")
		n.closed = true
		r.fields(n, t, nil, path)
		r.stack = r.stack[:len(r.stack)-1]
		return n
	}
	r.fail(path, "type %s is not supported", t)
	return nil
}

// fields adds t's JSON fields to n, flattening embedded structs.
func (r *reflector) fields(n *schemaNode, t reflect.Type, index []int, path string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		idx := append(append([]int(nil), index...), i)
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if f.Type.Kind() == reflect.Pointer {
					r.fail(path+"."+f.Name, "embedded pointer %s cannot be filled when decoding arguments; embed the struct by value", f.Type)
				}
				r.fields(n, ft, idx, path)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if n.prop(name) != nil {
			continue // shadowed, as in encoding/json
		}
		fpath := path + "." + f.Name
		optional := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		fs := r.node(f.Type, fpath)
		r.applyTags(fs, f, fpath)
		p := &propNode{name: name, goName: f.Name, index: idx, schema: fs, ref: f.Tag.Get("ref")}
		p.required = !optional && (r.output || fs.def == nil)
		n.props = append(n.props, p)
	}
}

func (n *schemaNode) prop(name string) *propNode {
	for _, p := range n.props {
		if p.name == name {
			return p
		}
	}
	return nil
}

func (n *schemaNode) is(typ string) bool {
	for _, t := range n.types {
		if t == typ {
			return true
		}
	}
	return false
}

// applyTags reads the keyword tags of field f into its schema s.
func (r *reflector) applyTags(s *schemaNode, f reflect.StructField, path string) {
	tags := f.Tag
	if d, ok := tags.Lookup("desc"); ok {
		s.description = d
	} else if d, ok := tags.Lookup("description"); ok {
		s.description = d
	}
	// Item-level keywords on a slice apply to its items.
	target := s
	if s.items != nil && s.is("array") {
		target = s.items
	}
	if v, ok := tags.Lookup("format"); ok {
		target.format = v
	}
	if v, ok := tags.Lookup("pattern"); ok {
		if _, err := regexp.Compile(v); err != nil {
			r.fail(path, "pattern tag %q is not a valid regular expression: %v", v, err)
		}
		target.pattern = v
		target.re = regexp.MustCompile(v)
	}
	for _, kw := range []struct {
		tag string
		dst *int
	}{{"minLength", &target.minLength}, {"maxLength", &target.maxLength}} {
		if v, ok := tags.Lookup(kw.tag); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				r.fail(path, "%s tag %q must be a non-negative integer", kw.tag, v)
			}
			*kw.dst = n
		}
	}
	for _, kw := range []struct {
		tag string
		dst *string
	}{{"minimum", &target.minimum}, {"maximum", &target.maximum}} {
		if v, ok := tags.Lookup(kw.tag); ok {
			if _, ok := parseDecimal(v); !ok {
				r.fail(path, "%s tag %q must be a number written as in JSON, such as 1, -2.5 or 1e3", kw.tag, v)
			}
			*kw.dst = v
		}
	}
	elem := f.Type
	if target != s {
		elem = elem.Elem()
	}
	r.checkKeywords(target, tags, path, f.Type, elem, target != s)
	if v, ok := tags.Lookup("enum"); ok {
		var vals []string
		if strings.HasPrefix(v, "[") {
			var raw []json.RawMessage
			if err := json.Unmarshal([]byte(v), &raw); err != nil {
				r.fail(path, "enum tag %q is not a JSON array: %v", v, err)
			}
			for _, x := range raw {
				target.enum = append(target.enum, r.literal(x, elem, path, "enum"))
			}
		} else {
			target.enumTag = v
			vals = strings.Split(v, "|")
			for _, x := range vals {
				target.enum = append(target.enum, r.tagValue(x, elem, path, "enum"))
			}
		}
	}
	if v, ok := tags.Lookup("default"); ok {
		s.def = r.tagValue(v, f.Type, path, "default")
		dv, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.def))
		if err != nil {
			r.fail(path, "default tag %q: %v", v, err)
		}
		s.defValue = dv
	}
}

// checkKeywords fails the definition when a keyword tag cannot constrain
// the field it is on (jsonschema would ignore it without a word), or when
// its bounds leave no valid value. n is the node the keywords went to: the
// field's own, or its items' on a slice. ft is the field's type, elem the
// type n describes.
func (r *reflector) checkKeywords(n *schemaNode, tags reflect.StructTag, path string, ft, elem reflect.Type, items bool) {
	what := func() string { // only for a failure: formatting types is not free
		if items {
			return fmt.Sprintf("a field of type %s, whose items are of type %s", ft, elem)
		}
		return fmt.Sprintf("a field of type %s", ft)
	}
	typ := "any"
	if !n.any && len(n.types) > 0 {
		typ = n.types[0]
	}
	noBounds := func(tag, bound string) {
		if typ == "any" {
			r.fail(path, "%s tag on %s, which takes any JSON value, so there is nothing for it to bound; remove the tag, or give the field a number or string type", tag, what())
		}
		r.fail(path, "%s tag on %s, which has no %s; remove the tag", tag, what(), bound)
	}
	for _, tag := range []string{"minimum", "maximum"} {
		if _, ok := tags.Lookup(tag); !ok {
			continue
		}
		switch typ {
		case "integer", "number":
		case "string":
			r.fail(path, "%s tag on %s: minimum and maximum bound a number's value; bound a string's length with minLength and maxLength", tag, what())
		default:
			noBounds(tag, "numeric value")
		}
	}
	for _, tag := range []string{"minLength", "maxLength"} {
		if _, ok := tags.Lookup(tag); !ok {
			continue
		}
		switch typ {
		case "string":
		case "integer", "number":
			r.fail(path, "%s tag on %s: minLength and maxLength bound a string's length; bound a number's value with minimum and maximum", tag, what())
		default:
			noBounds(tag, "length")
		}
	}
	for _, tag := range []string{"pattern", "format"} {
		if _, ok := tags.Lookup(tag); ok && typ != "string" {
			r.fail(path, "%s tag on %s: pattern and format apply to strings only; remove the tag, or make the field a string", tag, what())
		}
	}
	if n.minLength >= 0 && n.maxLength >= 0 && n.minLength > n.maxLength {
		r.fail(path, "minLength %d is above maxLength %d, so no string fits; make minLength at most maxLength", n.minLength, n.maxLength)
	}
	if n.minimum != "" && n.maximum != "" {
		lo, _ := parseDecimal(n.minimum)
		hi, _ := parseDecimal(n.maximum)
		if lo.cmp(&hi) > 0 {
			r.fail(path, "minimum %s is above maximum %s, so no number fits; make minimum at most maximum", n.minimum, n.maximum)
		}
	}
}

// tagValue converts a tag's text to JSON for a field of type t: strings are
// taken as they are, numbers and booleans parsed, anything else read as JSON.
func (r *reflector) tagValue(v string, t reflect.Type, path, tag string) json.RawMessage {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.String {
		b, _ := json.Marshal(v)
		return b
	}
	return r.literal(json.RawMessage(v), t, path, tag)
}

// literal checks that the JSON text v decodes into type t.
func (r *reflector) literal(v json.RawMessage, t reflect.Type, path, tag string) json.RawMessage {
	p := reflect.New(t)
	if err := json.Unmarshal(v, p.Interface()); err != nil {
		hint := ""
		if tag == "enum" && bytes.Contains(v, []byte(",")) {
			hint = `; separate enum values with "|", as in enum:"1|2|3"`
		}
		r.fail(path, "%s tag value %s does not fit type %s: %v%s", tag, v, t, err, hint)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		r.fail(path, "%s tag value %s: %v", tag, v, err)
	}
	return buf.Bytes()
}
