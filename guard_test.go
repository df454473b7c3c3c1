package llmtool_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/guard"
	"github.com/llmtool/llmtool/internal/schema"
)

// The notes fixture: a notes table with a system note (root), a protected
// note (n2), a note owned by alice (n1) and one owned by bob (n3).

// ownerOnly lets a principal act on the notes it owns and on unowned ones.
func ownerOnly(c *llmtool.ReadCtx, id string) (bool, error) {
	var owner string
	if err := c.QueryRow(`SELECT owner FROM notes WHERE id = ?`, id).Scan(&owner); err != nil {
		return false, err
	}
	p := llmtool.PrincipalFrom(c)
	return owner == "" || (p != nil && p.ID == owner), nil
}

func openNotes(t testing.TB) *sql.DB {
	t.Helper()
	db := openDB(t)
	_, err := db.Exec(`CREATE TABLE notes (id TEXT PRIMARY KEY, title TEXT NOT NULL, protected INTEGER NOT NULL DEFAULT 0, owner TEXT NOT NULL DEFAULT '', parent TEXT);
		INSERT INTO notes (id, title, protected, owner, parent) VALUES
			('root', 'Root', 0, '', NULL),
			('n1', 'Shopping', 0, 'alice', 'root'),
			('n2', 'Diary', 1, 'alice', 'root'),
			('n3', 'Plans', 0, 'bob', 'root')`)
	require.NoError(t, err)
	return db
}

func countNotes(t testing.TB, db *sql.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM notes`).Scan(&n))
	return n
}

// noteTitles returns every note's ID and title, in ID order.
func noteTitles(t testing.TB, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT id, title FROM notes ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var titles []string
	for rows.Next() {
		var id, title string
		require.NoError(t, rows.Scan(&id, &title))
		titles = append(titles, id+": "+title)
	}
	require.NoError(t, rows.Err())
	return titles
}

// syncBuffer is a log destination safe for concurrent calls.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newReg returns a registry over db whose log goes to the returned buffer.
// Unlike newRegistry it leaves the policy as a host gets it: writes off.
func newReg(t testing.TB, db *sql.DB, mods ...*llmtool.Module) (*llmtool.Registry, *syncBuffer) {
	t.Helper()
	return newRegOpts(t, db, &llmtool.Options{ValidateOutput: true}, mods...)
}

// newRegOpts is newReg with the given options; the Logger, if opts has
// none, writes to the returned buffer.
func newRegOpts(t testing.TB, db *sql.DB, opts *llmtool.Options, mods ...*llmtool.Module) (*llmtool.Registry, *syncBuffer) {
	t.Helper()
	o := llmtool.Options{}
	if opts != nil {
		o = *opts
	}
	buf := &syncBuffer{}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(buf, nil))
	}
	reg, err := llmtool.NewRegistry(db, &o, mods...)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	return reg, buf
}

func alice(ctx context.Context) context.Context {
	return llmtool.WithPrincipal(ctx, &llmtool.Principal{ID: "alice", Roles: []string{"editor"}})
}

var noteKind = &llmtool.Entity{
	Kind: "note",
	Exists: func(c *llmtool.ReadCtx, id string) (bool, error) {
		var n int
		err := c.QueryRow(`SELECT count(*) FROM notes WHERE id = ?`, id).Scan(&n)
		return n > 0, err
	},
	System: func(_ *llmtool.ReadCtx, id string) (bool, error) { return id == "root", nil },
	Protected: func(c *llmtool.ReadCtx, id string) (bool, error) {
		var p bool
		err := c.QueryRow(`SELECT protected FROM notes WHERE id = ?`, id).Scan(&p)
		return p, err
	},
	MayRead:      ownerOnly,
	MayChange:    ownerOnly,
	NotFoundNext: "Call search_notes to find the note's ID.",
}

type NoteRef struct {
	NoteID string `json:"noteId" ref:"note" desc:"ID of the note."`
}

type NoteOut struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type RenameNoteIn struct {
	NoteID string `json:"noteId" ref:"note" desc:"ID of the note to rename."`
	Title  string `json:"title" desc:"The new title."`
}

type CloneNoteIn struct {
	NoteID   string `json:"noteId" ref:"note" desc:"ID of the note to clone."`
	ParentID string `json:"parentNoteId" ref:"note,system-ok" desc:"ID of the parent of the clone."`
}

type TagNotesIn struct {
	NoteIDs []string  `json:"noteIds" ref:"note" desc:"IDs of the notes to tag."`
	Links   []NoteRef `json:"links,omitempty" desc:"Notes to link the tag to."`
	Also    *string   `json:"also,omitempty" ref:"note" desc:"One more note, optional."`
	Source  NoteRef   `json:"source,omitzero" desc:"The note the tag comes from, optional."`
}

var getNote = llmtool.Read("get_note", "Read a note's title.",
	func(c *llmtool.ReadCtx, in NoteRef) (NoteOut, error) {
		out := NoteOut{ID: in.NoteID}
		err := c.QueryRow(`SELECT title FROM notes WHERE id = ?`, in.NoteID).Scan(&out.Title)
		return out, err
	})

// guardRan records the tool guards that ran, to show the order.
type guardLog struct {
	mu  sync.Mutex
	ran []string
}

func (g *guardLog) add(s string) {
	g.mu.Lock()
	g.ran = append(g.ran, s)
	g.mu.Unlock()
}

func renameNoteTool(log *guardLog) *llmtool.Tool {
	noHash := func(c *llmtool.ReadCtx, in RenameNoteIn) error {
		log.add("noHash")
		if strings.HasPrefix(in.Title, "#") {
			return llmtool.InvalidArgs("/title: a title cannot start with \"#\".").Next("Send the title without the leading \"#\".")
		}
		return nil
	}
	short := func(c *llmtool.ReadCtx, in RenameNoteIn) error {
		log.add("short")
		if len(in.Title) > 20 {
			return llmtool.InvalidArgs("/title: %d characters is too long for a title.", len(in.Title)).Next("Send at most 20 characters.")
		}
		return nil
	}
	return llmtool.Write("rename_note", "Rename a note.",
		func(c *llmtool.WriteCtx, in RenameNoteIn) (NoteOut, error) {
			log.add("handler")
			_, err := c.Exec(`UPDATE notes SET title = ? WHERE id = ?`, in.Title, in.NoteID)
			return NoteOut{ID: in.NoteID, Title: in.Title}, err
		}, llmtool.Guards(noHash, short))
}

var cloneNote = llmtool.Write("clone_note", "Clone a note under another parent.",
	func(c *llmtool.WriteCtx, in CloneNoteIn) (NoteOut, error) {
		_, err := c.Exec(`INSERT INTO notes (id, title, owner, parent) SELECT id || '-clone', title, owner, ? FROM notes WHERE id = ?`, in.ParentID, in.NoteID)
		return NoteOut{ID: in.NoteID + "-clone"}, err
	})

var tagNotes = llmtool.Write("tag_notes", "Tag notes.",
	func(c *llmtool.WriteCtx, in TagNotesIn) (struct{}, error) {
		// One ? per ID: portable, where SQLite's json_each is not.
		args := make([]any, len(in.NoteIDs))
		for i, id := range in.NoteIDs {
			args[i] = id
		}
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ")
		_, err := c.Exec(`UPDATE notes SET title = title || ' #tagged' WHERE id IN (`+marks+`)`, args...)
		return struct{}{}, err
	})

func notesModule(log *guardLog) *llmtool.Module {
	return llmtool.DefineTools("notes", getNote, renameNoteTool(log), cloneNote, tagNotes).WithEntities(noteKind)
}

func TestEntityAndToolGuards(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tool, args string
		anon             bool   // no principal
		want             string // "" for success
		kind             llmtool.Kind
		ran              []string // tool guards and handler that ran
	}{
		{name: "exists", tool: "get_note", args: `{"noteId":"zz"}`,
			want: `Note "zz" (noteId) does not exist. Call search_notes to find the note's ID.`, kind: llmtool.KindNotFound},
		{name: "system note readable", tool: "get_note", args: `{"noteId":"root"}`},
		{name: "protected not readable", tool: "get_note", args: `{"noteId":"n2"}`,
			want: `Note "n2" (noteId) is protected; tools may neither read nor change it. Work with another note, or ask the user to remove the protection.`, kind: llmtool.KindDenied},
		{name: "may act: read", tool: "get_note", args: `{"noteId":"n3"}`,
			want: `You may not read note "n3" (noteId). Choose a note you have access to, or ask its owner to share it.`, kind: llmtool.KindDenied},
		{name: "may act without principal", tool: "get_note", args: `{"noteId":"n1"}`, anon: true,
			want: `You may not read note "n1" (noteId). Choose a note you have access to, or ask its owner to share it.`, kind: llmtool.KindDenied},
		{name: "system note not renamed", tool: "rename_note", args: `{"noteId":"root","title":"x"}`,
			want: `Note "root" (noteId) is a system note; rename_note must not change it. Leave system notes as they are and choose another note.`, kind: llmtool.KindDenied},
		{name: "may act: write", tool: "rename_note", args: `{"noteId":"n3","title":"x"}`,
			want: `You may not change note "n3" (noteId). Choose a note you have access to, or ask its owner to share it.`, kind: llmtool.KindDenied},
		{name: "entity guards before tool guards", tool: "rename_note", args: `{"noteId":"zz","title":"#this title is far too long"}`,
			want: `Note "zz" (noteId) does not exist. Call search_notes to find the note's ID.`, kind: llmtool.KindNotFound},
		{name: "first failing tool guard wins", tool: "rename_note", args: `{"noteId":"n1","title":"#this title is far too long"}`,
			want: `Error: /title: a title cannot start with "#". Send the title without the leading "#".`, kind: llmtool.KindInvalidArgs, ran: []string{"noHash"}},
		{name: "second tool guard", tool: "rename_note", args: `{"noteId":"n1","title":"this title is far too long"}`,
			want: `Error: /title: 26 characters is too long for a title. Send at most 20 characters.`, kind: llmtool.KindInvalidArgs, ran: []string{"noHash", "short"}},
		{name: "all guards pass", tool: "rename_note", args: `{"noteId":"n1","title":"Groceries"}`, ran: []string{"noHash", "short", "handler"}},
		{name: "exists stage before system stage", tool: "clone_note", args: `{"noteId":"root","parentNoteId":"zz"}`,
			want: `Note "zz" (parentNoteId) does not exist. Call search_notes to find the note's ID.`, kind: llmtool.KindNotFound},
		{name: "system note not cloned", tool: "clone_note", args: `{"noteId":"root","parentNoteId":"root"}`,
			want: `Note "root" (noteId) is a system note; clone_note must not change it. Leave system notes as they are and choose another note.`, kind: llmtool.KindDenied},
		{name: "system stage before protected stage", tool: "clone_note", args: `{"noteId":"root","parentNoteId":"n2"}`,
			want: `Note "root" (noteId) is a system note; clone_note must not change it. Leave system notes as they are and choose another note.`, kind: llmtool.KindDenied},
		{name: "protected stage before may-act stage", tool: "clone_note", args: `{"noteId":"n3","parentNoteId":"n2"}`,
			want: `Note "n2" (parentNoteId) is protected; tools may neither read nor change it. Work with another note, or ask the user to remove the protection.`, kind: llmtool.KindDenied},
		{name: "system-ok accepts a system parent", tool: "clone_note", args: `{"noteId":"n1","parentNoteId":"root"}`},
		{name: "slice of IDs", tool: "tag_notes", args: `{"noteIds":["n1","zz"]}`,
			want: `Note "zz" (noteIds[1]) does not exist. Call search_notes to find the note's ID.`, kind: llmtool.KindNotFound},
		{name: "nested field in a slice", tool: "tag_notes", args: `{"noteIds":["n1"],"links":[{"noteId":"n1"},{"noteId":"root"}]}`,
			want: `Note "root" (links[1].noteId) is a system note; tag_notes must not change it. Leave system notes as they are and choose another note.`, kind: llmtool.KindDenied},
		{name: "optional pointer", tool: "tag_notes", args: `{"noteIds":["n1"],"also":"n3"}`,
			want: `You may not change note "n3" (also). Choose a note you have access to, or ask its owner to share it.`, kind: llmtool.KindDenied},
		{name: "optional fields left out", tool: "tag_notes", args: `{"noteIds":["n1"]}`},
		{name: "field of an optional struct", tool: "tag_notes", args: `{"noteIds":["n1"],"source":{"noteId":"n9"}}`,
			want: `Note "n9" (source.noteId) does not exist. Call search_notes to find the note's ID.`, kind: llmtool.KindNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := openNotes(t)
			log := &guardLog{}
			reg, _ := newReg(t, db, notesModule(log))
			ctx := context.Background()
			require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))
			if !tc.anon {
				ctx = alice(ctx)
			}
			before := countNotes(t, db)
			title := noteTitles(t, db)
			res := reg.Invoke(ctx, llmtool.Call{Tool: tc.tool, Args: []byte(tc.args)})
			if tc.want == "" {
				require.False(t, res.IsError, res.Text())
				require.NotContains(t, decodeObj(t, res.JSON), "error")
			} else {
				require.True(t, res.IsError)
				require.Equal(t, tc.want, res.Text())
				require.Equal(t, tc.kind, llmtool.KindOf(res.Err))
				require.Equal(t, before, countNotes(t, db), "nothing written")
				require.Equal(t, title, noteTitles(t, db), "nothing written")
			}
			require.Equal(t, tc.ran, log.ran)
		})
	}
}

func TestEntityRegistration(t *testing.T) {
	t.Parallel()
	db := openNotes(t)
	tool := llmtool.Read("get_note", "Read a note.", func(c *llmtool.ReadCtx, in NoteRef) (NoteOut, error) { return NoteOut{}, nil })

	_, err := llmtool.NewRegistry(db, nil, llmtool.DefineTools("notes", tool))
	require.EqualError(t, err, `llmtool: module "notes": tool "get_note": field noteId references entity kind "note", which no registered module declares; declare it with an llmtool.Entity and attach it with Module.WithEntities (or fix the ref tag)`)
	var re *schema.RefError
	require.ErrorAs(t, err, &re)
	require.Equal(t, schema.RefError{Module: "notes", Tool: "get_note", Field: "noteId", Kind: "note"}, *re)

	// A kind may come from another module, in any order.
	reg, err := llmtool.NewRegistry(db, nil, llmtool.DefineTools("notes", tool), llmtool.DefineTools("kinds").WithEntities(noteKind))
	require.NoError(t, err)
	res := reg.Invoke(context.Background(), llmtool.Call{Tool: "get_note", Args: []byte(`{"noteId":"missing"}`)})
	require.Equal(t, llmtool.KindNotFound, llmtool.KindOf(res.Err), "the other module's declaration checks the reference: %s", res.Text())

	// Two declarations of one kind are refused; the same one twice is fine.
	other := &llmtool.Entity{Kind: "note", Exists: noteKind.Exists}
	_, err = llmtool.NewRegistry(db, nil, llmtool.DefineTools("a").WithEntities(noteKind), llmtool.DefineTools("b").WithEntities(other))
	require.EqualError(t, err, `llmtool: entity kind "note" is declared by both module "a" and module "b"; declare it once and share the *llmtool.Entity`)
	_, err = llmtool.NewRegistry(db, nil, llmtool.DefineTools("a").WithEntities(noteKind), llmtool.DefineTools("b").WithEntities(noteKind))
	require.NoError(t, err)

	// Add checks too, and registers nothing on failure.
	reg, _ = newReg(t, db)
	err = reg.Add(llmtool.DefineTools("notes", tool))
	require.ErrorAs(t, err, &re)
	_, found := reg.Tool(context.Background(), "get_note")
	require.False(t, found)
	require.NoError(t, reg.Add(llmtool.DefineTools("notes", tool).WithEntities(noteKind)))
}

func TestEntityDefinitionPanics(t *testing.T) {
	t.Parallel()
	require.PanicsWithValue(t, `llmtool: module "m": entity "note" has no Exists check; every entity kind needs one`, func() {
		llmtool.DefineTools("m").WithEntities(&llmtool.Entity{Kind: "note"})
	})
	require.PanicsWithValue(t, `llmtool: module "m": entity kind "" must be a non-empty word such as "note"`, func() {
		llmtool.DefineTools("m").WithEntities(&llmtool.Entity{Exists: noteKind.Exists})
	})
	type badOption struct {
		ID string `json:"id" ref:"note,sytem-ok" desc:"ID."`
	}
	require.PanicsWithValue(t, `llmtool: tool "bad": In field id: ref tag "note,sytem-ok" has unknown option "sytem-ok"; the only option is system-ok`, func() {
		llmtool.Read("bad", "Bad.", func(*llmtool.ReadCtx, badOption) (struct{}, error) { return struct{}{}, nil })
	})
	type badType struct {
		ID float64 `json:"id" ref:"note" desc:"ID."`
	}
	require.PanicsWithValue(t, `llmtool: tool "bad": In field id: ref tag on type float64; an entity reference must be a string or integer ID (or a slice of them)`, func() {
		llmtool.Read("bad", "Bad.", func(*llmtool.ReadCtx, badType) (struct{}, error) { return struct{}{}, nil })
	})
}

func TestIntegerIDsAndIsProtected(t *testing.T) {
	t.Parallel()
	db := openNotes(t)
	var seen []string
	item := &llmtool.Entity{Kind: "item",
		Exists: func(c *llmtool.ReadCtx, id string) (bool, error) {
			seen = append(seen, id)
			var n int
			err := c.QueryRow(`SELECT count(*) FROM items WHERE id = ?`, id).Scan(&n)
			return n > 0, err
		}}
	type in struct {
		ID int `json:"id" ref:"item" desc:"ID of the item."`
	}
	type out struct {
		Visible []string `json:"visible"`
	}
	list := llmtool.Read("visible_notes", "List the notes a model may see.",
		func(c *llmtool.ReadCtx, in in) (out, error) {
			var o out
			for _, id := range []string{"n1", "n2"} {
				p, err := c.IsProtected("note", id)
				if err != nil {
					return o, err
				}
				if !p {
					o.Visible = append(o.Visible, id)
				}
			}
			_, err := c.IsProtected("nope", "x")
			if err == nil || err.Error() != `llmtool: IsProtected: entity kind "nope" is not declared` {
				return o, errors.New("unexpected IsProtected error")
			}
			return o, nil
		})
	reg, _ := newReg(t, db, llmtool.DefineTools("m", list).WithEntities(item, noteKind))
	res := invoke(reg, "visible_notes", `{"id":1}`)
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"visible":["n1"]}`, string(res.JSON))
	res = invoke(reg, "visible_notes", `{"id":7}`)
	require.Equal(t, `Item "7" (id) does not exist. Send the ID of an existing item.`, res.Text())
	require.Equal(t, []string{"1", "7"}, seen)
}

func TestBuiltinGuards(t *testing.T) {
	t.Parallel()
	type attrIn struct {
		Name string `json:"name" desc:"Attribute name."`
	}
	setAttr := llmtool.Write("set_attr", "Set an attribute.",
		func(c *llmtool.WriteCtx, in attrIn) (struct{}, error) { return struct{}{}, nil },
		llmtool.Guards(
			guard.RequireRole[attrIn]("editor", "admin"),
			guard.DenyValues("name", func(in attrIn) string { return in.Name }, []string{"run", "runOnInstance"},
				"Use an attribute name that does not run code.")))
	reg, _ := newReg(t, openNotes(t), llmtool.DefineTools("attrs", setAttr))
	ctx := context.Background()
	require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))
	call := llmtool.Call{Tool: "set_attr", Args: []byte(`{"name":"RUN"}`)}

	res := reg.Invoke(llmtool.WithPrincipal(ctx, &llmtool.Principal{ID: "bob", Roles: []string{"reader"}}), call)
	require.Equal(t, `set_attr needs the role "editor" or "admin", which you do not have. Ask an administrator for the role, or use another tool.`, res.Text())
	res = reg.Invoke(alice(ctx), call)
	require.Equal(t, `name "RUN" is not allowed in set_attr. Use an attribute name that does not run code.`, res.Text())
	require.Equal(t, llmtool.KindDenied, llmtool.KindOf(res.Err))
	res = reg.Invoke(alice(ctx), llmtool.Call{Tool: "set_attr", Args: []byte(`{"name":"color"}`)})
	require.False(t, res.IsError, res.Text())
}

// BenchmarkEntityGuards compares a read call whose input references an
// entity (an exists check and a protected check, each a query in the
// call's transaction) with the same call without the ref tag.
func BenchmarkEntityGuards(b *testing.B) {
	db := openNotes(b)
	type plainIn struct {
		NoteID string `json:"noteId" desc:"ID of the note."`
	}
	kind := &llmtool.Entity{Kind: "note", Exists: noteKind.Exists, Protected: noteKind.Protected}
	handler := func(c *llmtool.ReadCtx, id string) (NoteOut, error) {
		out := NoteOut{ID: id}
		err := c.QueryRow(`SELECT title FROM notes WHERE id = ?`, id).Scan(&out.Title)
		return out, err
	}
	withRef := llmtool.Read("with_ref", "Read.", func(c *llmtool.ReadCtx, in NoteRef) (NoteOut, error) { return handler(c, in.NoteID) })
	without := llmtool.Read("without_ref", "Read.", func(c *llmtool.ReadCtx, in plainIn) (NoteOut, error) { return handler(c, in.NoteID) })
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		Audit: []audit.Sink{audit.Func(func(context.Context, audit.Record) {})},
	}, llmtool.DefineTools("b", withRef, without).WithEntities(kind))
	require.NoError(b, err)
	defer reg.Close()
	ctx := context.Background()
	for _, tool := range []string{"without_ref", "with_ref"} {
		call := llmtool.Call{Tool: tool, Args: []byte(`{"noteId":"n1"}`)}
		b.Run(tool, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res := reg.Invoke(ctx, call); res.IsError {
					b.Fatal(res.Text())
				}
			}
		})
	}
}
