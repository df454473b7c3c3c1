package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validation: exact keys, the fast path, and jsonschema/v6 as the
// reference.

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
	sch, err := cs.schema()
	if err != nil {
		return err
	}
	return sch.Validate(v)
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
		return n.acceptsString(x)
	case bool:
		return n.is("boolean")
	case json.Number:
		return n.acceptsNumber(string(x))
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

// acceptsString is accepts for a string, past the enum.
func (n *schemaNode) acceptsString(x string) bool {
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
}

// acceptsNumber is accepts for a number's JSON text, past the enum.
func (n *schemaNode) acceptsNumber(x string) bool {
	if n.is("integer") {
		if _, err := strconv.ParseInt(x, 10, 64); err != nil {
			return false
		}
	} else if !n.is("number") {
		return false
	}
	if n.minDec != nil || n.maxDec != nil {
		d, ok := parseDecimal(x)
		if !ok || (n.minDec != nil && d.cmp(n.minDec) < 0) || (n.maxDec != nil && d.cmp(n.maxDec) > 0) {
			return false
		}
	}
	return true
}
