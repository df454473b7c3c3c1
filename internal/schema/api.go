// Package schema infers the JSON Schemas of a tool's In and Out types from
// their struct tags, compiles them with jsonschema/v6 on first need (at
// most once; most valid calls never need it), and checks the arguments of
// every call: decoding (exact keys, one JSON value), a fast validation path held
// to jsonschema/v6's verdict by differential fuzz tests, defaults, and the
// messages that tell a model what to send instead. It also finds the
// ref-tagged fields the entity guards check.
//
// The root package is its user, and internal/token (ArgsDigest decodes
// arguments as calls do); nothing here is API.
package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/llmtool/llmtool/internal/jsonenc"
)

// Schema is an inferred (or supplied) input or output schema.
type Schema = compiledSchema

// Node is one node of an inferred schema.
type Node = schemaNode

// Invalid is a refusal of the arguments: Message is what the model sees
// after the "Error: " prefix, and Err the cause, if any.
type Invalid struct {
	Message string
	Err     error
}

// Error returns the message.
func (e *Invalid) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Invalid) Unwrap() error { return e.Err }

// invalid formats a refusal like fmt.Errorf, keeping a %w cause.
func invalid(format string, args ...any) *Invalid {
	e := fmt.Errorf(format, args...)
	cause := errors.Unwrap(e)
	if w, ok := e.(interface{ Unwrap() []error }); ok {
		cause = errors.Join(w.Unwrap()...)
	}
	return &Invalid{Message: e.Error(), Err: cause}
}

// Infer returns the schema inferred from t, panicking with a message that
// names tool and the fix when t cannot be a tool's In or Out (which).
func Infer(tool, which string, t reflect.Type) *Schema { return inferSchema(tool, which, t) }

// JSON returns the schema document.
func (cs *compiledSchema) JSON() json.RawMessage { return cs.json }

// Root returns the inferred schema's root node.
func (cs *compiledSchema) Root() *Node { return cs.root }

// Validate checks a decoded argument value (or an output) against the
// schema: the fast path where it applies, else jsonschema/v6.
func (cs *compiledSchema) Validate(v any) error { return cs.validate(v) }

// ValidateReference checks v with jsonschema/v6 alone.
// The schema is compiled on first use.
func (cs *compiledSchema) ValidateReference(v any) error {
	sch, err := cs.schema()
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// ValidationError turns a Validate error into the model's message.
func (cs *compiledSchema) ValidationError(err error) *Invalid { return cs.validationError(err) }

// NestedDefaults reports whether defaults sit below the top level, so the
// arguments must be rewritten rather than defaults set on In.
func (cs *compiledSchema) NestedDefaults() bool { return cs.nestedDefaults }

// MissingDefaults returns the set of top-level defaults v lacks.
func (cs *compiledSchema) MissingDefaults(v any) uint64 { return cs.missingDefaults(v) }

// SetDefaults sets the top-level defaults in bits on in, a pointer to In.
func (cs *compiledSchema) SetDefaults(in any, bits uint64) { cs.setDefaults(in, bits) }

// DropNulls removes nulls for optional parameters that do not take null,
// reporting whether it removed any.
func (n *schemaNode) DropNulls(v any) bool { return n.dropNulls(v) }

// ApplyDefaults sets missing defaults at every depth of v, reporting
// whether it set any.
func (n *schemaNode) ApplyDefaults(v any) bool { return n.applyDefaults(v) }

// Params returns the top-level parameters in declaration order.
func (n *schemaNode) Params() []Param { return n.params() }

// HasProp reports whether the node has a property named name.
func (n *schemaNode) HasProp(name string) bool { return n.prop(name) != nil }

// DecodeArguments decodes a call's arguments (or a result, to validate it):
// exactly one JSON value, numbers as json.Number.
func DecodeArguments(raw []byte) (any, error) { return decodeArguments(raw) }

// ParamInfo is what the linter reads of one parameter, nested ones too.
type ParamInfo struct {
	Path        string          // "limit", "opts.depth", "items[].id"
	Description string          // the desc tag
	Default     json.RawMessage // the default, nil if none
	EnumTags    []string        // the enum tags of the parameter and of its items
	FirstEnums  []json.RawMessage
}

// Walk calls fn for every parameter below n, depth first, in declaration
// order.
func (n *schemaNode) Walk(fn func(ParamInfo)) { n.walk("", fn) }

func (n *schemaNode) walk(path string, fn func(ParamInfo)) {
	for _, p := range n.props {
		name := p.name
		if path != "" {
			name = path + "." + p.name
		}
		info := ParamInfo{Path: name, Description: p.schema.description, Default: p.schema.def}
		for _, s := range []*schemaNode{p.schema, p.schema.items} {
			if s != nil && s.enumTag != "" && len(s.enum) > 0 {
				info.EnumTags = append(info.EnumTags, s.enumTag)
				info.FirstEnums = append(info.FirstEnums, s.enum[0])
			}
		}
		fn(info)
		switch {
		case p.schema.props != nil:
			p.schema.walk(name, fn)
		case p.schema.items != nil && p.schema.items.props != nil:
			p.schema.items.walk(name+"[]", fn)
		}
	}
}

// Example builds an example argument object from the required parameters.
func (cs *compiledSchema) Example() string {
	var b []byte
	b = append(b, '{')
	n := 0
	for _, p := range cs.root.props {
		if !p.required {
			continue
		}
		if n > 0 {
			b = append(b, ", "...)
		}
		n++
		b = jsonenc.AppendString(b, p.name)
		b = append(b, ": "...)
		switch {
		case len(p.schema.enum) > 0:
			b = append(b, p.schema.enum[0]...)
		case p.schema.is("string"):
			b = append(b, `"..."`...)
		case p.schema.is("integer"), p.schema.is("number"):
			b = append(b, '1')
		case p.schema.is("boolean"):
			b = append(b, "true"...)
		case p.schema.is("array"):
			b = append(b, "[]"...)
		default:
			b = append(b, "{}"...)
		}
	}
	return string(append(b, '}'))
}

// ExactKeysOnly keeps only the keys each object of v names, as spelled:
// the reference the decoding tests hold a call's In to.
func (n *schemaNode) ExactKeysOnly(v any) any {
	if n == nil || n.any {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		if n.additional != nil {
			for k, e := range x {
				out[k] = n.additional.ExactKeysOnly(e)
			}
			return out
		}
		for _, p := range n.props {
			if e, ok := x[p.name]; ok {
				out[p.name] = p.schema.ExactKeysOnly(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = n.items.ExactKeysOnly(e)
		}
		return out
	}
	return v
}
