package sqlitehook_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/sqlite"
	"github.com/llmtool/llmtool/sqlitehook"
)

type countIn struct{}

type countOut struct {
	Books int `json:"books"`
}

var countBooks = llmtool.Read("count_books", "Count the books in the catalog.",
	func(c *llmtool.ReadCtx, _ countIn) (countOut, error) {
		var out countOut
		err := c.QueryRow(`SELECT count(*) FROM books`).Scan(&out.Books)
		return out, err
	})

// A SQLite host passes sqlitehook.Interrupt as Options.Interrupt: each read
// call under a cancellable context (every MCP call has one) then watches
// it with one hook, and a call whose context ends has its statement
// interrupted once.
func ExampleInterrupt() {
	dir, err := os.MkdirTemp("", "sqlitehook")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL);
		INSERT INTO books (title) VALUES ('Dune'), ('Emma')`); err != nil {
		log.Fatal(err)
	}

	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Interrupt: sqlitehook.Interrupt},
		llmtool.DefineTools("books", countBooks))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := reg.Invoke(ctx, llmtool.Call{Tool: "count_books", Args: []byte(`{}`)})
	fmt.Println(string(res.JSON))
	// Output: {"books":2}
}
