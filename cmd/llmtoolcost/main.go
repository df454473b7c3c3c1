// Command llmtoolcost reports what the example notes module's tool catalog
// costs a model, in tokens per tool in each provider's format and in MCP
// (see package github.com/llmtool/llmtool/cost), and checks it against a
// budget:
//
//	go run ./cmd/llmtoolcost                       # the table
//	go run ./cmd/llmtoolcost -budget 8000          # exit status 1 when over
//	go run ./cmd/llmtoolcost -shape anthropic,mcp -tool-budget 600
//
// For examples/notes, its 18 tools and man cost 2081 tokens in OpenAI Chat
// Completions (2207 strict), 2100 in Responses, ~1967 in Anthropic, ~1816
// in Gemini and ~4915 in an MCP tools/list, which also carries each tool's
// output schema, title and annotations.
//
// It exits 0 when the catalog fits, 1 when it is over budget (the message
// on standard error names the tools to trim), 2 on a usage error.
//
// A command cannot import a host's registry, so it demonstrates the
// report on the repository's own example (examples/notes, every tool,
// no database needed). A host checks its own catalog the same way in a
// test of its module:
//
//	func TestCatalogCost(t *testing.T) {
//		reg, err := llmtool.NewRegistry(nil, nil, books.Tools)
//		if err != nil {
//			t.Fatal(err)
//		}
//		c, err := cost.Report(context.Background(), reg, &cost.Options{AllTools: true})
//		if err != nil {
//			t.Fatal(err)
//		}
//		c.WriteText(t.Output())
//		if err := c.Check(cost.Budget{Total: 8000, Tool: 600}); err != nil {
//			t.Fatal(err)
//		}
//	}
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/cost"
	"github.com/llmtool/llmtool/examples/notes"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command with its arguments and output, returning the exit
// status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("llmtoolcost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	total := fs.Int("budget", 0, "most tokens the whole catalog may cost in each shape reported (0: no limit)")
	perTool := fs.Int("tool-budget", 0, "most tokens one tool's definition may cost in each shape reported (0: no limit)")
	shapes := fs.String("shape", "", "comma-separated shapes to report, of "+shapeNames()+" (default: all)")
	encoding := fs.String("encoding", "o200k_base", "the OpenAI encoding that counts: o200k_base or cl100k_base")
	factor := fs.Float64("factor", 1, "factor of the estimated counts (Anthropic, Gemini, MCP)")
	asJSON := fs.Bool("json", false, "write the report as JSON instead of a table")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: llmtoolcost [flags]\n\nReports the tokens of the example notes module's tool definitions per provider format and checks them against a budget.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "llmtoolcost: unexpected argument %q; it takes flags only (see -help)\n", fs.Arg(0))
		return 2
	}
	opts := &cost.Options{AllTools: true, Encoding: *encoding, EstimateFactor: *factor}
	if *shapes != "" {
		for s := range strings.SplitSeq(*shapes, ",") {
			opts.Shapes = append(opts.Shapes, strings.TrimSpace(s))
		}
	}
	reg, err := llmtool.NewRegistry(nil, &llmtool.Options{Logger: slog.New(slog.DiscardHandler)}, notes.Tools)
	if err != nil {
		fmt.Fprintf(stderr, "llmtoolcost: %v\n", err)
		return 2
	}
	defer reg.Close()
	c, err := cost.Report(ctx, reg, opts)
	if err != nil {
		fmt.Fprintf(stderr, "llmtoolcost: %v\n", err)
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(c)
	} else {
		err = c.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "llmtoolcost: %v\n", err)
		return 2
	}
	if err := c.Check(cost.Budget{Total: *total, Tool: *perTool}); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func shapeNames() string { return strings.Join(cost.Shapes(), ", ") }
