package schema

import (
	"encoding/json"
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

var fuzzSchemas = []*compiledSchema{
	inferSchema("fuzz", "In", reflect.TypeFor[fuzzIn]()),
	inferSchema("fuzz_flat", "In", reflect.TypeFor[FuzzFlatIn]()),
	inferSchema("fuzz_nested", "In", reflect.TypeFor[FuzzNestedIn]()),
}

func FuzzValidate(f *testing.F) {
	for _, s := range ValidateSeeds {
		for i := range fuzzSchemas {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(checkValidate)
}

func TestValidateSeeds(t *testing.T) {
	t.Parallel()
	for _, s := range ValidateSeeds {
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
	sch, err := cs.schema()
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// checkValidate: the fast path never accepts what jsonschema/v6 refuses,
// and validate, fast path and all, gives jsonschema/v6's verdict.
func checkValidate(t *testing.T, sel uint8, data []byte) {
	cs := fuzzSchemas[int(sel)%len(fuzzSchemas)]
	v, err := decodeArguments(data)
	if err != nil || SlowForMathBig(v) {
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
		require.NotEmpty(t, e.Message)
		require.NotEmpty(t, e.Message)
	}
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
