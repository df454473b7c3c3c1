package llmtool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Differential fuzz tests: each fast path against the reference it
// replaces. Their seeds (below, and testdata/fuzz/<Fuzz name>/) run in every
// plain go test; to search for more:
//
//	go test -run '^$' -fuzz '^FuzzValidate$' -fuzztime 3m .
//	go test -run '^$' -fuzz '^FuzzDecimal$' -fuzztime 3m .
//	go test -run '^$' -fuzz '^FuzzDecodeIn$' -fuzztime 3m .
//	go test -run '^$' -fuzz '^FuzzFastDecode$' -fuzztime 3m .

type fuzzTag struct {
	Name  string `json:"name" pattern:"^[a-z]{1,8}$"`
	Score *int   `json:"score,omitempty" minimum:"0" maximum:"10"`
}

// fuzzIn has a field for each keyword the fast path checks.
type fuzzIn struct {
	Title  string          `json:"title" minLength:"1" maxLength:"8"`
	Kind   string          `json:"kind,omitempty" enum:"text|code|<b>|é"`
	Limit  int             `json:"limit,omitempty" minimum:"1" maximum:"50"`
	Ratio  float64         `json:"ratio,omitempty" minimum:"0.5" maximum:"1e1"`
	Neg    float32         `json:"neg,omitempty" minimum:"-2.5e-3" maximum:"-0.0001"`
	U      uint8           `json:"u,omitempty"`
	Big    int64           `json:"big,omitempty" minimum:"-9223372036854775808" maximum:"9223372036854775807"`
	Tags   []fuzzTag       `json:"tags,omitempty"`
	Labels []string        `json:"labels,omitempty" enum:"[\"a|b\",\"c\"]"`
	Nums   []float64       `json:"nums,omitempty" minimum:"-1" maximum:"1"`
	Exact  float64         `json:"exact,omitempty" enum:"1|2.5|1e3"`
	Meta   map[string]int  `json:"meta,omitempty"`
	Due    time.Time       `json:"due,omitzero"`
	Day    string          `json:"day,omitempty" format:"date"`
	Mail   string          `json:"mail,omitempty" format:"email"`
	Parent *string         `json:"parent,omitempty"`
	Raw    json.RawMessage `json:"raw,omitempty"`
	Any    any             `json:"any,omitempty"`
	Data   []byte          `json:"data,omitempty"`
	Flag   bool            `json:"flag,omitempty"`
}

// fuzzFlatIn is filled from the decoded arguments without encoding/json.
type fuzzFlatIn struct {
	Mode  string  `json:"mode" enum:"a|b"`
	Count int     `json:"count,omitempty" minimum:"0" maximum:"100"`
	Ratio float64 `json:"ratio,omitempty"`
	On    bool    `json:"on,omitempty"`
	Small int8    `json:"small,omitempty"`
	U     uint16  `json:"u,omitempty"`
	F32   float32 `json:"f32,omitempty"`
}

type fuzzOpts struct {
	Depth int      `json:"depth,omitempty"`
	Size  int      `json:"size,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

// fuzzNestedIn is decoded by encoding/json.
type fuzzNestedIn struct {
	Mode string         `json:"mode"`
	Opts *fuzzOpts      `json:"opts,omitempty"`
	List []fuzzOpts     `json:"list,omitempty"`
	Meta map[string]int `json:"meta,omitempty"`
}

var fuzzSchemas = []*compiledSchema{
	inferSchema("fuzz", "In", reflect.TypeFor[fuzzIn]()),
	inferSchema("fuzz_flat", "In", reflect.TypeFor[fuzzFlatIn]()),
	inferSchema("fuzz_nested", "In", reflect.TypeFor[fuzzNestedIn]()),
}

var validateSeeds = []string{
	`{}`, `{"title":"x"}`, `{"title":""}`, `{"title":"123456789"}`, `{"title":"éééééééé"}`,
	`{"title":"x","kind":"<b>"}`, `{"title":"x","kind":"\u003cb\u003e"}`, `{"title":"x","kind":"é"}`, `{"title":"x","kind":"txt"}`,
	`{"title":"x","limit":50}`, `{"title":"x","limit":51}`, `{"title":"x","limit":1.0}`, `{"title":"x","limit":5e1}`, `{"title":"x","limit":0}`,
	`{"title":"x","ratio":10}`, `{"title":"x","ratio":10.000000000000000001}`, `{"title":"x","ratio":0.49999999999999999999}`,
	`{"title":"x","ratio":1e1}`, `{"title":"x","ratio":5E-1}`, `{"title":"x","ratio":-0}`, `{"title":"x","ratio":1e400}`,
	`{"title":"x","ratio":1e10000000}`, `{"title":"x","ratio":1e-10000000}`, `{"title":"x","neg":-0.001}`, `{"title":"x","neg":-0.00009}`,
	`{"title":"x","u":255}`, `{"title":"x","u":-1}`, `{"title":"x","u":-0}`, `{"title":"x","big":9223372036854775807}`, `{"title":"x","big":9223372036854775808}`,
	`{"title":"x","tags":[{"name":"ab","score":null},{"name":"z","score":10}]}`, `{"title":"x","tags":[{"name":"AB"}]}`,
	`{"title":"x","tags":[{"name":"a","Score":1}]}`, `{"title":"x","tags":[{"name":"a","score":10.5}]}`,
	`{"title":"x","labels":["a|b","c"]}`, `{"title":"x","labels":["b"]}`, `{"title":"x","nums":[-1,1,0.5,-1.0000000000000000001]}`,
	`{"title":"x","exact":1000}`, `{"title":"x","exact":1e3}`, `{"title":"x","exact":2.50}`, `{"title":"x","exact":3}`,
	`{"title":"x","meta":{"k":1,"K":2}}`, `{"title":"x","meta":{"k":"v"}}`,
	`{"title":"x","due":"2026-01-02T15:04:05Z"}`, `{"title":"x","due":"2024-01-01T00:00:00,5Z"}`, `{"title":"x","due":"2024-01-01t00:00:00z"}`,
	`{"title":"x","due":"2016-12-31T23:59:60Z"}`, `{"title":"x","due":"2024-01-01T00:00:00.5+01:00"}`, `{"title":"x","due":"2024-02-30T00:00:00Z"}`,
	`{"title":"x","day":"2024-02-29"}`, `{"title":"x","day":"2023-02-29"}`, `{"title":"x","mail":"a@b.c"}`, `{"title":"x","mail":"nope"}`,
	`{"title":"x","parent":null}`, `{"title":"x","parent":5}`, `{"title":"x","raw":[1,{"a":2}]}`, `{"title":"x","any":1e10000000}`,
	`{"title":"x","data":"aGk="}`, `{"title":"x","data":"!!"}`, `{"title":"x","flag":"true"}`, `{"title":"x","TITLE":"y"}`,
	`{"mode":"a"}`, `{"mode":"a","MODE":"zzz"}`, `{"mode":"c"}`, `{"mode":"a","count":100}`, `{"mode":"a","count":100.0}`,
	`{"mode":"a","small":127}`, `{"mode":"a","small":128}`, `{"mode":"a","u":65536}`, `{"mode":"a","f32":1e39}`,
	`{"mode":"a","opts":{"depth":1,"tags":["x"]},"list":[{"size":2}],"meta":{"a":1}}`, `{"mode":"a","opts":{"Depth":1}}`,
	`{"mode":"a","opts":null}`, `{"mode":"a","list":[{"ſize":1}]}`,
}

func FuzzValidate(f *testing.F) {
	for _, s := range validateSeeds {
		for i := range fuzzSchemas {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(checkValidate)
}

func TestValidateSeeds(t *testing.T) {
	t.Parallel()
	for _, s := range validateSeeds {
		for i := range fuzzSchemas {
			checkValidate(t, uint8(i), []byte(s))
		}
	}
}

// The fast path must take the arguments models usually send, or it buys
// nothing.
func TestFastPathTakesCommonArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schema int
		args   string
	}{
		{0, `{"title":"x","kind":"code","limit":50,"ratio":0.5,"tags":[{"name":"ab","score":3}],"labels":["c"]}`},
		{0, `{"title":"x","due":"2026-01-02T15:04:05Z","day":"2024-02-29","nums":[0.25,-1]}`},
		{1, `{"mode":"a","count":10,"ratio":1.5,"on":true}`},
		{2, `{"mode":"a","opts":{"depth":1,"tags":["x"]},"list":[{"size":2}],"meta":{"a":1}}`},
	}
	for _, tc := range tests {
		v, err := decodeArguments([]byte(tc.args))
		require.NoError(t, err)
		require.True(t, fuzzSchemas[tc.schema].root.accepts(v), tc.args)
	}
}

// referenceVerdict is jsonschema/v6's verdict on v; a panic (it panics on
// numbers math/big cannot read) counts as a refusal.
func referenceVerdict(cs *compiledSchema, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("jsonschema/v6 panicked: %v", p)
		}
	}()
	return cs.compiled.Validate(v)
}

// checkValidate: the fast path never accepts what jsonschema/v6 refuses,
// and validate, fast path and all, gives jsonschema/v6's verdict.
func checkValidate(t *testing.T, sel uint8, data []byte) {
	cs := fuzzSchemas[int(sel)%len(fuzzSchemas)]
	v, err := decodeArguments(data)
	if err != nil || slowForMathBig(v) {
		return
	}
	ref := referenceVerdict(cs, v)
	if cs.root.accepts(v) {
		require.NoError(t, ref, "the fast path accepted %s, which jsonschema/v6 refuses", data)
	}
	got := cs.validate(v)
	require.Equal(t, ref == nil, got == nil, "validate says %v, jsonschema/v6 says %v, for %s", got, ref, data)
	if got != nil {
		e := cs.validationError(got)
		require.Equal(t, KindInvalidArgs, e.Kind)
		require.NotEmpty(t, e.Message)
	}
}

// slowForMathBig reports whether v holds a number whose exponent is large
// enough for math/big.Rat to spend milliseconds on (10^999999 has a million
// digits) yet small enough for it to try. jsonschema/v6 pays that cost on
// every such number; parseDecimal declines them, so the fast path has no
// verdict of its own to check, and the fuzzer would spend its time there.
func slowForMathBig(v any) bool {
	switch x := v.(type) {
	case json.Number:
		_, exp, ok := strings.Cut(strings.ToLower(string(x)), "e")
		if !ok {
			return len(x) > maxDecimalExponent
		}
		exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
		return len(exp) > 4 && len(exp) <= 7
	case []any:
		for _, e := range x {
			if slowForMathBig(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if slowForMathBig(e) {
				return true
			}
		}
	}
	return false
}

func FuzzDecimal(f *testing.F) {
	nums := []string{"0", "-0", "0.0", "1", "-1", "10", "1e1", "1E+1", "100e-1", "10.000000000000000001", "9.999999999999999999",
		"0.5", "5e-1", "0.49999999999999999999", "-2.5e-3", "-0.0025", "1e10000", "1e10001", "1e-10000", "123456789012345678901234567890",
		"00", "01", "1.", ".5", "+1", "1e", "1e+", "--1", "0x10", "1/2", "", "-", "1_0", " 1", "1 ", "Infinity", "NaN", "0e0", "0.000e-5"}
	for i, a := range nums {
		f.Add(a, nums[(i*7+3)%len(nums)])
	}
	f.Fuzz(checkDecimal)
}

func TestDecimalSeeds(t *testing.T) {
	t.Parallel()
	nums := []string{"0", "-0", "1", "1e1", "10", "10.000000000000000001", "0.5", "5e-1", "-2.5e-3", "1e10000", "1e10001", "01", "1.", "+1", "1/2"}
	for _, a := range nums {
		for _, b := range nums {
			checkDecimal(t, a, b)
		}
	}
}

// checkDecimal: parseDecimal takes exactly the JSON numbers (short of huge
// exponents), compares as math/big.Rat does, and numberText writes a JSON
// number of the same value.
func checkDecimal(t *testing.T, a, b string) {
	da, okA := parseDecimal(a)
	db, okB := parseDecimal(b)
	for _, c := range []struct {
		s  string
		ok bool
	}{{a, okA}, {b, okB}} {
		isJSONNumber := false
		var n json.Number
		if err := json.Unmarshal([]byte(c.s), &n); err == nil && string(n) == c.s && json.Valid([]byte(c.s)) {
			isJSONNumber = true
		}
		if c.ok {
			require.True(t, isJSONNumber, "parseDecimal took %q, which is not a JSON number", c.s)
		} else if isJSONNumber && len(c.s) <= 64 && !strings.ContainsAny(c.s, "eE") {
			require.Fail(t, "parseDecimal refused a JSON number", "%q", c.s)
		}
	}
	if !okA || !okB {
		return
	}
	ra, _ := new(big.Rat).SetString(a)
	rb, _ := new(big.Rat).SetString(b)
	require.Equal(t, ra.Cmp(rb), da.cmp(&db), "compare %s with %s", a, b)
	text := numberText(ra)
	back, ok := new(big.Rat).SetString(text)
	require.True(t, ok, "numberText(%s) = %q", a, text)
	require.Zero(t, back.Cmp(ra), "numberText(%s) = %q", a, text)
	require.True(t, json.Valid([]byte(text)), "numberText(%s) = %q is not JSON", a, text)
	require.NotContains(t, text, "/")
}

func TestNumberText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rat  *big.Rat
		want string
	}{
		{big.NewRat(21, 2), "10.5"},
		{big.NewRat(-1, 4), "-0.25"},
		{big.NewRat(0, 1), "0"},
		{big.NewRat(10, 1), "10"},
		{big.NewRat(12345, 100), "123.45"},
		{big.NewRat(1, 10000000), "1e-7"},
		{big.NewRat(1, 1000000), "0.000001"},
		{new(big.Rat).SetFrac(new(big.Int).Exp(big.NewInt(10), big.NewInt(400), nil), big.NewInt(1)), "1e+400"},
		{new(big.Rat).SetFrac(new(big.Int).Exp(big.NewInt(10), big.NewInt(20), nil), big.NewInt(1)), "100000000000000000000"},
		{new(big.Rat).SetFrac(new(big.Int).Exp(big.NewInt(10), big.NewInt(21), nil), big.NewInt(1)), "1e+21"},
		{new(big.Rat).SetFrac(new(big.Int).Exp(big.NewInt(10), big.NewInt(22), nil), big.NewInt(3)), "3333333333333333333333.333333333333"},
		{big.NewRat(1, 3), "0.333333333333"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, numberText(tc.rat), tc.rat.RatString())
	}
}

// fuzzInTools defines, for the flat and the nested In, a tool with the
// inferred schema and one with a supplied schema that constrains nothing
// about keys (no additionalProperties anywhere), so only llmtool's own
// exact-key check keeps case variants out.
var fuzzInTools = []*Tool{
	Read("fuzz_flat", "d", echoIn[fuzzFlatIn]),
	Read("fuzz_flat_supplied", "d", echoIn[fuzzFlatIn], InputSchema(json.RawMessage(`{"type":"object",`+
		`"properties":{"mode":{"enum":["a","b"]},"count":{},"ratio":{},"on":{},"small":{},"u":{},"f32":{}},"required":["mode"]}`))),
	Read("fuzz_nested", "d", echoIn[fuzzNestedIn]),
	Read("fuzz_nested_supplied", "d", echoIn[fuzzNestedIn], InputSchema(json.RawMessage(`{"type":"object",`+
		`"properties":{"mode":{"type":"string"},"opts":{},"list":{},"meta":{}},"required":["mode"]}`))),
}

func echoIn[In any](_ *ReadCtx, in In) (struct{}, error) { return struct{}{}, nil }

func FuzzDecodeIn(f *testing.F) {
	for _, s := range validateSeeds {
		for i := range fuzzInTools {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(checkDecodeIn)
}

func TestDecodeInSeeds(t *testing.T) {
	t.Parallel()
	for _, s := range validateSeeds {
		for i := range fuzzInTools {
			checkDecodeIn(t, uint8(i), []byte(s))
		}
	}
}

// checkDecodeIn: whatever the arguments pass, the handler's In holds
// exactly what encoding/json decodes from the keys the struct names, as
// spelled; never a value from a key that differs in case.
func checkDecodeIn(t *testing.T, sel uint8, data []byte) {
	tool := fuzzInTools[int(sel)%len(fuzzInTools)]
	if len(data) > 0 && data[0] == '"' {
		return // an object sent as a JSON string: prepare unwraps it, a path of its own
	}
	if v, err := decodeArguments(data); err == nil && slowForMathBig(v) {
		return
	}
	args, fill, argv, err := tool.prepare(data)
	if err != nil {
		return
	}
	got, gotErr := decodeInLikeCall(tool, args, fill, argv)
	want, wantErr := decodeExactKeys(tool, data)
	if wantErr != nil || gotErr != nil {
		require.Equal(t, wantErr != nil, gotErr != nil, "call path %v, reference %v, for %s", gotErr, wantErr, data)
		return
	}
	require.Equal(t, want, got, "for %s", data)
}

// decodeInLikeCall fills a fresh In as a call does (callState.decodeIn).
func decodeInLikeCall(tool *Tool, args []byte, fill uint64, argv map[string]any) (any, error) {
	in := newIn(tool)
	schema := tool.in
	if argv == nil || !schema.flat || !schema.fillFlat(in, argv) {
		if err := decodeArgs(args, in); err != nil {
			return nil, err
		}
	}
	schema.setDefaults(in, fill)
	return reflect.ValueOf(in).Elem().Interface(), nil
}

// decodeExactKeys is the reference: keep only the keys each struct names,
// as spelled (and drop nulls of optional fields, which mean absent), then
// let encoding/json decode what is left, where every key has an exact match.
func decodeExactKeys(tool *Tool, data []byte) (any, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		data = []byte("{}") // missing arguments mean {}
	}
	v, ok := referenceDecode(data)
	if !ok {
		return nil, errors.New("not one JSON value")
	}
	if v == nil {
		v = map[string]any{}
	}
	b, err := json.Marshal(exactKeysOnly(tool.in.root, v))
	if err != nil {
		return nil, err
	}
	in := newIn(tool)
	if err := json.Unmarshal(b, in); err != nil {
		return nil, err
	}
	return reflect.ValueOf(in).Elem().Interface(), nil
}

func exactKeysOnly(n *schemaNode, v any) any {
	if n == nil || n.any {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		if n.additional != nil {
			for k, e := range x {
				out[k] = exactKeysOnly(n.additional, e)
			}
			return out
		}
		for _, p := range n.props {
			if e, ok := x[p.name]; ok {
				out[p.name] = exactKeysOnly(p.schema, e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = exactKeysOnly(n.items, e)
		}
		return out
	}
	return v
}

// newIn returns a pointer to a fresh value of tool's In.
func newIn(tool *Tool) any {
	switch tool.spec.Name {
	case "fuzz_flat", "fuzz_flat_supplied":
		return new(fuzzFlatIn)
	case "fuzz_nested", "fuzz_nested_supplied":
		return new(fuzzNestedIn)
	}
	panic("newIn: unknown tool " + tool.spec.Name)
}
