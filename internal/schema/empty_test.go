package schema

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type emptyLeaf struct {
	Tags []string `json:"tags"`
}

type emptyMid struct {
	Leaf   emptyLeaf            `json:"leaf"`
	Leaves []emptyLeaf          `json:"leaves"`
	Ptr    *emptyLeaf           `json:"ptr"`
	ByKey  map[string]emptyLeaf `json:"byKey"`
	Pair   [2]emptyLeaf         `json:"pair"`
}

type emptyEmbedded struct {
	Extra []int `json:"extra"`
}

type emptyOmit struct {
	Empty    []int     `json:"empty,omitempty"`
	Zero     []int     `json:"zero,omitzero"`
	ZeroLeaf emptyLeaf `json:"zeroLeaf,omitzero"`
	PtrEmpty *emptyMid `json:"ptrEmpty,omitempty"`
	Full     []int     `json:"full,omitempty"`
}

// zeroIfShort is an omitzero type with its own IsZero.
type zeroIfShort struct {
	List []string `json:"list"`
	N    int      `json:"n"`
}

func (z zeroIfShort) IsZero() bool { return z.N < 2 }

type emptyOut struct {
	emptyEmbedded
	Mid      emptyMid                        `json:"mid"`
	Mids     []*emptyMid                     `json:"mids"`
	Nullable *[]string                       `json:"nullable"`
	Present  *[]string                       `json:"present"`
	PtrMap   *map[string]int                 `json:"ptrMap"`
	Bytes    []byte                          `json:"bytes"`
	Grid     [][]int                         `json:"grid"`
	Lists    map[string][]int                `json:"lists"`
	Any      any                             `json:"any"`
	Raw      json.RawMessage                 `json:"raw"`
	When     time.Time                       `json:"when"`
	Omit     emptyOmit                       `json:"omit"`
	Short    zeroIfShort                     `json:"short,omitzero"`
	Long     zeroIfShort                     `json:"long,omitzero"`
	Skipped  []int                           `json:"-"`
	hidden   []int                           // unexported: never encoded, never filled
	Deep     map[string]map[int]*[]emptyLeaf `json:"deep"`
}

func marshalJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// Every nil slice and map that encoding/json writes becomes [] or {} (""
// for []byte), at every depth; omitted fields stay omitted, nil pointers
// and interfaces stay null, and the handler's value is left as it was.
func TestEmptyNils(t *testing.T) {
	t.Parallel()
	fix := EmptyNils(reflect.TypeFor[emptyOut]())
	require.NotNil(t, fix)
	present := []string(nil)
	shared := []emptyLeaf{{}, {Tags: []string{"a"}}}
	tests := []struct {
		name string
		in   emptyOut
		want string
	}{
		{"zero", emptyOut{},
			`{"extra":[],"mid":{"leaf":{"tags":[]},"leaves":[],"ptr":null,"byKey":{},"pair":[{"tags":[]},{"tags":[]}]},` +
				`"mids":[],"nullable":null,"present":null,"ptrMap":null,"bytes":"","grid":[],"lists":{},"any":null,"raw":null,` +
				`"when":"0001-01-01T00:00:00Z","omit":{},"deep":{}}`},
		{"nested", emptyOut{
			emptyEmbedded: emptyEmbedded{Extra: []int{1}},
			Mid:           emptyMid{Leaves: shared, Ptr: &emptyLeaf{}, ByKey: map[string]emptyLeaf{"k": {}}},
			Mids:          []*emptyMid{nil, {Leaves: []emptyLeaf{{}}}},
			Present:       &present,
			PtrMap:        new(map[string]int),
			Bytes:         []byte("hi"),
			Grid:          [][]int{nil, {1}},
			Lists:         map[string][]int{"a": nil, "b": {2}},
			Any:           []int(nil),
			Omit:          emptyOmit{Empty: []int{}, ZeroLeaf: emptyLeaf{Tags: []string{}}, PtrEmpty: &emptyMid{}, Full: []int{3}},
			Short:         zeroIfShort{N: 1},
			Long:          zeroIfShort{N: 2},
			Skipped:       nil,
			Deep:          map[string]map[int]*[]emptyLeaf{"x": {1: &shared, 2: nil}, "y": nil},
		},
			`{"extra":[1],"mid":{"leaf":{"tags":[]},"leaves":[{"tags":[]},{"tags":["a"]}],"ptr":{"tags":[]},"byKey":{"k":{"tags":[]}},"pair":[{"tags":[]},{"tags":[]}]},` +
				`"mids":[null,{"leaf":{"tags":[]},"leaves":[{"tags":[]}],"ptr":null,"byKey":{},"pair":[{"tags":[]},{"tags":[]}]}],` +
				`"nullable":null,"present":[],"ptrMap":{},"bytes":"aGk=","grid":[[],[1]],"lists":{"a":[],"b":[2]},"any":null,"raw":null,` +
				`"when":"0001-01-01T00:00:00Z","omit":{"zeroLeaf":{"tags":[]},` +
				`"ptrEmpty":{"leaf":{"tags":[]},"leaves":[],"ptr":null,"byKey":{},"pair":[{"tags":[]},{"tags":[]}]},"full":[3]},` +
				`"long":{"list":[],"n":2},"deep":{"x":{"1":[{"tags":[]},{"tags":["a"]}],"2":null},"y":{}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := marshalJSON(t, tt.in)
			got := fix(tt.in)
			require.Equal(t, tt.want, marshalJSON(t, got))
			require.Nil(t, got.(emptyOut).hidden)
			require.Nil(t, got.(emptyOut).Skipped)
			require.Equal(t, before, marshalJSON(t, tt.in), "the handler's value is not written to")
			require.Equal(t, tt.want, marshalJSON(t, fix(got)), "idempotent")
		})
	}
	require.Nil(t, shared[0].Tags, "a shared slice's elements are copied, not set")
	require.Nil(t, present, "a pointee is copied, not set")
}

// A root map (an Out may be one) gets its values fixed on a copy.
func TestEmptyNilsMap(t *testing.T) {
	t.Parallel()
	fix := EmptyNils(reflect.TypeFor[map[string][]int]())
	in := map[string][]int{"a": nil, "b": {1}}
	require.Equal(t, `{"a":[],"b":[1]}`, marshalJSON(t, fix(in)))
	require.Nil(t, in["a"])
	require.Equal(t, `{}`, marshalJSON(t, fix(map[string][]int(nil))))
}

// A type that cannot hold a nil slice or map gets no fixer, so its results
// are encoded as they are; one whose slices are all set is returned as it
// came, without a copy.
func TestEmptyNilsNoCopy(t *testing.T) {
	t.Parallel()
	type scalars struct {
		ID    int             `json:"id"`
		Name  string          `json:"name"`
		Ptr   *int            `json:"ptr"`
		When  time.Time       `json:"when"`
		Raw   json.RawMessage `json:"raw"`
		Any   any             `json:"any"`
		Inner struct {
			OK bool `json:"ok"`
		} `json:"inner"`
		Arr    [3]int `json:"arr"`
		hidden []int
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[scalars](), reflect.TypeFor[*scalars](), reflect.TypeFor[[0][]int](),
		reflect.TypeFor[time.Time](), reflect.TypeFor[json.RawMessage](), reflect.TypeFor[any](),
	} {
		require.Nil(t, EmptyNils(typ), "%s", typ)
	}
	_ = scalars{}.hidden

	m := map[string][]int{"a": {1}}
	got := EmptyNils(reflect.TypeFor[map[string][]int]())(m).(map[string][]int)
	require.Equal(t, reflect.ValueOf(m).UnsafePointer(), reflect.ValueOf(got).UnsafePointer(), "the same map, not a copy")
}

// A value with nothing to fix costs no allocation, whatever its depth,
// except one scratch value per map of values larger than a pointer.
// Not parallel: AllocsPerRun refuses to run in a parallel test.
func TestEmptyNilsNoAllocs(t *testing.T) {
	tests := []struct {
		name   string
		typ    reflect.Type
		v      any
		allocs float64
	}{
		{"struct", reflect.TypeFor[emptyLeaf](), emptyLeaf{Tags: []string{"a"}}, 0},
		{"nested", reflect.TypeFor[emptyMid](), emptyMid{Leaf: emptyLeaf{Tags: []string{}}, Leaves: []emptyLeaf{{Tags: []string{}}}, Ptr: &emptyLeaf{Tags: []string{}},
			ByKey: map[string]emptyLeaf{}, Pair: [2]emptyLeaf{{Tags: []string{}}, {Tags: []string{}}}}, 0},
		{"pointers", reflect.TypeFor[[]*emptyLeaf](), []*emptyLeaf{{Tags: []string{}}, nil}, 0},
		{"map", reflect.TypeFor[map[string]emptyLeaf](), map[string]emptyLeaf{"a": {Tags: []string{}}, "b": {Tags: []string{}}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fix := EmptyNils(tt.typ)
			require.Equal(t, tt.allocs, testing.AllocsPerRun(100, func() { _ = fix(tt.v) }))
		})
	}
}

// Output schemas declare lists and maps as "array" and "object", not
// nullable, at every depth; a pointer is what makes one nullable. Input
// schemas are as they were.
func TestEmptyNilsSchema(t *testing.T) {
	t.Parallel()
	type leaf struct {
		Tags []string `json:"tags"`
	}
	type io struct {
		List     []int            `json:"list"`
		Map      map[string]int   `json:"map"`
		Nested   leaf             `json:"nested"`
		Items    []leaf           `json:"items"`
		Ptr      *leaf            `json:"ptr"`
		PtrList  *[]int           `json:"ptrList"`
		PtrMap   *map[string]int  `json:"ptrMap"`
		Lists    map[string][]int `json:"lists"`
		Grid     [][]int          `json:"grid"`
		Bytes    []byte           `json:"bytes"`
		Optional []int            `json:"optional,omitempty"`
	}
	const leafJSON = `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}}},"required":["tags"],"additionalProperties":false}`
	const leafOrNull = `{"type":["object","null"],"properties":{"tags":{"type":"array","items":{"type":"string"}}},"required":["tags"],"additionalProperties":false}`
	want := map[string]string{
		"list":     `{"type":"array","items":{"type":"integer"}}`,
		"map":      `{"type":"object","additionalProperties":{"type":"integer"}}`,
		"nested":   leafJSON,
		"items":    `{"type":"array","items":` + leafJSON + `}`,
		"ptr":      leafOrNull,
		"ptrList":  `{"type":["array","null"],"items":{"type":"integer"}}`,
		"ptrMap":   `{"type":["object","null"],"additionalProperties":{"type":"integer"}}`,
		"lists":    `{"type":"object","additionalProperties":{"type":"array","items":{"type":"integer"}}}`,
		"grid":     `{"type":"array","items":{"type":"array","items":{"type":"integer"}}}`,
		"bytes":    `{"type":"string","contentEncoding":"base64"}`,
		"optional": `{"type":"array","items":{"type":"integer"}}`,
	}
	for _, which := range []string{"In", "Out"} {
		s := inferSchema("empty_schema", which, reflect.TypeFor[io]())
		for _, p := range s.root.props {
			t.Run(which+"/"+p.name, func(t *testing.T) {
				t.Parallel()
				require.JSONEq(t, want[p.name], string(p.schema.appendJSON(nil)))
			})
		}
	}
	// The root map of an Out is an object too.
	require.JSONEq(t, `{"type":"object","additionalProperties":{"type":"array","items":{"type":"string"}}}`,
		string(inferSchema("empty_map", "Out", reflect.TypeFor[map[string][]string]()).JSON()))
}

// What EmptyNils returns validates against the output schema inferred
// from the same type, with jsonschema/v6.
func TestEmptyNilsValidates(t *testing.T) {
	t.Parallel()
	type out struct {
		Mid   emptyMid                `json:"mid"`
		Mids  []*emptyMid             `json:"mids"`
		Lists map[string][]int        `json:"lists"`
		Deep  map[string]*[]emptyLeaf `json:"deep"`
		Bytes []byte                  `json:"bytes"`
	}
	s := inferSchema("empty_valid", "Out", reflect.TypeFor[out]())
	fix := EmptyNils(reflect.TypeFor[out]())
	tests := []struct {
		name string
		in   out
	}{
		{"zero", out{}},
		{"nested", out{Mids: []*emptyMid{{}, nil}, Lists: map[string][]int{"a": nil}, Deep: map[string]*[]emptyLeaf{"n": nil, "e": new([]emptyLeaf)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := decodeArguments([]byte(marshalJSON(t, fix(tt.in))))
			require.NoError(t, err)
			require.NoError(t, s.ValidateReference(v))
			raw, err := decodeArguments([]byte(marshalJSON(t, tt.in)))
			require.NoError(t, err)
			require.Error(t, s.ValidateReference(raw), "without EmptyNils the nulls do not validate")
		})
	}
}
