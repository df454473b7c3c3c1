package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// The parameter rules read the input JSON Schema of a tool, as listings
// send it: the schema llmtool inferred from In's tags, or the one the tool
// supplied. They never fail on it: the registry compiled it already, and a
// keyword that does not read as expected is taken as absent.

// schema is the part of a JSON Schema the parameter rules read.
type schema struct {
	description string
	def         json.RawMessage // nil if no default
	enum        []json.RawMessage
	items       *schema
	properties  []property // in the order the schema lists them; nil if no "properties"
	ref         string     // $ref
	defs        map[string]*schema
}

type property struct {
	name   string
	schema *schema
}

// parseSchema reads a tool's input schema; nil if there is none.
func parseSchema(doc json.RawMessage) *schema {
	if len(doc) == 0 {
		return nil
	}
	s := &schema{}
	_ = s.UnmarshalJSON(doc)
	return s
}

// UnmarshalJSON reads the keywords the rules use, with exact names (unlike
// encoding/json's struct decoding, which also matches "Description"). A
// boolean schema, or a draft-07 tuple of items, reads as a schema without
// keywords.
func (s *schema) UnmarshalJSON(b []byte) error {
	*s = schema{}
	var kw map[string]json.RawMessage
	if json.Unmarshal(b, &kw) != nil {
		return nil
	}
	_ = json.Unmarshal(kw["description"], &s.description)
	if d, ok := kw["default"]; ok {
		s.def = d
	}
	_ = json.Unmarshal(kw["enum"], &s.enum)
	if it, ok := kw["items"]; ok {
		s.items = &schema{}
		_ = s.items.UnmarshalJSON(it)
	}
	if ps, ok := kw["properties"]; ok {
		s.properties, _ = orderedProperties(ps)
		if s.properties == nil {
			s.properties = []property{}
		}
	}
	_ = json.Unmarshal(kw["$ref"], &s.ref)
	for _, key := range []string{"$defs", "definitions"} {
		var defs map[string]*schema
		if json.Unmarshal(kw[key], &defs) == nil {
			for name, d := range defs {
				if s.defs == nil {
					s.defs = map[string]*schema{}
				}
				s.defs["#/"+key+"/"+name] = d
			}
		}
	}
	return nil
}

// orderedProperties reads a "properties" object keeping its order, which
// for an inferred schema is In's field order.
func orderedProperties(b []byte) ([]property, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("properties is not an object")
	}
	var ps []property
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return ps, err
		}
		name, _ := t.(string)
		s := &schema{}
		if err := dec.Decode(s); err != nil {
			return ps, err
		}
		ps = append(ps, property{name: name, schema: s})
	}
	return ps, nil
}

// resolve follows n's $ref to a definition of root, if it has one, and
// returns what the rules read: the definition, with n's own description,
// default and enum over it (2020-12 allows them beside $ref). ref is the
// reference followed, "" if none.
func (root *schema) resolve(n *schema) (s *schema, ref string) {
	if n.ref == "" {
		return n, ""
	}
	name := strings.NewReplacer("~1", "/", "~0", "~").Replace(n.ref)
	t := root.defs[name]
	if t == nil {
		return n, "" // not a local definition: read n as it is
	}
	m := *t
	if n.description != "" {
		m.description = n.description
	}
	if n.def != nil {
		m.def = n.def
	}
	if n.enum != nil {
		m.enum = n.enum
	}
	return &m, n.ref
}

// params checks the parameters of n, nested ones too. refs are the
// definitions being walked, so a recursive one is walked once.
func (l *linter) params(tool, descLower string, root, n *schema, path string, refs []string) {
	for _, p := range n.properties {
		name := p.name
		if path != "" {
			name = path + "." + p.name
		}
		s, ref := root.resolve(p.schema)
		d := strings.TrimSpace(s.description)
		if d == "" {
			l.add(tool, ruleParamDescription, "parameter %s has no description; add a desc tag", name)
		} else if core := strings.ToLower(strings.TrimSuffix(d, ".")); len(core) >= 16 && strings.Contains(descLower, core) {
			l.add(tool, ruleRepeatedParamDesc, "the description repeats the description of parameter %s, which is sent with it anyway; remove it from the description", name)
		}
		l.defaultStated(tool, name, d, s.def)
		l.enumSeparator(tool, name, s)
		var items *schema
		itemsRef := ""
		if s.items != nil {
			items, itemsRef = root.resolve(s.items)
			l.enumSeparator(tool, name, items)
		}
		switch {
		case s.properties != nil:
			if ref == "" || !slices.Contains(refs, ref) {
				l.params(tool, descLower, root, s, name, append(slices.Clip(refs), ref))
			}
		case items != nil && items.properties != nil:
			if itemsRef == "" || !slices.Contains(refs, itemsRef) {
				l.params(tool, descLower, root, items, name+"[]", append(slices.Clip(refs), itemsRef))
			}
		}
	}
}

// enumSeparator reports an enum of one string value that has a comma and
// no "|": what enum:"a,b,c" gives, one allowed value "a,b,c", where "|"
// separates values. See the package doc for the one-value JSON-array tag.
func (l *linter) enumSeparator(tool, param string, s *schema) {
	if len(s.enum) != 1 {
		return
	}
	var v string
	if json.Unmarshal(s.enum[0], &v) != nil || !strings.Contains(v, ",") || strings.Contains(v, "|") {
		return
	}
	l.add(tool, ruleEnumSeparator, "parameter %s has enum:%q, which allows the one value %s; separate values with |, as in enum:%q (for one value that contains commas, skip this rule for the tool with lint.Options.SkipFor)",
		param, v, s.enum[0], strings.ReplaceAll(v, ",", "|"))
}
