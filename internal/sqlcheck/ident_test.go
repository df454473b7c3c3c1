package sqlcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// QuoteIdent's output scans back as one quoted identifier with the name.
func TestQuoteIdent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, want string }{
		{"notes", `"notes"`},
		{`a"b`, `"a""b"`},
		{`""`, `""""""`},
		{"", `""`},
		{"Mixed Case; DROP", `"Mixed Case; DROP"`},
	} {
		got := QuoteIdent(tc.name)
		require.Equal(t, tc.want, got)
		require.Equal(t, tc.name, token{kind: tQuoted, text: got}.unquoted())
	}
}
