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
// the scope may call, and each tool's page is generated from its schema,
// followed by its ManPage.
func ExampleRegistry_Man() {
	db, done := exampleNotes()
	defer done()
	findNotes := llmtool.Read("find_notes", "Find notes by words in their title or content.",
		func(c *llmtool.ReadCtx, in FindNotesIn) (struct{}, error) { return struct{}{}, nil },
		llmtool.Category("Notes"), llmtool.Summary("Find notes by words"),
		llmtool.ManPage("EXAMPLES\n    {\"query\": \"milk\"}\n        Notes that mention milk."))
	deleteNote := llmtool.Write("delete_note", "Delete a note.",
		func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) { return struct{}{}, nil },
		llmtool.Category("Notes"), llmtool.Destructive())
	reg, err := llmtool.NewRegistry(db, nil, llmtool.DefineTools("notes", findNotes, deleteNote))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	_ = reg.AddManPage("search-syntax", "Search syntax: words, \"phrases\" and #labels.")

	// Writes are off in this scope, so delete_note is not in the catalog.
	ctx := llmtool.WithScope(context.Background(), "readers")
	catalog, _ := reg.Man(ctx, "")
	fmt.Print(catalog)
	fmt.Println("----")
	page, _ := reg.Man(ctx, "find_notes")
	fmt.Print(page)
	fmt.Println("----")
	_, err = reg.Man(ctx, "find_note")
	fmt.Println(err)
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

// Friendly names come from a message catalog per registry: English from
// FriendlyName, other locales added by the host, falling back to English
// and then to the tool's name.
func ExampleRegistry_FriendlyName() {
	createNote := llmtool.Write("create_note", "Create a note.",
		func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) { return struct{}{}, nil },
		llmtool.FriendlyName("Create note"))
	reg, err := llmtool.NewRegistry(nil, nil, llmtool.DefineTools("notes", createNote))
	if err != nil {
		log.Fatal(err)
	}
	_ = reg.AddMessagesJSON("de", []byte(`{"llm.tools.create_note": "Notiz anlegen"}`))
	for _, locale := range []string{"en", "de-CH", "fr"} {
		fmt.Printf("%s: %s\n", locale, reg.FriendlyName("create_note", locale))
	}
	fmt.Println(reg.FriendlyName("man", "en"))
	// Output:
	// en: Create note
	// de-CH: Notiz anlegen
	// fr: Create note
	// Read the manual
}
