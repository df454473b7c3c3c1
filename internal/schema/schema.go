package schema

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Schemas are inferred from the In and Out Go types once, when a tool is
// defined. Field names follow encoding/json (the json tag, embedded structs
// flattened, "-" skipped); a field is optional when its json tag says
// omitempty or omitzero, or when it has a default. Each JSON Schema keyword
// has a struct tag of its own, so commas and regex quantifiers need no
// escaping:
//
//	desc:"ID of the note to read."        description
//	default:"4000"                        default, parsed as the field's type (JSON for slices, maps, structs)
//	enum:"text|code|book"                 enum, split on "|"; or a JSON array: enum:"[\"a|b\",\"c\"]"
//	minimum:"1" maximum:"5"               numeric bounds
//	minLength:"1" maxLength:"64"          string length bounds
//	pattern:"^[a-z]{1,3}$"                regular expression (RE2 syntax)
//	format:"date"                         format, asserted when validating
//	ref:"note"                            the field names an entity of that kind (see guards)
//
// On a slice field, enum, pattern, format and the bounds apply to the
// items. A keyword on a type it cannot constrain (minimum on a string,
// minLength on a number, any bound on a bool or a struct) and bounds that
// leave no valid value (minLength above maxLength) fail the definition.
// Objects are closed (additionalProperties false), so an unknown argument
// is an error rather than silently dropped; keys match exactly, case
// included, even under a supplied InputSchema (see compiledSchema.validate).

// Param describes one top-level input parameter, in declaration order. The
// man catalog and lint read it.
type Param struct {
	Name        string          // JSON name
	Type        string          // JSON Schema type, such as "string" or "array"
	Description string          // from the desc tag
	Required    bool            // no omitempty and no default
	Default     json.RawMessage // from the default tag, nil if none
	Enum        []string        // allowed values as JSON texts, nil if any
	Ref         string          // entity kind from the ref tag, "" if none
}

type schemaNode struct {
	types       []string // JSON types; more than one when nullable
	any         bool     // no constraint at all: {}
	format      string
	description string
	def         json.RawMessage
	defValue    any // def decoded for insertion into argument objects
	enum        []json.RawMessage
	enumTag     string // the enum tag as written, when split on "|"; for lint
	minimum     string // JSON number text, "" if unset
	maximum     string
	minDec      *decimal // minimum parsed, for the fast path; nil if unset
	maxDec      *decimal
	formatCheck *jsonschema.Schema // {"format": format}, the reference's verdict on one string
	minLength   int                // -1 if unset
	maxLength   int                // -1 if unset
	pattern     string
	re          *regexp.Regexp // pattern, compiled
	encoding    string         // contentEncoding
	props       []*propNode
	closed      bool        // additionalProperties: false
	additional  *schemaNode // schema of map values
	items       *schemaNode
}

type propNode struct {
	name     string
	goName   string
	index    []int
	required bool
	ref      string
	schema   *schemaNode
}

func newNode(types ...string) *schemaNode {
	return &schemaNode{types: types, minLength: -1, maxLength: -1}
}

// compiledSchema is a schema inferred once and compiled once.
type compiledSchema struct {
	root     *schemaNode
	json     json.RawMessage
	compiled *jsonschema.Schema
	verbatim bool // supplied with InputSchema: only jsonschema/v6 decides

	// Defaults of top-level fields, set on the decoded In value directly,
	// so arguments need no re-encoding. nestedDefaults means some default
	// sits deeper; then defaults go into the JSON before decoding.
	defaults       []fieldDefault
	nestedDefaults bool

	// flat means every top-level field of In is a plain string, bool or
	// number with no custom decoding, so In can be filled from the decoded
	// argument object without decoding the JSON again.
	flat   bool
	fields []flatField
}

// flatField is a top-level field of a flat In.
type flatField struct {
	name  string
	index []int
	kind  reflect.Kind
	bits  int
}

// fieldDefault is a top-level In field's default, decoded once.
type fieldDefault struct {
	name  string
	index []int
	value reflect.Value
}

var (
	timeType        = reflect.TypeFor[time.Time]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	marshalerType   = reflect.TypeFor[json.Marshaler]()
	textMarshalType = reflect.TypeFor[encoding.TextMarshaler]()
)

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
		n := newNode("array")
		if r.output && t.Kind() == reflect.Slice {
			n.types = append(n.types, "null") // a nil slice encodes as null
		}
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
		n := newNode("object")
		if r.output {
			n.types = append(n.types, "null") // a nil map encodes as null
		}
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
	what := fmt.Sprintf("a field of type %s", ft)
	if items {
		what = fmt.Sprintf("a field of type %s, whose items are of type %s", ft, elem)
	}
	typ := "any"
	if !n.any && len(n.types) > 0 {
		typ = n.types[0]
	}
	noBounds := func(tag, bound string) {
		if typ == "any" {
			r.fail(path, "%s tag on %s, which takes any JSON value, so there is nothing for it to bound; remove the tag, or give the field a number or string type", tag, what)
		}
		r.fail(path, "%s tag on %s, which has no %s; remove the tag", tag, what, bound)
	}
	for _, tag := range []string{"minimum", "maximum"} {
		if _, ok := tags.Lookup(tag); !ok {
			continue
		}
		switch typ {
		case "integer", "number":
		case "string":
			r.fail(path, "%s tag on %s: minimum and maximum bound a number's value; bound a string's length with minLength and maxLength", tag, what)
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
			r.fail(path, "%s tag on %s: minLength and maxLength bound a string's length; bound a number's value with minimum and maximum", tag, what)
		default:
			noBounds(tag, "length")
		}
	}
	for _, tag := range []string{"pattern", "format"} {
		if _, ok := tags.Lookup(tag); ok && typ != "string" {
			r.fail(path, "%s tag on %s: pattern and format apply to strings only; remove the tag, or make the field a string", tag, what)
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

// appendJSON writes n as JSON Schema, keywords in a fixed order and
// properties in declaration order.
func (n *schemaNode) appendJSON(b []byte) []byte {
	if n.any {
		if n.description == "" {
			return append(b, "{}"...)
		}
		b = append(b, `{"description":`...)
		b = appendJSONString(b, n.description)
		return append(b, '}')
	}
	b = append(b, '{')
	switch len(n.types) {
	case 0:
	case 1:
		b = append(b, `"type":`...)
		b = appendJSONString(b, n.types[0])
	default:
		b = append(b, `"type":[`...)
		for i, t := range n.types {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, t)
		}
		b = append(b, ']')
	}
	str := func(key, v string) {
		if v != "" {
			b = append(b, `,"`...)
			b = append(b, key...)
			b = append(b, `":`...)
			b = appendJSONString(b, v)
		}
	}
	num := func(key, v string) {
		if v != "" {
			b = append(b, `,"`...)
			b = append(b, key...)
			b = append(b, `":`...)
			b = append(b, v...)
		}
	}
	str("format", n.format)
	str("contentEncoding", n.encoding)
	str("description", n.description)
	if n.def != nil {
		b = append(b, `,"default":`...)
		b = append(b, n.def...)
	}
	if n.enum != nil {
		b = append(b, `,"enum":[`...)
		for i, e := range n.enum {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, e...)
		}
		b = append(b, ']')
	}
	num("minimum", n.minimum)
	num("maximum", n.maximum)
	if n.minLength >= 0 {
		num("minLength", strconv.Itoa(n.minLength))
	}
	if n.maxLength >= 0 {
		num("maxLength", strconv.Itoa(n.maxLength))
	}
	str("pattern", n.pattern)
	if n.items != nil {
		b = append(b, `,"items":`...)
		b = n.items.appendJSON(b)
	}
	if n.is("object") && n.additional == nil {
		b = append(b, `,"properties":{`...)
		for i, p := range n.props {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, p.name)
			b = append(b, ':')
			b = p.schema.appendJSON(b)
		}
		b = append(b, '}')
		req := false
		for _, p := range n.props {
			if p.required {
				if !req {
					b = append(b, `,"required":[`...)
					req = true
				} else {
					b = append(b, ',')
				}
				b = appendJSONString(b, p.name)
			}
		}
		if req {
			b = append(b, ']')
		}
	}
	if n.additional != nil {
		b = append(b, `,"additionalProperties":`...)
		b = n.additional.appendJSON(b)
	} else if n.closed {
		b = append(b, `,"additionalProperties":false`...)
	}
	return append(b, '}')
}

// inferSchema infers and compiles the schema of t for tool, panicking with a
// clear message when t cannot be represented.
func inferSchema(tool, which string, t reflect.Type) *compiledSchema {
	r := &reflector{tool: tool, which: which, output: which == "Out"}
	root := r.node(t, which)
	cs := compileSchema(tool, which, root, root.appendJSON(nil))
	root.prepareFast()
	if which == "In" {
		cs.prepareDefaults(t)
		cs.prepareFlat(t)
	}
	return cs
}

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
	for _, p := range cs.root.props {
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
		cs.defaults = append(cs.defaults, fieldDefault{name: p.name, index: p.index, value: v.Elem()})
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

func compileSchema(tool, which string, root *schemaNode, doc json.RawMessage) *compiledSchema {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		panic(fmt.Sprintf("llmtool: tool %q: %s schema is not JSON: %v", tool, which, err))
	}
	url := "mem:///" + tool + "/" + which + ".json"
	if err := c.AddResource(url, v); err != nil {
		panic(fmt.Sprintf("llmtool: tool %q: %s schema: %v", tool, which, err))
	}
	sch, err := c.Compile(url)
	if err != nil {
		panic(fmt.Sprintf("llmtool: tool %q: %s schema does not compile: %v", tool, which, err))
	}
	cs := &compiledSchema{root: root, json: doc, compiled: sch}
	if root != nil {
		cs.checkDefaults(tool, which, root, which)
	}
	return cs
}

// checkDefaults validates each default against its own property schema, so a
// default that its own bounds would refuse is caught at definition.
func (cs *compiledSchema) checkDefaults(tool, which string, n *schemaNode, path string) {
	for _, p := range n.props {
		if p.schema.def != nil {
			sub := compileSchema(tool, which+"."+p.name, nil, p.schema.appendJSON(nil))
			if err := sub.compiled.Validate(p.schema.defValue); err != nil {
				panic(fmt.Sprintf("llmtool: tool %q: %s field %s: default %s does not satisfy the field's own schema: %v", tool, which, path+"."+p.goName, p.schema.def, err))
			}
		}
		cs.checkDefaults(tool, which, p.schema, path+"."+p.goName)
	}
}

// validate checks an argument value. A fast check compiled from the
// inferred schema decides the common case; anything it does not accept
// goes to jsonschema/v6, whose verdict and error are authoritative, so the
// fast path can only ever make valid calls cheaper. (FuzzValidate holds the
// two to the same verdicts.)
//
// A supplied schema (InputSchema) is checked by jsonschema/v6 alone, after
// one check of our own: every key of an object that In decodes into a
// struct must be one of the struct's JSON names, exactly. encoding/json
// matches keys without regard to case, so without it {"MODE":"x"} would
// fill Mode past a schema that never looked at "MODE".
func (cs *compiledSchema) validate(v any) error {
	if cs.root != nil && !cs.verbatim && cs.root.accepts(v) {
		return nil
	}
	if cs.verbatim && cs.root != nil {
		if loc, keys := cs.root.unknownKeys(v, nil); keys != nil {
			return invalid("%s", unknownKeysMessage(cs.root.at(loc), loc, keys))
		}
	}
	if err := cs.reference(v); err != nil {
		return &argsError{v: v, err: err}
	}
	return nil
}

// reference validates v with jsonschema/v6 alone. jsonschema/v6 panics on
// a number math/big cannot read (an exponent beyond a million) where a
// bound applies; that becomes an error naming the number.
func (cs *compiledSchema) reference(v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if loc, n, ok := unreadableNumber(v, nil); ok {
				err = invalid("%s: %s is too large or too precise to check. Send a number written with fewer digits, such as 10.5.", pointer(loc), n)
				return
			}
			err = fmt.Errorf("llmtool: jsonschema/v6 panicked validating arguments: %v", p)
		}
	}()
	return cs.compiled.Validate(v)
}

// argsError is a jsonschema/v6 verdict on an argument value, kept with the
// value so messages can quote numbers as they were sent.
type argsError struct {
	v   any
	err error
}

func (e *argsError) Error() string { return e.err.Error() }
func (e *argsError) Unwrap() error { return e.err }

// unknownKeys returns the location of the first object in v, depth first,
// that has keys n does not name, with those keys sorted; nil keys if
// there is none. Only objects In decodes into structs are checked; map
// keys are data.
func (n *schemaNode) unknownKeys(v any, loc []string) ([]string, []string) {
	if n == nil || n.any {
		return nil, nil
	}
	switch x := v.(type) {
	case map[string]any:
		if n.additional != nil {
			for _, k := range sortedKeys(x) {
				if l, ks := n.additional.unknownKeys(x[k], append(loc, k)); ks != nil {
					return l, ks
				}
			}
			return nil, nil
		}
		if !n.closed {
			return nil, nil
		}
		var unknown []string
		for k := range x {
			if n.prop(k) == nil {
				unknown = append(unknown, k)
			}
		}
		if unknown != nil {
			slices.Sort(unknown)
			return loc, unknown
		}
		for _, p := range n.props {
			if e, ok := x[p.name]; ok {
				if l, ks := p.schema.unknownKeys(e, append(loc, p.name)); ks != nil {
					return l, ks
				}
			}
		}
	case []any:
		if n.items != nil {
			for i, e := range x {
				if l, ks := n.items.unknownKeys(e, append(loc, strconv.Itoa(i))); ks != nil {
					return l, ks
				}
			}
		}
	}
	return nil, nil
}

// unknownKeysMessage says which keys at loc are unknown and which the
// object n takes.
func unknownKeysMessage(n *schemaNode, loc, keys []string) string {
	keys = slices.Sorted(slices.Values(keys))
	where := pointer(loc)
	if len(keys) == 1 {
		where = pointer(append(append([]string(nil), loc...), keys[0]))
	}
	plural := ""
	if len(keys) > 1 {
		plural = "s"
	}
	allowed := "no parameters here"
	if n != nil && len(n.props) > 0 {
		names := make([]string, len(n.props))
		for i, p := range n.props {
			names[i] = p.name
		}
		allowed = "only " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s: unknown parameter%s %s. Send %s (names are case-sensitive).", where, plural, quoteList(keys), allowed)
}

// prepareFast readies n and the nodes below it for accepts: bounds parsed
// once, a format checker compiled once.
func (n *schemaNode) prepareFast() {
	if n.minimum != "" {
		d, _ := parseDecimal(n.minimum)
		n.minDec = &d
	}
	if n.maximum != "" {
		d, _ := parseDecimal(n.maximum)
		n.maxDec = &d
	}
	if n.format != "" {
		n.formatCheck = formatChecker(n.format)
	}
	for _, p := range n.props {
		p.schema.prepareFast()
	}
	if n.items != nil {
		n.items.prepareFast()
	}
	if n.additional != nil {
		n.additional.prepareFast()
	}
}

var formatCheckers sync.Map // format name → *jsonschema.Schema

// formatChecker compiles {"format": name} with the settings argument
// schemas use, so a string's format gets exactly jsonschema/v6's verdict
// without validating the whole argument object.
func formatChecker(name string) *jsonschema.Schema {
	if s, ok := formatCheckers.Load(name); ok {
		return s.(*jsonschema.Schema)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	url := "mem:///llmtool/format/" + strconv.Quote(name) + ".json"
	if err := c.AddResource(url, map[string]any{"format": name}); err != nil {
		panic(fmt.Sprintf("llmtool: format %q: %v", name, err))
	}
	sch, err := c.Compile(url)
	if err != nil {
		panic(fmt.Sprintf("llmtool: format %q: %v", name, err))
	}
	s, _ := formatCheckers.LoadOrStore(name, sch)
	return s.(*jsonschema.Schema)
}

// accepts reports whether v certainly satisfies n. It returns false when
// in doubt; callers then ask jsonschema/v6.
func (n *schemaNode) accepts(v any) bool {
	if n.any {
		return true
	}
	if v == nil {
		return n.is("null")
	}
	if n.enum != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		found := false
		for _, e := range n.enum {
			if bytes.Equal(b, e) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	switch x := v.(type) {
	case string:
		if !n.is("string") || n.encoding != "" {
			return false
		}
		if n.minLength >= 0 || n.maxLength >= 0 {
			l := utf8.RuneCountInString(x)
			if (n.minLength >= 0 && l < n.minLength) || (n.maxLength >= 0 && l > n.maxLength) {
				return false
			}
		}
		if n.re != nil && !n.re.MatchString(x) {
			return false
		}
		if n.formatCheck != nil && n.formatCheck.Validate(x) != nil {
			return false
		}
		return true
	case bool:
		return n.is("boolean")
	case json.Number:
		if n.is("integer") {
			if _, err := strconv.ParseInt(string(x), 10, 64); err != nil {
				return false
			}
		} else if !n.is("number") {
			return false
		}
		if n.minDec != nil || n.maxDec != nil {
			d, ok := parseDecimal(string(x))
			if !ok || (n.minDec != nil && d.cmp(n.minDec) < 0) || (n.maxDec != nil && d.cmp(n.maxDec) > 0) {
				return false
			}
		}
		return true
	case []any:
		if !n.is("array") || n.items == nil {
			return false
		}
		for _, e := range x {
			if !n.items.accepts(e) {
				return false
			}
		}
		return true
	case map[string]any:
		if !n.is("object") {
			return false
		}
		if n.additional != nil {
			for _, e := range x {
				if !n.additional.accepts(e) {
					return false
				}
			}
			return true
		}
		seen := 0
		for _, p := range n.props {
			e, ok := x[p.name]
			if !ok {
				if p.required {
					return false
				}
				continue
			}
			seen++
			if !p.schema.accepts(e) {
				return false
			}
		}
		return !n.closed || seen == len(x)
	}
	return false
}

// params lists the top-level properties of an input schema.
func (n *schemaNode) params() []Param {
	ps := make([]Param, 0, len(n.props))
	for _, p := range n.props {
		s := p.schema
		typ := "any"
		if len(s.types) > 0 {
			typ = s.types[0]
		}
		var enum []string
		src := s.enum
		if src == nil && s.items != nil {
			src = s.items.enum
		}
		for _, e := range src {
			enum = append(enum, string(e))
		}
		ps = append(ps, Param{
			Name: p.name, Type: typ, Description: s.description, Required: p.required,
			Default: s.def, Enum: enum, Ref: RefKind(p.ref),
		})
	}
	return ps
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

// at returns the schema node at an instance location, or nil.
func (n *schemaNode) at(loc []string) *schemaNode {
	for _, tok := range loc {
		if n == nil {
			return nil
		}
		switch {
		case n.items != nil:
			n = n.items
		case n.additional != nil:
			n = n.additional
		default:
			p := n.prop(tok)
			if p == nil {
				return nil
			}
			n = p.schema
		}
	}
	return n
}

// validationError turns a jsonschema validation failure into an
// InvalidArgs error: "Error: <where>: <what is wrong>. <what to send instead>",
// one sentence pair per failing location.
func (cs *compiledSchema) validationError(err error) *Invalid {
	var inst any
	if ae, ok := err.(*argsError); ok {
		inst, err = ae.v, ae.err
	}
	if e, ok := err.(*Invalid); ok {
		return e
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return invalid("arguments: %w. Send a JSON object that matches the tool's input schema.", err)
	}
	var leaves []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	parts := make([]string, 0, len(leaves))
	for _, l := range leaves {
		parts = append(parts, cs.describe(l, inst))
		if len(parts) == 3 && len(leaves) > 3 {
			parts = append(parts, fmt.Sprintf("(%d more problems not shown.)", len(leaves)-3))
			break
		}
	}
	return &Invalid{Message: strings.Join(parts, " "), Err: err}
}

func pointer(loc []string) string {
	if len(loc) == 0 {
		return "arguments"
	}
	var b strings.Builder
	for _, t := range loc {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

func (cs *compiledSchema) describe(e *jsonschema.ValidationError, inst any) string {
	loc := e.InstanceLocation
	node := cs.root.at(loc)
	where := pointer(loc)
	// got renders the failing number as it was sent, want a bound as a
	// decimal: "10.5", never jsonschema's "21/2".
	got := func(r *big.Rat) string {
		if n, ok := valueAt(inst, loc).(json.Number); ok {
			return string(n)
		}
		return numberText(r)
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		var parts []string
		for _, m := range k.Missing {
			sub := node.at([]string{m})
			desc := ""
			if sub != nil && sub.description != "" {
				desc = " (" + strings.TrimSuffix(sub.description, ".") + ")"
			}
			parts = append(parts, fmt.Sprintf("%s: missing required parameter %q. Send %q as %s%s.",
				pointer(append(append([]string(nil), loc...), m)), m, m, sub.expect(), desc))
		}
		return strings.Join(parts, " ")
	case *kind.AdditionalProperties:
		return unknownKeysMessage(node, loc, k.Properties)
	case *kind.Type:
		return fmt.Sprintf("%s: expected %s, got %s. Send %s.", where, strings.Join(k.Want, " or "), k.Got, node.expect())
	case *kind.Enum:
		got, _ := json.Marshal(k.Got)
		return fmt.Sprintf("%s: %s is not an allowed value. Send %s.", where, got, node.expect())
	case *kind.Minimum:
		return fmt.Sprintf("%s: %s is below the minimum %s. Send %s.", where, got(k.Got), numberText(k.Want), node.expect())
	case *kind.Maximum:
		return fmt.Sprintf("%s: %s is above the maximum %s. Send %s.", where, got(k.Got), numberText(k.Want), node.expect())
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("%s: %s is not above %s. Send a number above %s.", where, got(k.Got), numberText(k.Want), numberText(k.Want))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("%s: %s is not below %s. Send a number below %s.", where, got(k.Got), numberText(k.Want), numberText(k.Want))
	case *kind.MultipleOf:
		return fmt.Sprintf("%s: %s is not a multiple of %s. Send a multiple of %s.", where, got(k.Got), numberText(k.Want), numberText(k.Want))
	case *kind.MinLength:
		return fmt.Sprintf("%s: %d %s is shorter than the minimum %d. Send %s.", where, k.Got, characters(k.Got), k.Want, node.expect())
	case *kind.MaxLength:
		return fmt.Sprintf("%s: %d %s is longer than the maximum %d. Send %s.", where, k.Got, characters(k.Got), k.Want, node.expect())
	case *kind.Pattern:
		return fmt.Sprintf("%s: %q does not match the pattern %s. Send %s.", where, k.Got, k.Want, node.expect())
	case *kind.Format:
		return fmt.Sprintf("%s: %s is not a valid %s. Send %s.", where, mustJSON(k.Got), k.Want, node.expect())
	case *kind.FalseSchema:
		return fmt.Sprintf("%s: this value is not allowed. Send only the parameters in the tool's input schema.", where)
	}
	return fmt.Sprintf("%s: %s. Send %s.", where, e.ErrorKind.LocalizedString(nil), node.expect())
}

// valueAt returns the value at an instance location in v, or nil.
func valueAt(v any, loc []string) any {
	for _, tok := range loc {
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func characters(n int) string {
	if n == 1 {
		return "character"
	}
	return "characters"
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// expect describes in words what a value for n must be, such as
// "an integer of at least 1" or `one of "text", "code"`.
func (n *schemaNode) expect() string {
	if n == nil || n.any {
		return "a valid JSON value"
	}
	if len(n.enum) > 0 {
		vals := make([]string, len(n.enum))
		for i, e := range n.enum {
			vals[i] = string(e)
		}
		return "one of " + strings.Join(vals, ", ")
	}
	typ := ""
	if len(n.types) > 0 {
		typ = n.types[0]
	}
	var s string
	switch typ {
	case "string":
		s = "a string"
		switch {
		case n.format == "date-time":
			s = `an RFC 3339 date-time string such as "2026-01-02T15:04:05Z"`
		case n.format != "":
			s = "a " + n.format + " string"
		case n.encoding == "base64":
			s = "a base64 string"
		}
		switch {
		case n.minLength >= 0 && n.maxLength >= 0:
			s += fmt.Sprintf(" of %d to %d characters", n.minLength, n.maxLength)
		case n.minLength > 0:
			s += fmt.Sprintf(" of at least %d %s", n.minLength, characters(n.minLength))
		case n.maxLength >= 0:
			s += fmt.Sprintf(" of at most %d %s", n.maxLength, characters(n.maxLength))
		}
		if n.pattern != "" {
			s += " matching " + n.pattern
		}
	case "integer", "number":
		s = "an " + typ
		if typ == "number" {
			s = "a number"
		}
		switch {
		case n.minimum != "" && n.maximum != "":
			s += " from " + n.minimum + " to " + n.maximum
		case n.minimum != "":
			s += " of at least " + n.minimum
		case n.maximum != "":
			s += " of at most " + n.maximum
		}
	case "boolean":
		s = "true or false"
	case "array":
		s = "an array"
		if n.items != nil && !n.items.any {
			s += " whose items are each " + n.items.expect()
		}
	case "object":
		s = "an object"
		if len(n.props) > 0 {
			names := make([]string, len(n.props))
			for i, p := range n.props {
				names[i] = p.name
			}
			s += " with the properties " + strings.Join(names, ", ")
		}
	default:
		s = "a valid JSON value"
	}
	if n.is("null") {
		s += ", or null"
	}
	return s
}

// appendJSONString appends s as a JSON string, without HTML escaping.
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return append(b, bytes.TrimRight(buf.Bytes(), "\n")...)
}
