package llmtool_test

import (
	"context"
	"fmt"
	"log"

	"github.com/llmtool/llmtool"
)

// ListBooksIn pages through the books.
type ListBooksIn struct {
	Offset int `json:"offset,omitempty" desc:"How many books to skip." minimum:"0"`
}

// ListBooksOut can be cut to fit an output budget: its Truncated field
// says so.
type ListBooksOut struct {
	Books     []BookOut          `json:"books"`
	Truncated *llmtool.Truncated `json:"truncated,omitempty" desc:"Set when the list was cut to fit; its next says how to get the rest."`
}

// A tool's output budget cuts a long result to fit, keeping it valid
// against the output schema, and Continue tells the model how to get the
// rest. A consumer (a chat with a small context window, an MCP client) can
// lower the budget for its calls with Call.OutputBudget, which the
// adapters set from their OutputBudget option; a budget in tokens is about
// 4 bytes per token.
func ExampleOutputBudget() {
	db, done := exampleDB()
	defer done()
	if _, err := db.Exec(`WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < 1240)
		INSERT INTO books (id, title) SELECT i, 'Book ' || i FROM n`); err != nil {
		log.Fatal(err)
	}
	listBooks := llmtool.Read("list_books", "List the books, 100 at a time.",
		func(c *llmtool.ReadCtx, in ListBooksIn) (ListBooksOut, error) {
			out := ListBooksOut{Books: []BookOut{}}
			rows, err := c.Query(`SELECT id, title FROM books ORDER BY id LIMIT 100 OFFSET ?`, in.Offset)
			if err != nil {
				return out, err
			}
			defer rows.Close()
			for rows.Next() {
				var b BookOut
				if err := rows.Scan(&b.ID, &b.Title); err != nil {
					return out, err
				}
				out.Books = append(out.Books, b)
			}
			return out, rows.Err()
		},
		llmtool.OutputBudget(400), // about 100 tokens
		llmtool.Continue(func(in ListBooksIn, shown int) ListBooksIn { in.Offset += shown; return in }))
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger(), ValidateOutput: true},
		llmtool.DefineTools("library", listBooks))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()

	res := reg.Invoke(context.Background(), llmtool.Call{Tool: "list_books", Args: []byte(`{"offset": 40}`)})
	fmt.Println(res.Text())

	res = reg.Invoke(context.Background(), llmtool.Call{Tool: "list_books", OutputBudget: 200})
	fmt.Println(res.Text())
	// Output:
	// {"books":[{"id":41,"title":"Book 41"},{"id":42,"title":"Book 42"},{"id":43,"title":"Book 43"},{"id":44,"title":"Book 44"},{"id":45,"title":"Book 45"},{"id":46,"title":"Book 46"},{"id":47,"title":"Book 47"},{"id":48,"title":"Book 48"},{"id":49,"title":"Book 49"}],"truncated":{"shown":9,"total":100,"list":"books","next":"Showing 9 of 100 books; call list_books with {\"offset\":49} for the rest."}}
	// {"books":[{"id":1,"title":"The Go Programming Language"}],"truncated":{"shown":1,"total":100,"list":"books","next":"Showing 1 of 100 books; call list_books with {\"offset\":1} for the rest."}}
}
