package schema

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeArguments takes exactly one JSON value, numbers as json.Number,
// and refuses anything after it with encoding/json's own message.
func TestDecodeArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want any
		err  string
	}{
		{`{}`, map[string]any{}, ""},
		{` {"id": 1, "r": -1.5e-3, "a":[true,"b",{"c":null}]} `, map[string]any{
			"id": json.Number("1"), "r": json.Number("-1.5e-3"), "a": []any{true, "b", map[string]any{"c": nil}},
		}, ""},
		{`{"dup":1,"dup":2}`, map[string]any{"dup": json.Number("2")}, ""},
		{`{"s":"\u00e9\ud83d\ude00"}`, map[string]any{"s": "é😀"}, ""},
		{`[]`, []any{}, ""},
		{``, nil, "EOF"},
		{`{}}`, nil, "invalid character '}' after top-level value"},
		{`{} {}`, nil, "invalid character '{' after top-level value"},
		{`{"a":1,}`, nil, "invalid character '}' looking for beginning of object key string"},
		{`{"a":01}`, nil, "invalid character '1' after object key:value pair"},
		{`{"a":tru}`, nil, "invalid character '}' in literal true (expecting 'e')"},
		{`{"a":"x`, nil, "unexpected EOF"},
	}
	for _, tc := range tests {
		got, err := decodeArguments([]byte(tc.in))
		if tc.err != "" {
			require.EqualError(t, err, tc.err, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
	}
}
