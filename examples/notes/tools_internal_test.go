package notes

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// The store's write functions open their own transaction only when given
// something with BeginTx. llmtool's WriteCtx has none, so inside a write
// tool they run in the call's transaction and roll back with it.
func TestWriteCtxIsNotATxBeginner(t *testing.T) {
	t.Parallel()
	var c any = &llmtool.WriteCtx{}
	_, ok := c.(txBeginner)
	require.False(t, ok)
	var _ Execer = (*llmtool.WriteCtx)(nil)
	var _ Queryer = (*llmtool.ReadCtx)(nil)
}

// TestStoreWritesRollBackWithTheCall: a write tool that creates, moves and
// edits notes through the store and then fails leaves nothing behind, on
// either engine (on PostgreSQL the store's advisory lock is taken in the
// call's SERIALIZABLE transaction and released with it).
func TestStoreWritesRollBackWithTheCall(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		db := openStore(t, engine)
		errLate := errors.New("failed after writing")
		failing := llmtool.Write("failing_write", "Write, then fail.",
			func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) {
				n, err := CreateNote(c, c, RootID, "Doomed", "", "x")
				if err != nil {
					return struct{}{}, err
				}
				if err := MoveNote(c, c, "pancakes", "", n.ID); err != nil {
					return struct{}{}, err
				}
				if err := SetContent(c, c, "roadmap", "gone", SourceModel); err != nil {
					return struct{}{}, err
				}
				return struct{}{}, errLate
			})
		reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: discard()}, llmtool.DefineTools("test", failing))
		require.NoError(t, err)
		t.Cleanup(func() { reg.Close() })
		require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))

		var notesBefore, revsBefore int
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM notes`).Scan(&notesBefore))
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM revisions`).Scan(&revsBefore))
		res := reg.Invoke(ctx, llmtool.Call{Tool: "failing_write"})
		require.True(t, res.IsError)
		require.ErrorIs(t, res.Err, errLate)

		var notesAfter, revsAfter int
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM notes`).Scan(&notesAfter))
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM revisions`).Scan(&revsAfter))
		require.Equal(t, notesBefore, notesAfter)
		require.Equal(t, revsBefore, revsAfter)
		n, err := GetNote(ctx, db, "pancakes")
		require.NoError(t, err)
		require.Equal(t, []NoteRef{{ID: "recipes", Title: "Recipes"}}, n.Parents)
		c, err := GetContent(ctx, db, "roadmap")
		require.NoError(t, err)
		require.Contains(t, c, "Q3 roadmap")
	})
}

// TestToolContextsTellTheEngine: inside a read or a write tool the store
// never assumes SQLite: llmtool's contexts report their engine (Engine), so
// Search and the write lock pick the right SQL on PostgreSQL.
func TestToolContextsTellTheEngine(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		db := openStore(t, engine)
		type out struct {
			Engine string `json:"engine"`
			Known  bool   `json:"known"`
		}
		tell := func(q Queryer) (out, error) {
			e, known, err := engineOf(q)
			return out{Engine: e, Known: known}, err
		}
		read := llmtool.Read("tell_read", "Tell the engine in a read tool.",
			func(c *llmtool.ReadCtx, _ struct{}) (out, error) { return tell(c) })
		write := llmtool.Write("tell_write", "Tell the engine in a write tool.",
			func(c *llmtool.WriteCtx, _ struct{}) (out, error) { return tell(c) })
		reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: discard()}, llmtool.DefineTools("test", read, write))
		require.NoError(t, err)
		t.Cleanup(func() { reg.Close() })
		require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))
		for _, tool := range []string{"tell_read", "tell_write"} {
			res := reg.Invoke(ctx, llmtool.Call{Tool: tool})
			require.False(t, res.IsError, "%s: %v", tool, res.Err)
			require.JSONEq(t, `{"engine": "`+engine+`", "known": true}`, string(res.JSON), tool)
		}
	})
}

func TestCountOccurrences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s, sub string
		want   int
	}{
		{"abc", "x", 0},
		{"abc", "b", 1},
		{"abab", "ab", 2},
		{"aaa", "aa", 2}, // overlapping: ambiguous, so not unique
		{"ééé", "éé", 2},
		{"pancakes in a pan", "pan", 2},
		{"", "a", 0},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, countOccurrences(tt.s, tt.sub), "%q in %q", tt.sub, tt.s)
	}
}

func TestCleanSnippet(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain **word** text", "plain **word** text"},
		{"<p>Whisk **flour**</p>", "Whisk **flour**"},
		{"…li>Write the **plugin** API</li></ul>", "…Write the **plugin** API"},
		{"…the **sync** engine</li><li>Mig…", "…the **sync** engine Mig…"},
		{"start **x** then <a href=\"", "start **x** then…"},
		{"a &amp; **b**", "a & **b**"},
		{"", ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, cleanSnippet(tt.in), tt.in)
	}
}

func TestPreview(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"<h2>Title</h2><p>Body &lt;3</p>", 100, "Title Body <3"},
		{"<p>abcdef</p>", 3, "abc…"},
		{"<p>ab cdef</p>", 3, "ab…"},
		{"<p>éèê</p>", 2, "éè…"},
		{"<p>x</p>", 0, ""},
		{"", 0, ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, preview(tt.in, tt.n), tt.in)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
