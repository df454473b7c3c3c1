package llmtooltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/llmtooltest"
)

// The module under test: notes in the host's database. Its SQL runs on
// SQLite and on PostgreSQL.
type NoteIn struct {
	ID int `json:"id" desc:"ID of the note." minimum:"1"`
}

type NewNoteIn struct {
	Title string `json:"title" desc:"Title of the note." minLength:"1"`
}

type Note struct {
	ID    int    `json:"id"`
	Title string `json:"title"`
}

var Notes = llmtool.DefineTools("notes",
	llmtool.Read("get_note", "Read a note.",
		func(c *llmtool.ReadCtx, in NoteIn) (Note, error) {
			n := Note{ID: in.ID}
			err := c.QueryRow(`SELECT title FROM notes WHERE id = ?`, in.ID).Scan(&n.Title)
			if errors.Is(err, sql.ErrNoRows) {
				return n, llmtool.NotFound("Note %d not found.", in.ID).Next("Call list_notes to find the ID.")
			}
			return n, err
		}),
	llmtool.Write("create_note", "Create a note.",
		func(c *llmtool.WriteCtx, in NewNoteIn) (Note, error) {
			n := Note{Title: in.Title}
			err := c.QueryRow(`INSERT INTO notes (title) VALUES (?) RETURNING id`, in.Title).Scan(&n.ID)
			return n, err
		}),
)

// migrate is the host application's own schema code, which knows the
// engine it runs on.
func migrate(ctx context.Context, db *sql.DB) error {
	key := "INTEGER PRIMARY KEY" // SQLite's auto-incrementing key
	var version string
	if db.QueryRowContext(ctx, `SELECT version()`).Scan(&version) == nil && strings.HasPrefix(version, "PostgreSQL ") {
		key = "BIGSERIAL PRIMARY KEY"
	}
	_, err := db.ExecContext(ctx, `CREATE TABLE notes (id `+key+`, title TEXT NOT NULL)`)
	return err
}

func Example() {
	t := newExampleT() // in a test: the *testing.T
	defer t.cleanup()

	h := llmtooltest.New(t, &llmtooltest.Options{Schema: migrate}, Notes)

	var note Note
	h.RequireOK(h.Call("create_note", `{"title": "Groceries"}`), &note)
	fmt.Printf("created note %d: %s\n", note.ID, note.Title)

	got := h.RequireOK(h.Call("get_note", map[string]int{"id": note.ID}))
	fmt.Println("read back:", got["title"])

	h.RequireError(h.Call("get_note", `{"id": 42}`), "Note 42 not found. Call list_notes to find the ID.")
	fmt.Println("failures reported:", t.failures)
	// Output:
	// created note 1: Groceries
	// read back: Groceries
	// failures reported: 0
}

func ExampleHarness_RequireUnchanged() {
	t := newExampleT() // in a test: the *testing.T
	defer t.cleanup()

	// Write tools are off in a tenant until it enables them.
	h := llmtooltest.New(t, &llmtooltest.Options{Schema: migrate, WritesOff: true}, Notes)
	h.RequireUnchanged(func() {
		res := h.Call("create_note", `{"title": "Groceries"}`)
		fmt.Println(res.Text())
	})
	fmt.Println("failures reported:", t.failures)
	// Output:
	// Tool "create_note" changes data, and write tools are off in tenant "test". Ask the user to enable write tools for this tenant, then call create_note again.
	// failures reported: 0
}

// A handler that leaves a goroutine running fails the test, naming the
// tool, even though its result is fine.
func ExampleHarness_Call_leakedGoroutine() {
	t := newExampleT() // in a test: the *testing.T
	defer t.cleanup()

	stop := make(chan struct{})
	defer close(stop)
	slow := llmtool.DefineTools("slow",
		llmtool.Read("warm_cache", "Warm the cache in the background.",
			func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) {
				go func() { <-stop }() // still running when the handler returns
				return struct{}{}, nil
			}))
	h := llmtooltest.New(t, &llmtooltest.Options{LeakGrace: llmtooltest.NoLeakGrace}, slow)
	h.RequireOK(h.Call("warm_cache", nil))
	fmt.Println(t.first)
	// Output:
	// llmtooltest: tool warm_cache: 1 goroutine started during the call is still running 0s after it returned; a handler must finish all its work before it returns (its ctx and transaction are dead afterwards):
}

// On PostgreSQL, each test gets a database of its own on the server that
// Options.Postgres names, dropped when the test ends. Schema and SQL run
// there as written (migrate, the host's code, creates PostgreSQL's key);
// the handlers run unchanged. To run a whole suite on PostgreSQL instead,
// leave Postgres empty and set LLMTOOL_TEST_ENGINE=postgres and
// LLMTOOL_TEST_POSTGRES. (This example needs a server, so go test compiles
// it but does not run it.)
func ExampleOptions_postgres() {
	t := newExampleT() // in a test: the *testing.T
	defer t.cleanup()

	dsn := os.Getenv("LLMTOOL_TEST_POSTGRES") // postgres://postgres@127.0.0.1:5432/postgres
	if dsn == "" {
		t.Skipf("set LLMTOOL_TEST_POSTGRES to run this test on PostgreSQL")
	}
	h := llmtooltest.New(t, &llmtooltest.Options{Postgres: dsn, Schema: migrate}, Notes)

	var note Note
	h.RequireOK(h.Call("create_note", `{"title": "Groceries"}`), &note)
	fmt.Printf("created note %d on %s\n", note.ID, h.Engine())
	h.RequireError(h.Call("get_note", `{"id": 42}`), "Note 42 not found. Call list_notes to find the ID.")
}

// exampleT stands in for the *testing.T of a test, so the examples run:
// it counts failures and prints the first line of the first one.
type exampleT struct {
	dir      string
	cleanups []func()
	failures int
	first    string
}

func newExampleT() *exampleT {
	dir, err := os.MkdirTemp("", "llmtooltest-example")
	if err != nil {
		panic(err)
	}
	return &exampleT{dir: dir}
}

func (t *exampleT) fail(format string, args ...any) {
	t.failures++
	if t.first == "" {
		t.first, _, _ = strings.Cut(fmt.Sprintf(format, args...), "\n")
	}
}

func (t *exampleT) Helper()                           {}
func (t *exampleT) Errorf(format string, args ...any) { t.fail(format, args...) }
func (t *exampleT) Fatalf(format string, args ...any) {
	t.fail(format, args...)
	fmt.Println(t.first)
	runtime.Goexit()
}
func (t *exampleT) Skipf(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
	runtime.Goexit()
}
func (t *exampleT) Logf(format string, args ...any) {}
func (t *exampleT) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) TempDir() string                 { return t.dir }
func (t *exampleT) Output() io.Writer               { return io.Discard }
func (t *exampleT) Context() context.Context        { return context.Background() }

func (t *exampleT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	os.RemoveAll(t.dir)
}
