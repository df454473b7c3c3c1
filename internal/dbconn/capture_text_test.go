package dbconn

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEncodeSQLiteText: text is a JSON string when it is valid UTF-8, a
// NUL byte included, and {"$text": base64} of its bytes when it is not;
// each decodes to the same bytes, as a string (bound as TEXT), and values
// recorded before $text existed decode as they did.
func TestEncodeSQLiteText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		value any
		json  string
	}{
		{"text", "plain", `"plain"`},
		{"a NUL byte", "a\x00b", `"a\u0000b"`},
		{"HTML and line separators", "<&>\u2028", `"<&>\u2028"`},
		{"not UTF-8", "\xc3(\xff", `{"$text":"wyj/"}`},
		{"not UTF-8, a NUL byte", "\xc3\x00\xff", `{"$text":"wwD/"}`},
		{"blob", []byte{0xc3, 0x28, 0xff}, `{"$bytes":"wyj/"}`},
		{"integer", int64(7), `7`},
		{"real", 1.0, `1.0`},
		{"null", nil, `null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw, err := EncodeSQLite(tc.value, 1<<10)
			require.NoError(t, err)
			require.Equal(t, tc.json, string(raw))
			back, err := DecodeSQLite(raw)
			require.NoError(t, err)
			require.Equal(t, tc.value, back)
			require.True(t, json.Valid(raw))
		})
	}
	big, err := EncodeSQLite("\xff\xff", 1)
	require.ErrorIs(t, err, errTooLarge)
	require.Equal(t, `{"$omitted":2}`, string(big), "text not valid UTF-8 over the limit is omitted too")
	_, err = DecodeSQLite(big)
	require.EqualError(t, err, "a value that was not recorded")
	_, err = DecodeSQLite(json.RawMessage(`{"$text":"not base64!"}`))
	require.EqualError(t, err, "illegal base64 data at input byte 3")
}
