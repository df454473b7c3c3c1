package toolname

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	long := "a"
	for len(long) < 65 {
		long += "a"
	}
	for _, tc := range []struct{ name, want string }{
		{"get_note", ""},
		{"", `tool name "" is invalid for MCP (1 to 128 of A-Z a-z 0-9 _ - .); use lower_snake_case such as "get_note"`},
		{"notes.get", `tool name "notes.get" is invalid for OpenAI and Anthropic (^[a-zA-Z0-9_-]{1,64}$); use lower_snake_case such as "get_note"`},
		{long, `tool name "` + long + `" is invalid for OpenAI and Anthropic (^[a-zA-Z0-9_-]{1,64}$); use lower_snake_case such as "get_note"`},
		{"1note", `tool name "1note" is invalid for Gemini (must start with a letter or underscore); use lower_snake_case such as "get_note"`},
	} {
		err := Validate(tc.name)
		if tc.want == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.EqualError(t, err, tc.want, tc.name)
	}
}
