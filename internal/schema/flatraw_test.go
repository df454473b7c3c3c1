package schema

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// FuzzCheckFlat holds the raw path of flat arguments (CheckFlat,
// FillFlatRaw) to the map path (decodeArguments, DropNulls, validate,
// MissingDefaults, FillFlat), which is itself held to jsonschema/v6 and
// encoding/json by FuzzValidate and FuzzDecodeIn:
//
//	go test -run '^$' -fuzz '^FuzzCheckFlat$' -fuzztime 3m ./internal/schema/

// rawFlatIn has a flat field for each keyword CheckFlat checks.
type rawFlatIn struct {
	Title string  `json:"title" minLength:"1" maxLength:"8" pattern:"^[^x]*$"`
	Kind  string  `json:"kind,omitempty" enum:"text|code|<b>|é"`
	Limit int     `json:"limit,omitempty" minimum:"1" maximum:"50" default:"10"`
	Ratio float64 `json:"ratio,omitempty" minimum:"0.5" maximum:"1e1"`
	Small int8    `json:"small,omitempty"`
	U     uint16  `json:"u,omitempty" default:"7"`
	F32   float32 `json:"f32,omitempty"`
	On    bool    `json:"on,omitempty" default:"true"`
	Day   string  `json:"day,omitempty" format:"date"`
	Exact float64 `json:"exact,omitempty" enum:"1|2.5|1e3"`
}

// rawBase is embedded in rawEmbeddedIn: its fields sit at offsets within
// it.
type rawBase struct {
	Pad   [3]byte `json:"-"`
	Title string  `json:"title" minLength:"1"`
	Limit int     `json:"limit,omitempty" default:"10"`
}

type rawEmbeddedIn struct {
	On bool `json:"on,omitempty"`
	rawBase
	U uint16 `json:"u,omitempty"`
}

var rawFlatSchemas = []*compiledSchema{
	inferSchema("raw_flat", "In", reflect.TypeFor[rawFlatIn]()),
	inferSchema("fuzz_flat", "In", reflect.TypeFor[FuzzFlatIn]()),
	inferSchema("raw_embedded", "In", reflect.TypeFor[rawEmbeddedIn]()),
}

var rawFlatTypes = []reflect.Type{reflect.TypeFor[rawFlatIn](), reflect.TypeFor[FuzzFlatIn](), reflect.TypeFor[rawEmbeddedIn]()}

// An embedded struct's fields are filled at their offsets within it.
func TestRawFlatEmbedded(t *testing.T) {
	t.Parallel()
	cs := rawFlatSchemas[2]
	require.True(t, cs.RawFlat())
	raw := []byte(`{"title":"ab","u":7,"on":true}`)
	fill, ok := cs.CheckFlat(raw)
	require.True(t, ok)
	var in rawEmbeddedIn
	require.True(t, cs.FillFlatRaw(unsafe.Pointer(&in), raw, fill))
	require.Equal(t, rawEmbeddedIn{On: true, rawBase: rawBase{Title: "ab", Limit: 10}, U: 7}, in)
}

var rawFlatSeeds = []string{
	`{"title":"a"}`, ` { "title" : "ab" , "limit" : 50 } `, `{"title":"a","limit":51}`, `{"title":"a","limit":0}`,
	`{"title":"a","limit":1.0}`, `{"title":"a","limit":5e1}`, `{"title":"a","limit":null}`, `{"title":null}`,
	`{"title":"a","ratio":0.5}`, `{"title":"a","ratio":0.49999999999999999999}`, `{"title":"a","ratio":1e400}`,
	`{"title":"a","small":127}`, `{"title":"a","small":128}`, `{"title":"a","u":65536}`, `{"title":"a","u":-1}`,
	`{"title":"a","f32":3.5e38}`, `{"title":"a","on":false}`, `{"title":"a","on":"true"}`, `{"title":"a","day":"2024-02-29"}`,
	`{"title":"a","day":"2023-02-29"}`, `{"title":"a","kind":"<b>"}`, `{"title":"a","kind":"\u003cb\u003e"}`, `{"title":"a","kind":"é"}`,
	`{"title":"a","exact":2.5}`, `{"title":"a","exact":2.50}`, `{"title":"a","exact":1000}`, `{"title":"x"}`, `{"title":"éééééééé"}`,
	`{"title":"ééééééééé"}`, `{"title":"a","title":"b"}`, `{"title":"a","TITLE":"b"}`, `{"title":"a","other":1}`, `{"title":"a"}x`,
	`{"title":"a",}`, `{"title":"a"`, `{"title":"a\n"}`, `{"title":"` + "\xff" + `"}`, `{}`, `[]`, `{"mode":"a","count":100}`,
	`{"mode":"c"}`, `{"mode":"a","count":-1}`, `{"mode":"a","small":-129}`, `{"mode":"a","u":1,"f32":-0}`, `{"mode":"b","ratio":-0.0e-0}`,
	`{"mode":"a","count":01}`, `{"mode":"a","count":1.}`, `{"mode":"a","count":-}`, `{"mode":"a","on":tru}`, `{"mode":"a","on":null}`,
}

func FuzzCheckFlat(f *testing.F) {
	for _, s := range append(rawFlatSeeds, ValidateSeeds...) {
		for i := range rawFlatSchemas {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(checkFlatRaw)
}

func TestCheckFlatSeeds(t *testing.T) {
	t.Parallel()
	for _, s := range append(rawFlatSeeds, ValidateSeeds...) {
		for i := range rawFlatSchemas {
			checkFlatRaw(t, uint8(i), []byte(s))
		}
	}
}

// The raw path must take the arguments models usually send, or it buys
// nothing; and it declines what it does not decide.
func TestCheckFlatTakesCommonArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		schema int
		args   string
		ok     bool
		fill   uint64
	}{
		{0, `{"title":"ab","kind":"code","limit":50,"ratio":0.5,"on":false,"day":"2024-02-29"}`, true, 1 << 1}, // u's default
		{0, `{"title":"ab"}`, true, 1<<0 | 1<<1 | 1<<2},                                                        // limit, u, on
		{0, ` {"title": "ab", "limit": null} `, true, 1<<0 | 1<<1 | 1<<2},                                      // null means absent
		{1, `{"mode":"a","count":10,"ratio":1.5,"on":true}`, true, 0},
		{0, `{"title":"a\u0062"}`, false, 0}, // escapes: the map path
		{0, `{"title":"ab","other":1}`, false, 0},
		{0, `{"title":"ab","title":"cd"}`, false, 0},
		{0, `{"title":"x"}`, false, 0}, // invalid: the map path says why
	} {
		fill, ok := rawFlatSchemas[tc.schema].CheckFlat([]byte(tc.args))
		require.Equal(t, tc.ok, ok, tc.args)
		require.Equal(t, tc.fill, fill, tc.args)
	}
}

// checkFlatRaw: what CheckFlat accepts, the map path accepts with the same
// missing defaults, and FillFlatRaw fills In as FillFlat and SetDefaults
// do.
func checkFlatRaw(t *testing.T, sel uint8, data []byte) {
	cs := rawFlatSchemas[int(sel)%len(rawFlatSchemas)]
	fill, ok := cs.CheckFlat(data)
	if !ok {
		return
	}
	v, err := decodeArguments(data)
	require.NoError(t, err, "CheckFlat accepted %s, which does not decode", data)
	cs.root.dropNulls(v)
	require.NoError(t, cs.validate(v), "CheckFlat accepted %s, which validate refuses", data)
	require.Equal(t, cs.missingDefaults(v), fill, "missing defaults of %s", data)

	typ := rawFlatTypes[int(sel)%len(rawFlatSchemas)]
	got, want := reflect.New(typ), reflect.New(typ)
	gotOK := cs.FillFlatRaw(got.UnsafePointer(), data, fill)
	wantOK := cs.fillFlat(want.Interface(), v.(map[string]any))
	cs.setDefaults(want.Interface(), fill)
	require.Equal(t, wantOK, gotOK, "FillFlatRaw and FillFlat disagree on %s", data)
	if wantOK {
		require.Equal(t, want.Elem().Interface(), got.Elem().Interface(), "for %s", data)
	}
}
