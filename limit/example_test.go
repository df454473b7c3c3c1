package limit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/limit"
	"github.com/llmtool/llmtool/sqlite"
)

type NoteIn struct {
	Title string `json:"title" desc:"Title of the note." minLength:"1"`
}

type NoteOut struct {
	ID int64 `json:"id"`
}

type ListOut struct {
	Titles []string `json:"titles"`
}

// createNote is a write tool; slow makes it wait until its call is
// stopped, as a tool stuck on a slow query or a remote service would.
func createNote(slow bool) *llmtool.Tool {
	return llmtool.Write("create_note", "Create a note.", func(c *llmtool.WriteCtx, in NoteIn) (NoteOut, error) {
		res, err := c.Exec(`INSERT INTO notes (title) VALUES (?)`, in.Title)
		if err != nil {
			return NoteOut{}, err
		}
		if slow {
			<-c.Done()
			return NoteOut{}, c.Err()
		}
		id, err := res.LastInsertId()
		return NoteOut{ID: id}, err
	})
}

var listNotes = llmtool.Read("list_notes", "List the notes' titles.", func(c *llmtool.ReadCtx, _ struct{}) (ListOut, error) {
	out := ListOut{Titles: []string{}}
	rows, err := c.Query(`SELECT title FROM notes ORDER BY id`)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var title string
		if err := rows.Scan(&title); err != nil {
			return out, err
		}
		out.Titles = append(out.Titles, title)
	}
	return out, rows.Err()
})

// exampleRegistry opens a registry on a fresh SQLite file with a notes
// table, writes on, and the middleware given.
func exampleRegistry(mw []llmtool.Middleware, tools ...*llmtool.Tool) (*llmtool.Registry, func()) {
	dir, err := os.MkdirTemp("", "llmtool-limit-example")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(dir, "notes.db"))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Middleware: mw,
	}, llmtool.DefineTools("notes", tools...))
	if err != nil {
		log.Fatal(err)
	}
	if err := reg.Tenants().SetWrites(context.Background(), "", true); err != nil {
		log.Fatal(err)
	}
	return reg, func() { reg.Close(); db.Close(); os.RemoveAll(dir) }
}

// Each user may make two calls a minute; the third is refused at once,
// with the wait until the next one.
func ExampleRate() {
	reg, done := exampleRegistry([]llmtool.Middleware{
		limit.Rate(2, time.Minute, limit.ByPrincipal),
	}, createNote(false), listNotes)
	defer done()
	ann := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "ann"})
	bob := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "bob"})

	fmt.Println(reg.Invoke(ann, llmtool.Call{Tool: "create_note", Args: []byte(`{"title": "Groceries"}`)}).Text())
	fmt.Println(reg.Invoke(ann, llmtool.Call{Tool: "list_notes"}).Text())
	res := reg.Invoke(ann, llmtool.Call{Tool: "list_notes"})
	fmt.Println(res.Text())
	fmt.Println(errors.Is(res.Err, limit.ErrRate))
	fmt.Println(reg.Invoke(bob, llmtool.Call{Tool: "list_notes"}).Text())
	// Output:
	// {"id":1}
	// {"titles":["Groceries"]}
	// Too many calls; list_notes was not run. Try again in 30 s.
	// true
	// {"titles":["Groceries"]}
}

// A Key of the host's own limits some calls only: here each user's writes,
// ten an hour, while reads are not limited (their key is "").
func ExampleKey() {
	writes := func(req *llmtool.Request) string {
		if req.Spec.ReadOnly {
			return ""
		}
		return limit.ByPrincipal(req)
	}
	reg, done := exampleRegistry([]llmtool.Middleware{
		limit.Rate(10, time.Hour, writes),
	}, createNote(false), listNotes)
	defer done()
	ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "ann"})

	for i := range 11 {
		res := reg.Invoke(ctx, llmtool.Call{Tool: "create_note", Args: fmt.Appendf(nil, `{"title": "Note %d"}`, i+1)})
		if res.IsError {
			fmt.Println(res.Text())
		}
	}
	res := reg.Invoke(ctx, llmtool.Call{Tool: "list_notes"})
	fmt.Println(res.IsError)
	// Output:
	// Too many calls; create_note was not run. Try again in 6 min.
	// false
}

// A write tool that runs past its timeout is stopped, and its transaction
// rolls back: the note it inserted is not saved.
func ExampleTimeout_perTool() {
	reg, done := exampleRegistry([]llmtool.Middleware{
		limit.Timeout(10*time.Second, map[string]time.Duration{"create_note": 100 * time.Millisecond}),
	}, createNote(true), listNotes)
	defer done()
	ctx := context.Background()

	res := reg.Invoke(ctx, llmtool.Call{Tool: "create_note", Args: []byte(`{"title": "Groceries"}`)})
	fmt.Println(res.Text())
	fmt.Println(errors.Is(res.Err, limit.ErrTimeout), errors.Is(res.Err, context.DeadlineExceeded))
	fmt.Println(reg.Invoke(ctx, llmtool.Call{Tool: "list_notes"}).Text())
	// Output:
	// create_note took longer than 100 ms and was stopped; nothing was saved. Call it again with less work, or tell the user.
	// true true
	// {"titles":[]}
}

// One export runs at a time; a second one, while the first runs, is
// refused at once rather than queued.
func ExampleConcurrent() {
	running, finish := make(chan struct{}), make(chan struct{})
	export := llmtool.Read("export_notes", "Export the notes.", func(c *llmtool.ReadCtx, _ struct{}) (ListOut, error) {
		running <- struct{}{}
		<-finish
		return ListOut{Titles: []string{}}, nil
	})
	reg, done := exampleRegistry([]llmtool.Middleware{limit.Concurrent(1, nil)}, export)
	defer done()
	ctx := context.Background()

	first := make(chan llmtool.Result)
	go func() { first <- reg.Invoke(ctx, llmtool.Call{Tool: "export_notes"}) }()
	<-running // the first export runs
	fmt.Println(reg.Invoke(ctx, llmtool.Call{Tool: "export_notes"}).Text())
	close(finish)
	fmt.Println((<-first).Text())
	// Output:
	// Too many calls of export_notes are running at once (limit 1). Try again in a moment.
	// {"titles":[]}
}
