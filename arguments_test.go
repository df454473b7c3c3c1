package llmtool_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// Arguments mean exactly what the schema says: keys match exactly, bounds
// compare as decimals, formats get jsonschema/v6's verdict, and messages
// quote numbers as a model writes them.

type exactOpts struct {
	Depth int `json:"depth,omitempty"`
	Size  int `json:"size,omitempty"`
}

type exactIn struct {
	Mode string            `json:"mode" enum:"a|b"`
	Opts *exactOpts        `json:"opts,omitempty"`
	Meta map[string]string `json:"meta,omitempty"`
}

// exactOut echoes what the handler saw, so a test can tell.
type exactOut struct {
	Mode  string            `json:"mode"`
	Depth int               `json:"depth"`
	Size  int               `json:"size"`
	Meta  map[string]string `json:"meta"`
}

func echoExact(_ *llmtool.ReadCtx, in exactIn) (exactOut, error) {
	out := exactOut{Mode: in.Mode, Meta: in.Meta}
	if in.Opts != nil {
		out.Depth, out.Size = in.Opts.Depth, in.Opts.Size
	}
	return out, nil
}

// exactSchema says nothing about additional properties, anywhere: JSON
// Schema then allows any other key, and only llmtool's own check stands
// between "MODE" and the Mode field.
const exactSchema = `{"type":"object","properties":{` +
	`"mode":{"type":"string","enum":["a","b"]},` +
	`"opts":{"type":["object","null"],"properties":{"depth":{"type":"integer"},"size":{"type":"integer"}}},` +
	`"meta":{"type":"object","additionalProperties":{"type":"string"}}},` +
	`"required":["mode"]}`

func TestArgumentKeysExact(t *testing.T) {
	t.Parallel()
	inferred := llmtool.Read("exact_inferred", "d", echoExact)
	supplied := llmtool.Read("exact_supplied", "d", echoExact, llmtool.InputSchema(json.RawMessage(exactSchema)))
	reg := newRegistry(t, openDB(t), llmtool.DefineTools("exact", inferred, supplied))
	const both = "" // the same message from both tools
	tests := []struct {
		name, args         string
		inferred, supplied string // the model's text; supplied "" means as inferred
	}{
		{"exact keys", `{"mode":"b","opts":{"depth":2,"size":3},"meta":{"K":"v"}}`,
			`{"mode":"b","depth":2,"size":3,"meta":{"K":"v"}}`, both},
		{"upper-case twin", `{"mode":"a","MODE":"zzz"}`,
			`Error: /MODE: unknown parameter "MODE". Send only mode, opts, meta (names are case-sensitive).`, both},
		{"twin first", `{"MODE":"zzz","mode":"a"}`,
			`Error: /MODE: unknown parameter "MODE". Send only mode, opts, meta (names are case-sensitive).`, both},
		{"two twins", `{"mode":"a","MODE":"zzz","Mode":"b"}`,
			`Error: arguments: unknown parameters "MODE", "Mode". Send only mode, opts, meta (names are case-sensitive).`, both},
		{"nested twin", `{"mode":"a","opts":{"Depth":3}}`,
			`Error: /opts/Depth: unknown parameter "Depth". Send only depth, size (names are case-sensitive).`, both},
		{"nested fold by Unicode (U+017F long s folds to s)", `{"mode":"a","opts":{"\u017fize":3}}`,
			`Error: /opts/ſize: unknown parameter "ſize". Send only depth, size (names are case-sensitive).`, both},
		{"unknown key", `{"mode":"a","color":"red"}`,
			`Error: /color: unknown parameter "color". Send only mode, opts, meta (names are case-sensitive).`, both},
		{"wrong case only", `{"Mode":"a"}`,
			`Error: /mode: missing required parameter "mode". Send "mode" as one of "a", "b". /Mode: unknown parameter "Mode". Send only mode, opts, meta (names are case-sensitive).`,
			`Error: /Mode: unknown parameter "Mode". Send only mode, opts, meta (names are case-sensitive).`},
	}
	for _, tc := range tests {
		for _, tool := range []string{"exact_inferred", "exact_supplied"} {
			t.Run(tool+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				want := tc.inferred
				if tool == "exact_supplied" && tc.supplied != both {
					want = tc.supplied
				}
				res := invoke(reg, tool, tc.args)
				require.Equal(t, want, res.Text())
				if res.IsError {
					require.Equal(t, llmtool.KindInvalidArgs, llmtool.KindOf(res.Err))
				}
			})
		}
	}
}

type boundsIn struct {
	Limit float64   `json:"limit,omitempty" minimum:"0.5" maximum:"10"`
	Count int       `json:"count,omitempty" minimum:"-3" maximum:"1e2"`
	When  time.Time `json:"when,omitzero"`
}

type boundsOut struct {
	Limit float64 `json:"limit"`
	Count int     `json:"count"`
	When  string  `json:"when,omitempty"`
}

func echoBounds(_ *llmtool.ReadCtx, in boundsIn) (boundsOut, error) {
	out := boundsOut{Limit: in.Limit, Count: in.Count}
	if !in.When.IsZero() {
		out.When = in.When.Format(time.RFC3339Nano)
	}
	return out, nil
}

// Bounds compare the decimal texts, not their float64 roundings, and a
// format gets jsonschema/v6's verdict, not time.Parse's.
func TestArgumentBoundsAndFormatsExact(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, openDB(t), llmtool.DefineTools("bounds", llmtool.Read("bounds", "d", echoBounds)))
	tests := []struct {
		name, args, want string
	}{
		{"at the maximum", `{"limit":10}`, `{"limit":10,"count":0}`},
		{"at the maximum, with an exponent", `{"limit":1e1}`, `{"limit":10,"count":0}`},
		{"at the maximum, long form", `{"limit":10.000000000000000000}`, `{"limit":10,"count":0}`},
		{"at the minimum, with an exponent", `{"limit":5e-1}`, `{"limit":0.5,"count":0}`},
		{"above the maximum by less than a float64 step", `{"limit":10.000000000000000001}`,
			`Error: /limit: 10.000000000000000001 is above the maximum 10. Send a number from 0.5 to 10.`},
		{"below the minimum by less than a float64 step", `{"limit":0.49999999999999999999}`,
			`Error: /limit: 0.49999999999999999999 is below the minimum 0.5. Send a number from 0.5 to 10.`},
		{"integer at an exponent maximum", `{"count":100}`, `{"limit":0,"count":100}`},
		{"integer above an exponent maximum", `{"count":101}`,
			`Error: /count: 101 is above the maximum 100. Send an integer from -3 to 1e2.`},
		{"integer below a negative minimum", `{"count":-4}`,
			`Error: /count: -4 is below the minimum -3. Send an integer from -3 to 1e2.`},
		{"exponent too large for math/big", `{"limit":1e10000000}`,
			`Error: /limit: 1e10000000 is too large or too precise to check. Send a number written with fewer digits, such as 10.5.`},
		{"date-time", `{"when":"2024-01-01T00:00:00.5Z"}`, `{"limit":0,"count":0,"when":"2024-01-01T00:00:00.5Z"}`},
		{"date-time with a comma before the fraction", `{"when":"2024-01-01T00:00:00,5Z"}`,
			`Error: /when: "2024-01-01T00:00:00,5Z" is not a valid date-time. Send an RFC 3339 date-time string such as "2026-01-02T15:04:05Z".`},
		{"date-time without seconds", `{"when":"2024-01-01T00:00Z"}`,
			`Error: /when: "2024-01-01T00:00Z" is not a valid date-time. Send an RFC 3339 date-time string such as "2026-01-02T15:04:05Z".`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := invoke(reg, "bounds", tc.args)
			require.Equal(t, tc.want, res.Text())
			if res.IsError {
				require.Equal(t, llmtool.KindInvalidArgs, llmtool.KindOf(res.Err))
			}
		})
	}
}

type fractionIn struct {
	Ratio float64 `json:"ratio" minimum:"0.25" maximum:"2.5"`
	Step  float64 `json:"step,omitempty"`
}

// Messages show numbers as a model writes them: 10.5, never 21/2 (the
// big.Rat form jsonschema/v6 reports bounds in).
func TestArgumentMessagesWriteDecimals(t *testing.T) {
	t.Parallel()
	echo := func(_ *llmtool.ReadCtx, in fractionIn) (fractionIn, error) { return in, nil }
	inferred := llmtool.Read("fraction_inferred", "d", echo)
	supplied := llmtool.Read("fraction_supplied", "d", echo, llmtool.InputSchema(json.RawMessage(`{"type":"object",`+
		`"properties":{"ratio":{"type":"number","exclusiveMinimum":0.25,"exclusiveMaximum":2.5},"step":{"type":"number","multipleOf":0.5}},`+
		`"required":["ratio"],"additionalProperties":false}`)))
	reg := newRegistry(t, openDB(t), llmtool.DefineTools("fraction", inferred, supplied))
	tests := []struct {
		name, tool, args, want string
	}{
		{"above a fractional maximum", "fraction_inferred", `{"ratio":10.5}`,
			`Error: /ratio: 10.5 is above the maximum 2.5. Send a number from 0.25 to 2.5.`},
		{"below a fractional minimum", "fraction_inferred", `{"ratio":0.125}`,
			`Error: /ratio: 0.125 is below the minimum 0.25. Send a number from 0.25 to 2.5.`},
		{"as sent, exponent and all", "fraction_inferred", `{"ratio":1.05e1}`,
			`Error: /ratio: 1.05e1 is above the maximum 2.5. Send a number from 0.25 to 2.5.`},
		{"exclusive maximum", "fraction_supplied", `{"ratio":2.5}`,
			`Error: /ratio: 2.5 is not below 2.5. Send a number below 2.5.`},
		{"exclusive minimum", "fraction_supplied", `{"ratio":0.25}`,
			`Error: /ratio: 0.25 is not above 0.25. Send a number above 0.25.`},
		{"multiple of a fraction", "fraction_supplied", `{"ratio":1,"step":0.75}`,
			`Error: /step: 0.75 is not a multiple of 0.5. Send a multiple of 0.5.`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := invoke(reg, tc.tool, tc.args)
			require.Equal(t, tc.want, res.Text())
			require.Equal(t, llmtool.KindInvalidArgs, llmtool.KindOf(res.Err))
		})
	}
}

// A keyword tag that cannot constrain its field, or bounds no value can
// meet, fail the tool's definition.
func TestTagMistakesPanic(t *testing.T) {
	t.Parallel()
	type inner struct {
		X int `json:"x"`
	}
	type minOnString struct {
		S string `json:"s" minimum:"1"`
	}
	type maxOnString struct {
		S string `json:"s" maximum:"9"`
	}
	type minLengthAboveMax struct {
		S string `json:"s" minLength:"5" maxLength:"3"`
	}
	type minLengthOnInt struct {
		N int `json:"n" minLength:"1"`
	}
	type maxLengthOnFloat struct {
		F float64 `json:"f" maxLength:"3"`
	}
	type minOnBool struct {
		B bool `json:"b" minimum:"0"`
	}
	type minOnStruct struct {
		In inner `json:"in" minimum:"0"`
	}
	type minLengthOnStruct struct {
		In inner `json:"in" minLength:"1"`
	}
	type minLengthOnIntItems struct {
		IDs []int `json:"ids" minLength:"1"`
	}
	type minOnStringItems struct {
		Tags []string `json:"tags" minimum:"1"`
	}
	type minOnRaw struct {
		Raw json.RawMessage `json:"raw" maximum:"1"`
	}
	type minAboveMax struct {
		N int `json:"n" minimum:"10" maximum:"1"`
	}
	type minNotJSON struct {
		N int `json:"n" minimum:"1/2"`
	}
	type patternOnInt struct {
		N int `json:"n" pattern:"^[0-9]+$"`
	}
	type intEnumWithCommas struct {
		N int `json:"n" enum:"1,2,3"`
	}
	type boundsOnOut struct {
		Name string `json:"name" maxLength:"2" minLength:"3"`
	}
	read := func(name string, define func(string)) func() { return func() { define(name) } }
	tests := []struct {
		name   string
		define func()
		want   string
	}{
		{"minimum on a string", read("t1", func(n string) { llmtool.Read(n, "d", noop[minOnString]) }),
			`llmtool: tool "t1": In field In.S: minimum tag on a field of type string: minimum and maximum bound a number's value; bound a string's length with minLength and maxLength`},
		{"maximum on a string", read("t2", func(n string) { llmtool.Read(n, "d", noop[maxOnString]) }),
			`llmtool: tool "t2": In field In.S: maximum tag on a field of type string: minimum and maximum bound a number's value; bound a string's length with minLength and maxLength`},
		{"minLength above maxLength", read("t3", func(n string) { llmtool.Read(n, "d", noop[minLengthAboveMax]) }),
			`llmtool: tool "t3": In field In.S: minLength 5 is above maxLength 3, so no string fits; make minLength at most maxLength`},
		{"minLength on an int", read("t4", func(n string) { llmtool.Read(n, "d", noop[minLengthOnInt]) }),
			`llmtool: tool "t4": In field In.N: minLength tag on a field of type int: minLength and maxLength bound a string's length; bound a number's value with minimum and maximum`},
		{"maxLength on a float", read("t5", func(n string) { llmtool.Read(n, "d", noop[maxLengthOnFloat]) }),
			`llmtool: tool "t5": In field In.F: maxLength tag on a field of type float64: minLength and maxLength bound a string's length; bound a number's value with minimum and maximum`},
		{"minimum on a bool", read("t6", func(n string) { llmtool.Read(n, "d", noop[minOnBool]) }),
			`llmtool: tool "t6": In field In.B: minimum tag on a field of type bool, which has no numeric value; remove the tag`},
		{"minimum on a struct", read("t7", func(n string) { llmtool.Read(n, "d", noop[minOnStruct]) }),
			`llmtool: tool "t7": In field In.In: minimum tag on a field of type llmtool_test.inner, which has no numeric value; remove the tag`},
		{"minLength on a struct", read("t8", func(n string) { llmtool.Read(n, "d", noop[minLengthOnStruct]) }),
			`llmtool: tool "t8": In field In.In: minLength tag on a field of type llmtool_test.inner, which has no length; remove the tag`},
		{"minLength on int items", read("t9", func(n string) { llmtool.Read(n, "d", noop[minLengthOnIntItems]) }),
			`llmtool: tool "t9": In field In.IDs: minLength tag on a field of type []int, whose items are of type int: minLength and maxLength bound a string's length; bound a number's value with minimum and maximum`},
		{"minimum on string items", read("t10", func(n string) { llmtool.Read(n, "d", noop[minOnStringItems]) }),
			`llmtool: tool "t10": In field In.Tags: minimum tag on a field of type []string, whose items are of type string: minimum and maximum bound a number's value; bound a string's length with minLength and maxLength`},
		{"maximum on raw JSON", read("t11", func(n string) { llmtool.Read(n, "d", noop[minOnRaw]) }),
			`llmtool: tool "t11": In field In.Raw: maximum tag on a field of type json.RawMessage, which takes any JSON value, so there is nothing for it to bound; remove the tag, or give the field a number or string type`},
		{"minimum above maximum", read("t12", func(n string) { llmtool.Read(n, "d", noop[minAboveMax]) }),
			`llmtool: tool "t12": In field In.N: minimum 10 is above maximum 1, so no number fits; make minimum at most maximum`},
		{"minimum not a JSON number", read("t13", func(n string) { llmtool.Read(n, "d", noop[minNotJSON]) }),
			`llmtool: tool "t13": In field In.N: minimum tag "1/2" must be a number written as in JSON, such as 1, -2.5 or 1e3`},
		{"pattern on an int", read("t14", func(n string) { llmtool.Read(n, "d", noop[patternOnInt]) }),
			`llmtool: tool "t14": In field In.N: pattern tag on a field of type int: pattern and format apply to strings only; remove the tag, or make the field a string`},
		{"int enum with commas", read("t15", func(n string) { llmtool.Read(n, "d", noop[intEnumWithCommas]) }),
			`llmtool: tool "t15": In field In.N: enum tag value 1,2,3 does not fit type int: invalid character ',' after top-level value; separate enum values with "|", as in enum:"1|2|3"`},
		{"bounds in Out", read("t16", func(n string) {
			llmtool.Read(n, "d", func(*llmtool.ReadCtx, struct{}) (boundsOnOut, error) { return boundsOnOut{}, nil })
		}), `llmtool: tool "t16": Out field Out.Name: minLength 3 is above maxLength 2, so no string fits; make minLength at most maxLength`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.PanicsWithValue(t, tc.want, tc.define)
		})
	}
}

// noop is a read handler for tests that only define a tool.
func noop[In any](*llmtool.ReadCtx, In) (struct{}, error) { return struct{}{}, nil }

// Bounds on a slice of numbers apply to its items, as the other keywords
// do.
func TestBoundsOnSliceApplyToItems(t *testing.T) {
	t.Parallel()
	type idsIn struct {
		IDs []int `json:"ids" minimum:"1" maximum:"9"`
	}
	tool := llmtool.Read("ids", "d", noop[idsIn])
	require.JSONEq(t, `{"type":"object","properties":{"ids":{"type":"array","items":{"type":"integer","minimum":1,"maximum":9}}},"required":["ids"],"additionalProperties":false}`,
		string(tool.Spec().InputSchema))
	reg := newRegistry(t, openDB(t), llmtool.DefineTools("ids", tool))
	require.Equal(t, `Error: /ids/1: 0 is below the minimum 1. Send an integer from 1 to 9.`, invoke(reg, "ids", `{"ids":[3,0]}`).Text())
	require.Equal(t, `{}`, invoke(reg, "ids", `{"ids":[1,9]}`).Text())
}

// Arguments are one JSON value: text after it is refused whether In is
// filled from the decoded value (flat) or decoded by encoding/json.
func TestArgumentsAreOneJSONValue(t *testing.T) {
	t.Parallel()
	flat := llmtool.Read("one_flat", "d", func(_ *llmtool.ReadCtx, in fractionIn) (fractionIn, error) { return in, nil })
	nested := llmtool.Read("one_nested", "d", echoExact)
	reg := newRegistry(t, openDB(t), llmtool.DefineTools("one", flat, nested))
	tests := []struct {
		name, tool, args, want string
	}{
		{"flat, a closing brace after", "one_flat", `{"ratio":1}}`,
			`Error: arguments: not valid JSON (invalid character '}' after top-level value). Send one JSON object, such as {"ratio": 1}.`},
		{"flat, a closing bracket after", "one_flat", `{"ratio":1}]`,
			`Error: arguments: not valid JSON (invalid character ']' after top-level value). Send one JSON object, such as {"ratio": 1}.`},
		{"flat, a second object", "one_flat", `{"ratio":1} {"ratio":2}`,
			`Error: arguments: not valid JSON (invalid character '{' after top-level value). Send one JSON object, such as {"ratio": 1}.`},
		{"nested, a closing brace after", "one_nested", `{"mode":"a"}}`,
			`Error: arguments: not valid JSON (invalid character '}' after top-level value). Send one JSON object, such as {"mode": "a"}.`},
		{"flat, white space after", "one_flat", "{\"ratio\":1}\n ", `{"ratio":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, invoke(reg, tc.tool, tc.args).Text())
		})
	}
}
