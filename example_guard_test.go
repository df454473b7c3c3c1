package llmtool_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/guard"
	"github.com/llmtool/llmtool/sqlite"
)

// exampleNotes opens a SQLite file with a notes table: the system note
// root, note n1, and note n2, which is protected.
func exampleNotes() (*sql.DB, func()) {
	dir, err := os.MkdirTemp("", "llmtool-example")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(dir, "notes.db"))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes (id TEXT PRIMARY KEY, title TEXT NOT NULL, parent TEXT, protected INTEGER NOT NULL DEFAULT 0);
		INSERT INTO notes VALUES ('root', 'Root', NULL, 0), ('n1', 'Shopping', 'root', 0), ('n2', 'Diary', 'root', 1)`); err != nil {
		log.Fatal(err)
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }
}

func exampleLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// MoveNoteIn references notes twice: the note to move, which must not be a
// system note, and the new parent, which may be one (system-ok).
type MoveNoteIn struct {
	NoteID   string `json:"noteId" ref:"note" desc:"ID of the note to move."`
	ParentID string `json:"parentNoteId" ref:"note,system-ok" desc:"ID of the new parent note."`
}

// An entity kind is declared once, and every tool whose input references it
// gets its checks in a fixed order: exists, system (write tools), protected,
// the principal may act. No tool can forget one.
func ExampleEntity() {
	db, done := exampleNotes()
	defer done()

	note := &llmtool.Entity{
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
		NotFoundNext: "Call search_notes to find the note's ID.",
	}
	moveNote := llmtool.Write("move_note", "Move a note under another parent note.",
		func(c *llmtool.WriteCtx, in MoveNoteIn) (struct{}, error) {
			_, err := c.Exec(`UPDATE notes SET parent = ? WHERE id = ?`, in.ParentID, in.NoteID)
			return struct{}{}, err
		}, llmtool.FriendlyName("Move note"))

	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: exampleLogger()}, llmtool.DefineTools("notes", moveNote).WithEntities(note))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	ctx := context.Background()
	if err := reg.Tenants().SetWrites(ctx, "", true); err != nil {
		log.Fatal(err)
	}
	for _, args := range []string{
		`{"noteId": "n9", "parentNoteId": "root"}`,
		`{"noteId": "root", "parentNoteId": "n1"}`,
		`{"noteId": "n2", "parentNoteId": "root"}`,
		`{"noteId": "n1", "parentNoteId": "root"}`,
	} {
		fmt.Println(reg.Invoke(ctx, llmtool.Call{Tool: "move_note", Args: []byte(args)}).Text())
	}
	// Output:
	// Note "n9" (noteId) does not exist. Call search_notes to find the note's ID.
	// Note "root" (noteId) is a system note; move_note must not change it. Leave system notes as they are and choose another note.
	// Note "n2" (noteId) is protected; tools may neither read nor change it. Work with another note, or ask the user to remove the protection.
	// {}
}

// Tool guards are typed checks that run after the entity guards, in the
// order given, inside the call's transaction. The first that fails ends
// the call, and nothing is written.
func ExampleGuards() {
	db, done := exampleNotes()
	defer done()

	type RenameIn struct {
		NoteID string `json:"noteId" desc:"ID of the note."`
		Title  string `json:"title" desc:"The new title."`
	}
	unique := func(c *llmtool.ReadCtx, in RenameIn) error {
		var n int
		if err := c.QueryRow(`SELECT count(*) FROM notes WHERE title = ?`, in.Title).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return llmtool.Conflict("A note titled %q exists.", in.Title).Next("Choose another title.")
		}
		return nil
	}
	rename := llmtool.Write("rename_note", "Rename a note.",
		func(c *llmtool.WriteCtx, in RenameIn) (struct{}, error) {
			_, err := c.Exec(`UPDATE notes SET title = ? WHERE id = ?`, in.Title, in.NoteID)
			return struct{}{}, err
		},
		llmtool.Guards(guard.RequireRole[RenameIn]("editor"), unique))

	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: exampleLogger()}, llmtool.DefineTools("notes", rename))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "ann", Roles: []string{"editor"}})
	if err := reg.Tenants().SetWrites(ctx, "", true); err != nil {
		log.Fatal(err)
	}
	fmt.Println(reg.Invoke(ctx, llmtool.Call{Tool: "rename_note", Args: []byte(`{"noteId": "n1", "title": "Diary"}`)}).Text())
	fmt.Println(reg.Invoke(ctx, llmtool.Call{Tool: "rename_note", Args: []byte(`{"noteId": "n1", "title": "Groceries"}`)}).Text())
	// Output:
	// A note titled "Diary" exists. Choose another title.
	// {}
}
