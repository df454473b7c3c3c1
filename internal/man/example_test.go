package man_test

import (
	"fmt"

	"github.com/llmtool/llmtool/internal/man"
)

var searchNotes = man.Tool{
	Name:        "search_notes",
	Category:    "Notes",
	Summary:     "Search notes by words",
	Description: "Search notes by title and content.",
	Params: []man.Param{
		{Name: "query", Type: "string", Required: true, Description: "Words to search for."},
		{Name: "limit", Type: "integer", Default: "10", Description: "How many results (default 10)."},
	},
	Example: `{"query": "..."}`,
	ManPage: "EXAMPLES\n    {\"query\": \"milk\"}\n        Notes that mention milk.",
}

// The catalog groups tools by category in the order categories first
// appear; a tool without a summary shows its description's first
// sentence.
func ExampleCatalog() {
	getTime := man.Tool{Name: "get_time", Description: "Tell the current time. Uses the server clock."}
	fmt.Print(man.Catalog([]man.Tool{searchNotes, getTime},
		[]man.Page{{Name: "search-syntax", Text: "Search syntax: words, \"phrases\" and #labels.\n\nMore..."}}))
	// Output:
	// Tools you can call, by category. For a tool's options and examples, call man with {"name": "<tool>"}.
	//
	// Notes
	//   search_notes  Search notes by words
	//
	// General
	//   get_time  Tell the current time.
	//
	// Reference pages (call man with {"name": "<page>"}):
	//   search-syntax  Search syntax: words, "phrases" and #labels.
}

// A tool's page is generated from its parameters, then shows its
// description and its own documentation.
func ExampleToolPage() {
	fmt.Print(man.ToolPage(searchNotes))
	// Output:
	// NAME
	//     search_notes - Search notes by words
	//
	// SYNOPSIS
	//     search_notes query [limit]
	//     Arguments: one JSON object, such as {"query": "..."}.
	//
	// OPTIONS
	//     query (string, required)
	//         Words to search for.
	//     limit (integer, optional, default 10)
	//         How many results (default 10).
	//
	// DESCRIPTION
	//     Search notes by title and content.
	//
	// EXAMPLES
	//     {"query": "milk"}
	//         Notes that mention milk.
}
