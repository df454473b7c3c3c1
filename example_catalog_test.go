package llmtool_test

import (
	"context"
	"fmt"
	"log"

	"github.com/llmtool/llmtool"
)

// FindNotesIn is the input of find_notes.
type FindNotesIn struct {
	Query string `json:"query" desc:"Words to search for."`
	Limit int    `json:"limit,omitempty" desc:"How many notes to return (default 10)." default:"10" minimum:"1"`
}

// The built-in man tool keeps descriptions short: the catalog lists what
// the tenant may call, and each tool's page is generated from its schema,
// followed by its ManPage. A chat UI's help command invokes it like any
// tool.
func Example_man() {
	db, done := exampleNotes()
	defer done()
	findNotes := llmtool.Read("find_notes", "Find notes by words in their title or content.",
		func(c *llmtool.ReadCtx, in FindNotesIn) (struct{}, error) { return struct{}{}, nil },
		llmtool.Category("Notes"), llmtool.Summary("Find notes by words"),
		llmtool.ManPage("EXAMPLES\n    {\"query\": \"milk\"}\n        Notes that mention milk."))
	deleteNote := llmtool.Write("delete_note", "Delete a note.",
		func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) { return struct{}{}, nil },
		llmtool.Category("Notes"), llmtool.Destructive())
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		ManPages: map[string]string{"search-syntax": "Search syntax: words, \"phrases\" and #labels."},
	}, llmtool.DefineTools("notes", findNotes, deleteNote))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	man := func(ctx context.Context, args string) string {
		res := reg.Invoke(ctx, llmtool.Call{Tool: "man", Args: []byte(args)})
		if res.IsError {
			return res.Text() + "\n"
		}
		return res.Content[0].Text
	}

	// Writes are off in this tenant, so delete_note is not in the catalog.
	ctx := llmtool.WithTenant(context.Background(), "readers")
	fmt.Print(man(ctx, `{}`))
	fmt.Println("----")
	fmt.Print(man(ctx, `{"name": "find_notes"}`))
	fmt.Println("----")
	fmt.Print(man(ctx, `{"name": "find_note"}`))
	// Output:
	// Tools you can call, by category. For a tool's options and examples, call man with {"name": "<tool>"}.
	//
	// Notes
	//   find_notes  Find notes by words
	//
	// Reference pages (call man with {"name": "<page>"}):
	//   search-syntax  Search syntax: words, "phrases" and #labels.
	// ----
	// NAME
	//     find_notes - Find notes by words
	//
	// SYNOPSIS
	//     find_notes query [limit]
	//     Arguments: one JSON object, such as {"query": "..."}.
	//
	// OPTIONS
	//     query (string, required)
	//         Words to search for.
	//     limit (integer, optional, default 10)
	//         How many notes to return (default 10).
	//
	// DESCRIPTION
	//     Find notes by words in their title or content.
	//
	// EXAMPLES
	//     {"query": "milk"}
	//         Notes that mention milk.
	// ----
	// No manual entry for "find_note". Did you mean "find_notes"? Call man with no arguments to list all tools.
}
