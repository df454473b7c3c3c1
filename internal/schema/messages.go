package schema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// The messages that tell a model what is wrong and what to send instead.

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
		for _, c := range propertyOrder(e) {
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

// propertyOrder returns e's causes with each run of causes about e's
// properties (deeper instance locations) sorted by location: jsonschema/v6
// gathers them from a map, in no fixed order, so the same arguments would
// get their problems in a different order from call to call. Causes about
// e's own location (required, additionalProperties, ...) keep their
// keyword order.
func propertyOrder(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	causes := e.Causes
	deeper := func(c *jsonschema.ValidationError) bool { return len(c.InstanceLocation) > len(e.InstanceLocation) }
	sorted := false
	for i := 0; i < len(causes); {
		if !deeper(causes[i]) {
			i++
			continue
		}
		j := i
		for j < len(causes) && deeper(causes[j]) {
			j++
		}
		if j-i > 1 {
			if !sorted {
				causes, sorted = slices.Clone(causes), true
			}
			slices.SortStableFunc(causes[i:j], func(a, b *jsonschema.ValidationError) int {
				return strings.Compare(pointer(a.InstanceLocation), pointer(b.InstanceLocation))
			})
		}
		i = j
	}
	return causes
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
