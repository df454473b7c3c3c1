package chatadapter

import (
	"encoding/json"
	"fmt"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
	"slices"
	"strings"

	"github.com/llmtool/llmtool/internal/jsonenc"
)

// UnsupportedError reports a tool whose input schema a provider's tool
// format cannot express. ToolSet reports one per such tool (joined with
// errors.Join) when it builds a set, and leaves the tool out of that set, so
// the problem shows when the application starts rather than at the model's
// first call. Errors.As finds it.
type UnsupportedError struct {
	Tool   string // the tool's name
	Shape  Shape  // the provider format that cannot express it
	Path   string // the parameter, such as "filter.tags[]"; "" for the arguments object itself
	Reason string // what the format lacks and what to define instead
}

// Error names the tool, the provider format, the parameter and the fix.
func (e *UnsupportedError) Error() string {
	where := "its arguments"
	if e.Path != "" {
		where = "parameter " + e.Path
	}
	return fmt.Sprintf("chatadapter: tool %q cannot be expressed for %s: %s %s", e.Tool, e.Shape, where, e.Reason)
}

// Keywords a strict OpenAI schema may carry besides type, description,
// properties, required, items and additionalProperties. The others are
// refused by the API in strict mode; those with a meaning the model should
// still see move into the description.
var strictKeep = map[string]bool{
	"enum": true, "const": true, "pattern": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true,
}

// Formats OpenAI's strict mode accepts.
var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

// Keywords of the OpenAPI 3.0 subset Gemini's Schema has (genai.Schema),
// besides type, nullable, format, description, properties, required, items.
var geminiKeep = map[string]bool{
	"enum": true, "minimum": true, "maximum": true, "minLength": true, "maxLength": true,
	"pattern": true, "minItems": true, "maxItems": true, "minProperties": true, "maxProperties": true,
	"title": true, "example": true,
}

// Formats Gemini accepts, by type.
var geminiFormats = map[string]map[string]bool{
	"string":  {"date-time": true, "enum": true},
	"number":  {"float": true, "double": true},
	"integer": {"int32": true, "int64": true},
}

// Keywords dropped without a trace: they carry nothing the model needs.
var dropped = map[string]bool{"$schema": true, "$id": true, "$comment": true, "examples": true, "title": true, "readOnly": true, "writeOnly": true, "deprecated": true}

// converter adapts one tool's input schema to a provider's subset.
type converter struct {
	tool  string
	shape Shape
}

func (c *converter) fail(path, format string, args ...any) error {
	return &UnsupportedError{Tool: c.tool, Shape: c.shape, Path: path, Reason: fmt.Sprintf(format, args...)}
}

// schemaTypes returns the JSON types a schema allows, in order.
func schemaTypes(o object) []string {
	v, ok := o.Get("type")
	if !ok {
		return nil
	}
	if s, ok := ordered.String(v); ok {
		return []string{s}
	}
	a, _ := v.([]any)
	var ts []string
	for _, e := range a {
		if s, ok := ordered.String(e); ok {
			ts = append(ts, s)
		}
	}
	return ts
}

func typeValue(ts []string) any {
	if len(ts) == 1 {
		return json.RawMessage(jsonenc.AppendString(nil, ts[0]))
	}
	a := make([]any, len(ts))
	for i, t := range ts {
		a[i] = json.RawMessage(jsonenc.AppendString(nil, t))
	}
	return a
}

func child(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// notes collects what a provider's schema cannot carry as keywords, to be
// said in the description instead.
type notes []string

func (n *notes) keyword(desc, key string, v any) {
	text := string(ordered.Append(nil, v))
	switch key {
	case "default":
		if !strings.Contains(strings.ToLower(desc), "default") {
			*n = append(*n, "default "+text)
		}
	case "format":
		s, _ := ordered.String(v)
		*n = append(*n, "format: "+s)
	case "contentEncoding":
		s, _ := ordered.String(v)
		*n = append(*n, s+"-encoded")
	default:
		*n = append(*n, key+" "+text)
	}
}

// lengths turns minLength and maxLength into words.
func (n *notes) lengths(o object) {
	lo, hasLo := o.Get("minLength")
	hi, hasHi := o.Get("maxLength")
	l, h := string(ordered.Append(nil, lo)), string(ordered.Append(nil, hi))
	unit := func(s string) string {
		if s == "1" {
			return s + " character"
		}
		return s + " characters"
	}
	switch {
	case hasLo && hasHi && l == h:
		*n = append(*n, "exactly "+unit(h))
	case hasLo && hasHi:
		*n = append(*n, l+" to "+unit(h))
	case hasLo:
		*n = append(*n, "at least "+unit(l))
	case hasHi:
		*n = append(*n, "at most "+unit(h))
	}
}

// describe returns desc with the notes appended in parentheses.
func (n notes) describe(desc string) string {
	if len(n) == 0 {
		return desc
	}
	s := "(" + strings.Join(n, "; ") + ")"
	if desc == "" {
		return s
	}
	return desc + " " + s
}

// finish writes type first, then description (with notes), then the rest.
func finish(typ any, desc string, n notes, rest object) object {
	out := make(object, 0, len(rest)+2)
	if typ != nil {
		out = append(out, member{"type", typ})
	}
	if d := n.describe(desc); d != "" {
		out = append(out, member{"description", json.RawMessage(jsonenc.AppendString(nil, d))})
	}
	return append(out, rest...)
}

// strict adapts a schema to OpenAI's strict mode: every object closed with
// every property required, optional properties made nullable (the model
// sends null for "not given", which Dispatch removes again), and the
// keywords strict mode refuses moved into the description.
func (c *converter) strict(o object, path string, depth int) (object, error) {
	if depth > 10 {
		return nil, c.fail(path, "is nested more than 10 levels deep, the limit of OpenAI's strict mode; flatten the argument types")
	}
	types := schemaTypes(o)
	if len(types) == 0 {
		return nil, c.fail(path, "accepts any JSON value, which strict mode cannot express; give it a concrete Go type instead of any or json.RawMessage, or use the non-strict set")
	}
	desc := o.Str("description")
	var n notes
	var rest object
	for _, m := range o {
		switch k := m.Key; {
		case k == "type" || k == "description" || k == "required":
		case strictKeep[k]:
			rest = append(rest, m)
		case k == "format":
			if f := o.Str("format"); strictFormats[f] {
				rest = append(rest, m)
			} else {
				n.keyword(desc, k, m.Val)
			}
		case k == "minLength" || k == "maxLength":
			if k == "minLength" || !has(o, "minLength") {
				n.lengths(o)
			}
		case k == "default" || k == "contentEncoding":
			n.keyword(desc, k, m.Val)
		case k == "items":
			io, ok := m.Val.(object)
			if !ok {
				return nil, c.fail(path, "has an items keyword that is not a schema object")
			}
			s, err := c.strict(io, path+"[]", depth+1)
			if err != nil {
				return nil, err
			}
			rest = append(rest, member{"items", s})
		case k == "properties":
			props, ok := m.Val.(object)
			if !ok {
				return nil, c.fail(path, "has a properties keyword that is not an object")
			}
			req := requiredSet(o)
			out := make(object, 0, len(props))
			names := make([]any, 0, len(props))
			for _, p := range props {
				po, ok := p.Val.(object)
				if !ok {
					return nil, c.fail(child(path, p.Key), "has a schema that is not an object")
				}
				s, err := c.strict(po, child(path, p.Key), depth+1)
				if err != nil {
					return nil, err
				}
				if !req[p.Key] {
					s = nullable(s)
				}
				out = append(out, member{p.Key, s})
				names = append(names, json.RawMessage(jsonenc.AppendString(nil, p.Key)))
			}
			rest = append(rest, member{"properties", out}, member{"required", names})
		case k == "additionalProperties":
			if r, ok := m.Val.(json.RawMessage); !ok || string(r) != "false" {
				return nil, c.fail(path, "is a map (an object with free-form keys), which strict mode cannot express (every object must list its properties); use a list of {key, value} objects, or the non-strict set")
			}
		case dropped[k]:
		default:
			return nil, c.fail(path, "uses the keyword %q, which strict mode does not support; remove it from the Go type's tags", k)
		}
	}
	if slices.Contains(types, "object") {
		if _, ok := o.Get("properties"); !ok {
			rest = append(rest, member{"properties", object{}}, member{"required", []any{}})
		}
		rest = append(rest, member{"additionalProperties", json.RawMessage("false")})
	}
	return finish(typeValue(types), desc, n, rest), nil
}

func has(o object, key string) bool {
	_, ok := o.Get(key)
	return ok
}

func requiredSet(o object) map[string]bool {
	req := map[string]bool{}
	if v, ok := o.Get("required"); ok {
		if a, ok := v.([]any); ok {
			for _, e := range a {
				if s, ok := ordered.String(e); ok {
					req[s] = true
				}
			}
		}
	}
	return req
}

// nullable adds "null" to a strict schema's types, and to its enum.
func nullable(o object) object {
	types := schemaTypes(o)
	if slices.Contains(types, "null") {
		return o
	}
	o = o.Set("type", typeValue(append(types, "null")))
	if v, ok := o.Get("enum"); ok {
		if a, ok := v.([]any); ok {
			o = o.Set("enum", append(slices.Clip(a), json.RawMessage("null")))
		}
	}
	return o
}

// gemini adapts a schema to the OpenAPI 3.0 subset of Gemini's Schema: one
// upper-case type, nullable instead of a null type, string enums, no
// additionalProperties, and the keywords it lacks moved into the
// description.
func (c *converter) gemini(o object, path string) (object, error) {
	types := schemaTypes(o)
	isNull := slices.Contains(types, "null")
	types = slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "null" })
	switch {
	case len(types) == 0:
		return nil, c.fail(path, "accepts any JSON value, which Gemini's schema cannot express (every schema needs one type); give it a concrete Go type instead of any or json.RawMessage")
	case len(types) > 1:
		return nil, c.fail(path, "allows several types (%s), which Gemini's schema cannot express; use one type", strings.Join(types, ", "))
	}
	typ := types[0]
	desc := o.Str("description")
	var n notes
	var rest object
	if isNull {
		rest = append(rest, member{"nullable", json.RawMessage("true")})
	}
	for _, m := range o {
		switch k := m.Key; {
		case k == "type" || k == "description":
		case k == "enum":
			a, _ := m.Val.([]any)
			vals := make([]any, 0, len(a))
			for _, e := range a {
				r, _ := e.(json.RawMessage)
				switch {
				case string(r) == "null":
				case len(r) > 0 && r[0] == '"':
					vals = append(vals, r)
				default:
					vals = append(vals, json.RawMessage(jsonenc.AppendString(nil, string(r))))
				}
			}
			rest = append(rest, member{"enum", vals})
			if typ != "string" && !has(o, "format") {
				rest = append(rest, member{"format", json.RawMessage(`"enum"`)})
			}
		case geminiKeep[k]:
			rest = append(rest, m)
		case k == "format":
			if geminiFormats[typ][o.Str("format")] {
				rest = append(rest, m)
			} else {
				n.keyword(desc, k, m.Val)
			}
		case k == "default" || k == "contentEncoding" || k == "exclusiveMinimum" || k == "exclusiveMaximum" || k == "multipleOf":
			n.keyword(desc, k, m.Val)
		case k == "items":
			io, ok := m.Val.(object)
			if !ok {
				return nil, c.fail(path, "has an items keyword that is not a schema object")
			}
			s, err := c.gemini(io, path+"[]")
			if err != nil {
				return nil, err
			}
			rest = append(rest, member{"items", s})
		case k == "properties":
			props, ok := m.Val.(object)
			if !ok {
				return nil, c.fail(path, "has a properties keyword that is not an object")
			}
			if len(props) == 0 && path != "" {
				return nil, c.fail(path, "is an object without properties, which Gemini refuses; remove the field or give it fields")
			}
			out := make(object, 0, len(props))
			for _, p := range props {
				po, ok := p.Val.(object)
				if !ok {
					return nil, c.fail(child(path, p.Key), "has a schema that is not an object")
				}
				s, err := c.gemini(po, child(path, p.Key))
				if err != nil {
					return nil, err
				}
				out = append(out, member{p.Key, s})
			}
			rest = append(rest, member{"properties", out})
		case k == "required":
			rest = append(rest, m)
		case k == "additionalProperties":
			if r, ok := m.Val.(json.RawMessage); !ok || string(r) != "false" {
				return nil, c.fail(path, "is a map (an object with free-form keys), which Gemini's schema cannot express; use a list of {key, value} objects")
			}
		case dropped[k]:
		default:
			return nil, c.fail(path, "uses the keyword %q, which Gemini's schema does not support; remove it from the Go type's tags", k)
		}
	}
	if typ == "object" && !has(o, "properties") && path != "" {
		return nil, c.fail(path, "is an object without properties, which Gemini refuses; remove the field or give it fields")
	}
	return finish(json.RawMessage(jsonenc.AppendString(nil, strings.ToUpper(typ))), desc, n, rest), nil
}
