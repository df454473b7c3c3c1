package llmtool

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// referenceMarshal is what marshal must give: encoding/json's Encoder with
// HTML escaping off, without its newline, in memory of its own.
func referenceMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// checkMarshal encodes vs one after another with marshal, checks each
// against the reference, then checks that no later encoding changed an
// earlier result (a large result leaves the pool with its buffer; a small
// one is copied out of the pooled buffer).
func checkMarshal(t testing.TB, vs ...any) {
	var got, want [][]byte
	for _, v := range vs {
		g, err := marshal(v)
		require.NoError(t, err)
		w, err := referenceMarshal(v)
		require.NoError(t, err)
		require.Equal(t, string(w), string(g))
		got, want = append(got, g), append(want, w)
	}
	for i := range got {
		require.Equal(t, string(want[i]), string(got[i]), "result %d changed after later encodings", i)
	}
}

func TestMarshalMatchesEncoder(t *testing.T) {
	t.Parallel()
	big := func(s string) map[string]any {
		return map[string]any{"items": strings.Split(strings.Repeat(s+",", 40_000), ",")}
	}
	for _, tc := range []struct {
		name string
		vs   []any
	}{
		{"small", []any{map[string]any{"a": 1}, map[string]any{"b": "<&>"}}},
		{"large then large", []any{big("one"), big("two")}},
		{"large then small then large", []any{big("x<y>"), "small", big("z&w")}},
		{"small then large then small", []any{[]int{1, 2}, big("é\u2028"), []int{3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkMarshal(t, tc.vs...)
		})
	}
	_, err := marshal(func() {})
	require.EqualError(t, err, "json: unsupported type: func()")
}

// FuzzMarshal: whatever the value and its size (around the pooled buffer's
// limit), marshal gives the reference's bytes, and later encodings do not
// change them.
func FuzzMarshal(f *testing.F) {
	f.Add("abc", uint16(10), "<&>")
	f.Add("item number 1", uint16(5000), "")
	f.Add("\u2028é\x00", uint16(30000), "\xff")
	f.Fuzz(func(t *testing.T, s string, n uint16, other string) {
		a := map[string]any{"s": strings.Repeat(s, int(n)), "o": other}
		b := []string{other, s}
		checkMarshal(t, a, b, a, other)
	})
}
