package mcpadapter

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// integralSeeds are JSON numbers and whether they are integers.
var integralSeeds = []struct {
	num  string
	want bool
}{
	{"0", true}, {"-0", true}, {"0.0", true}, {"0e5", true}, {"42", true}, {"-7", true},
	{"99999999999999999999999", true}, {"3.0", true}, {"-3.000", true}, {"1e3", true},
	{"1E+3", true}, {"100e-2", true}, {"0.001e3", true}, {"120e-1", true},
	{"1e999999999999999999999", true}, {"0e-999999999999999999999", true},
	{"1.5", false}, {"25e-1", false}, {"-0.25", false}, {"1.0000000000000001", false},
	{"1e-400", false}, {"0.0015e3", false}, {"125e-2", false}, {"5e-999999999999999999999", false},
}

// TestIntegral checks integral on numbers that a float64 reads wrong or
// whose exponent no int holds.
func TestIntegral(t *testing.T) {
	t.Parallel()
	for _, tt := range integralSeeds {
		require.Equal(t, tt.want, integral(tt.num), tt.num)
	}
}

// FuzzIntegral is the differential test of integral: for any JSON number
// whose exponent math/big can expand, it answers as big.Rat's IsInt does.
func FuzzIntegral(f *testing.F) {
	for _, tt := range integralSeeds {
		f.Add(tt.num)
	}
	f.Fuzz(func(t *testing.T, num string) {
		if num == "" || !strings.ContainsAny(num[:1], "-0123456789") || num != strings.TrimSpace(num) || !json.Valid([]byte(num)) {
			return // not a JSON number as encoding/json hands over an id: no space around it
		}
		if _, exp, ok := strings.Cut(strings.ToLower(num), "e"); ok && len(strings.TrimLeft(exp, "+-0")) > 4 {
			return // 10 to that power is too large for big.Rat to make in a test
		}
		r, ok := new(big.Rat).SetString(num)
		require.True(t, ok, num)
		require.Equal(t, r.IsInt(), integral(num), num)
	})
}

// BenchmarkCheckMessage is what the check costs each POST and stdio line:
// a tools/call of a few arguments, and one of a 64 KiB argument.
func BenchmarkCheckMessage(b *testing.B) {
	for _, tt := range []struct{ name, args string }{
		{"small", `{"id":1,"title":"Hello"}`},
		{"64KiB", `{"body":"` + strings.Repeat("x", 64<<10) + `"}`},
	} {
		msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_note","arguments":` + tt.args + `}}`)
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if _, bad := checkMessage(msg); bad != nil {
					b.Fatal(bad.message)
				}
			}
		})
	}
}
