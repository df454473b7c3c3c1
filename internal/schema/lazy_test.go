package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// Differential fuzz tests of defining a tool: lazy compilation and the
// defaults checked by the fast path, each against the reference it
// replaces. To search for more:
//
//	go test -run '^$' -fuzz '^FuzzLazyCompile$' -fuzztime 1m .

// eagerInfer is inferSchema as it was before compilation became lazy:
// the whole document compiled at definition, then every default checked
// by compiling its field's schema and validating with jsonschema/v6.
func eagerInfer(tool, which string, t reflect.Type) *compiledSchema {
	r := &reflector{tool: tool, which: which, output: which == "Out"}
	root := r.node(t, which)
	cs := compileSchema(tool, which, root, root.appendJSON(nil))
	eagerCheckDefaults(tool, which, root, which)
	root.prepareFast()
	if which == "In" {
		cs.prepareDefaults(t)
	}
	return cs
}

func eagerCheckDefaults(tool, which string, n *schemaNode, path string) {
	for _, p := range n.props {
		if p.schema.def != nil {
			sub := compileSchema(tool, which+"."+p.name, nil, p.schema.appendJSON(nil))
			if err := sub.compiled.Validate(p.schema.defValue); err != nil {
				panic(fmt.Sprintf("llmtool: tool %q: %s field %s: default %s does not satisfy the field's own schema: %v", tool, which, path+"."+p.goName, p.schema.def, err))
			}
		}
		eagerCheckDefaults(tool, which, p.schema, path+"."+p.goName)
	}
}

// panicOf runs f and returns what it panicked with, nil if it did not.
func panicOf(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

type lazyNested struct {
	X int    `json:"x" minimum:"1" desc:"An x."`
	S string `json:"s,omitempty" enum:"a|b" default:"a"`
}

// lazyFieldTypes are the types a generated field takes.
var lazyFieldTypes = []reflect.Type{
	reflect.TypeFor[int](), reflect.TypeFor[uint8](), reflect.TypeFor[int64](), reflect.TypeFor[float64](),
	reflect.TypeFor[float32](), reflect.TypeFor[string](), reflect.TypeFor[bool](), reflect.TypeFor[[]string](),
	reflect.TypeFor[[]int](), reflect.TypeFor[*int](), reflect.TypeFor[*string](), reflect.TypeFor[map[string]int](),
	reflect.TypeFor[time.Time](), reflect.TypeFor[json.RawMessage](), reflect.TypeFor[any](), reflect.TypeFor[[]byte](),
	reflect.TypeFor[lazyNested](), reflect.TypeFor[[]lazyNested](), reflect.TypeFor[*lazyNested](),
}

// lazyTagValues are the preset values of each keyword tag; "$a" and "$b"
// stand for the fuzzer's strings.
var lazyTagValues = []struct {
	key    string
	values []string
}{
	{"enum", []string{"a|b", "1|2", "[1,2]", `["x","y"]`, "true|false", "1.5|2", "$a"}},
	{"default", []string{"0", "1", "x", "[1]", `"aGk="`, "true", "", "2026-01-02", `{"x":1}`, "$a", "$b"}},
	{"minimum", []string{"1", "0.5", "-3", "1e3", "$a"}},
	{"maximum", []string{"5", "0", "1e1", "$b"}},
	{"minLength", []string{"1", "3", "x", "$a"}},
	{"maxLength", []string{"2", "8", "0"}},
	{"pattern", []string{"^a+$", "(", "^[0-9]{4}-", "$a"}},
	{"format", []string{"date", "email", "uuid", "bogus", "$b"}},
}

// lazyType builds a struct type from spec, field by field: a byte for its
// type, one for its flags (1 omitempty, 2 a desc tag of a), one whose
// bits pick keyword tags of lazyTagValues, and a byte for each picked
// tag's value.
func lazyType(spec []byte, a, b string) reflect.Type {
	var fields []reflect.StructField
	next := func() int {
		if len(spec) == 0 {
			return 0
		}
		c := spec[0]
		spec = spec[1:]
		return int(c)
	}
	for len(spec) >= 3 && len(fields) < 5 {
		ft := lazyFieldTypes[next()%len(lazyFieldTypes)]
		flags, mask := next(), next()
		name := fmt.Sprintf("f%d", len(fields))
		if flags&1 != 0 {
			name += ",omitempty"
		}
		tag := `json:` + strconv.Quote(name)
		if flags&2 != 0 {
			tag += ` desc:` + strconv.Quote(a)
		}
		for k, kw := range lazyTagValues {
			if mask&(1<<k) == 0 {
				continue
			}
			v := kw.values[next()%len(kw.values)]
			switch v {
			case "$a":
				v = a
			case "$b":
				v = b
			}
			tag += " " + kw.key + ":" + strconv.Quote(v)
		}
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", len(fields)), Type: ft, Tag: reflect.StructTag(tag)})
	}
	return reflect.StructOf(fields)
}

func FuzzLazyCompile(f *testing.F) {
	const (
		enum = 1 << iota
		def
		minimum
		maximum
		minLength
		maxLength
		pattern
		format
	)
	seeds := []struct {
		spec []byte
		a, b string
	}{
		{[]byte{0, 1, def, 0}, "", ""},                                            // int, default 0
		{[]byte{0, 1, def | minimum, 0, 0}, "", ""},                               // int, default 0, minimum 1: refused
		{[]byte{0, 1, def | minimum, 1, 1}, "", ""},                               // int, default 1, minimum 0.5
		{[]byte{3, 1, def | maximum, 1, 1}, "", ""},                               // float64, default 1, maximum 0: refused
		{[]byte{0, 1, enum | def, 1, 0}, "", ""},                                  // int, enum 1|2, default 0: refused
		{[]byte{15, 1, def, 4}, "", ""},                                           // []byte, default "aGk=": the fast path declines, jsonschema/v6 takes it
		{[]byte{5, 3, def, 9}, "x", ""},                                           // string, desc, default
		{[]byte{5, 1, def | format, 7, 0}, "", ""},                                // string, default 2026-01-02, format date
		{[]byte{5, 1, def | format, 2, 2}, "", ""},                                // string, default x, format uuid: refused
		{[]byte{5, 1, def | format, 2, 3}, "", ""},                                // string, default x, unknown format
		{[]byte{5, 1, def | pattern, 7, 2}, "", ""},                               // string, default, pattern
		{[]byte{5, 1, def | pattern, 2, 2}, "", ""},                               // string, default x, pattern: refused
		{[]byte{5, 1, def | minLength, 6, 0}, "", ""},                             // string, default "", minLength 1: refused
		{[]byte{5, 1, def | minimum, 2, 0}, "", ""},                               // string with minimum: refused by inference
		{[]byte{5, 0, pattern, 1}, "", ""},                                        // bad pattern
		{[]byte{7, 1, enum | def, 3, 10}, "", `["y"]`},                            // []string, enum, default
		{[]byte{7, 1, enum | def, 3, 10}, "", `["z"]`},                            // []string, default outside the enum: refused
		{[]byte{16, 1, def, 8, 17, 0, 0, 18, 1, 0}, "", ""},                       // nested structs
		{[]byte{3, 1, def | minimum | maximum, 9, 4, 3}, "1e400", "1e-400"},       // float64, huge default and bounds: refused by inference
		{[]byte{3, 1, def | minimum | maximum, 9, 4, 3}, "1e3", "1e4"},            // float64, default 1e3 within bounds
		{[]byte{14, 1, def, 9}, `{"any":[1,2]}`, ""},                              // any, a JSON default
		{[]byte{12, 1, def, 9}, `"2026-01-02T15:04:05Z"`, ""},                     // time.Time default
		{[]byte{12, 1, def, 9}, `"2026-13-02T15:04:05Z"`, ""},                     // time.Time default, not a date-time: refused by inference
		{[]byte{5, 1, def | enum, 9, 6}, "é\u2028", "\x00"},                       // strings that need escaping
		{[]byte{1, 1, def | maximum, 1, 3}, "", "300"},                            // uint8, default 1, maximum 300
		{[]byte{9, 1, def | minimum, 0, 0, 10, 1, def | maxLength, 9, 0}, "", ""}, // *int default 0 minimum 1; *string
	}
	for _, s := range seeds {
		f.Add(s.spec, s.a, s.b)
	}
	f.Fuzz(func(t *testing.T, spec []byte, a, b string) {
		typ := lazyType(spec, a, b)
		for _, which := range []string{"In", "Out"} {
			var eager, lazy *compiledSchema
			pe := panicOf(func() { eager = eagerInfer("fuzz", which, typ) })
			pl := panicOf(func() { lazy = inferSchema("fuzz", which, typ) })
			require.Equal(t, pe, pl, "%s %s: the lazy definition must panic exactly where the eager one did", which, typ)
			if pe != nil {
				continue
			}
			require.Equal(t, string(eager.json), string(lazy.json))
			_, err := lazy.schema()
			require.NoError(t, err, "every inferred document compiles")
			for _, text := range []string{`{}`, a, b, `{"f0":` + a + `}`, `{"f0":` + b + `,"f1":` + a + `}`} {
				v, err := decodeArguments([]byte(text))
				if err != nil || SlowForMathBig(v) {
					continue
				}
				ve, vl := eager.validate(v), lazy.validate(v)
				require.Equal(t, ve == nil, vl == nil, "%s: eager %v, lazy %v", text, ve, vl)
				if ve != nil {
					require.Equal(t, problems(eager, ve), problems(lazy, vl), text)
				}
			}
		}
	})
}

// problems returns the sentences of the message of a Validate error,
// sorted: jsonschema/v6 reports the failures of several properties in
// the order it iterates a map, so two validations of one value can list
// them in different orders (lazy compilation or not).
func problems(cs *compiledSchema, err error) []string {
	var ps []string
	ae, ok := err.(*argsError)
	if !ok {
		return []string{cs.validationError(err).Message}
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			ps = append(ps, cs.describe(e, ae.v))
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	ve, ok := ae.err.(*jsonschema.ValidationError)
	if !ok {
		return []string{cs.validationError(err).Message}
	}
	walk(ve)
	slices.Sort(ps)
	return ps
}

// TestLazyCompileConcurrent: the first values that need jsonschema/v6
// arrive at once; each gets the verdict and message of a schema compiled
// at definition, and the schema is compiled once.
func TestLazyCompileConcurrent(t *testing.T) {
	t.Parallel()
	type in struct {
		Title string `json:"title" minLength:"1" maxLength:"8"`
		Limit int    `json:"limit,omitempty" minimum:"1" maximum:"50" default:"10"`
	}
	typ := reflect.TypeFor[in]()
	eager := eagerInfer("concurrent", "In", typ)
	lazy := inferSchema("concurrent", "In", typ)
	tests := []string{`{"title":""}`, `{"title":"x","limit":51}`, `{"title":"x","limit":"5"}`, `{"limit":1}`, `{"title":"x"}`}
	var wg sync.WaitGroup
	got := make([]string, 4*len(tests))
	for i := range got {
		wg.Go(func() {
			v, err := decodeArguments([]byte(tests[i%len(tests)]))
			if err != nil {
				got[i] = err.Error()
				return
			}
			if err := lazy.validate(v); err != nil {
				got[i] = lazy.validationError(err).Message
			}
		})
	}
	wg.Wait()
	for i, text := range tests {
		v, err := decodeArguments([]byte(text))
		require.NoError(t, err)
		want := ""
		if err := eager.validate(v); err != nil {
			want = eager.validationError(err).Message
		}
		for j := i; j < len(got); j += len(tests) {
			require.Equal(t, want, got[j], text)
		}
	}
	s1, err := lazy.schema()
	require.NoError(t, err)
	s2, err := lazy.schema()
	require.NoError(t, err)
	require.Same(t, s1, s2, "compiled once")
}

// TestDefinitionCompilesNothing: defining a schema whose defaults the
// fast path takes compiles nothing; the first value the fast path
// declines compiles it.
func TestDefinitionCompilesNothing(t *testing.T) {
	t.Parallel()
	type in struct {
		Mode  string `json:"mode,omitempty" enum:"a|b" default:"a"`
		Limit int    `json:"limit,omitempty" minimum:"1" maximum:"50" default:"10"`
	}
	compiled := 0
	cs := inferSchema("nothing", "In", reflect.TypeFor[in]())
	next := cs.compile
	cs.compile = func() (*jsonschema.Schema, error) { compiled++; return next() }
	v, err := decodeArguments([]byte(`{"mode":"b","limit":5}`))
	require.NoError(t, err)
	require.NoError(t, cs.validate(v))
	require.Zero(t, compiled, "valid arguments take the fast path")
	v, err = decodeArguments([]byte(`{"mode":"c"}`))
	require.NoError(t, err)
	err = cs.validate(v)
	require.Error(t, err)
	require.Equal(t, 1, compiled, "a refusal asks jsonschema/v6")
	require.Equal(t, `/mode: "c" is not an allowed value. Send one of "a", "b".`, cs.validationError(err).Message)
}
