package llmtool_test

import (
	"context"
	"fmt"
	"log"

	"github.com/llmtool/llmtool"
)

// A middleware wraps every call, from MCP and chat alike, as net/http
// middleware wraps a handler. This one keeps a tenant on a plan without
// write tools: it refuses their calls with a sentence the model can act on,
// and lets the rest through to the registry's own checks.
func ExampleMiddleware() {
	db, done := exampleDB()
	defer done()

	readOnlyPlan := func(next llmtool.InvokeFunc) llmtool.InvokeFunc {
		return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
			if !req.Spec.ReadOnly && req.Tenant == "free-plan" {
				return req.Fail(llmtool.Denied("The free plan cannot change data.").Next("Tell the user to upgrade to save changes."))
			}
			return next(ctx, req)
		}
	}
	addBook := llmtool.Write("add_book", "Add a book.",
		func(c *llmtool.WriteCtx, in struct {
			Title string `json:"title" desc:"Title of the book."`
		}) (BookOut, error) {
			_, err := c.Exec(`INSERT INTO books (title) VALUES (?)`, in.Title)
			return BookOut{Title: in.Title}, err
		})
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger(), Middleware: []llmtool.Middleware{readOnlyPlan}},
		llmtool.DefineTools("books", getBook, addBook))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()

	ctx := llmtool.WithTenant(context.Background(), "free-plan")
	if err := reg.Tenants().SetWrites(ctx, "free-plan", true); err != nil {
		log.Fatal(err)
	}
	fmt.Println(reg.Invoke(ctx, llmtool.Call{Tool: "add_book", Args: []byte(`{"title": "Dune"}`)}).Text())
	fmt.Println(reg.Invoke(ctx, llmtool.Call{Tool: "get_book", Args: []byte(`{"id": 1}`)}).Text())
	// Output:
	// The free plan cannot change data. Tell the user to upgrade to save changes.
	// {"id":1,"title":"The Go Programming Language"}
}
