package cost_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/cost"
)

type LookupIn struct {
	ISBN string `json:"isbn" desc:"The book's ISBN-13, digits only."`
}

type LookupOut struct {
	Title string `json:"title"`
}

var lookup = llmtool.Read("lookup_book", "Find a book by its ISBN.",
	func(_ *llmtool.ReadCtx, in LookupIn) (LookupOut, error) { return LookupOut{Title: "Dune"}, nil },
	llmtool.FriendlyName("Look up a book"))

var books = llmtool.DefineTools("books", lookup)

// A host checks what its catalog costs in a test of its own module, so CI
// fails when a change makes the tools too expensive for the model. The
// registry needs no database to be counted.
func Example() {
	reg, err := llmtool.NewRegistry(nil, &llmtool.Options{Logger: slog.New(slog.DiscardHandler)}, books)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	c, err := cost.Report(context.Background(), reg, &cost.Options{
		AllTools: true, // every tool, whatever a tenant enables
		Shapes:   []string{"openai-chat", "anthropic", "mcp"},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.WriteText(os.Stdout); err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Check(cost.Budget{Total: 500, Tool: 100}))
	// Output:
	// Tokens of the tool definitions: every tool, counted with o200k_base; ~ marks an estimate (o200k_base × 1).
	// tool            module   openai-chat  anthropic   mcp
	// lookup_book     books             60        ~54  ~121
	// man             llmtool           76        ~70  ~109
	// module books                      60        ~54  ~121
	// module llmtool                    76        ~70  ~109
	// total                            136       ~124  ~230
	// cost: over budget: tool lookup_book costs 121 tokens in MCP tools/list (estimated), 21 over the per-tool budget of 100. Shorten its description or its parameters' descriptions.
	// cost: over budget: tool man costs 109 tokens in MCP tools/list (estimated), 9 over the per-tool budget of 100. Shorten its description or its parameters' descriptions.
}
