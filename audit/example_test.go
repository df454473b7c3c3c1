package audit_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/sqlite"
)

// A Table writes each committed write call's record in the call's own
// transaction: a rolled-back call leaves no row (the logger sink still
// records it), and a row never exists without its write.
func ExampleNewTable() {
	dir, err := os.MkdirTemp("", "llmtool-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "notes.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE notes (id TEXT PRIMARY KEY, title TEXT NOT NULL)`); err != nil {
		log.Fatal(err)
	}

	type TitleIn struct {
		Title string `json:"title" desc:"Title of the note."`
	}
	addNote := llmtool.Write("add_note", "Add a note.",
		func(c *llmtool.WriteCtx, in TitleIn) (struct{}, error) {
			if in.Title == "" {
				return struct{}{}, llmtool.InvalidArgs("/title: empty.").Next("Send a title.")
			}
			_, err := c.Exec(`INSERT INTO notes (id, title) VALUES (lower(hex(randomblob(4))), ?)`, in.Title)
			return struct{}{}, err
		}, llmtool.FriendlyName("Add note"))
	ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "ann"})
	table, err := audit.NewTable(ctx, db, "audit_log")
	if err != nil {
		log.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		Logger: logger,
		Audit: []audit.Sink{
			audit.Slog(logger), // keep the log lines: Audit replaces the default sink
			table,
			audit.Func(func(_ context.Context, r audit.Record) {
				fmt.Printf("audit: %s by %s: %s, committed %v\n", r.Tool, r.Principal, r.Outcome, r.Committed)
			}),
		},
	}, llmtool.DefineTools("notes", addNote))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	_ = reg.Tenants().SetWrites(ctx, "", true)

	reg.Invoke(ctx, llmtool.Call{Tool: "add_note", Args: []byte(`{"title": "Ideas"}`)})
	reg.Invoke(ctx, llmtool.Call{Tool: "add_note", Args: []byte(`{"title": ""}`)})
	var rows int
	_ = db.QueryRow(`SELECT count(*) FROM audit_log`).Scan(&rows)
	fmt.Println("rows:", rows)
	// Output:
	// audit: add_note by ann: ok, committed true
	// audit: add_note by ann: invalid_args, committed false
	// rows: 1
}
