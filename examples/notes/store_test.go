package notes

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/stretchr/testify/require"
)

// The tests run on SQLite, or on PostgreSQL with LLMTOOL_TEST_ENGINE=postgres
// (newStore); the core cases (reads, search, create, move, clone, delete,
// transactions, concurrent writes) run on both engines in every run
// (eachEngine), the PostgreSQL half skipped with a message unless
// LLMTOOL_TEST_POSTGRES names a server (see internal/pgtest).

// testEngine is the engine newStore opens: EnginePostgres when
// LLMTOOL_TEST_ENGINE=postgres, EngineSQLite otherwise.
func testEngine() string {
	if pgtest.FromEnv() {
		return EnginePostgres
	}
	return EngineSQLite
}

// openStore opens a fresh, seeded store on engine: a SQLite file in a
// temporary directory, or a fresh PostgreSQL database, dropped when t ends.
func openStore(t *testing.T, engine string) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notes.db")
	if engine == EnginePostgres {
		path = pgtest.DSN(t)
	}
	db, err := Open(t.Context(), path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// newStore opens a fresh, seeded store on the engine of the run
// (testEngine).
func newStore(t *testing.T) *sql.DB {
	t.Helper()
	return openStore(t, testEngine())
}

// eachEngine runs f once per engine, as parallel subtests named after it.
func eachEngine(t *testing.T, f func(t *testing.T, engine string)) {
	t.Helper()
	for _, engine := range []string{EngineSQLite, EnginePostgres} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			f(t, engine)
		})
	}
}

func ids(refs []NoteRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

func searchIDs(t *testing.T, q Queryer, query, ancestor string) []string {
	t.Helper()
	res, err := Search(t.Context(), q, query, ancestor, 0)
	require.NoError(t, err)
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.ID
	}
	return out
}

func countRows(t *testing.T, db Queryer, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), query, args...).Scan(&n))
	return n
}

func TestFTS5Available(t *testing.T) {
	t.Parallel()
	db := openStore(t, EngineSQLite)
	var used bool
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&used))
	require.True(t, used)
	_, err := db.ExecContext(t.Context(), `CREATE VIRTUAL TABLE probe USING fts5(x)`)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `INSERT INTO probe(x) VALUES ('hello world')`)
	require.NoError(t, err)
	require.Equal(t, 1, countRows(t, db, `SELECT COUNT(*) FROM probe WHERE probe MATCH 'hello'`))
}

func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "notes.db")
	db, err := Open(ctx, path)
	require.NoError(t, err)

	var mode string
	require.NoError(t, db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode))
	require.Equal(t, "wal", mode)
	require.Equal(t, 1, countRows(t, db, `PRAGMA foreign_keys`))
	require.Equal(t, 5000, countRows(t, db, `PRAGMA busy_timeout`))

	notes := countRows(t, db, `SELECT COUNT(*) FROM notes`)
	require.Equal(t, len(seedNotes), notes)
	_, err = CreateNote(ctx, db, RootID, "Extra", "", "")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	// Reopening migrates and seeds again: idempotent, nothing duplicated.
	db, err = Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	require.NoError(t, Migrate(ctx, db))
	require.NoError(t, Seed(ctx, db))
	require.Equal(t, notes+1, countRows(t, db, `SELECT COUNT(*) FROM notes`))
	require.Equal(t, len(seedAttrs), countRows(t, db, `SELECT COUNT(*) FROM attributes`))

	for _, bad := range []string{"", filepath.Join(t.TempDir(), "a?b.db"), filepath.Join(t.TempDir(), "missing", "dir", "x.db")} {
		_, err := Open(ctx, bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "open note store")
		if bad != "" {
			require.Contains(t, err.Error(), bad)
		}
	}
}

func TestSeedContents(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		db := openStore(t, engine)
		tests := []struct {
			id        string
			title     string
			typ       string
			parents   []string
			children  []string
			protected bool
			attrs     []string // type:name=value
			content   string   // substring of the content
		}{
			{id: RootID, title: "root", typ: TypeText, parents: []string{},
				children: []string{"projects", "recipes", "secret", HiddenID, ShareID}},
			{id: HiddenID, title: "Hidden Notes", typ: TypeText, parents: []string{RootID},
				children: []string{LaunchBarRootID, GlobalNoteMapID}},
			{id: ShareID, title: "Shared Notes", typ: TypeText, parents: []string{RootID}, children: []string{}},
			{id: LaunchBarRootID, title: "Launch Bar", typ: TypeText, parents: []string{HiddenID}, children: []string{}},
			{id: GlobalNoteMapID, title: "Note Map", typ: "noteMap", parents: []string{HiddenID}, children: []string{}},
			{id: "projects", title: "Projects", typ: TypeBook, parents: []string{RootID},
				children: []string{"roadmap", "meetings"}, content: "working on"},
			{id: "roadmap", title: "Roadmap", typ: TypeText, parents: []string{"projects"}, children: []string{},
				attrs: []string{"label:todo=", "label:priority=high"}, content: "offline sync engine"},
			{id: "meetings", title: "Meeting notes", typ: TypeText, parents: []string{"projects"}, children: []string{},
				attrs: []string{"relation:relatedTo=roadmap"}, content: "freeze the plugin API"},
			{id: "recipes", title: "Recipes", typ: TypeBook, parents: []string{RootID}, children: []string{"pancakes"}},
			{id: "pancakes", title: "Pancakes", typ: TypeText, parents: []string{"recipes"}, children: []string{},
				attrs: []string{"label:cuisine=french"}, content: "flour"},
			{id: "secret", title: "Secret", typ: TypeText, parents: []string{RootID}, children: []string{},
				protected: true, content: "vault"},
		}
		for _, tt := range tests {
			t.Run(tt.id, func(t *testing.T) {
				t.Parallel()
				n, err := GetNote(t.Context(), db, tt.id)
				require.NoError(t, err)
				require.Equal(t, tt.title, n.Title)
				require.Equal(t, tt.typ, n.Type)
				require.Equal(t, tt.protected, n.IsProtected)
				require.Equal(t, tt.parents, ids(n.Parents))
				require.Equal(t, tt.children, ids(n.Children))
				var attrs []string
				for _, a := range n.Attributes {
					attrs = append(attrs, a.Type+":"+a.Name+"="+a.Value)
				}
				require.Equal(t, tt.attrs, attrs)
				require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, n.DateCreated)
				require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, n.DateModified)
				c, err := GetContent(t.Context(), db, tt.id)
				require.NoError(t, err)
				require.Contains(t, c, tt.content)
			})
		}
	})
}

// TestIsSystem: the system notes are exactly Trilium's
// PROTECTED_SYSTEM_NOTES.
func TestIsSystem(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"root": true, "_hidden": true, "_share": true, "_lbRoot": true, "_globalNoteMap": true,
		"projects": false, "secret": false, "": false, "Root": false, "_hiddenX": false,
		"_lbAvailableLaunchers": false, "_globalnotemap": false,
	} {
		require.Equal(t, want, IsSystem(id), id)
	}
}

func TestValidNoteType(t *testing.T) {
	t.Parallel()
	for typ, want := range map[string]bool{"text": true, "code": true, "book": true, "mermaid": true, "": false, "TEXT": false, "exe": false} {
		require.Equal(t, want, ValidNoteType(typ), typ)
	}
}

func TestNewID(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[A-Za-z0-9]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id, err := NewID()
		require.NoError(t, err)
		require.Regexp(t, re, id)
		require.False(t, seen[id], "duplicate id %s", id)
		seen[id] = true
	}
}

func TestExistsAndIsProtected(t *testing.T) {
	t.Parallel()
	db := newStore(t)
	ctx := t.Context()
	gone, err := CreateNote(ctx, db, RootID, "Gone", "", "")
	require.NoError(t, err)
	_, err = DeleteNote(ctx, db, gone.ID)
	require.NoError(t, err)

	tests := []struct {
		id        string
		exists    bool
		protected bool
	}{
		{id: RootID, exists: true},
		{id: "pancakes", exists: true},
		{id: "secret", exists: true, protected: true},
		{id: "nope", exists: false},
		{id: "", exists: false},
		{id: gone.ID, exists: false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			ok, err := Exists(t.Context(), db, tt.id)
			require.NoError(t, err)
			require.Equal(t, tt.exists, ok)
			p, err := IsProtected(t.Context(), db, tt.id)
			if !tt.exists {
				require.ErrorIs(t, err, ErrNotFound)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.protected, p)
		})
	}
}

func TestReadsNotFound(t *testing.T) {
	t.Parallel()
	db := newStore(t)
	ctx := t.Context()
	calls := map[string]func() error{
		"GetNote":     func() error { _, err := GetNote(ctx, db, "nope"); return err },
		"GetContent":  func() error { _, err := GetContent(ctx, db, "nope"); return err },
		"Children":    func() error { _, err := Children(ctx, db, "nope"); return err },
		"Subtree":     func() error { _, err := Subtree(ctx, db, "nope", 2, 0); return err },
		"Attributes":  func() error { _, err := Attributes(ctx, db, "nope"); return err },
		"Attribute":   func() error { _, err := Attribute(ctx, db, "nope", "todo"); return err },
		"Attribute2":  func() error { _, err := Attribute(ctx, db, "roadmap", "nope"); return err },
		"Revisions":   func() error { _, err := Revisions(ctx, db, "nope"); return err },
		"Search":      func() error { _, err := Search(ctx, db, "x", "nope", 0); return err },
		"IsProtected": func() error { _, err := IsProtected(ctx, db, "nope"); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := call()
			require.ErrorIs(t, err, ErrNotFound)
			require.Contains(t, err.Error(), `"nope"`)
		})
	}
}

func TestChildren(t *testing.T) {
	t.Parallel()
	db := newStore(t)
	for id, want := range map[string][]string{
		RootID:     {"projects", "recipes", "secret", HiddenID, ShareID},
		"projects": {"roadmap", "meetings"},
		"recipes":  {"pancakes"},
		"pancakes": {},
	} {
		got, err := Children(t.Context(), db, id)
		require.NoError(t, err)
		require.Equal(t, want, ids(got), id)
	}
	got, err := Children(t.Context(), db, "projects")
	require.NoError(t, err)
	require.Equal(t, []NoteRef{{ID: "roadmap", Title: "Roadmap"}, {ID: "meetings", Title: "Meeting notes"}}, got)
}

func TestAttributes(t *testing.T) {
	t.Parallel()
	db := newStore(t)
	ctx := t.Context()
	attrs, err := Attributes(ctx, db, "roadmap")
	require.NoError(t, err)
	require.Len(t, attrs, 2)
	require.Equal(t, NoteAttribute{ID: "attrTodo", NoteID: "roadmap", Type: AttributeLabel, Name: "todo", Position: 10}, attrs[0])
	require.Equal(t, "priority", attrs[1].Name)

	attrs, err = Attributes(ctx, db, "recipes")
	require.NoError(t, err)
	require.Empty(t, attrs)

	a, err := Attribute(ctx, db, "meetings", "relatedTo")
	require.NoError(t, err)
	require.Equal(t, AttributeRelation, a.Type)
	require.Equal(t, "roadmap", a.Value)

	// With both a label and a relation of the same name, the label wins.
	_, err = SetAttribute(ctx, db, "meetings", AttributeLabel, "relatedTo", "x")
	require.NoError(t, err)
	a, err = Attribute(ctx, db, "meetings", "relatedTo")
	require.NoError(t, err)
	require.Equal(t, AttributeLabel, a.Type)
}

func TestSubtree(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		db := openStore(t, engine)
		// shape renders a tree as "id(childCount)[...]" with "+" for truncated.
		var shape func(n TreeNode) string
		shape = func(n TreeNode) string {
			s := fmt.Sprintf("%s(%d)", n.ID, n.ChildCount)
			if n.Truncated {
				s += "+"
			}
			if len(n.Children) > 0 {
				var parts []string
				for _, c := range n.Children {
					parts = append(parts, shape(c))
				}
				s += "[" + strings.Join(parts, " ") + "]"
			}
			return s
		}
		tests := []struct {
			name  string
			id    string
			depth int
			limit int
			want  string
		}{
			{"depth0", RootID, 0, 0, "root(5)+"},
			{"depth1", RootID, 1, 0, "root(5)[projects(2)+ recipes(1)+ secret(0) _hidden(2)+ _share(0)]"},
			{"depth2", RootID, 2, 0, "root(5)[projects(2)[roadmap(0) meetings(0)] recipes(1)[pancakes(0)] secret(0) _hidden(2)[_lbRoot(0) _globalNoteMap(0)] _share(0)]"},
			{"depth9", "projects", 9, 0, "projects(2)[roadmap(0) meetings(0)]"},
			{"limit2", RootID, 2, 2, "root(5)+[projects(2)[roadmap(0) meetings(0)] recipes(1)[pancakes(0)]]"},
			{"limit1", RootID, 2, 1, "root(5)+[projects(2)+[roadmap(0)]]"},
			{"leaf", "pancakes", 3, 1, "pancakes(0)"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				tree, err := Subtree(t.Context(), db, tt.id, tt.depth, tt.limit)
				require.NoError(t, err)
				require.Equal(t, tt.want, shape(*tree))
			})
		}
		tree, err := Subtree(t.Context(), db, "projects", 1, 0)
		require.NoError(t, err)
		require.Equal(t, "Projects", tree.Title)
		require.Equal(t, TypeBook, tree.Type)
		require.Equal(t, "Roadmap", tree.Children[0].Title)

		_, err = Subtree(t.Context(), db, RootID, -1, 0)
		require.ErrorIs(t, err, ErrInvalidArgument)
	})
}

func TestFTSQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		err      bool
	}{
		{in: "pancakes", want: `"pancakes"`},
		{in: "  sync   engine ", want: `"sync" "engine"`},
		{in: `foo"bar`, want: `"foo""bar"`},
		{in: "a AND", want: `"a" "AND"`},
		{in: "pan*", want: `"pan"*`},
		{in: "pan**", want: `"pan"*`},
		{in: "NEAR(a b)", want: `"NEAR(a" "b)"`},
		{in: `"` + " * - ( ) ^ :", err: true},
		{in: "", err: true},
		{in: "   ", err: true},
	}
	for _, tt := range tests {
		got, err := ftsQuery(tt.in)
		if tt.err {
			require.ErrorIs(t, err, ErrInvalidArgument, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
	}
}

func TestTSQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		err      bool
	}{
		{in: "pancakes", want: `'pancakes'`},
		{in: "  sync   engine ", want: `'sync' & 'engine'`},
		{in: `foo"bar`, want: `'foo bar'`},
		{in: `it's a \ trap`, want: `'it s' & 'a' & 'trap'`},
		{in: "a & b | !c <-> d", want: `'a' & 'b' & 'c' & 'd'`},
		{in: "pan*", want: `'pan':*`},
		{in: "pan**", want: `'pan':*`},
		{in: "offline-sync main.go", want: `'offline sync' & 'main go'`},
		{in: "'a':*B", want: `'a B'`},
		{in: "café—bar", want: `'café—bar'`},
		{in: "x\x00y", want: `'x y'`},
		{in: `"` + " * - ( ) ^ : '", err: true},
		{in: "", err: true},
	}
	for _, tt := range tests {
		got, err := tsQuery(tt.in)
		if tt.err {
			require.ErrorIs(t, err, ErrInvalidArgument, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		db := openStore(t, engine)
		tests := []struct {
			name     string
			query    string
			ancestor string
			want     []string // nil: only check there is no error
			sorted   bool     // compare as a set
		}{
			{name: "content", query: "flour", want: []string{"pancakes"}},
			{name: "title", query: "pancakes", want: []string{"pancakes"}},
			{name: "case and diacritics", query: "PÂNCAKES", want: []string{"pancakes"}},
			{name: "prefix", query: "panc*", want: []string{"pancakes"}},
			{name: "all words required", query: "plugin freeze", want: []string{"meetings"}},
			{name: "no hit", query: "zzzunknown", want: []string{}},
			{name: "two hits", query: "plugin", want: []string{"meetings", "roadmap"}, sorted: true},
			{name: "ancestor projects", query: "plugin", ancestor: "projects", want: []string{"meetings", "roadmap"}, sorted: true},
			{name: "ancestor root", query: "plugin", ancestor: RootID, want: []string{"meetings", "roadmap"}, sorted: true},
			{name: "ancestor recipes", query: "plugin", ancestor: "recipes", want: []string{}},
			{name: "ancestor itself excluded", query: "projects", ancestor: "projects", want: []string{}},
			{name: "protected content not indexed", query: "vault", want: []string{}},
			{name: "protected title indexed", query: "secret", want: []string{"secret"}},
			// Hostile input: must not be an FTS5 syntax error.
			{name: "quote", query: `foo"bar`},
			{name: "dangling AND", query: "a AND"},
			{name: "operators", query: "OR NOT AND"},
			{name: "NEAR", query: "NEAR(flour eggs, 2)"},
			{name: "column filter", query: "title:Pancakes"},
			{name: "caret", query: "^flour"},
			{name: "minus", query: "-flour"},
			{name: "plus", query: "flour + eggs"},
			{name: "braces", query: "{title content}: flour"},
			{name: "unbalanced", query: `((("flour`},
			{name: "lone star with word", query: "* flour", want: []string{"pancakes"}},
			{name: "quoted phrase is literal words", query: `"flour"`, want: []string{"pancakes"}},
			{name: "sql injection", query: `'); DROP TABLE notes; --`, want: []string{}},
			{name: "tsquery syntax", query: `'a':* & !b | c <-> d \ (e)`, want: []string{}},
			{name: "punctuation makes a phrase", query: "sync-engine", want: []string{"meetings", "roadmap"}, sorted: true},
			{name: "phrase order matters", query: "engine-sync", want: []string{}},
			{name: "html tag names are words", query: "h2", want: []string{"roadmap"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				got := searchIDs(t, db, tt.query, tt.ancestor)
				if tt.want == nil {
					return
				}
				if tt.sorted {
					require.ElementsMatch(t, tt.want, got)
				} else {
					require.Equal(t, tt.want, got)
				}
			})
		}

		t.Run("snippet", func(t *testing.T) {
			t.Parallel()
			res, err := Search(t.Context(), db, "flour", "", 10)
			require.NoError(t, err)
			require.Len(t, res, 1)
			require.Equal(t, "Pancakes", res[0].Title)
			require.Contains(t, res[0].Snippet, "**flour**")
			require.False(t, res[0].IsProtected)

			res, err = Search(t.Context(), db, "secret", "", 10)
			require.NoError(t, err)
			require.Len(t, res, 1)
			require.True(t, res[0].IsProtected)
			require.Empty(t, res[0].Snippet)
		})
		// Snippets differ by engine (see Search): each engine's exact
		// output.
		t.Run("snippet text", func(t *testing.T) {
			t.Parallel()
			tests := []struct {
				query, id      string
				sqlite, postgr string
			}{
				{query: "flour", id: "pancakes",
					sqlite: "<p>Whisk 250 g **flour**, 2 eggs, 500 ml milk and a pinch of salt. Rest…",
					postgr: "Whisk 250 g **flour**, 2 eggs, 500 ml milk and a pinch of salt. Rest the…"},
				{query: "panc*", id: "pancakes",
					sqlite: "…Rest the batter for 30 minutes, then fry thin **pancakes** in a hot buttered pan.</p>",
					postgr: "…batter for 30 minutes, then fry thin **pancakes** in a hot buttered pan"},
				{query: "sync engine", id: "meetings",
					sqlite: "…Alice owns the **sync** **engine**, Bob the documentation.</p>",
					postgr: "…API before the beta. Alice owns the **sync** **engine**, Bob the documentation"},
				{query: "offline-sync", id: "roadmap",
					sqlite: "<h2>Q3 roadmap</h2><ul><li>Ship the **offline sync** engine</li><li>Migrate the search…",
					postgr: "Q3 roadmap Ship the **offline** **sync** engine Migrate the search index to FTS5 Write the plugin…"},
				// The whole content: no "…".
				{query: "everything", id: "projects",
					sqlite: "<p>**Everything** we are currently working on.</p>",
					postgr: "**Everything** we are currently working on"},
				// Only the title matches: it is the snippet.
				{query: "recipes", id: "recipes", sqlite: "**Recipes**", postgr: "**Recipes**"},
				{query: "meeting", id: "meetings", sqlite: "**Meeting** notes", postgr: "**Meeting** notes"},
				// Protected: no snippet.
				{query: "secret", id: "secret"},
			}
			for _, tt := range tests {
				res, err := Search(t.Context(), db, tt.query, "", 0)
				require.NoError(t, err)
				want := map[string]string{EngineSQLite: tt.sqlite, EnginePostgres: tt.postgr}[engine]
				var got []string
				for _, r := range res {
					if r.ID == tt.id {
						require.Equal(t, want, r.Snippet, tt.query)
					}
					got = append(got, r.ID)
				}
				require.Contains(t, got, tt.id, tt.query)
			}
		})
		t.Run("limit", func(t *testing.T) {
			t.Parallel()
			res, err := Search(t.Context(), db, "plugin", "", 1)
			require.NoError(t, err)
			require.Len(t, res, 1)
		})
		t.Run("empty query", func(t *testing.T) {
			t.Parallel()
			for _, q := range []string{"", "  ", `"`, "*", "()"} {
				_, err := Search(t.Context(), db, q, "", 0)
				require.ErrorIs(t, err, ErrInvalidArgument, q)
			}
		})
		t.Run("clone is searchable under new ancestor", func(t *testing.T) {
			t.Parallel()
			db := openStore(t, engine)
			require.NoError(t, CloneNote(t.Context(), db, "pancakes", "projects"))
			require.Equal(t, []string{"pancakes"}, searchIDs(t, db, "flour", "projects"))
			require.Equal(t, []string{"pancakes"}, searchIDs(t, db, "flour", "recipes"))
		})
	})
}

func TestIsDescendant(t *testing.T) {
	t.Parallel()
	db := newStore(t)
	tests := []struct {
		candidate, ancestor string
		want                bool
	}{
		{"roadmap", "projects", true},
		{"roadmap", RootID, true},
		{"pancakes", RootID, true},
		{HiddenID, RootID, true},
		{"projects", "roadmap", false},
		{"pancakes", "projects", false},
		{"projects", "projects", false},
		{RootID, RootID, false},
		{RootID, "projects", false},
		{"nope", RootID, false},
		{"roadmap", "nope", false},
	}
	for _, tt := range tests {
		got, err := IsDescendant(t.Context(), db, tt.candidate, tt.ancestor)
		require.NoError(t, err)
		require.Equal(t, tt.want, got, "%s under %s", tt.candidate, tt.ancestor)
	}
}

func TestCreateNote(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		db := openStore(t, engine)
		ctx := t.Context()

		n, err := CreateNote(ctx, db, "projects", "Budget", "", "<p>Quarterly budget spreadsheet</p>")
		require.NoError(t, err)
		require.Regexp(t, `^[A-Za-z0-9]{12}$`, n.ID)
		require.Equal(t, "Budget", n.Title)
		require.Equal(t, TypeText, n.Type)
		require.Equal(t, "text/html", n.Mime)
		require.False(t, n.IsProtected)
		require.Equal(t, []NoteRef{{ID: "projects", Title: "Projects"}}, n.Parents)
		require.Empty(t, n.Children)
		require.Empty(t, n.Attributes)
		require.Equal(t, n.DateCreated, n.DateModified)

		kids, err := Children(ctx, db, "projects")
		require.NoError(t, err)
		require.Equal(t, []string{"roadmap", "meetings", n.ID}, ids(kids), "appended at the end")

		c, err := GetContent(ctx, db, n.ID)
		require.NoError(t, err)
		require.Equal(t, "<p>Quarterly budget spreadsheet</p>", c)
		require.Equal(t, []string{n.ID}, searchIDs(t, db, "spreadsheet", "projects"))

		code, err := CreateNote(ctx, db, n.ID, "main.go", TypeCode, "package main")
		require.NoError(t, err)
		require.Equal(t, TypeCode, code.Type)
		require.Equal(t, "text/plain", code.Mime)
		ok, err := IsDescendant(ctx, db, code.ID, "projects")
		require.NoError(t, err)
		require.True(t, ok)

		tests := []struct {
			name, parent, title, typ string
			err                      error
		}{
			{"missing parent", "nope", "X", "", ErrNotFound},
			{"empty title", RootID, "  ", "", ErrInvalidArgument},
			{"bad type", RootID, "X", "exe", ErrInvalidArgument},
		}
		for _, tt := range tests {
			_, err := CreateNote(ctx, db, tt.parent, tt.title, tt.typ, "")
			require.ErrorIs(t, err, tt.err, tt.name)
		}
	})
}

func TestRename(t *testing.T) {
	t.Parallel()
	db := newStore(t)
	ctx := t.Context()
	require.NoError(t, Rename(ctx, db, "recipes", "Crêpes & Co"))
	n, err := GetNote(ctx, db, "recipes")
	require.NoError(t, err)
	require.Equal(t, "Crêpes & Co", n.Title)
	require.GreaterOrEqual(t, n.DateModified, n.DateCreated)
	require.Equal(t, []string{"recipes"}, searchIDs(t, db, "crepes", ""))
	require.Equal(t, []string{}, searchIDs(t, db, "recipes", ""))
	kids, err := Children(ctx, db, RootID)
	require.NoError(t, err)
	require.Equal(t, NoteRef{ID: "recipes", Title: "Crêpes & Co"}, kids[1])

	require.ErrorIs(t, Rename(ctx, db, "nope", "X"), ErrNotFound)
	require.ErrorIs(t, Rename(ctx, db, "pancakes", ""), ErrInvalidArgument)
}

func TestSetContent(t *testing.T) {
	t.Parallel()
	db := newStore(t)
	ctx := t.Context()
	old, err := GetContent(ctx, db, "pancakes")
	require.NoError(t, err)

	require.NoError(t, SetContent(ctx, db, "pancakes", "<p>Use buckwheat galettes instead.</p>", SourceModel))
	c, err := GetContent(ctx, db, "pancakes")
	require.NoError(t, err)
	require.Equal(t, "<p>Use buckwheat galettes instead.</p>", c)

	revs, err := Revisions(ctx, db, "pancakes")
	require.NoError(t, err)
	require.Len(t, revs, 1)
	require.Equal(t, old, revs[0].Content, "revision holds the previous content")
	require.Equal(t, "Pancakes", revs[0].Title)
	require.Equal(t, SourceModel, revs[0].Source)
	require.Equal(t, "pancakes", revs[0].NoteID)
	require.Regexp(t, `^[A-Za-z0-9]{12}$`, revs[0].ID)

	// The FTS index follows the content.
	require.Equal(t, []string{}, searchIDs(t, db, "flour", ""))
	require.Equal(t, []string{"pancakes"}, searchIDs(t, db, "buckwheat", ""))

	// Same content: no-op, no revision.
	require.NoError(t, SetContent(ctx, db, "pancakes", "<p>Use buckwheat galettes instead.</p>", SourceModel))
	revs, err = Revisions(ctx, db, "pancakes")
	require.NoError(t, err)
	require.Len(t, revs, 1)

	require.NoError(t, SetContent(ctx, db, "pancakes", "third", SourceUser))
	revs, err = Revisions(ctx, db, "pancakes")
	require.NoError(t, err)
	require.Len(t, revs, 2)
	require.Equal(t, "<p>Use buckwheat galettes instead.</p>", revs[0].Content, "newest first")
	require.Equal(t, SourceUser, revs[0].Source)
	require.Equal(t, old, revs[1].Content)

	// Protected notes: content stored, still not indexed.
	require.NoError(t, SetContent(ctx, db, "secret", "<p>new combination 99</p>", SourceModel))
	require.Equal(t, []string{}, searchIDs(t, db, "combination", ""))

	require.ErrorIs(t, SetContent(ctx, db, "nope", "x", SourceModel), ErrNotFound)
}

func TestAppendContent(t *testing.T) {
	t.Parallel()
	db := newStore(t)
	ctx := t.Context()
	n, err := CreateNote(ctx, db, RootID, "Log", TypeText, "<p>one</p>")
	require.NoError(t, err)
	require.NoError(t, AppendContent(ctx, db, n.ID, "<p>two</p>"))
	require.NoError(t, AppendContent(ctx, db, n.ID, "<p>three</p>"))
	c, err := GetContent(ctx, db, n.ID)
	require.NoError(t, err)
	require.Equal(t, "<p>one</p><p>two</p><p>three</p>", c)
	require.Equal(t, []string{n.ID}, searchIDs(t, db, "three", ""))
	revs, err := Revisions(ctx, db, n.ID)
	require.NoError(t, err)
	require.Empty(t, revs)
	require.ErrorIs(t, AppendContent(ctx, db, "nope", "x"), ErrNotFound)
}

func TestDeleteNote(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		db := openStore(t, engine)
		ctx := t.Context()

		// projects/roadmap is also cloned under recipes: it must survive.
		require.NoError(t, CloneNote(ctx, db, "roadmap", "recipes"))
		child, err := CreateNote(ctx, db, "meetings", "Minutes 2024-05-06", "", "kumquat discussion")
		require.NoError(t, err)

		deleted, err := DeleteNote(ctx, db, "projects")
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"projects", "meetings", child.ID}, deleted)
		require.Equal(t, "projects", deleted[0])

		for _, id := range []string{"projects", "meetings", child.ID} {
			ok, err := Exists(ctx, db, id)
			require.NoError(t, err)
			require.False(t, ok, id)
			_, err = GetNote(ctx, db, id)
			require.ErrorIs(t, err, ErrNotFound, id)
			_, err = GetContent(ctx, db, id)
			require.ErrorIs(t, err, ErrNotFound, id)
			_, err = Attributes(ctx, db, id)
			require.ErrorIs(t, err, ErrNotFound, id)
			_, err = Children(ctx, db, id)
			require.ErrorIs(t, err, ErrNotFound, id)
			ok, err = IsDescendant(ctx, db, id, RootID)
			require.NoError(t, err)
			require.False(t, ok, id)
		}
		// Rows are kept (soft delete).
		require.Equal(t, 1, countRows(t, db, `SELECT isDeleted FROM notes WHERE noteId = 'projects'`))
		require.Equal(t, 0, countRows(t, db, `SELECT COUNT(*) FROM branches WHERE noteId = 'projects' AND isDeleted = 0`))

		// Not listed, not searched.
		kids, err := Children(ctx, db, RootID)
		require.NoError(t, err)
		require.NotContains(t, ids(kids), "projects")
		require.Equal(t, []string{}, searchIDs(t, db, "kumquat", ""))
		require.Equal(t, []string{}, searchIDs(t, db, "freeze", ""))
		tree, err := Subtree(ctx, db, RootID, 5, 0)
		require.NoError(t, err)
		require.Equal(t, 4, tree.ChildCount)

		// The clone survives under its other parent, without its deleted parent.
		n, err := GetNote(ctx, db, "roadmap")
		require.NoError(t, err)
		require.Equal(t, []string{"recipes"}, ids(n.Parents))
		require.Equal(t, []string{"roadmap"}, searchIDs(t, db, "sync", ""))
		// The relation meetings ~relatedTo roadmap went away with meetings.
		require.Equal(t, 0, countRows(t, db, `SELECT COUNT(*) FROM attributes WHERE noteId = 'meetings' AND isDeleted = 0`))

		// Deleting the relation target removes incoming relations.
		rel, err := SetAttribute(ctx, db, "recipes", AttributeRelation, "see", "pancakes")
		require.NoError(t, err)
		_, err = DeleteNote(ctx, db, "pancakes")
		require.NoError(t, err)
		_, err = Attribute(ctx, db, "recipes", "see")
		require.ErrorIs(t, err, ErrNotFound, rel.ID)

		_, err = DeleteNote(ctx, db, "projects")
		require.ErrorIs(t, err, ErrNotFound, "already deleted")
		_, err = DeleteNote(ctx, db, "nope")
		require.ErrorIs(t, err, ErrNotFound)
		_, err = DeleteNote(ctx, db, RootID)
		require.ErrorIs(t, err, ErrInvalidArgument)

		// A deleted note cannot be used as a parent or target.
		_, err = CreateNote(ctx, db, "projects", "X", "", "")
		require.ErrorIs(t, err, ErrNotFound)
		require.ErrorIs(t, MoveNote(ctx, db, "secret", "", "projects"), ErrNotFound)
		require.ErrorIs(t, CloneNote(ctx, db, "secret", "projects"), ErrNotFound)
		_, err = SetAttribute(ctx, db, "projects", AttributeLabel, "x", "")
		require.ErrorIs(t, err, ErrNotFound)
		_, err = SetAttribute(ctx, db, "secret", AttributeRelation, "x", "projects")
		require.ErrorIs(t, err, ErrNotFound)
	})
}

func TestMoveNote(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		tests := []struct {
			name       string
			id         string
			from, to   string
			err        error
			errText    string
			wantParent []string // parents after the move, when no error
		}{
			{name: "implicit from", id: "pancakes", to: "projects", wantParent: []string{"projects"}},
			{name: "explicit from", id: "pancakes", from: "recipes", to: "projects", wantParent: []string{"projects"}},
			{name: "subtree", id: "recipes", to: "projects", wantParent: []string{"projects"}},
			{name: "same parent no-op", id: "pancakes", from: "recipes", to: "recipes", wantParent: []string{"recipes"}},
			{name: "under itself", id: "projects", to: "projects", err: ErrCycle, errText: "under itself"},
			{name: "under child", id: "projects", to: "roadmap", err: ErrCycle, errText: "descendant"},
			{name: "root under descendant", id: RootID, from: "", to: "projects", err: ErrInvalidArgument, errText: "no parent"},
			{name: "wrong from", id: "pancakes", from: "projects", to: RootID, err: ErrNotFound, errText: "not a child"},
			{name: "missing target", id: "pancakes", to: "nope", err: ErrNotFound},
			{name: "missing note", id: "nope", to: RootID, err: ErrNotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				db := openStore(t, engine)
				ctx := t.Context()
				err := MoveNote(ctx, db, tt.id, tt.from, tt.to)
				if tt.err != nil {
					require.ErrorIs(t, err, tt.err)
					require.Contains(t, err.Error(), tt.errText)
					return
				}
				require.NoError(t, err)
				n, err := GetNote(ctx, db, tt.id)
				require.NoError(t, err)
				require.Equal(t, tt.wantParent, ids(n.Parents))
			})
		}

		t.Run("appended at end and searchable under new ancestor", func(t *testing.T) {
			t.Parallel()
			db := openStore(t, engine)
			ctx := t.Context()
			require.NoError(t, MoveNote(ctx, db, "pancakes", "", "projects"))
			kids, err := Children(ctx, db, "projects")
			require.NoError(t, err)
			require.Equal(t, []string{"roadmap", "meetings", "pancakes"}, ids(kids))
			kids, err = Children(ctx, db, "recipes")
			require.NoError(t, err)
			require.Empty(t, kids)
			require.Equal(t, []string{"pancakes"}, searchIDs(t, db, "flour", "projects"))
			require.Equal(t, []string{}, searchIDs(t, db, "flour", "recipes"))
		})
		t.Run("cloned note", func(t *testing.T) {
			t.Parallel()
			db := openStore(t, engine)
			ctx := t.Context()
			require.NoError(t, CloneNote(ctx, db, "pancakes", "projects"))
			// Already a child of projects through the clone.
			require.ErrorIs(t, MoveNote(ctx, db, "pancakes", "recipes", "projects"), ErrConflict)
			// Implicit from = oldest parent (recipes).
			require.NoError(t, MoveNote(ctx, db, "pancakes", "", RootID))
			n, err := GetNote(ctx, db, "pancakes")
			require.NoError(t, err)
			require.ElementsMatch(t, []string{RootID, "projects"}, ids(n.Parents))
			// Moving a clone under its other placement's descendant is a cycle.
			require.ErrorIs(t, MoveNote(ctx, db, "projects", "", "pancakes"), ErrCycle)
		})
	})
}

func TestCloneNote(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		tests := []struct {
			name, id, parent string
			err              error
		}{
			{name: "ok", id: "pancakes", parent: "projects"},
			{name: "subtree ok", id: "recipes", parent: "roadmap"},
			{name: "already child", id: "pancakes", parent: "recipes", err: ErrConflict},
			{name: "under itself", id: "projects", parent: "projects", err: ErrCycle},
			{name: "under descendant", id: "projects", parent: "meetings", err: ErrCycle},
			{name: "root anywhere", id: RootID, parent: "pancakes", err: ErrCycle},
			{name: "missing note", id: "nope", parent: RootID, err: ErrNotFound},
			{name: "missing parent", id: "pancakes", parent: "nope", err: ErrNotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				db := openStore(t, engine)
				ctx := t.Context()
				err := CloneNote(ctx, db, tt.id, tt.parent)
				if tt.err != nil {
					require.ErrorIs(t, err, tt.err)
					return
				}
				require.NoError(t, err)
				kids, err := Children(ctx, db, tt.parent)
				require.NoError(t, err)
				require.Equal(t, tt.id, kids[len(kids)-1].ID, "appended at the end")
				n, err := GetNote(ctx, db, tt.id)
				require.NoError(t, err)
				require.Len(t, n.Parents, 2)
				require.Equal(t, tt.parent, n.Parents[1].ID, "new placement listed last")
			})
		}
		t.Run("cycle through clone", func(t *testing.T) {
			t.Parallel()
			db := openStore(t, engine)
			ctx := t.Context()
			require.NoError(t, CloneNote(ctx, db, "recipes", "roadmap"))
			// pancakes is now also under projects/roadmap/recipes.
			require.ErrorIs(t, CloneNote(ctx, db, "projects", "pancakes"), ErrCycle)
			ok, err := IsDescendant(ctx, db, "pancakes", "projects")
			require.NoError(t, err)
			require.True(t, ok)
			tree, err := Subtree(ctx, db, "projects", 5, 0)
			require.NoError(t, err)
			require.Equal(t, "pancakes", tree.Children[0].Children[0].Children[0].ID)
		})
	})
}

func TestSetAttribute(t *testing.T) {
	t.Parallel()
	db := newStore(t)
	ctx := t.Context()

	// Update in place: same ID, new value.
	a, err := SetAttribute(ctx, db, "roadmap", AttributeLabel, "priority", "low")
	require.NoError(t, err)
	require.Equal(t, NoteAttribute{ID: "attrPriority", NoteID: "roadmap", Type: AttributeLabel, Name: "priority", Value: "low", Position: 20}, *a)

	// Insert: appended.
	a, err = SetAttribute(ctx, db, "roadmap", AttributeLabel, "owner:team", "core")
	require.NoError(t, err)
	require.Regexp(t, `^[A-Za-z0-9]{12}$`, a.ID)
	require.Equal(t, 30, a.Position)
	// A relation with the same name is a distinct attribute.
	r, err := SetAttribute(ctx, db, "roadmap", AttributeRelation, "owner:team", "meetings")
	require.NoError(t, err)
	require.NotEqual(t, a.ID, r.ID)

	attrs, err := Attributes(ctx, db, "roadmap")
	require.NoError(t, err)
	var got []string
	for _, at := range attrs {
		got = append(got, at.Type+":"+at.Name+"="+at.Value)
	}
	require.Equal(t, []string{"label:todo=", "label:priority=low", "label:owner:team=core", "relation:owner:team=meetings"}, got)

	tests := []struct {
		name, note, typ, attr, value string
		err                          error
	}{
		{"missing note", "nope", AttributeLabel, "x", "", ErrNotFound},
		{"missing relation target", "roadmap", AttributeRelation, "x", "nope", ErrNotFound},
		{"empty relation target", "roadmap", AttributeRelation, "x", "", ErrNotFound},
		{"bad type", "roadmap", "tag", "x", "", ErrInvalidArgument},
		{"empty name", "roadmap", AttributeLabel, "", "", ErrInvalidArgument},
		{"space in name", "roadmap", AttributeLabel, "a b", "", ErrInvalidArgument},
		{"hash in name", "roadmap", AttributeLabel, "#todo", "", ErrInvalidArgument},
	}
	for _, tt := range tests {
		_, err := SetAttribute(ctx, db, tt.note, tt.typ, tt.attr, tt.value)
		require.ErrorIs(t, err, tt.err, tt.name)
	}
}

func TestDeleteAttribute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, attr, note string
		err              error
	}{
		{name: "ok", attr: "attrTodo", note: "roadmap"},
		{name: "other note", attr: "attrTodo", note: "pancakes", err: ErrNotOwned},
		{name: "missing", attr: "nope", note: "roadmap", err: ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := newStore(t)
			ctx := t.Context()
			err := DeleteAttribute(ctx, db, tt.attr, tt.note)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				require.Contains(t, err.Error(), tt.attr)
				// Nothing was deleted.
				_, err := Attribute(ctx, db, "roadmap", "todo")
				require.NoError(t, err)
				return
			}
			require.NoError(t, err)
			_, err = Attribute(ctx, db, tt.note, "todo")
			require.ErrorIs(t, err, ErrNotFound)
			require.ErrorIs(t, DeleteAttribute(ctx, db, tt.attr, tt.note), ErrNotFound, "already deleted")
			// The name can be set again afterwards.
			a, err := SetAttribute(ctx, db, tt.note, AttributeLabel, "todo", "again")
			require.NoError(t, err)
			require.NotEqual(t, tt.attr, a.ID)
		})
	}
}

func TestWithCallerTransaction(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		db := openStore(t, engine)
		ctx := t.Context()

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		n, err := CreateNote(ctx, tx, RootID, "Draft", "", "tentative")
		require.NoError(t, err)
		require.NoError(t, SetContent(ctx, tx, n.ID, "changed", SourceModel))
		require.NoError(t, MoveNote(ctx, tx, "pancakes", "", n.ID))
		require.NoError(t, tx.Rollback())

		ok, err := Exists(ctx, db, n.ID)
		require.NoError(t, err)
		require.False(t, ok, "rolled back with the caller's transaction")
		parents, err := GetNote(ctx, db, "pancakes")
		require.NoError(t, err)
		require.Equal(t, []string{"recipes"}, ids(parents.Parents))

		// A failing multi-statement write leaves nothing behind (own transaction).
		before := countRows(t, db, `SELECT COUNT(*) FROM branches`)
		require.Error(t, MoveNote(ctx, db, "projects", "", "roadmap"))
		require.Equal(t, before, countRows(t, db, `SELECT COUNT(*) FROM branches`))

		// A *sql.Conn also works.
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, conn.Close()) }()
		_, err = CreateNote(ctx, conn, RootID, "Via conn", "", "")
		require.NoError(t, err)
	})
}

func TestConcurrentWrites(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		db := openStore(t, engine)
		ctx := t.Context()
		const n = 16
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				note, err := CreateNote(ctx, db, "recipes", fmt.Sprintf("Recipe %d", i), "", "")
				if err == nil {
					err = SetContent(ctx, db, note.ID, fmt.Sprintf("ingredient%d", i), SourceModel)
				}
				if err == nil {
					_, err = SetAttribute(ctx, db, note.ID, AttributeLabel, "n", fmt.Sprint(i))
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		kids, err := Children(ctx, db, "recipes")
		require.NoError(t, err)
		require.Len(t, kids, n+1)
		require.Equal(t, n+1, countRows(t, db,
			`SELECT COUNT(DISTINCT position) FROM branches WHERE parentNoteId = 'recipes' AND isDeleted = 0`))
	})
}

func TestErrorsWrapSentinels(t *testing.T) {
	t.Parallel()
	db := newStore(t)
	err := MoveNote(context.Background(), db, "projects", "", "meetings")
	require.True(t, errors.Is(err, ErrCycle))
	require.Contains(t, err.Error(), `"projects"`)
	require.Contains(t, err.Error(), `"meetings"`)
}

func TestProtectedDescendant(t *testing.T) {
	t.Parallel()
	db := newStore(t)
	ctx := t.Context()
	// A protected note two levels below projects, through a clone.
	box, err := CreateNote(ctx, db, "recipes", "Box", "", "")
	require.NoError(t, err)
	require.NoError(t, MoveNote(ctx, db, "secret", "", box.ID))
	require.NoError(t, CloneNote(ctx, db, "recipes", "roadmap"))

	tests := []struct{ id, want string }{
		{id: RootID, want: "secret"},
		{id: "projects", want: "secret"},
		{id: "recipes", want: "secret"},
		{id: box.ID, want: "secret"},
		{id: "secret", want: ""}, // not its own descendant
		{id: "pancakes", want: ""},
		{id: "meetings", want: ""},
		{id: "nope", want: ""},
	}
	for _, tt := range tests {
		got, err := ProtectedDescendant(ctx, db, tt.id)
		require.NoError(t, err)
		require.Equal(t, tt.want, got, tt.id)
	}

	// A deleted protected note no longer counts.
	require.NoError(t, MoveNote(ctx, db, "secret", "", RootID))
	_, err = DeleteNote(ctx, db, "secret")
	require.NoError(t, err)
	got, err := ProtectedDescendant(ctx, db, RootID)
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestSubtreeMarksProtected(t *testing.T) {
	t.Parallel()
	db := newStore(t)
	tree, err := Subtree(t.Context(), db, RootID, 1, 0)
	require.NoError(t, err)
	protected := map[string]bool{}
	for _, c := range tree.Children {
		protected[c.ID] = c.IsProtected
	}
	require.Equal(t, map[string]bool{"projects": false, "recipes": false, "secret": true, HiddenID: false, ShareID: false}, protected)
	tree, err = Subtree(t.Context(), db, "secret", 0, 0)
	require.NoError(t, err)
	require.True(t, tree.IsProtected)
}

// fakeEngine is a Queryer that reports an engine, as llmtool's contexts do.
type fakeEngine struct {
	Execer
	engine string
}

func (f fakeEngine) Engine() string { return f.engine }

// nopDriver is a database/sql driver the store does not know.
type nopDriver struct{}

func (nopDriver) Open(string) (driver.Conn, error) { return nil, errors.New("not a real driver") }

func init() { sql.Register("notes-test-nop", nopDriver{}) }

func TestEngineOf(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, engine string) {
		db := openStore(t, engine)
		ctx := t.Context()
		check := func(q Queryer, wantKnown bool, want string) {
			t.Helper()
			got, known, err := engineOf(q)
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.Equal(t, wantKnown, known)
		}
		check(db, true, engine)
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, conn.Close()) }()
		check(conn, true, engine)
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		check(tx, false, EngineSQLite) // a *sql.Tx cannot tell: SQLite is assumed
		check(OnEngine(tx, engine), true, engine)
		check(fakeEngine{tx, engine}, true, engine)

		// Through OnEngine, a caller's transaction searches and writes on
		// either engine.
		wtx := OnEngine(tx, engine)
		n, err := CreateNote(ctx, wtx, "recipes", "Crêpes", "", "<p>buckwheat flour</p>")
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"pancakes", n.ID}, searchIDs(t, wtx, "flour", ""))
		require.NoError(t, Migrate(ctx, wtx))
	})

	t.Run("bare transaction on postgres", func(t *testing.T) {
		t.Parallel()
		db := openStore(t, EnginePostgres)
		tx, err := db.BeginTx(t.Context(), nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		// Portable functions work; Search, taking it for SQLite, fails and
		// says what to do.
		ok, err := Exists(t.Context(), tx, "pancakes")
		require.NoError(t, err)
		require.True(t, ok)
		_, err = Search(t.Context(), tx, "flour", "", 0)
		require.ErrorContains(t, err, "*sql.Tx cannot be told, SQLite was assumed")
		require.ErrorContains(t, err, "notes.OnEngine")
	})

	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		sqliteDB := openStore(t, EngineSQLite)
		_, _, err := engineOf(fakeEngine{sqliteDB, "mysql"})
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.ErrorContains(t, err, `reports engine "mysql"`)
		_, err = Search(t.Context(), fakeEngine{sqliteDB, ""}, "flour", "", 0)
		require.ErrorIs(t, err, ErrInvalidArgument)

		other, err := sql.Open("notes-test-nop", "")
		require.NoError(t, err)
		defer func() { require.NoError(t, other.Close()) }()
		_, _, err = engineOf(other)
		require.ErrorContains(t, err, "unsupported database driver notes.nopDriver")
		require.ErrorIs(t, Migrate(t.Context(), other), ErrInvalidArgument)
		_, err = CreateNote(t.Context(), other, RootID, "X", "", "")
		require.ErrorIs(t, err, ErrInvalidArgument)
	})
}

func TestOpenPostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	require.True(t, IsPostgresURL(dsn))
	db, err := Open(ctx, dsn)
	require.NoError(t, err)
	notes := countRows(t, db, `SELECT COUNT(*) FROM notes`)
	require.Equal(t, len(seedNotes), notes)
	_, err = CreateNote(ctx, db, RootID, "Extra", "", "")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	// Reopening migrates and seeds again: idempotent, nothing duplicated.
	db, err = Open(ctx, strings.Replace(dsn, "postgres://", "postgresql://", 1))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	require.NoError(t, Migrate(ctx, db))
	require.NoError(t, Seed(ctx, db))
	require.Equal(t, notes+1, countRows(t, db, `SELECT COUNT(*) FROM notes`))
	require.Equal(t, len(seedAttrs), countRows(t, db, `SELECT COUNT(*) FROM attributes`))
	require.Equal(t, []string{"pancakes"}, searchIDs(t, db, "flour", ""))
}

// TestOpenPostgresErrors: errors name the server without the password.
func TestOpenPostgresErrors(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"postgres://alice:s3cret@127.0.0.1:1/notes?sslmode=disable&password=s3cret", // nothing listens
		"postgresql://alice:s3cret@[::1/notes",                                      // malformed
		"postgres://alice:s3cret@127.0.0.1:1/notes?connect_timeout=x",               // bad option
	} {
		_, err := Open(t.Context(), url)
		require.Error(t, err, url)
		require.Contains(t, err.Error(), "open note store", url)
		require.NotContains(t, err.Error(), "s3cret", url)
	}
}

func TestIsPostgresURL(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{
		"postgres://u@h/db": true, "postgresql://h/db": true, "notes.db": false,
		"/tmp/postgres://x": false, "Postgres://h/db": false, "postgres:/h": false,
	} {
		require.Equal(t, want, IsPostgresURL(path), path)
	}
}
