package signkey_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/internal/signkey"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		key  []byte
		msg  string // "" if accepted
	}{
		{"nil: a random key", nil, ""},
		{"empty: a random key", []byte{}, ""},
		{"one byte", []byte("k"), "x: Options.Key is too short (1 of at least 16 bytes): a short key is found by trying every value against one token it signed; make one of 32 random bytes (crypto/rand.Read), kept secret and the same on every replica"},
		{"fifteen bytes", make([]byte, 15), "x: Options.Key is too short (15 of at least 16 bytes): a short key is found by trying every value against one token it signed; make one of 32 random bytes (crypto/rand.Read), kept secret and the same on every replica"},
		{"sixteen bytes", make([]byte, signkey.MinLen), ""},
		{"thirty-two bytes", make([]byte, 32), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := signkey.Check("x: Options.Key", tt.key)
			if tt.msg == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.msg)
		})
	}
}
