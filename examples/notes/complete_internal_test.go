package notes

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestIDsWithPrefix runs on both engines: the range query gives exactly
// the live IDs with the prefix, case-sensitively, LIKE's wildcards taken
// literally, in byte order, bounded by limit.
func TestIDsWithPrefix(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		db := openStore(t, engine)
		ctx := t.Context()
		for _, id := range []string{"r%x", "r_y", "rz", "ro\U0010FFFF", "ro\U0010FFFFz", "é1"} {
			_, err := db.ExecContext(ctx, `INSERT INTO notes (noteId, title) VALUES ($1, $2)`, id, "T "+id)
			require.NoError(t, err)
		}
		_, err := DeleteNote(ctx, db, "recipes") // and pancakes with it
		require.NoError(t, err)
		tests := []struct {
			prefix string
			limit  int
			want   []string
		}{
			{"", 100, []string{"_globalNoteMap", "_hidden", "_lbRoot", "_share", "meetings", "projects", "r%x", "r_y", "roadmap", "root", "ro\U0010FFFF", "ro\U0010FFFFz", "rz", "secret", "é1"}},
			{"r", 100, []string{"r%x", "r_y", "roadmap", "root", "ro\U0010FFFF", "ro\U0010FFFFz", "rz"}},
			{"ro", 2, []string{"roadmap", "root"}},
			{"ro", 100, []string{"roadmap", "root", "ro\U0010FFFF", "ro\U0010FFFFz"}},
			{"ro\U0010FFFF", 100, []string{"ro\U0010FFFF", "ro\U0010FFFFz"}},
			{"r%", 100, []string{"r%x"}},
			{"r_", 100, []string{"r_y"}},
			{"R", 100, []string{}},
			{"rec", 100, []string{}}, // deleted
			{"é", 100, []string{"é1"}},
			{"_", 3, []string{"_globalNoteMap", "_hidden", "_lbRoot"}},
			{"root", 0, []string{}},
		}
		for _, tt := range tests {
			got, err := IDsWithPrefix(ctx, db, tt.prefix, tt.limit)
			require.NoError(t, err, tt.prefix)
			require.Equal(t, tt.want, got, "prefix %q, limit %d", tt.prefix, tt.limit)
		}
	})
}

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefix, end string
		ok          bool
	}{
		{"", "", false},
		{"a", "b", true},
		{"ro", "rp", true},
		{"_", "`", true},
		{"z", "{", true},
		{"é", "ê", true},
		{"a\uD7FF", "a\uE000", true}, // over the surrogates
		{"a\U0010FFFF", "", false},
		{"a\xff", "", false},
	}
	for _, tt := range tests {
		end, ok := prefixEnd(tt.prefix)
		require.Equal(t, tt.ok, ok, "%q", tt.prefix)
		require.Equal(t, tt.end, end, "%q", tt.prefix)
		if ok {
			require.True(t, utf8.ValidString(end), "%q", end)
			require.Greater(t, end, tt.prefix+"\U0010FFFF", "above every string with the prefix")
		}
	}
}
