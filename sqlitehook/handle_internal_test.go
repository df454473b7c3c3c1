package sqlitehook

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHandleFailsSafe: a connection whose type is not the one Interrupt
// knows (another package, another name, the field renamed or retyped)
// gives no handle, so the registry keeps the driver's watchers.
func TestHandleFailsSafe(t *testing.T) {
	t.Parallel()
	const pkg = "github.com/llmtool/llmtool/sqlitehook"
	type conn struct{ db uintptr }
	type other struct{ db uintptr }
	known := func() any {
		return &conn{db: 42}
	}
	renamed := func() any {
		type conn struct{ handle uintptr }
		return &conn{handle: 42}
	}
	retyped := func() any {
		type conn struct{ db *int }
		return &conn{db: new(int)}
	}
	for _, tc := range []struct {
		name string
		conn any
		pkg  string
		want uintptr
	}{
		{"the known layout", known(), pkg, 42},
		{"another driver's package", known(), "modernc.org/sqlite", 0},
		{"another type name", &other{db: 42}, pkg, 0},
		{"field renamed", renamed(), pkg, 0},
		{"field retyped", retyped(), pkg, 0},
		{"not a pointer", conn{db: 42}, pkg, 0},
		{"nil pointer", (*conn)(nil), pkg, 0},
		{"nil", nil, pkg, 0},
		{"not a struct", new(uintptr), pkg, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, handle(tc.conn, tc.pkg))
		})
	}
}
