package schema

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkValidate runs the fast validation path (compiledSchema.validate,
// which the arguments below all pass) and jsonschema/v6 alone on the same
// small argument objects, in the same run:
//
//	go test -run '^$' -bench '^BenchmarkValidate$' -benchmem -count 6 .
//
// The fast path earns its place only where it is the faster of the two.
func BenchmarkValidate(b *testing.B) {
	type getIn struct {
		NoteID   string `json:"noteId" desc:"ID of the note to read."`
		MaxChars int    `json:"maxChars,omitempty" default:"4000" minimum:"1" maximum:"100000"`
	}
	type searchIn struct {
		Query string  `json:"query" minLength:"1" maxLength:"200"`
		Limit int     `json:"limit,omitempty" default:"10" minimum:"1" maximum:"50"`
		Kind  string  `json:"kind,omitempty" enum:"text|code|book"`
		Score float64 `json:"score,omitempty" minimum:"0" maximum:"1"`
	}
	type dueIn struct {
		Title string    `json:"title" minLength:"1"`
		Due   time.Time `json:"due"`
	}
	cases := []struct {
		name   string
		schema *compiledSchema
		args   string
	}{
		{"get", inferSchema("bench_get", "In", reflect.TypeFor[getIn]()), `{"noteId":"n1abc","maxChars":4000}`},
		{"search", inferSchema("bench_search", "In", reflect.TypeFor[searchIn]()), `{"query":"meeting notes","limit":10,"kind":"text","score":0.5}`},
		{"date-time", inferSchema("bench_due", "In", reflect.TypeFor[dueIn]()), `{"title":"Plan","due":"2026-01-02T15:04:05Z"}`},
	}
	for _, c := range cases {
		v, err := decodeArguments([]byte(c.args))
		require.NoError(b, err)
		require.True(b, c.schema.root.accepts(v), c.args)
		b.Run(c.name+"/path=fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.schema.validate(v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/path=jsonschema", func(b *testing.B) {
			sch, err := c.schema.schema()
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if err := sch.Validate(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEmptyNils measures what EmptyNils adds to encoding a result of
// 20 items with a list each: a walk that finds nothing to fix ("set"), and
// one that copies to fix every item ("nil"), against json.Marshal alone:
//
//	go test -run '^$' -bench '^BenchmarkEmptyNils$' -benchmem -count 6 .
func BenchmarkEmptyNils(b *testing.B) {
	type item struct {
		ID   int      `json:"id"`
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}
	type out struct {
		Items []item `json:"items"`
	}
	fix := EmptyNils(reflect.TypeFor[out]())
	set, unset := out{}, out{}
	for i := range 20 {
		set.Items = append(set.Items, item{ID: i, Name: "item", Tags: []string{"a"}})
		unset.Items = append(unset.Items, item{ID: i, Name: "item"})
	}
	for _, c := range []struct {
		name string
		v    any
	}{{"set", set}, {"nil", unset}} {
		b.Run(c.name+"/marshal", func(b *testing.B) {
			for b.Loop() {
				if _, err := json.Marshal(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/emptynils+marshal", func(b *testing.B) {
			for b.Loop() {
				if _, err := json.Marshal(fix(c.v)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFirstRefusal measures what lazy compilation moves from the
// definition to the first call the fast path declines: that call
// ("first": the schema defined and then compiled on the refusal) against a
// refusal by a schema already compiled ("compiled"), and the definition
// alone ("define"), on fuzzIn, a schema with a field for every keyword:
//
//	go test -run '^$' -bench '^BenchmarkFirstRefusal$' -benchmem -count 6 .
func BenchmarkFirstRefusal(b *testing.B) {
	typ := reflect.TypeFor[fuzzIn]()
	v, err := decodeArguments([]byte(`{"title":"","limit":51}`))
	require.NoError(b, err)
	b.Run("define", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			inferSchema("bench_first", "In", typ)
		}
	})
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			cs := inferSchema("bench_first", "In", typ)
			b.StartTimer()
			if cs.validate(v) == nil {
				b.Fatal("accepted")
			}
		}
	})
	b.Run("compiled", func(b *testing.B) {
		cs := inferSchema("bench_first", "In", typ)
		require.Error(b, cs.validate(v))
		b.ReportAllocs()
		for b.Loop() {
			if cs.validate(v) == nil {
				b.Fatal("accepted")
			}
		}
	})
}
