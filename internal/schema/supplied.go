package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// Supplied checks a schema given with InputSchema against In's
// inferred schema and compiles it. Validation uses the supplied schema
// alone; the inferred root still supplies defaults, examples and the
// wording of errors.
func Supplied(tool string, inT reflect.Type, inferred *compiledSchema, doc json.RawMessage) *compiledSchema {
	fail := func(format string, args ...any) {
		panic(fmt.Sprintf("llmtool: tool %q: InputSchema: %s", tool, fmt.Sprintf(format, args...)))
	}
	var top struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(doc, &top); err != nil {
		fail("not a JSON Schema object: %v", err)
	}
	if top.Type != "object" {
		fail(`"type" must be "object", since arguments are a JSON object`)
	}
	fields := map[string]bool{}
	required := map[string]bool{}
	for _, p := range inferred.root.props {
		fields[p.name] = true
		if p.required {
			required[p.name] = true
		}
	}
	names := make([]string, 0, len(top.Properties))
	for name := range top.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !fields[name] {
			fail("property %q is not a JSON field of %s; add the field or remove the property", name, inT)
		}
	}
	for _, p := range inferred.root.props {
		if _, ok := top.Properties[p.name]; !ok {
			fail("%s field %q is missing from \"properties\"; describe it in the schema or remove the field", inT, p.name)
		}
	}
	listed := map[string]bool{}
	for _, name := range top.Required {
		listed[name] = true
		if !required[name] {
			fail("%q is required by the schema but optional in %s (omitempty or a default); make the two agree", name, inT)
		}
	}
	for _, p := range inferred.root.props {
		if p.required && !listed[p.name] {
			fail("%q is required by %s (no omitempty, no default) but not by the schema; add it to \"required\" or make the field optional", p.name, inT)
		}
	}
	cs := compileSchema(tool, "InputSchema", nil, doc)
	cs.root = inferred.root
	cs.defaults, cs.nestedDefaults = inferred.defaults, inferred.nestedDefaults
	cs.verbatim = true
	return cs
}
