package schema

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
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

// compiledSchema is a schema inferred once, when the tool is defined, and
// compiled with jsonschema/v6 at most once, when a value first needs the
// reference's verdict (see reference). The fast path (accepts) decides
// valid arguments without it, so most tools never compile theirs.
type compiledSchema struct {
	root *schemaNode
	json json.RawMessage
	// compile compiles json with jsonschema/v6, once; nil when compiled
	// was compiled at definition (a supplied schema).
	compile  func() (*jsonschema.Schema, error)
	compiled *jsonschema.Schema
	verbatim bool // supplied with InputSchema: only jsonschema/v6 decides

	// Defaults of top-level fields, set on the decoded In value directly,
	// so arguments need no re-encoding. nestedDefaults means some default
	// sits deeper; then defaults go into the JSON before decoding.
	defaults       []fieldDefault
	nestedDefaults bool
}

// fieldDefault is a top-level In field's default, decoded once.
type fieldDefault struct {
	name  string
	prop  int // its index in root.props
	index []int
	value reflect.Value
}

var (
	timeType        = reflect.TypeFor[time.Time]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	marshalerType   = reflect.TypeFor[json.Marshaler]()
	textMarshalType = reflect.TypeFor[encoding.TextMarshaler]()
)

// inferSchema infers the schema of t for tool, panicking with a clear
// message when t cannot be represented. jsonschema/v6 compiles it later,
// on first use (see compiledSchema.reference): every document inference
// writes compiles (FuzzLazyCompile holds the definition to the eager
// compilation's verdict), and each default is checked here, at
// definition, against its field's schema.
func inferSchema(tool, which string, t reflect.Type) *compiledSchema {
	r := &reflector{tool: tool, which: which, output: which == "Out"}
	root := r.node(t, which)
	doc := root.appendJSON(nil)
	root.prepareFast()
	cs := &compiledSchema{root: root, json: doc}
	cs.compile = sync.OnceValues(func() (*jsonschema.Schema, error) { return compileDoc(tool, which, doc) })
	cs.checkDefaults(tool, which, root, which)
	if which == "In" {
		cs.prepareDefaults(t)
	}
	return cs
}

// compileSchema compiles doc now, panicking with a message that names the
// tool when it does not compile.
func compileSchema(tool, which string, root *schemaNode, doc json.RawMessage) *compiledSchema {
	sch, err := compileDoc(tool, which, doc)
	if err != nil {
		panic(err.Error())
	}
	return &compiledSchema{root: root, json: doc, compiled: sch}
}

// compileDoc compiles doc with the settings of every argument schema:
// JSON Schema 2020-12 unless doc's $schema names another draft, formats
// asserted.
func compileDoc(tool, which string, doc json.RawMessage) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("llmtool: tool %q: %s schema is not JSON: %w", tool, which, err)
	}
	url := "mem:///" + tool + "/" + which + ".json"
	if err := c.AddResource(url, v); err != nil {
		return nil, fmt.Errorf("llmtool: tool %q: %s schema: %w", tool, which, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("llmtool: tool %q: %s schema does not compile: %w", tool, which, err)
	}
	return sch, nil
}

// schema returns the jsonschema/v6 schema, compiling it on first use.
func (cs *compiledSchema) schema() (*jsonschema.Schema, error) {
	if cs.compile == nil {
		return cs.compiled, nil
	}
	return cs.compile()
}

// checkDefaults checks each default against its own property schema, so a
// default that its own bounds would refuse is caught at definition. The
// fast path accepts most defaults; the others get jsonschema/v6's verdict,
// which words the panic.
func (cs *compiledSchema) checkDefaults(tool, which string, n *schemaNode, path string) {
	for _, p := range n.props {
		if p.schema.def != nil && !p.schema.accepts(p.schema.defValue) {
			sub := compileSchema(tool, which+"."+p.name, nil, p.schema.appendJSON(nil))
			if err := sub.compiled.Validate(p.schema.defValue); err != nil {
				panic(fmt.Sprintf("llmtool: tool %q: %s field %s: default %s does not satisfy the field's own schema: %v", tool, which, path+"."+p.goName, p.schema.def, err))
			}
		}
		cs.checkDefaults(tool, which, p.schema, path+"."+p.goName)
	}
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
