package notes_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/examples/notes"
	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/llmtool/llmtool/lint"
	"github.com/llmtool/llmtool/llmtooltest"
)

// seed creates and seeds the note store, as notes.Open does.
func seed(ctx context.Context, db *sql.DB) error {
	if err := notes.Migrate(ctx, db); err != nil {
		return err
	}
	return notes.Seed(ctx, db)
}

// newHarness returns a harness over a freshly seeded note store, with opts
// (nil for the defaults: write tools on); its Schema is always seed.
func newHarness(t *testing.T, opts *llmtooltest.Options) *llmtooltest.Harness {
	t.Helper()
	var o llmtooltest.Options
	if opts != nil {
		o = *opts
	}
	o.Schema = seed
	return llmtooltest.New(t, &o, notes.Tools)
}

// TestHarnessEngine: the spec tests below run on the engine the
// environment selects, PostgreSQL with LLMTOOL_TEST_ENGINE=postgres (and
// LLMTOOL_TEST_POSTGRES), SQLite otherwise, never silently on the other one.
func TestHarnessEngine(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	var version string
	if pgtest.FromEnv() {
		require.Equal(t, notes.EnginePostgres, h.Engine())
		require.NoError(t, h.DB().QueryRowContext(t.Context(), `SELECT version()`).Scan(&version))
		require.True(t, strings.HasPrefix(version, "PostgreSQL "), version)
	} else {
		require.Equal(t, notes.EngineSQLite, h.Engine())
		require.NoError(t, h.DB().QueryRowContext(t.Context(), `SELECT sqlite_version()`).Scan(&version))
	}
	// The seeded store is there, with its engine's full-text index.
	out := h.RequireOK(h.Call("search_notes", `{"query": "pancakes"}`))
	require.Len(t, out["results"], 1)
}

// Messages of the entity guards, which every tool referencing a note gets.
func notFound(id, field string) string {
	return fmt.Sprintf(`Note %q (%s) does not exist. Call search_notes or get_child_notes to find the note's ID.`, id, field)
}

func protected(id, field string) string {
	return fmt.Sprintf(`Note %q (%s) is protected; tools may neither read nor change it. Work with another note, or ask the user to remove the protection.`, id, field)
}

func system(id, field, tool string) string {
	return fmt.Sprintf(`Note %q (%s) is a system note; %s must not change it. Leave system notes as they are and choose another note.`, id, field, tool)
}

// spec is one call of a tool and what must come of it: the exact error
// (and no change to the database), or a success checked by check.
type spec struct {
	name    string
	fixture func(t *testing.T, db *sql.DB) // runs before the call
	args    string
	err     string
	check   func(t *testing.T, h *llmtooltest.Harness, out map[string]any, raw []byte)
}

// runSpecs runs each spec against a fresh store.
func runSpecs(t *testing.T, tool string, specs []spec) {
	t.Helper()
	for _, s := range specs {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			if s.fixture != nil {
				s.fixture(t, h.DB())
			}
			if s.err != "" {
				h.RequireUnchanged(func() { h.RequireError(h.Call(tool, s.args), s.err) })
				return
			}
			res := h.Call(tool, s.args)
			out := h.RequireOK(res)
			if s.check != nil {
				s.check(t, h, out, res.JSON)
			}
		})
	}
}

// byEngine returns sqlite or postgres, the one for the engine h runs on.
func byEngine(h *llmtooltest.Harness, sqlite, postgres string) string {
	if h.Engine() == notes.EnginePostgres {
		return postgres
	}
	return sqlite
}

// fromJSON unmarshals raw into a new T.
func fromJSON[T any](t *testing.T, h *llmtooltest.Harness, raw []byte) T {
	t.Helper()
	var v T
	h.RequireOK(llmtooltest.Result{Result: llmtool.Result{JSON: raw}}, &v)
	return v
}

func count(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), query, args...).Scan(&n))
	return n
}

func content(t *testing.T, db *sql.DB, id string) string {
	t.Helper()
	c, err := notes.GetContent(t.Context(), db, id)
	require.NoError(t, err)
	return c
}

func parents(t *testing.T, db *sql.DB, id string) []string {
	t.Helper()
	n, err := notes.GetNote(t.Context(), db, id)
	require.NoError(t, err)
	var out []string
	for _, p := range n.Parents {
		out = append(out, p.ID)
	}
	return out
}

func childIDs(t *testing.T, db *sql.DB, id string) []string {
	t.Helper()
	kids, err := notes.Children(t.Context(), db, id)
	require.NoError(t, err)
	out := []string{}
	for _, k := range kids {
		out = append(out, k.ID)
	}
	return out
}

// Fixtures.

func deleteNote(id string) func(t *testing.T, db *sql.DB) {
	return func(t *testing.T, db *sql.DB) {
		_, err := notes.DeleteNote(t.Context(), db, id)
		require.NoError(t, err)
	}
}

func manyChildren(parent string, n int) func(t *testing.T, db *sql.DB) {
	return func(t *testing.T, db *sql.DB) {
		for i := range n {
			_, err := notes.CreateNote(t.Context(), db, parent, fmt.Sprintf("Child %02d", i), "", "")
			require.NoError(t, err)
		}
	}
}

func TestSearchNotes(t *testing.T) {
	t.Parallel()
	runSpecs(t, "search_notes", []spec{
		{name: "content", args: `{"query": "flour"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.SearchNotesOut](t, h, raw)
			require.Len(t, out.Results, 1)
			require.Equal(t, "pancakes", out.Results[0].ID)
			// Snippets differ by engine (see notes.Search): each engine's
			// exact output.
			require.Equal(t, byEngine(h,
				"Whisk 250 g **flour**, 2 eggs, 500 ml milk and a pinch of salt. Rest…",
				"Whisk 250 g **flour**, 2 eggs, 500 ml milk and a pinch of salt. Rest the…"), out.Results[0].Snippet)
		}},
		{name: "snippet of HTML is plain text", args: `{"query": "index plugin"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.SearchNotesOut](t, h, raw)
			require.Len(t, out.Results, 1)
			require.Equal(t, "roadmap", out.Results[0].ID)
			require.Equal(t, byEngine(h,
				"…Migrate the search **index** to FTS5 Write the **plugin** API documentation",
				"…sync engine Migrate the search **index** to FTS5 Write the **plugin** API documentation"), out.Results[0].Snippet)
		}},
		{name: "limit", args: `{"query": "plugin", "limit": 1}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Len(t, out["results"], 1)
		}},
		{name: "default limit 10", fixture: manyChildren("recipes", 12), args: `{"query": "child"}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Len(t, out["results"], 10)
		}},
		{name: "under an ancestor", args: `{"query": "plugin", "ancestorNoteId": "recipes"}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Equal(t, []any{}, out["results"])
		}},
		{name: "protected notes by title only", args: `{"query": "secret"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.SearchNotesOut](t, h, raw)
			require.Equal(t, []notes.SearchResult{{ID: "secret", Title: "Secret", IsProtected: true}}, out.Results)
		}},
		{name: "protected content is not searched", args: `{"query": "vault"}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Equal(t, []any{}, out["results"])
		}},
		{name: "deleted notes are not found", fixture: deleteNote("pancakes"), args: `{"query": "flour"}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Equal(t, []any{}, out["results"])
		}},
		{name: "no word", args: `{"query": "*** --"}`,
			err: `Error: /query: "*** --" has no word to search for. Send at least one word made of letters or digits.`},
		{name: "missing ancestor", args: `{"query": "x", "ancestorNoteId": "nope"}`, err: notFound("nope", "ancestorNoteId")},
		{name: "protected ancestor", args: `{"query": "x", "ancestorNoteId": "secret"}`, err: protected("secret", "ancestorNoteId")},
		{name: "limit too large", args: `{"query": "x", "limit": 51}`,
			err: `Error: /limit: 51 is above the maximum 50. Send an integer from 1 to 50.`},
	})
}

func TestGetNote(t *testing.T) {
	t.Parallel()
	runSpecs(t, "get_note", []spec{
		{name: "metadata and preview", args: `{"noteId": "roadmap"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.NoteOut](t, h, raw)
			require.Equal(t, "Roadmap", out.Title)
			require.Equal(t, "text", out.Type)
			require.Equal(t, "text/html", out.Mime)
			require.Equal(t, []notes.NoteRef{{ID: "projects", Title: "Projects"}}, out.Parents)
			require.Equal(t, []notes.NoteRef{}, out.Children)
			require.Len(t, out.Attributes, 2)
			require.Equal(t, "Q3 roadmap Ship the offline sync engine Migrate the search index to FTS5 Write the plugin API documentation", out.ContentPreview)
			require.Equal(t, len(content(t, h.DB(), "roadmap")), out.ContentLength)
		}},
		{name: "preview length", args: `{"noteId": "roadmap", "previewChars": 10}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Equal(t, "Q3 roadmap…", out["contentPreview"])
		}},
		{name: "children capped at 50", fixture: manyChildren("recipes", 55), args: `{"noteId": "recipes", "previewChars": 0}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Len(t, out["children"], 50)
			require.Equal(t, "56", fmt.Sprint(out["childCount"]))
			require.Equal(t, "", out["contentPreview"])
		}},
		{name: "system notes can be read", args: `{"noteId": "root"}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Len(t, out["children"], 5)
		}},
		{name: "missing", args: `{"noteId": "nope"}`, err: notFound("nope", "noteId")},
		{name: "deleted", fixture: deleteNote("meetings"), args: `{"noteId": "meetings"}`, err: notFound("meetings", "noteId")},
		{name: "protected", args: `{"noteId": "secret"}`, err: protected("secret", "noteId")},
		{name: "no noteId", args: `{}`, err: `Error: /noteId: missing required parameter "noteId". Send "noteId" as a string (ID of the note).`},
	})
}

func TestGetNoteContent(t *testing.T) {
	t.Parallel()
	long := func(t *testing.T, db *sql.DB) {
		require.NoError(t, notes.SetContent(t.Context(), db, "meetings", strings.Repeat("é", 25000), notes.SourceUser))
	}
	runSpecs(t, "get_note_content", []spec{
		{name: "whole content", args: `{"noteId": "pancakes"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.NoteContentOut](t, h, raw)
			want := content(t, h.DB(), "pancakes")
			require.Equal(t, notes.NoteContentOut{NoteID: "pancakes", Title: "Pancakes", Type: "text", Mime: "text/html",
				Content: want, TotalChars: len(want)}, out)
		}},
		{name: "first part, default 20000 characters", fixture: long, args: `{"noteId": "meetings"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.NoteContentOut](t, h, raw)
			require.Equal(t, strings.Repeat("é", 20000), out.Content)
			require.True(t, out.Truncated)
			require.Equal(t, 25000, out.TotalChars)
		}},
		{name: "next part", fixture: long, args: `{"noteId": "meetings", "offset": 20000}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.NoteContentOut](t, h, raw)
			require.Equal(t, strings.Repeat("é", 5000), out.Content)
			require.False(t, out.Truncated)
			require.Equal(t, 20000, out.Offset)
		}},
		{name: "offset at the end", args: `{"noteId": "_hidden", "offset": 0}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Equal(t, "", out["content"])
			require.Equal(t, false, out["truncated"])
		}},
		{name: "offset past the end", args: `{"noteId": "pancakes", "offset": 5000}`,
			err: `Error: /offset: 5000 is past the end of the content, which has 144 characters. Send an offset below the content's length, or leave it out to read from the start.`},
		{name: "protected content is never read", args: `{"noteId": "secret"}`, err: protected("secret", "noteId")},
		{name: "missing", args: `{"noteId": "nope"}`, err: notFound("nope", "noteId")},
		{name: "maxChars zero", args: `{"noteId": "pancakes", "maxChars": 0}`,
			err: `Error: /maxChars: 0 is below the minimum 1. Send an integer from 1 to 100000.`},
	})
}

func TestGetChildNotes(t *testing.T) {
	t.Parallel()
	runSpecs(t, "get_child_notes", []spec{
		{name: "root", args: `{"noteId": "root"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.ChildNotesOut](t, h, raw)
			require.Equal(t, notes.ChildNotesOut{NoteID: "root", Title: "root", ChildCount: 5, Children: []notes.ChildNote{
				{NoteID: "projects", Title: "Projects", Type: "book", ChildCount: 2},
				{NoteID: "recipes", Title: "Recipes", Type: "book", ChildCount: 1},
				{NoteID: "secret", Title: "Secret", Type: "text", IsProtected: true},
				{NoteID: "_hidden", Title: "Hidden Notes", Type: "text", ChildCount: 2},
				{NoteID: "_share", Title: "Shared Notes", Type: "text"},
			}}, out)
		}},
		{name: "limit", args: `{"noteId": "root", "limit": 2}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Len(t, out["children"], 2)
			require.Equal(t, true, out["truncated"])
		}},
		{name: "default limit 50", fixture: manyChildren("pancakes", 51), args: `{"noteId": "pancakes"}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Len(t, out["children"], 50)
			require.Equal(t, true, out["truncated"])
		}},
		{name: "deleted children are invisible", fixture: deleteNote("roadmap"), args: `{"noteId": "projects"}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Len(t, out["children"], 1)
		}},
		{name: "leaf", args: `{"noteId": "pancakes"}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Equal(t, []any{}, out["children"])
		}},
		{name: "missing", args: `{"noteId": "nope"}`, err: notFound("nope", "noteId")},
		{name: "protected", args: `{"noteId": "secret"}`, err: protected("secret", "noteId")},
	})
}

func TestGetSubtree(t *testing.T) {
	t.Parallel()
	shape := func(notes []notes.ChildNote) []string {
		var out []string
		for _, n := range notes {
			s := fmt.Sprintf("%d %s<%s", n.Depth, n.NoteID, n.ParentNoteID)
			if n.Truncated {
				s += "+"
			}
			out = append(out, s)
		}
		return out
	}
	runSpecs(t, "get_subtree", []spec{
		{name: "default depth 2", args: `{"noteId": "root"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.SubtreeOut](t, h, raw)
			require.Equal(t, 5, out.ChildCount)
			require.Equal(t, []string{
				"1 projects<root", "2 roadmap<projects", "2 meetings<projects",
				"1 recipes<root", "2 pancakes<recipes", "1 secret<root",
				"1 _hidden<root", "2 _lbRoot<_hidden", "2 _globalNoteMap<_hidden", "1 _share<root",
			}, shape(out.Notes))
		}},
		{name: "depth 1", args: `{"noteId": "root", "depth": 1}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.SubtreeOut](t, h, raw)
			require.Equal(t, []string{"1 projects<root+", "1 recipes<root+", "1 secret<root", "1 _hidden<root+", "1 _share<root"}, shape(out.Notes))
		}},
		{name: "at most 10 children per note", fixture: manyChildren("recipes", 12), args: `{"noteId": "recipes", "depth": 5}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.SubtreeOut](t, h, raw)
			require.Equal(t, 13, out.ChildCount)
			require.Len(t, out.Notes, 10)
		}},
		{name: "depth 6", args: `{"noteId": "root", "depth": 6}`,
			err: `Error: /depth: 6 is above the maximum 5. Send an integer from 1 to 5.`},
		{name: "missing", args: `{"noteId": "nope"}`, err: notFound("nope", "noteId")},
		{name: "protected", args: `{"noteId": "secret"}`, err: protected("secret", "noteId")},
	})
}

func TestGetAttributes(t *testing.T) {
	t.Parallel()
	runSpecs(t, "get_attributes", []spec{
		{name: "labels", args: `{"noteId": "roadmap"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.AttributesOut](t, h, raw)
			require.Equal(t, notes.AttributesOut{NoteID: "roadmap", Attributes: []notes.NoteAttribute{
				{ID: "attrTodo", NoteID: "roadmap", Type: "label", Name: "todo", Position: 10},
				{ID: "attrPriority", NoteID: "roadmap", Type: "label", Name: "priority", Value: "high", Position: 20},
			}}, out)
		}},
		{name: "none", args: `{"noteId": "recipes"}`, check: func(t *testing.T, _ *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Equal(t, []any{}, out["attributes"])
		}},
		{name: "missing", args: `{"noteId": "nope"}`, err: notFound("nope", "noteId")},
		{name: "protected", args: `{"noteId": "secret"}`, err: protected("secret", "noteId")},
	})
}

func TestGetAttribute(t *testing.T) {
	t.Parallel()
	runSpecs(t, "get_attribute", []spec{
		{name: "relation", args: `{"noteId": "meetings", "name": "relatedTo"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			require.Equal(t, notes.NoteAttribute{ID: "attrRelated", NoteID: "meetings", Type: "relation", Name: "relatedTo", Value: "roadmap", Position: 10},
				fromJSON[notes.NoteAttribute](t, h, raw))
		}},
		{name: "no such attribute", args: `{"noteId": "roadmap", "name": "colour"}`,
			err: `Note "roadmap" has no attribute named "colour". Call get_attributes to see the note's attributes.`},
		{name: "missing note", args: `{"noteId": "nope", "name": "todo"}`, err: notFound("nope", "noteId")},
		{name: "protected", args: `{"noteId": "secret", "name": "todo"}`, err: protected("secret", "noteId")},
	})
}

func TestCreateNote(t *testing.T) {
	t.Parallel()
	runSpecs(t, "create_note", []spec{
		{name: "text note", args: `{"parentNoteId": "recipes", "title": "Crêpes", "content": "<p>Thin.</p>"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			out := fromJSON[notes.NoteSummary](t, h, raw)
			require.Regexp(t, `^[A-Za-z0-9]{12}$`, out.NoteID)
			require.Equal(t, notes.NoteSummary{NoteID: out.NoteID, Title: "Crêpes", Type: "text",
				Parents: []notes.NoteRef{{ID: "recipes", Title: "Recipes"}}, ContentLength: len("<p>Thin.</p>")}, out)
			require.Equal(t, []string{"pancakes", out.NoteID}, childIDs(t, h.DB(), "recipes"), "added last")
			require.Equal(t, "<p>Thin.</p>", content(t, h.DB(), out.NoteID))
		}},
		{name: "code note under a system note", args: `{"parentNoteId": "_hidden", "title": "Script", "type": "code", "content": "echo hi"}`, check: func(t *testing.T, h *llmtooltest.Harness, out map[string]any, _ []byte) {
			n, err := notes.GetNote(t.Context(), h.DB(), out["noteId"].(string))
			require.NoError(t, err)
			require.Equal(t, "text/plain", n.Mime)
			require.Equal(t, "code", n.Type)
		}},
		{name: "blank title", args: `{"parentNoteId": "root", "title": "   "}`,
			err: `Error: /title: is blank. Send a title with at least one visible character.`},
		{name: "empty title", args: `{"parentNoteId": "root", "title": ""}`,
			err: `Error: /title: 0 characters is shorter than the minimum 1. Send a string of 1 to 200 characters.`},
		{name: "unknown type", args: `{"parentNoteId": "root", "title": "X", "type": "exe"}`,
			err: `Error: /type: "exe" is not an allowed value. Send one of "text", "code", "book", "mermaid".`},
		{name: "missing parent", args: `{"parentNoteId": "nope", "title": "X"}`, err: notFound("nope", "parentNoteId")},
		{name: "deleted parent", fixture: deleteNote("recipes"), args: `{"parentNoteId": "pancakes", "title": "X"}`, err: notFound("pancakes", "parentNoteId")},
		{name: "under a protected note", args: `{"parentNoteId": "secret", "title": "X"}`, err: protected("secret", "parentNoteId")},
	})
}

func TestRenameNote(t *testing.T) {
	t.Parallel()
	runSpecs(t, "rename_note", []spec{
		{name: "rename", args: `{"noteId": "meetings", "title": "Minutes"}`, check: func(t *testing.T, h *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Equal(t, "Minutes", out["title"])
			n, err := notes.GetNote(t.Context(), h.DB(), "meetings")
			require.NoError(t, err)
			require.Equal(t, "Minutes", n.Title)
		}},
		{name: "root", args: `{"noteId": "root", "title": "X"}`, err: system("root", "noteId", "rename_note")},
		{name: "_share", args: `{"noteId": "_share", "title": "X"}`, err: system("_share", "noteId", "rename_note")},
		{name: "protected", args: `{"noteId": "secret", "title": "X"}`, err: protected("secret", "noteId")},
		{name: "blank", args: `{"noteId": "meetings", "title": "\t"}`,
			err: `Error: /title: is blank. Send a title with at least one visible character.`},
		{name: "missing", args: `{"noteId": "nope", "title": "X"}`, err: notFound("nope", "noteId")},
	})
}

func TestSetNoteContent(t *testing.T) {
	t.Parallel()
	runSpecs(t, "set_note_content", []spec{
		{name: "replace, revision saved", args: `{"noteId": "pancakes", "content": "<p>Galettes.</p>"}`, check: func(t *testing.T, h *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Equal(t, "<p>Galettes.</p>", content(t, h.DB(), "pancakes"))
			revs, err := notes.Revisions(t.Context(), h.DB(), "pancakes")
			require.NoError(t, err)
			require.Len(t, revs, 1)
			require.Equal(t, notes.SourceModel, revs[0].Source, "marked as made by a model")
			require.Contains(t, revs[0].Content, "Whisk 250 g flour")
		}},
		{name: "protected content is never written", args: `{"noteId": "secret", "content": "x"}`, err: protected("secret", "noteId")},
		{name: "system", args: `{"noteId": "root", "content": "x"}`, err: system("root", "noteId", "set_note_content")},
		{name: "missing", args: `{"noteId": "nope", "content": "x"}`, err: notFound("nope", "noteId")},
	})
}

func TestAppendToNote(t *testing.T) {
	t.Parallel()
	runSpecs(t, "append_to_note", []spec{
		{name: "append", args: `{"noteId": "meetings", "content": "<p>Tuesday.</p>"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, _ []byte) {
			require.True(t, strings.HasSuffix(content(t, h.DB(), "meetings"), "Bob the documentation.</p><p>Tuesday.</p>"))
		}},
		{name: "empty", args: `{"noteId": "meetings", "content": ""}`,
			err: `Error: /content: 0 characters is shorter than the minimum 1. Send a string of at least 1 character.`},
		{name: "protected", args: `{"noteId": "secret", "content": "x"}`, err: protected("secret", "noteId")},
		{name: "system", args: `{"noteId": "_hidden", "content": "x"}`, err: system("_hidden", "noteId", "append_to_note")},
		{name: "missing", args: `{"noteId": "nope", "content": "x"}`, err: notFound("nope", "noteId")},
	})
}

func TestEditNoteContent(t *testing.T) {
	t.Parallel()
	runSpecs(t, "edit_note_content", []spec{
		{name: "one match", args: `{"noteId": "pancakes", "oldText": "2 eggs", "newText": "3 eggs"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, _ []byte) {
			require.Contains(t, content(t, h.DB(), "pancakes"), "flour, 3 eggs, 500 ml")
			revs, err := notes.Revisions(t.Context(), h.DB(), "pancakes")
			require.NoError(t, err)
			require.Len(t, revs, 1)
			require.Equal(t, notes.SourceModel, revs[0].Source)
		}},
		{name: "delete a passage", args: `{"noteId": "roadmap", "oldText": "<li>Write the plugin API documentation</li>", "newText": ""}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, _ []byte) {
			require.NotContains(t, content(t, h.DB(), "roadmap"), "documentation")
		}},
		{name: "no match", args: `{"noteId": "pancakes", "oldText": "4 eggs", "newText": "x"}`,
			err: `oldText does not occur in the content of note "pancakes"; nothing was changed. Call get_note_content and copy oldText from it exactly, HTML tags and spaces included.`},
		{name: "several matches", args: `{"noteId": "pancakes", "oldText": "pan", "newText": "x"}`,
			err: `oldText occurs 2 times in the content of note "pancakes"; it must occur exactly once, so nothing was changed. Add the words around the passage to oldText so that it occurs only once.`},
		{name: "empty oldText", args: `{"noteId": "pancakes", "oldText": "", "newText": "x"}`,
			err: `Error: /oldText: 0 characters is shorter than the minimum 1. Send a string of at least 1 character.`},
		{name: "protected", args: `{"noteId": "secret", "oldText": "vault", "newText": "x"}`, err: protected("secret", "noteId")},
		{name: "system", args: `{"noteId": "root", "oldText": "a", "newText": "b"}`, err: system("root", "noteId", "edit_note_content")},
		{name: "missing", args: `{"noteId": "nope", "oldText": "a", "newText": "b"}`, err: notFound("nope", "noteId")},
	})
}

func TestDeleteNote(t *testing.T) {
	t.Parallel()
	secretUnderRecipes := func(t *testing.T, db *sql.DB) {
		require.NoError(t, notes.MoveNote(t.Context(), db, "secret", "", "pancakes"))
	}
	runSpecs(t, "delete_note", []spec{
		{name: "subtree", args: `{"noteId": "projects"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			require.Equal(t, notes.DeleteNoteOut{DeletedNoteIDs: []string{"projects", "roadmap", "meetings"}}, fromJSON[notes.DeleteNoteOut](t, h, raw))
			for _, id := range []string{"projects", "roadmap", "meetings"} {
				h.RequireError(h.Call("get_note", map[string]string{"noteId": id}), notFound(id, "noteId"))
			}
			require.Equal(t, 1, count(t, h.DB(), `SELECT isDeleted FROM notes WHERE noteId = 'projects'`), "soft delete")
		}},
		{name: "root", args: `{"noteId": "root"}`, err: system("root", "noteId", "delete_note")},
		{name: "_hidden", args: `{"noteId": "_hidden"}`, err: system("_hidden", "noteId", "delete_note")},
		{name: "protected", args: `{"noteId": "secret"}`, err: protected("secret", "noteId")},
		{name: "protected note below", fixture: secretUnderRecipes, args: `{"noteId": "recipes"}`,
			err: `Note "recipes" has the protected note "secret" below it, which would be deleted too. Delete the other notes below it one by one, or ask the user to delete this note.`},
		{name: "missing", args: `{"noteId": "nope"}`, err: notFound("nope", "noteId")},
		{name: "already deleted", fixture: deleteNote("meetings"), args: `{"noteId": "meetings"}`, err: notFound("meetings", "noteId")},
	})
}

func TestMoveNote(t *testing.T) {
	t.Parallel()
	cloned := func(t *testing.T, db *sql.DB) {
		require.NoError(t, notes.CloneNote(t.Context(), db, "pancakes", "projects"))
	}
	runSpecs(t, "move_note", []spec{
		{name: "move", args: `{"noteId": "pancakes", "parentNoteId": "projects"}`, check: func(t *testing.T, h *llmtooltest.Harness, out map[string]any, _ []byte) {
			require.Equal(t, []string{"projects"}, parents(t, h.DB(), "pancakes"))
			require.Equal(t, []string{"roadmap", "meetings", "pancakes"}, childIDs(t, h.DB(), "projects"))
			require.Equal(t, []any{map[string]any{"noteId": "projects", "title": "Projects"}}, out["parents"])
		}},
		{name: "into a system note", args: `{"noteId": "pancakes", "parentNoteId": "_share"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, _ []byte) {
			require.Equal(t, []string{"_share"}, parents(t, h.DB(), "pancakes"))
		}},
		{name: "one placement of a clone", fixture: cloned, args: `{"noteId": "pancakes", "parentNoteId": "root", "fromParentNoteId": "projects"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, _ []byte) {
			require.ElementsMatch(t, []string{"recipes", "root"}, parents(t, h.DB(), "pancakes"))
		}},
		{name: "under its own descendant", args: `{"noteId": "projects", "parentNoteId": "roadmap"}`,
			err: `Note "projects" cannot be moved under "roadmap", which is the note itself or below it. Choose a parent outside the note's subtree; call get_subtree on the note to see it.`},
		{name: "under itself", args: `{"noteId": "projects", "parentNoteId": "projects"}`,
			err: `Note "projects" cannot be moved under "projects", which is the note itself or below it. Choose a parent outside the note's subtree; call get_subtree on the note to see it.`},
		{name: "already there through a clone", fixture: cloned, args: `{"noteId": "pancakes", "parentNoteId": "projects", "fromParentNoteId": "recipes"}`,
			err: `Note "pancakes" is already a child of "projects". Leave it there, or choose another parent.`},
		{name: "not a child of fromParentNoteId", args: `{"noteId": "pancakes", "parentNoteId": "root", "fromParentNoteId": "projects"}`,
			err: `Note "pancakes" is not a child of "projects". Call get_note to see its parents, or leave fromParentNoteId out.`},
		{name: "system note", args: `{"noteId": "_hidden", "parentNoteId": "projects"}`, err: system("_hidden", "noteId", "move_note")},
		{name: "protected note", args: `{"noteId": "secret", "parentNoteId": "projects"}`, err: protected("secret", "noteId")},
		{name: "into a protected note", args: `{"noteId": "pancakes", "parentNoteId": "secret"}`, err: protected("secret", "parentNoteId")},
		{name: "missing note", args: `{"noteId": "nope", "parentNoteId": "root"}`, err: notFound("nope", "noteId")},
		{name: "missing parent", args: `{"noteId": "pancakes", "parentNoteId": "nope"}`, err: notFound("nope", "parentNoteId")},
		{name: "missing fromParentNoteId", args: `{"noteId": "pancakes", "parentNoteId": "root", "fromParentNoteId": "nope"}`, err: notFound("nope", "fromParentNoteId")},
	})
}

func TestCloneNote(t *testing.T) {
	t.Parallel()
	runSpecs(t, "clone_note", []spec{
		{name: "clone", args: `{"noteId": "pancakes", "parentNoteId": "projects"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, _ []byte) {
			require.Equal(t, []string{"recipes", "projects"}, parents(t, h.DB(), "pancakes"))
		}},
		{name: "into a system note", args: `{"noteId": "pancakes", "parentNoteId": "_share"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, _ []byte) {
			require.Equal(t, []string{"recipes", "_share"}, parents(t, h.DB(), "pancakes"))
		}},
		{name: "already a child", args: `{"noteId": "pancakes", "parentNoteId": "recipes"}`,
			err: `Note "pancakes" is already a child of "recipes". Choose another parent; get_note lists the note's parents.`},
		{name: "under its own descendant", args: `{"noteId": "projects", "parentNoteId": "meetings"}`,
			err: `Note "projects" cannot be cloned under "meetings", which is the note itself or below it. Choose a parent outside the note's subtree; call get_subtree on the note to see it.`},
		{name: "root", args: `{"noteId": "root", "parentNoteId": "pancakes"}`, err: system("root", "noteId", "clone_note")},
		{name: "_share", args: `{"noteId": "_share", "parentNoteId": "projects"}`, err: system("_share", "noteId", "clone_note")},
		{name: "protected", args: `{"noteId": "secret", "parentNoteId": "projects"}`, err: protected("secret", "noteId")},
		{name: "missing parent", args: `{"noteId": "pancakes", "parentNoteId": "nope"}`, err: notFound("nope", "parentNoteId")},
	})
}

func TestSetAttribute(t *testing.T) {
	t.Parallel()
	denied := func(name string) string {
		return fmt.Sprintf(`name %q is not allowed in set_attribute. It would make the application run code; man set_attribute lists the refused names. Use a name that describes the note, such as "status".`, name)
	}
	runSpecs(t, "set_attribute", []spec{
		{name: "new label", args: `{"noteId": "pancakes", "name": "todo"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			a := fromJSON[notes.NoteAttribute](t, h, raw)
			require.Equal(t, notes.NoteAttribute{ID: a.ID, NoteID: "pancakes", Type: "label", Name: "todo", Position: 20}, a)
		}},
		{name: "update a label", args: `{"noteId": "roadmap", "name": "priority", "value": "low"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			a := fromJSON[notes.NoteAttribute](t, h, raw)
			require.Equal(t, notes.NoteAttribute{ID: "attrPriority", NoteID: "roadmap", Type: "label", Name: "priority", Value: "low", Position: 20}, a)
		}},
		{name: "relation to a system note", args: `{"noteId": "pancakes", "type": "relation", "name": "seeAlso", "targetNoteId": "root"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			a := fromJSON[notes.NoteAttribute](t, h, raw)
			require.Equal(t, "relation", a.Type)
			require.Equal(t, "root", a.Value)
		}},
		{name: "relation target missing", args: `{"noteId": "pancakes", "type": "relation", "name": "seeAlso", "targetNoteId": "nope"}`, err: notFound("nope", "targetNoteId")},
		{name: "relation target deleted", fixture: deleteNote("roadmap"), args: `{"noteId": "pancakes", "type": "relation", "name": "seeAlso", "targetNoteId": "roadmap"}`, err: notFound("roadmap", "targetNoteId")},
		{name: "relation without target", args: `{"noteId": "pancakes", "type": "relation", "name": "seeAlso"}`,
			err: `Error: /targetNoteId: is required for a relation. Send the ID of the note the relation points to.`},
		{name: "relation with a value", args: `{"noteId": "pancakes", "type": "relation", "name": "seeAlso", "value": "x", "targetNoteId": "roadmap"}`,
			err: `Error: /value: a relation has no value; its target goes in targetNoteId. Leave value out and send targetNoteId.`},
		{name: "label with a target", args: `{"noteId": "pancakes", "name": "seeAlso", "targetNoteId": "roadmap"}`,
			err: `Error: /targetNoteId: is only for relations. Put a label's text in value, or send type "relation".`},
		{name: "run", args: `{"noteId": "pancakes", "name": "run", "value": "frontendStartup"}`, err: denied("run")},
		{name: "any case", args: `{"noteId": "pancakes", "name": "RUNONINSTANCE"}`, err: denied("RUNONINSTANCE")},
		{name: "relation widget", args: `{"noteId": "pancakes", "type": "relation", "name": "widget", "targetNoteId": "roadmap"}`, err: denied("widget")},
		{name: "appCss", args: `{"noteId": "pancakes", "name": "appCss"}`, err: denied("appCss")},
		{name: "bad name", args: `{"noteId": "pancakes", "name": "#todo"}`,
			err: `Error: /name: "#todo" does not match the pattern ^[\p{L}\p{N}_:]+$. Send a string of 1 to 100 characters matching ^[\p{L}\p{N}_:]+$.`},
		{name: "system note", args: `{"noteId": "root", "name": "todo"}`, err: system("root", "noteId", "set_attribute")},
		{name: "protected", args: `{"noteId": "secret", "name": "todo"}`, err: protected("secret", "noteId")},
		{name: "missing", args: `{"noteId": "nope", "name": "todo"}`, err: notFound("nope", "noteId")},
	})
}

func TestDeleteAttribute(t *testing.T) {
	t.Parallel()
	runSpecs(t, "delete_attribute", []spec{
		{name: "delete", args: `{"noteId": "roadmap", "attributeId": "attrTodo"}`, check: func(t *testing.T, h *llmtooltest.Harness, _ map[string]any, raw []byte) {
			require.Equal(t, notes.DeleteAttributeOut{NoteID: "roadmap", AttributeID: "attrTodo", Deleted: true}, fromJSON[notes.DeleteAttributeOut](t, h, raw))
			h.RequireError(h.Call("get_attribute", `{"noteId": "roadmap", "name": "todo"}`),
				`Note "roadmap" has no attribute named "todo". Call get_attributes to see the note's attributes.`)
		}},
		{name: "on another note", args: `{"noteId": "pancakes", "attributeId": "attrTodo"}`,
			err: `Attribute "attrTodo" is not on note "pancakes". Call get_attributes on the note to see its attribute IDs.`},
		{name: "missing attribute", args: `{"noteId": "roadmap", "attributeId": "nope"}`,
			err: `Attribute "nope" does not exist. Call get_attributes on the note to see its attribute IDs.`},
		{name: "system note", args: `{"noteId": "root", "attributeId": "attrTodo"}`, err: system("root", "noteId", "delete_attribute")},
		{name: "protected", args: `{"noteId": "secret", "attributeId": "attrTodo"}`, err: protected("secret", "noteId")},
		{name: "missing note", args: `{"noteId": "nope", "attributeId": "attrTodo"}`, err: notFound("nope", "noteId")},
	})
}

// TestWritesOff: in a tenant that never enabled writes, write tools are
// refused with a message that says what to do, and read tools work.
func TestWritesOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, &llmtooltest.Options{WritesOff: true})
	h.RequireOK(h.Call("get_note", `{"noteId": "roadmap"}`))
	h.RequireUnchanged(func() {
		h.RequireError(h.Call("delete_note", `{"noteId": "roadmap"}`),
			`Tool "delete_note" changes data, and write tools are off in tenant "test". Ask the user to enable write tools for this tenant, then call delete_note again.`)
	})
	specs, err := h.Registry().List(h.Context(), nil)
	require.NoError(t, err)
	for _, s := range specs {
		require.True(t, s.ReadOnly, s.Name)
	}
	require.Len(t, specs, 9, "8 read tools and man")
}

// TestDefinitions checks what every tool declares: the catalog entries,
// the annotations, and llmtool's lint rules.
func TestDefinitions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	lint.Require(t, h.Registry(), nil)

	reads := []string{"search_notes", "find_note", "get_note", "get_note_content", "get_child_notes", "get_subtree", "get_attributes", "get_attribute"}
	var names, others []string
	for _, s := range moduleSpecs(t, h.Registry()) {
		if s.URI != "" || s.Prompt {
			// The resource and the prompt: read-only, with the catalog
			// entries lint asks of every definition; man leaves them out.
			others = append(others, s.Name)
			require.True(t, s.ReadOnly, s.Name)
			require.Equal(t, "Reading", s.Category, s.Name)
			require.NotEmpty(t, s.Summary, s.Name)
			require.NotEmpty(t, s.FriendlyName, s.Name)
			require.Contains(t, s.ManPage, "\nEXAMPLES\n", s.Name)
			continue
		}
		names = append(names, s.Name)
		require.Contains(t, []string{"Reading", "Writing", "Tree", "Attributes"}, s.Category, s.Name) // not the default "General"
		require.NotEmpty(t, s.Summary, s.Name)
		require.NotEmpty(t, s.FriendlyName, s.Name)
		require.Contains(t, s.ManPage, "\nEXAMPLES\n", s.Name)
		require.Equal(t, slices.Contains(reads, s.Name), s.ReadOnly, s.Name)
		require.Equal(t, s.Name == "delete_note" || s.Name == "delete_attribute", s.Destructive, s.Name)
	}
	require.Len(t, names, 18)
	require.Equal(t, []string{"note", "summarize_note"}, others)

	// man lists every tool and shows each page.
	catalog := h.RequireOK(h.Call("man", nil))
	text := fmt.Sprint(catalog["content"])
	for _, name := range names {
		require.Contains(t, text, name)
		page := h.RequireOK(h.Call("man", map[string]string{"name": name}))
		require.Contains(t, fmt.Sprint(page["content"]), "EXAMPLES")
	}
	require.NotContains(t, text, "summarize_note")
}

// TestCodeAttributeNamesDocumented: the man page of set_attribute lists
// every refused name, and the guard refuses every listed name.
func TestCodeAttributeNamesDocumented(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	spec, ok := h.Registry().Tool(context.Background(), "set_attribute")
	require.True(t, ok)
	page := strings.Join(strings.Fields(spec.ManPage), " ")
	for _, name := range notes.CodeAttributeNames() {
		require.Regexp(t, `[ :,]`+name+`[,.]`, page, name)
		res := h.Call("set_attribute", map[string]string{"noteId": "pancakes", "name": name})
		require.True(t, res.IsError, name)
		require.Contains(t, res.Text(), "is not allowed in set_attribute", name)
	}
}

// moduleSpecs returns the specs of the notes module's tools in definition
// order.
func moduleSpecs(t *testing.T, reg *llmtool.Registry) []*llmtool.Spec {
	t.Helper()
	all, err := reg.List(context.Background(), &llmtool.ListOptions{All: true})
	require.NoError(t, err)
	var specs []*llmtool.Spec
	for _, s := range all {
		if s.Module == "notes" {
			specs = append(specs, s)
		}
	}
	require.NotEmpty(t, specs)
	return specs
}

// TestDescribe: delete_note and move_note describe their change in the
// line a person approving it reads (a dry run shows it), and the dry run
// saves nothing.
func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool, args, want string
	}{
		{"delete_note", `{"noteId": "projects"}`, `Delete note "Projects" and the 2 notes below it.`},
		{"delete_note", `{"noteId": "recipes"}`, `Delete note "Recipes" and the note below it.`},
		{"delete_note", `{"noteId": "pancakes"}`, `Delete note "Pancakes".`},
		{"move_note", `{"noteId": "pancakes", "parentNoteId": "projects"}`, `Move note "Pancakes" from under "Recipes" to under "Projects".`},
		{"move_note", `{"noteId": "pancakes", "parentNoteId": "recipes"}`, `Leave note "Pancakes" under "Recipes", where it is.`},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.RequireUnchanged(func() {
				res := h.Invoke(h.Context(), llmtool.Call{Tool: tc.tool, Args: []byte(tc.args), DryRun: true})
				require.False(t, res.IsError, res.Text())
				require.NotNil(t, res.Preview)
				require.Equal(t, tc.want, res.Preview.Summary)
			})
		})
	}
}
