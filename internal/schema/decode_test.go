package schema

import (
	"testing"

	"github.com/stretchr/testify/require"
)

var decodeSeeds = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e-3`, `-12E+2`, `"x"`,
	`{"id": 1, "maxChars": 40}`, ` {"a":[1,"b",{"c":null}],"d":true} `,
	`{"s":"tab\tnew\nline \"q\" \\ \/ \u00e9 \ud83d\ude00 \b\f\r"}`,
	`{"dup":1,"dup":2}`, `{"nested":{"deeper":{"deepest":[[[]]]}}}`,
	`{"bad":01}`, `{"bad":1.}`, `{"bad":.5}`, `{"bad":-}`, `{"bad":1e}`, `{"a":1,}`, `[1,]`, `{"a" 1}`,
	`{"lone":"\ud800"}`, `{"lone":"\udc00x"}`, "{\"ctl\":\"a\x01b\"}", "{\"utf8\":\"\xff\"}", `{"esc":"\x"}`,
	`{"u":"\u12"}`, `{} {}`, `{}}`, `{}]`, `{} ]`, `[]}`, `{}x`, `"unterminated`, `{"a":tru}`, `nul`, ``, `   `,
	"{\"é\":\"ü\"}", `{"a":"\u0000"}`,
}

func TestFastDecodeAgrees(t *testing.T) {
	t.Parallel()
	for _, s := range decodeSeeds {
		checkFastDecode(t, []byte(s))
	}
}

func FuzzFastDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkFastDecode)
}

// checkFastDecode: whenever fastDecode accepts b, encoding/json accepts it
// too and decodes the same value; and decodeArguments, fast path and all,
// accepts exactly what encoding/json does, with the same value.
func checkFastDecode(t *testing.T, b []byte) {
	want, wantOK := ReferenceDecode(b)
	args, err := decodeArguments(b)
	require.Equal(t, wantOK, err == nil, "decodeArguments says %v for %q", err, b)
	if wantOK {
		require.Equal(t, want, args, "decodeArguments, input %q", b)
	}
	got, ok := fastDecode(b)
	if !ok {
		return
	}
	require.True(t, wantOK, "fastDecode accepted %q, which encoding/json refuses", b)
	require.Equal(t, want, got, "input %q", b)
}

// The fast path must take the inputs models usually send, or it buys
// nothing.
func TestFastDecodeTakesCommonInput(t *testing.T) {
	t.Parallel()
	for _, s := range []string{`{}`, `{"id": 1, "maxChars": 40}`, ` {"a":[1,"b",{"c":null}],"d":true} `,
		`{"s":"tab\tnew\nline \"q\" \\ \/ \u00e9 \ud83d\ude00"}`, "{\"é\":\"ü\"}", `{"n":-12.5e+3}`} {
		_, ok := fastDecode([]byte(s))
		require.True(t, ok, s)
	}
}
