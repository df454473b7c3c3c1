package llmtool_test

import (
	"encoding/json"
	"iter"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

type Base struct {
	CreatedBy string `json:"createdBy,omitempty" desc:"Who created it."`
}

type Tag struct {
	Name  string `json:"name" pattern:"^[a-z]{1,8}(,[a-z]+)*$" desc:"Lower-case tag, e.g. a,b."`
	Score *int   `json:"score,omitempty" minimum:"0" maximum:"10"`
}

type richIn struct {
	Base
	Title   string            `json:"title" desc:"Title, with commas, and {braces}." minLength:"1" maxLength:"80"`
	Kind    string            `json:"kind,omitempty" enum:"text|code|book" default:"text" desc:"Note type (default text)."`
	Limit   int               `json:"limit,omitempty" default:"10" minimum:"1" maximum:"50" desc:"How many (default 10)."`
	Ratio   float64           `json:"ratio,omitempty" minimum:"0.5"`
	Tags    []Tag             `json:"tags,omitempty"`
	Labels  []string          `json:"labels,omitempty" enum:"[\"a|b\",\"c\"]"`
	Meta    map[string]string `json:"meta,omitempty"`
	Due     time.Time         `json:"due,omitzero"`
	Parent  *string           `json:"parent,omitempty" ref:"note"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	Skipped string            `json:"-"`
	//lint:ignore U1000 an unexported field, which TestSchemaInference shows schema inference leaves out
	internal string
}

var richTool = llmtool.Read("rich_in", "Exercise schema inference.",
	func(c *llmtool.ReadCtx, in richIn) (struct {
		Items []Tag `json:"items"`
	}, error) {
		return struct {
			Items []Tag `json:"items"`
		}{}, nil
	})

func TestSchemaInference(t *testing.T) {
	t.Parallel()
	require.JSONEq(t, `{
	  "type": "object",
	  "properties": {
	    "createdBy": {"type": "string", "description": "Who created it."},
	    "title": {"type": "string", "description": "Title, with commas, and {braces}.", "minLength": 1, "maxLength": 80},
	    "kind": {"type": "string", "description": "Note type (default text).", "default": "text", "enum": ["text", "code", "book"]},
	    "limit": {"type": "integer", "description": "How many (default 10).", "default": 10, "minimum": 1, "maximum": 50},
	    "ratio": {"type": "number", "minimum": 0.5},
	    "tags": {"type": "array", "items": {
	      "type": "object",
	      "properties": {
	        "name": {"type": "string", "description": "Lower-case tag, e.g. a,b.", "pattern": "^[a-z]{1,8}(,[a-z]+)*$"},
	        "score": {"type": ["integer", "null"], "minimum": 0, "maximum": 10}
	      },
	      "required": ["name"],
	      "additionalProperties": false
	    }},
	    "labels": {"type": "array", "items": {"type": "string", "enum": ["a|b", "c"]}},
	    "meta": {"type": "object", "additionalProperties": {"type": "string"}},
	    "due": {"type": "string", "format": "date-time"},
	    "parent": {"type": ["string", "null"]},
	    "raw": {}
	  },
	  "required": ["title"],
	  "additionalProperties": false
	}`, string(richTool.Spec().InputSchema))
	require.JSONEq(t, `{
	  "type": "object",
	  "properties": {"items": {"type": "array", "items": {
	    "type": "object",
	    "properties": {
	      "name": {"type": "string", "description": "Lower-case tag, e.g. a,b.", "pattern": "^[a-z]{1,8}(,[a-z]+)*$"},
	      "score": {"type": ["integer", "null"], "minimum": 0, "maximum": 10}
	    },
	    "required": ["name"],
	    "additionalProperties": false
	  }}},
	  "required": ["items"],
	  "additionalProperties": false
	}`, string(richTool.Spec().OutputSchema))

	params := richTool.Spec().Params
	var names []string
	for _, p := range params {
		names = append(names, p.Name)
	}
	require.Equal(t, []string{"createdBy", "title", "kind", "limit", "ratio", "tags", "labels", "meta", "due", "parent", "raw"}, names, "declaration order")
	require.Equal(t, llmtool.Param{Name: "kind", Type: "string", Description: "Note type (default text).", Default: json.RawMessage(`"text"`),
		Enum: []string{`"text"`, `"code"`, `"book"`}}, params[2])
	require.Equal(t, "note", params[9].Ref)
	require.True(t, params[1].Required)
	require.False(t, params[3].Required, "a default makes a parameter optional")
}

// The fast validation path must agree with jsonschema/v6 on every input:
// valid ones pass, invalid ones get jsonschema's error.
func TestValidationAgrees(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, openDB(t), llmtool.DefineTools("rich", richTool))
	tests := []struct {
		args string
		ok   bool
	}{
		{`{"title":"x"}`, true},
		{`{"title":"x","kind":"code","limit":50,"ratio":0.5}`, true},
		{`{"title":"x","tags":[{"name":"ab,cd","score":null},{"name":"z","score":10}]}`, true},
		{`{"title":"x","labels":["a|b","c"],"meta":{"k":"v"},"due":"2026-01-02T15:04:05Z","parent":null,"raw":[1,{"a":2}]}`, true},
		{`{"title":""}`, false},
		{`{"title":"x","kind":"txt"}`, false},
		{`{"title":"x","limit":51}`, false},
		{`{"title":"x","limit":1.5}`, false},
		{`{"title":"x","ratio":0.49}`, false},
		{`{"title":"x","tags":[{"name":"AB"}]}`, false},
		{`{"title":"x","tags":[{"score":1}]}`, false},
		{`{"title":"x","tags":[{"name":"a","extra":1}]}`, false},
		{`{"title":"x","labels":["b"]}`, false},
		{`{"title":"x","meta":{"k":1}}`, false},
		{`{"title":"x","due":"yesterday"}`, false},
		{`{"title":"x","parent":5}`, false},
		{`{"title":"x","tags":null}`, true}, // null for an optional parameter means absent
		{`{"title":"x","tags":5}`, false},
		{`{"title":"` + string(make([]byte, 0)) + `x","createdBy":true}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.args, func(t *testing.T) {
			t.Parallel()
			res := invoke(reg, "rich_in", tc.args)
			require.Equal(t, tc.ok, !res.IsError, res.Text())
			if !tc.ok {
				require.Equal(t, llmtool.KindInvalidArgs, llmtool.KindOf(res.Err))
				require.Regexp(t, `^Error: /\S+: .+\. Send .+\.$`, res.Text())
			}
		})
	}
}

func TestDefinitionPanics(t *testing.T) {
	t.Parallel()
	type node struct {
		Children []node `json:"children"`
	}
	type withChan struct {
		C chan int `json:"c"`
	}
	type withIter struct {
		Items struct {
			Seq iter.Seq[int] `json:"seq"`
		} `json:"items"`
	}
	type withUnsafe struct {
		P unsafe.Pointer `json:"p"`
	}
	type withError struct {
		Error string `json:"error"`
	}
	type badDefault struct {
		N int `json:"n,omitempty" default:"0" minimum:"1"`
	}
	type badPattern struct {
		S string `json:"s" pattern:"(["`
	}
	type badEnum struct {
		N int `json:"n" enum:"1|two"`
	}
	ok := func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) { return struct{}{}, nil }
	tests := []struct {
		name   string
		define func()
		want   string
	}{
		{"cycle", func() {
			llmtool.Read("cyclic", "d", func(c *llmtool.ReadCtx, _ struct{}) (node, error) { return node{}, nil })
		}, `llmtool: tool "cyclic": Out field Out.Children[]: type llmtool_test.node refers to itself, which JSON Schema inference cannot express; use a flat list with parent IDs, or json.RawMessage`},
		{"chan", func() {
			//llmtoolvet:ignore this test proves llmtool.Read refuses a channel at definition
			llmtool.Read("chan_out", "d", func(c *llmtool.ReadCtx, _ struct{}) (withChan, error) { return withChan{}, nil })
		}, `llmtool: tool "chan_out": Out field Out.C: type chan int cannot be sent as JSON and would run after the transaction ends; compute the values inside the handler and return them as plain fields (a slice instead of a channel or iterator)`},
		{"iterator", func() {
			//llmtoolvet:ignore this test proves llmtool.Write refuses an iterator at definition
			llmtool.Write("iter_out", "d", func(c *llmtool.WriteCtx, _ struct{}) (withIter, error) { return withIter{}, nil })
		}, `llmtool: tool "iter_out": Out field Out.Items.Seq: type iter.Seq[int] cannot be sent as JSON and would run after the transaction ends; compute the values inside the handler and return them as plain fields (a slice instead of a channel or iterator)`},
		{"unsafe in In", func() {
			llmtool.Read("unsafe_in", "d", func(c *llmtool.ReadCtx, _ withUnsafe) (struct{}, error) { return struct{}{}, nil })
		}, `llmtool: tool "unsafe_in": In field In.P: type unsafe.Pointer cannot be sent as JSON and would run after the transaction ends; compute the values inside the handler and return them as plain fields (a slice instead of a channel or iterator)`},
		{"func result", func() {
			//llmtoolvet:ignore this test proves llmtool.Read refuses a func result at definition
			llmtool.Read("func_out", "d", func(c *llmtool.ReadCtx, _ struct{}) (func() int, error) { return nil, nil })
		}, "llmtool: tool \"func_out\": Out type func() int must be a struct (or a map with string keys), since results are JSON objects; wrap it, as in struct{ Items []T `json:\"items\"` }"},
		{"error property", func() {
			llmtool.Read("err_out", "d", func(c *llmtool.ReadCtx, _ struct{}) (withError, error) { return withError{}, nil })
		}, `llmtool: tool "err_out": Out has a property named "error", which is reserved for failed calls; rename it`},
		{"default out of bounds", func() {
			llmtool.Read("bad_default", "d", func(c *llmtool.ReadCtx, _ badDefault) (struct{}, error) { return struct{}{}, nil })
		}, `llmtool: tool "bad_default": In field In.N: default 0 does not satisfy the field's own schema: jsonschema validation failed with 'mem:///bad_default/In.n.json#'
- at '': minimum: got 0, want 1`},
		{"bad pattern", func() {
			llmtool.Read("bad_pattern", "d", func(c *llmtool.ReadCtx, _ badPattern) (struct{}, error) { return struct{}{}, nil })
		}, "llmtool: tool \"bad_pattern\": In field In.S: pattern tag \"([\" is not a valid regular expression: error parsing regexp: missing closing ]: `[`"},
		{"bad enum", func() {
			llmtool.Read("bad_enum", "d", func(c *llmtool.ReadCtx, _ badEnum) (struct{}, error) { return struct{}{}, nil })
		}, "llmtool: tool \"bad_enum\": In field In.N: enum tag value two does not fit type int: invalid character 'w' in literal true (expecting 'r')"},
		{"invalid name", func() { llmtool.Read("get note", "d", ok) },
			`llmtool: tool name "get note" is invalid for MCP (1 to 128 of A-Z a-z 0-9 _ - .); use lower_snake_case such as "get_note"`},
		{"name too long for OpenAI", func() { llmtool.Read(string(make65()), "d", ok) },
			`llmtool: tool name "` + string(make65()) + `" is invalid for OpenAI and Anthropic (^[a-zA-Z0-9_-]{1,64}$); use lower_snake_case such as "get_note"`},
		{"dot invalid for OpenAI", func() { llmtool.Read("notes.get", "d", ok) },
			`llmtool: tool name "notes.get" is invalid for OpenAI and Anthropic (^[a-zA-Z0-9_-]{1,64}$); use lower_snake_case such as "get_note"`},
		{"digit first invalid for Gemini", func() { llmtool.Read("2fa_check", "d", ok) },
			`llmtool: tool name "2fa_check" is invalid for Gemini (must start with a letter or underscore); use lower_snake_case such as "get_note"`},
		{"destructive read", func() { llmtool.Read("rm_read", "d", ok, llmtool.Destructive()) },
			`llmtool: tool "rm_read": a Read tool cannot be Destructive; define it with Write`},
		{"guard of another type", func() {
			llmtool.Read("guarded", "d", ok, llmtool.Guards(func(c *llmtool.ReadCtx, in GetItemIn) error { return nil }))
		}, `llmtool: tool "guarded": guard 1 has type func(*llmtool.ReadCtx, llmtool_test.GetItemIn) error; guards of this tool must be func(*llmtool.ReadCtx, struct {}) error`},
		{"duplicate in module", func() { llmtool.DefineTools("dup", getItem, getItem) },
			`llmtool: module "dup" defines tool "get_item" twice`},
		{"nil tool", func() { llmtool.DefineTools("nil", getItem, nil) },
			`llmtool: module "nil": tool 2 is nil; is it defined in a package-level variable declared after this module?`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.PanicsWithValue(t, tc.want, tc.define)
		})
	}
}

func make65() []byte {
	b := make([]byte, 65)
	for i := range b {
		b[i] = 'a'
	}
	return b
}
