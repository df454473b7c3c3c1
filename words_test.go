package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/i18n"
	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/llmtool/llmtool/sqlite"
)

// The words of changes (Entity.NameColumn, Columns, HiddenColumns,
// ColumnLabels, DeletedColumn) on SQLite, or on PostgreSQL with
// LLMTOOL_TEST_ENGINE=postgres, whose catalog spells the columns in
// lower case: docs that are deleted softly, their tags, which have no
// name column, and a log the host does not describe.

var wordsSchema = []string{
	`CREATE TABLE docs (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT, deleted INTEGER NOT NULL DEFAULT 0, updated_at TEXT)`,
	`CREATE TABLE tags (id INTEGER PRIMARY KEY, doc_id INTEGER NOT NULL, label TEXT NOT NULL, color TEXT)`,
	`CREATE TABLE logs (id INTEGER PRIMARY KEY, line TEXT NOT NULL)`,
	`INSERT INTO docs (id, title, body, updated_at) VALUES (1, 'Plans', 'Q3 goals', 't0')`,
	`INSERT INTO docs (id, title, body, deleted, updated_at) VALUES (3, 'Old', 'gone', 1, 't0')`,
	`INSERT INTO tags (id, doc_id, label, color) VALUES (1, 1, 'urgent', 'red')`,
}

var wordsEntities = llmtool.DefineTools("words").WithEntities(
	&llmtool.Entity{Kind: "doc", Exists: func(*llmtool.ReadCtx, string) (bool, error) { return true, nil },
		Table: "docs", Key: "id", NameColumn: "title", HiddenColumns: []string{"updated_at"}, DeletedColumn: "deleted"},
	&llmtool.Entity{Kind: "tag", Exists: func(*llmtool.ReadCtx, string) (bool, error) { return true, nil },
		Table: "tags", Key: "id", Columns: []string{"label", "color"}, ColumnLabels: map[string]string{"color": "colour"}},
)

// wordsPlainEntities are the same kinds on the same tables, without
// words: their rows read as the exact change.
var wordsPlainEntities = llmtool.DefineTools("words").WithEntities(
	&llmtool.Entity{Kind: "doc", Exists: func(*llmtool.ReadCtx, string) (bool, error) { return true, nil }, Table: "docs", Key: "id"},
	&llmtool.Entity{Kind: "tag", Exists: func(*llmtool.ReadCtx, string) (bool, error) { return true, nil }, Table: "tags", Key: "id"},
)

type wordsSQLIn struct {
	SQL []string `json:"sql"`
}

func wordsRun(c *llmtool.WriteCtx, in wordsSQLIn) (okOut, error) {
	for _, q := range in.SQL {
		if _, err := c.Exec(q); err != nil {
			return okOut{}, err
		}
	}
	return okOut{OK: true}, nil
}

var wordsTools = llmtool.DefineTools("words_tools",
	llmtool.Write("words_sql", "Run statements.", wordsRun),
	llmtool.Write("words_approve", "Run statements, with the user's approval.", wordsRun, llmtool.NeedsApproval()),
)

// wordsGerman is a host's German: the change's verbs, the nouns and the
// columns, so that no English word is left in a German line.
var wordsGerman = map[string]string{
	"llm.change.insert":        "{what} anlegen",
	"llm.change.update":        "{what} ändern",
	"llm.change.delete":        "{what} löschen",
	"llm.change.restore":       "{what} wiederherstellen",
	"llm.change.empty":         "leer",
	"llm.entities.doc":         "Dokument",
	"llm.entities.doc.title":   "Titel",
	"llm.entities.doc.body":    "Inhalt",
	"llm.entities.tag":         "Schlagwort",
	"llm.entities.tag.label":   "Wort",
	"llm.entities.tag.color":   "Farbe",
	"llm.entities.tag.doc_id":  "Dokument",
	"llm.entities.doc.deleted": "gelöscht",
}

// newWordsRegistry opens the words' schema with the entities that
// describe docs and tags, or (plain) the same entities without words.
func newWordsRegistry(t testing.TB, plain ...bool) (*llmtool.Registry, *sql.DB) {
	t.Helper()
	var db *sql.DB
	var err error
	if pgtest.FromEnv() {
		db, err = sql.Open("pgx", pgtest.DSN(t))
	} else {
		db, err = sqlite.Open(filepath.Join(t.TempDir(), "words.db"))
	}
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	for _, q := range wordsSchema {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	msgs := &i18n.Catalog{}
	msgs.Add("de", wordsGerman)
	mods := []*llmtool.Module{wordsTools, wordsEntities}
	if len(plain) > 0 && plain[0] {
		mods[1] = wordsPlainEntities
	}
	reg := newRegistryOpts(t, db, &llmtool.Options{Messages: msgs, Changesets: changeset.Config{
		Tables: []string{"docs", "tags", "logs"}, Generated: map[string][]string{"docs": {"updated_at"}}, Tools: true,
	}}, mods...)
	return reg, db
}

// TestChangeWords: each operation on a described table reads in the host's
// words, hidden columns left out, in English and in German; a row with no
// name column reads by its noun; a table no entity describes keeps the
// exact change.
func TestChangeWords(t *testing.T) {
	t.Parallel()
	reg, _ := newWordsRegistry(t)
	for _, tc := range []struct {
		name, locale string
		sql          []string
		want         []string // each row's Text
		line         string   // the set's String
	}{
		{name: "insert", sql: []string{`INSERT INTO docs (id, title, body, updated_at) VALUES (2, 'Ideas', 'Try it', 't1')`},
			want: []string{`Create doc "Ideas": body "Try it"`}},
		{name: "update", sql: []string{`UPDATE docs SET title = 'Plans 2026', updated_at = 't1' WHERE id = 1`},
			want: []string{`Change doc "Plans": title "Plans" → "Plans 2026"`}},
		{name: "update of hidden columns only", sql: []string{`UPDATE docs SET updated_at = 't1' WHERE id = 1`},
			want: []string{`Change doc "Plans"`}},
		{name: "update to null", sql: []string{`UPDATE docs SET body = NULL WHERE id = 1`},
			want: []string{`Change doc "Plans": body "Q3 goals" → empty`}},
		{name: "delete", sql: []string{`DELETE FROM docs WHERE id = 1`},
			want: []string{`Delete doc "Plans": body "Q3 goals"`}},
		{name: "soft delete", sql: []string{`UPDATE docs SET deleted = 1, updated_at = 't1' WHERE id = 1`},
			want: []string{`Delete doc "Plans": body "Q3 goals"`}},
		{name: "restore", sql: []string{`UPDATE docs SET deleted = 0, updated_at = 't1' WHERE id = 3`},
			want: []string{`Restore doc "Old"`}},
		{name: "no name column", sql: []string{`INSERT INTO tags (id, doc_id, label, color) VALUES (2, 1, 'later', 'blue')`, `DELETE FROM tags WHERE id = 1`},
			want: []string{`Create tag: label "later", colour "blue"`, `Delete tag: label "urgent", colour "red"`}},
		{name: "not described", sql: []string{`INSERT INTO logs (id, line) VALUES (1, 'hello')`},
			want: []string{""}, line: `insert logs (id=1): id=1, line="hello"`},
		{name: "German", locale: "de", sql: []string{
			`UPDATE docs SET title = 'Pläne', body = NULL WHERE id = 1`,
			`UPDATE docs SET deleted = 0 WHERE id = 3`,
			`INSERT INTO docs (id, title, body) VALUES (2, 'Ideen', 'Probieren')`,
			`DELETE FROM tags WHERE id = 1`,
		}, want: []string{
			`Dokument "Plans" ändern: Inhalt "Q3 goals" → leer, Titel "Plans" → "Pläne"`,
			`Dokument "Old" wiederherstellen`,
			`Dokument "Ideen" anlegen: Inhalt "Probieren"`,
			`Schlagwort löschen: Wort "urgent", Farbe "red"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, err := json.Marshal(wordsSQLIn{SQL: tc.sql})
			require.NoError(t, err)
			res := reg.Invoke(context.Background(), llmtool.Call{Tool: "words_sql", Args: args, DryRun: true, Locale: tc.locale})
			require.False(t, res.IsError, res.Text())
			require.NotNil(t, res.Preview)
			require.NotNil(t, res.Preview.Changeset)
			var got []string
			for _, r := range res.Preview.Changeset.Rows {
				got = append(got, r.Text)
			}
			require.Equal(t, tc.want, got)
			line := tc.line
			if line == "" {
				line = strings.Join(tc.want, "\n")
			}
			require.Equal(t, line, res.Preview.Changeset.String())
			if tc.line == "" {
				// A tool that does not describe its change gets its rows'
				// words as the preview's line.
				require.Equal(t, strings.Join(tc.want, "; "), res.Preview.Summary)
			} else {
				require.Empty(t, res.Preview.Summary)
			}
			if tc.locale == "de" {
				for _, w := range []string{"Create", "Change", "Delete", "Restore", "empty", "doc ", "tag", "body", "title", "label", "colour"} {
					require.NotContains(t, strings.Join(got, "\n"), w)
				}
			}
		})
	}
}

// TestChangeWordsApproval: the approval question reads in the host's
// words in the asking call's locale, and the words are not what it binds:
// the answer, sent in another locale, commits. The model's sentence keeps
// the tool's own line.
func TestChangeWordsApproval(t *testing.T) {
	t.Parallel()
	reg, db := newWordsRegistry(t)
	ctx := context.Background()
	args := []byte(`{"sql": ["UPDATE docs SET deleted = 1, updated_at = 't1' WHERE id = 1"]}`)
	res := reg.Invoke(ctx, llmtool.Call{Tool: "words_approve", Args: args, Locale: "de"})
	require.True(t, errors.Is(res.Err, approval.ErrRequired), res.Text())
	require.NotNil(t, res.Approval)
	require.Equal(t, `Dokument "Plans" löschen: Inhalt "Q3 goals"`, res.Approval.Preview.Summary)
	require.Equal(t, `Dokument "Plans" löschen: Inhalt "Q3 goals"`, res.Approval.Preview.String())
	require.Equal(t, "This change needs the user's approval: docs: 1 updated. Nothing was saved yet; ask the user to approve it.", res.Text(),
		"the model reads the tool's line, not the values of the rows in the person's words")

	done := reg.Invoke(ctx, llmtool.Call{Tool: "words_approve", Args: args, Approval: &approval.Answer{Token: res.Approval.Token, Approved: true}})
	require.False(t, done.IsError, done.Text())
	require.NotNil(t, done.Changeset)
	require.Equal(t, `Delete doc "Plans": body "Q3 goals"`, done.Changeset.String(), "the committed result in the host's words")
	var deleted int
	require.NoError(t, db.QueryRow(`SELECT deleted FROM docs WHERE id = 1`).Scan(&deleted))
	require.Equal(t, 1, deleted)
}

// TestChangeWordsHistory: list_changes and changes://recent give each row
// its words in the reader's locale, beside the exact change; the history
// records none.
func TestChangeWordsHistory(t *testing.T) {
	t.Parallel()
	reg, _ := newWordsRegistry(t)
	ctx := context.Background()
	w := reg.Invoke(ctx, llmtool.Call{Tool: "words_sql", Args: []byte(`{"sql": ["UPDATE docs SET title = 'Plans 2026' WHERE id = 1", "INSERT INTO logs (id, line) VALUES (1, 'renamed')"]}`), Conversation: "c1", Locale: "de"})
	require.False(t, w.IsError, w.Text())
	require.Equal(t, `Dokument "Plans" ändern: Titel "Plans" → "Plans 2026"`, w.Changeset.Rows[0].Text)

	for _, tc := range []struct {
		locale, want string
	}{
		{"", `Change doc "Plans": title "Plans" → "Plans 2026"`},
		{"de", `Dokument "Plans" ändern: Titel "Plans" → "Plans 2026"`},
	} {
		list := reg.Invoke(ctx, llmtool.Call{Tool: "list_changes", Args: []byte(`{}`), Conversation: "c1", Locale: tc.locale})
		require.False(t, list.IsError, list.Text())
		var got struct {
			Changes []changeset.Entry `json:"changes"`
		}
		require.NoError(t, json.Unmarshal(list.JSON, &got))
		require.Len(t, got.Changes, 1)
		rows := got.Changes[0].Rows
		require.Len(t, rows, 2)
		require.Equal(t, tc.want, rows[0].Text)
		require.Equal(t, `"Plans 2026"`, string(rows[0].After["title"]), "the exact change stays")
		require.Empty(t, rows[1].Text, "the log is not described")
		require.Contains(t, string(list.JSON), `"text":`+string(mustJSON(t, tc.want)))
	}
	recent := reg.Invoke(ctx, llmtool.Call{Resource: "changes://recent"})
	require.False(t, recent.IsError, recent.Text())
	require.Len(t, recent.Content, 1)
	require.Contains(t, recent.Content[0].Text, `"text":`+string(mustJSON(t, `Change doc "Plans": title "Plans" → "Plans 2026"`)))
}

// TestChangeWordsNeedTable: words without a table are a declaration's
// mistake, refused with the fix.
func TestChangeWordsNeedTable(t *testing.T) {
	t.Parallel()
	for _, e := range []*llmtool.Entity{
		{Kind: "doc", Exists: func(*llmtool.ReadCtx, string) (bool, error) { return true, nil }, NameColumn: "title"},
		{Kind: "doc", Exists: func(*llmtool.ReadCtx, string) (bool, error) { return true, nil }, HiddenColumns: []string{"rowid"}},
	} {
		require.PanicsWithValue(t, `llmtool: module "m": entity "doc" describes columns (NameColumn, Columns, HiddenColumns, ColumnLabels, DeletedColumn) without Table and Key; name the table they belong to`, func() {
			llmtool.DefineTools("m").WithEntities(e)
		})
	}
}

// BenchmarkChangeWordsRatio compares a tracked write whose rows an entity
// describes (its committed Result.Changeset gets each row's words) with
// the same write on a registry whose entities name the same tables
// without words, in the same run, in shuffled order: the cost of the
// words on the call a host sees.
func BenchmarkChangeWordsRatio(b *testing.B) {
	described, _ := newWordsRegistry(b)
	plain, _ := newWordsRegistry(b, true)
	args := []byte(`{"sql": ["UPDATE docs SET title = CASE title WHEN 'A' THEN 'B' ELSE 'A' END, updated_at = 't' WHERE id = 1", "UPDATE tags SET color = CASE color WHEN 'red' THEN 'blue' ELSE 'red' END WHERE id = 1"]}`)
	regs := []*llmtool.Registry{plain, described}
	t := shuffledRounds(b, len(regs), func(j int) {
		if res := regs[j].Invoke(context.Background(), llmtool.Call{Tool: "words_sql", Args: args}); res.IsError {
			b.Fatal(res.Text())
		}
	})
	t.report(b, 1, 0, "words/plain")
	t.reportSpread(b, []string{"plain", "words"}, "ns", 1)
}
