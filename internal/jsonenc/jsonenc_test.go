package jsonenc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Marshal writes compact JSON without HTML escaping and without the
// Encoder's newline.
func TestMarshal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    any
		want string
		err  string
	}{
		{name: "object", v: map[string]any{"b": "<&>", "a": 1}, want: `{"a":1,"b":"<&>"}`},
		{name: "string", v: "é\u2028", want: `"é\u2028"`},
		{name: "list", v: []int{1, 2}, want: `[1,2]`},
		{name: "unsupported", v: func() {}, err: "json: unsupported type: func()"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Marshal(tc.v)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}

// AppendString appends to what b holds, escaping as encoding/json does
// but for HTML.
func TestAppendString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain text.", `"plain text."`},
		{`a"b\c`, `"a\"b\\c"`},
		{"<b>&", `"<b>&"`},
		{"é", `"é"`},
		{"\x00\n\t\x7f", `"\u0000\n\t` + "\x7f" + `"`},
		{"\u2028\u2029", `"\u2028\u2029"`},
		{"\xff", `"\ufffd"`},
		{"tool_use_id", `"tool_use_id"`},
		{" !#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~", `" !#$%&'()*+,-./09:;<=>?@AZ[]^_` + "`" + `az{|}~"`},
	} {
		require.Equal(t, `x`+tc.want, string(AppendString([]byte("x"), tc.in)), "%q", tc.in)
	}
}

// FuzzAppendString holds AppendString's shortcut for plain ASCII to what
// encoding/json writes.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "role", "tool_use_id", `a"b`, `a\b`, "\x7f", "\x1f", "é", "\xff", "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendString(nil, s)))
	})
}
