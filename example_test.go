package llmtool_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/sqlite"
)

// GetBookIn is the input of get_book. Struct tags become the JSON Schema the
// model sees: one tag per keyword, and the default is stated in the
// description too.
type GetBookIn struct {
	ID       int `json:"id" desc:"ID of the book." minimum:"1"`
	MaxChars int `json:"maxChars,omitempty" desc:"Truncate the title to this many characters (default 40)." default:"40" minimum:"1"`
}

// BookOut is the result of get_book.
type BookOut struct {
	ID    int    `json:"id"`
	Title string `json:"title"`
}

// getBook is a read tool: its handler gets a *llmtool.ReadCtx, which can
// query but has no Exec.
var getBook = llmtool.Read("get_book", "Read a book's title.",
	func(c *llmtool.ReadCtx, in GetBookIn) (BookOut, error) {
		out := BookOut{ID: in.ID}
		err := c.QueryRow(`SELECT title FROM books WHERE id = ?`, in.ID).Scan(&out.Title)
		if errors.Is(err, sql.ErrNoRows) {
			return out, llmtool.NotFound("Book %d not found.", in.ID).Next("Call list_books to see the IDs.")
		}
		if len(out.Title) > in.MaxChars {
			out.Title = out.Title[:in.MaxChars]
		}
		return out, err
	},
	llmtool.Category("Books"), llmtool.Summary("Read one book"), llmtool.FriendlyName("Read book"))

// Books is the module a package ships: registering it is one line.
var Books = llmtool.DefineTools("books", getBook)

func exampleDB() (*sql.DB, func()) {
	dir, err := os.MkdirTemp("", "llmtool-example")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(dir, "books.db"))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL);
		INSERT INTO books VALUES (1, 'The Go Programming Language')`); err != nil {
		log.Fatal(err)
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }
}

// Invoke is the one call path both adapters use. Errors are results: a
// missing book, bad arguments and an unknown tool each come back as a
// message that tells the model what to do next.
func ExampleRegistry_Invoke() {
	db, done := exampleDB()
	defer done()
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger()}, Books)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	ctx := context.Background()

	for _, args := range []string{`{"id": 1, "maxChars": 6}`, `{"id": 2}`, `{"id": "one"}`, `"{\"id\": 1}"`} {
		res := reg.Invoke(ctx, llmtool.Call{Tool: "get_book", Args: []byte(args)})
		fmt.Println(string(res.JSON))
	}
	fmt.Println(reg.Invoke(ctx, llmtool.Call{Tool: "get_books"}).Text())
	// Output:
	// {"id":1,"title":"The Go"}
	// {"error":"Book 2 not found. Call list_books to see the IDs."}
	// {"error":"Error: /id: expected integer, got string. Send an integer of at least 1."}
	// {"id":1,"title":"The Go Programming Language"}
	// Unknown tool "get_books". Did you mean "get_book"?
}

// Specs are computed once at definition; adapters list them as they are.
func ExampleRead() {
	spec := getBook.Spec()
	fmt.Println(spec.Name, spec.ReadOnly, spec.Category)
	fmt.Println(string(spec.InputSchema))
	for _, p := range spec.Params {
		fmt.Printf("%s %s required=%v default=%s\n", p.Name, p.Type, p.Required, p.Default)
	}
	// Output:
	// get_book true Books
	// {"type":"object","properties":{"id":{"type":"integer","description":"ID of the book.","minimum":1},"maxChars":{"type":"integer","description":"Truncate the title to this many characters (default 40).","default":40,"minimum":1}},"required":["id"],"additionalProperties":false}
	// id integer required=true default=
	// maxChars integer required=false default=40
}

// Errors carry a kind and a corrective next action; only malformed
// arguments get the "Error: " prefix.
func ExampleNotFound() {
	err := llmtool.NotFound("Note %q not found.", "abc").Next("Call search_notes to find the ID.")
	fmt.Println(err)
	fmt.Println(llmtool.InvalidArgs("/limit: must be at least 1.").Next("Send a positive integer."))
	// Output:
	// Note "abc" not found. Call search_notes to find the ID.
	// Error: /limit: must be at least 1. Send a positive integer.
}
