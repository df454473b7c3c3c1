package llmtool_test

import (
	"context"
	"fmt"
	"log"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/changeset"
)

// AddBookIn is the input of add_book and rename_book.
type AddBookIn struct {
	Title string `json:"title" desc:"Title of the new book." minLength:"1" maxLength:"200"`
}

// addBook is a write tool: only its *llmtool.WriteCtx can Exec. It commits
// when the handler returns nil, and rolls back on an error, a panic or a
// cancelled context; effects outside the database go in AfterCommit, which
// runs once, after the commit.
var addBook = llmtool.Write("add_book", "Add a book to the catalogue.",
	func(c *llmtool.WriteCtx, in AddBookIn) (BookOut, error) {
		res, err := c.Exec(`INSERT INTO books (title) VALUES (?)`, in.Title)
		if err != nil {
			return BookOut{}, err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return BookOut{}, err
		}
		if in.Title == "Untitled" {
			return BookOut{}, llmtool.InvalidArgs("/title: %q is not a title.", in.Title).Next("Ask the user for the book's title.")
		}
		c.AfterCommit(func() { fmt.Println("after commit: added", id) })
		return BookOut{ID: int(id), Title: in.Title}, nil
	},
	llmtool.Category("Books"), llmtool.Summary("Add a book"), llmtool.FriendlyName("Add book"))

// A write tool runs only where the tenant enabled writes, as the principal
// in the call's context. An error rolls back everything the handler did.
func ExampleWrite() {
	db, done := exampleDB()
	defer done()
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger()},
		llmtool.DefineTools("books", getBook, addBook))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	ctx := llmtool.WithTenant(llmtool.WithPrincipal(context.Background(),
		&llmtool.Principal{ID: "u1", Name: "Ada"}), "team-42")
	if err := reg.Tenants().SetWrites(ctx, "team-42", true); err != nil {
		log.Fatal(err)
	}

	res := reg.Invoke(ctx, llmtool.Call{Tool: "add_book", Args: []byte(`{"title": "Dune"}`)})
	fmt.Println(string(res.JSON))
	res = reg.Invoke(ctx, llmtool.Call{Tool: "add_book", Args: []byte(`{"title": "Untitled"}`)})
	fmt.Println(string(res.JSON))
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM books`).Scan(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "books")
	// Output:
	// after commit: added 2
	// {"id":2,"title":"Dune"}
	// {"error":"Error: /title: \"Untitled\" is not a title. Ask the user for the book's title."}
	// 2 books
}

// deleteBook needs a person's approval: its first call runs, previews the
// change, rolls back and returns an approval.Request; the same call with the
// person's answer runs again and commits only if the change is still the
// one they saw.
var deleteBook = llmtool.Write("delete_book", "Delete a book.",
	func(c *llmtool.WriteCtx, in GetBookIn) (struct{}, error) {
		var title string
		if err := c.QueryRow(`SELECT title FROM books WHERE id = ?`, in.ID).Scan(&title); err != nil {
			return struct{}{}, err
		}
		c.Describe("Delete the book %q.", title)
		_, err := c.Exec(`DELETE FROM books WHERE id = ?`, in.ID)
		return struct{}{}, err
	}, llmtool.NeedsApproval(), llmtool.Destructive())

// writesOn enables writes in the default tenant and returns the context of
// calls there by the user u1.
func writesOn(reg *llmtool.Registry) context.Context {
	ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "u1"})
	if err := reg.Tenants().SetWrites(ctx, "", true); err != nil {
		log.Fatal(err)
	}
	return ctx
}

func ExampleNeedsApproval() {
	db, done := exampleDB()
	defer done()
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger()},
		llmtool.DefineTools("books", deleteBook))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	ctx := writesOn(reg)
	call := llmtool.Call{Tool: "delete_book", Args: []byte(`{"id": 1}`)}

	first := reg.Invoke(ctx, call) // previewed and rolled back
	fmt.Println(first.Approval.Preview.Summary)
	fmt.Println(first.Text())

	call.Approval = &approval.Answer{Token: first.Approval.Token, Approved: true}
	fmt.Println(string(reg.Invoke(ctx, call).JSON))
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM books`).Scan(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "books")
	// Output:
	// Delete the book "The Go Programming Language".
	// This change needs the user's approval: Delete the book "The Go Programming Language". (books: 1 deleted). Nothing was saved yet; ask the user to approve it.
	// {}
	// 0 books
}

// With Options.Changesets, every write call knows the rows it changed in the
// tracked tables, before and after; the history keeps them, and the built-in
// tool undo_changes sets them back.
func ExampleOptions_changesets() {
	db, done := exampleDB()
	defer done()
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		Logger: quietLogger(),
		Changesets: changeset.Config{
			Tables: []string{"books"},
			Tools:  true, // undo_changes and list_changes
		},
	}, llmtool.DefineTools("books", addBook))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	ctx := writesOn(reg)

	res := reg.Invoke(ctx, llmtool.Call{Tool: "add_book", Args: []byte(`{"title": "Dune"}`)})
	fmt.Println(res.Changeset.ID, res.Changeset)
	undo := reg.Invoke(ctx, llmtool.Call{Tool: "undo_changes", Args: fmt.Appendf(nil, `{"id": %d}`, res.Changeset.ID)})
	fmt.Println(undo.Changeset)
	fmt.Println(string(undo.JSON))
	// Output:
	// after commit: added 2
	// 1 insert books (id=2): id=2, title="Dune"
	// delete books (id=2): id=2, title="Dune"
	// {"undone":[1]}
}
