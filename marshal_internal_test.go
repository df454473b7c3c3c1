package llmtool

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// marshal writes compact JSON without HTML escaping and without the
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
			got, err := marshal(tc.v)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}
