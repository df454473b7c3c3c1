package llmtool

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// FuzzFlatOut holds flatOut to encoding/json: the same bytes whenever it
// encodes, and it encodes the common values:
//
//	go test -run '^$' -fuzz '^FuzzFlatOut$' -fuzztime 3m .

type outName string

type flatOutAll struct {
	S     string  `json:"s"`
	SO    string  `json:"so,omitempty"`
	B     bool    `json:"b"`
	BO    bool    `json:"bo,omitempty"`
	I     int     `json:"i"`
	I8    int8    `json:"i8,omitempty"`
	I16   int16   `json:"i16"`
	I32   int32   `json:"i32,omitempty"`
	I64   int64   `json:"i64,omitzero"`
	U     uint    `json:"u"`
	U8    uint8   `json:"u8,omitempty"`
	U16   uint16  `json:"u16"`
	U32   uint32  `json:"u32"`
	U64   uint64  `json:",omitempty"`
	F32   float32 `json:"f32"`
	F64   float64 `json:"f64,omitzero"`
	F64E  float64 `json:"f64e,omitempty"`
	F64EZ float64 `json:"f64ez,omitempty,omitzero"`
	NoTag string
	Named outName `json:"named"`
	Dash  string  `json:"-"`
	skip  string
}

var flatOutAllEnc = newFlatOut(reflect.TypeFor[flatOutAll]())

func fillFlatOutAll(s string, n int64, u uint64, f float64, g uint32, b bool) flatOutAll {
	return flatOutAll{
		S: s, SO: s, B: b, BO: b, I: int(n), I8: int8(n), I16: int16(n), I32: int32(n), I64: n,
		U: uint(u), U8: uint8(u), U16: uint16(u), U32: uint32(u), U64: u,
		F32: math.Float32frombits(g), F64: f, F64E: f, F64EZ: -f, NoTag: s + "!", Named: outName(s), Dash: "x", skip: "y",
	}
}

func checkFlatOut(t *testing.T, s string, n int64, u uint64, f float64, g uint32, b bool) {
	v := fillFlatOutAll(s, n, u, f, g, b)
	want, wantErr := referenceMarshal(v)
	got, ok := flatOutAllEnc.encode(unsafe.Pointer(&v))
	if wantErr != nil {
		require.False(t, ok, "flatOut encoded what encoding/json refuses (%v): %s", wantErr, got)
		return
	}
	if ok {
		require.Equal(t, string(want), string(got))
	}
}

func FuzzFlatOut(f *testing.F) {
	for _, s := range []string{"", "apple", "é", "a\"b", "a\\b", "\n", "<b>&", "\u2028", "\xff", "日本"} {
		for _, x := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-7, 1e21, 123456789.125, math.NaN(), math.Inf(1), 5e-324} {
			f.Add(s, int64(-3), uint64(7), x, math.Float32bits(float32(x)), true)
		}
	}
	f.Add("", int64(0), uint64(0), 0.0, uint32(0), false)
	f.Add("x", int64(math.MinInt64), uint64(math.MaxUint64), math.MaxFloat64, math.Float32bits(math.MaxFloat32), false)
	f.Fuzz(checkFlatOut)
}

func TestFlatOutTakesCommonValues(t *testing.T) {
	t.Parallel()
	for _, v := range []flatOutAll{
		fillFlatOutAll("apple", 3, 4, 0.5, math.Float32bits(1.25), true),
		fillFlatOutAll("", 0, 0, 0, 0, false),
		fillFlatOutAll("日本", -9, 1<<40, 1e30, math.Float32bits(1e-9), false),
	} {
		want, err := referenceMarshal(v)
		require.NoError(t, err)
		got, ok := flatOutAllEnc.encode(unsafe.Pointer(&v))
		require.True(t, ok, "%+v", v)
		require.Equal(t, string(want), string(got))
	}
	v := fillFlatOutAll("a\"b", 0, 0, 0, 0, false)
	_, ok := flatOutAllEnc.encode(unsafe.Pointer(&v))
	require.False(t, ok, "a string that needs escapes goes to encoding/json")
}

type zeroer int

func (zeroer) IsZero() bool { return true }

type embedded struct{ A int }

func TestNewFlatOutDeclines(t *testing.T) {
	t.Parallel()
	for name, typ := range map[string]reflect.Type{
		"not a struct":  reflect.TypeFor[int](),
		"embedded":      reflect.TypeFor[struct{ embedded }](),
		"pointer field": reflect.TypeFor[struct{ A *int }](),
		"slice field":   reflect.TypeFor[struct{ A []int }](),
		"time field":    reflect.TypeFor[struct{ A time.Time }](),
		"string option": reflect.TypeFor[struct {
			A int `json:"a,string"`
		}](),
		"duplicate names": reflect.StructOf([]reflect.StructField{{Name: "A", Type: reflect.TypeFor[int](), Tag: `json:"x"`}, {Name: "B", Type: reflect.TypeFor[int](), Tag: `json:"x"`}}),
		"name to escape": reflect.TypeFor[struct {
			A int `json:"a<b"`
		}](),
		"omitzero IsZero": reflect.TypeFor[struct {
			A zeroer `json:"a,omitzero"`
		}](),
		"marshals itself":  reflect.TypeFor[json.Number](),
		"raw message kind": reflect.TypeFor[struct{ A json.RawMessage }](),
	} {
		require.Nil(t, newFlatOut(typ), name)
	}
	require.NotNil(t, newFlatOut(reflect.TypeFor[struct {
		A zeroer `json:"a"`
	}]()), "IsZero matters only with omitzero")
}
