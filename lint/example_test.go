package lint_test

import (
	"fmt"
	"log"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/lint"
)

// ListNotesIn states its default in the description, as lint requires, but
// with a different value than the schema's.
type ListNotesIn struct {
	Limit int `json:"limit,omitempty" desc:"How many notes (default 20)." default:"10"`
}

// Check reports the conventions a registry's tools break. In a test,
// lint.Require(t, reg, nil) fails on any finding.
func ExampleCheck() {
	listNotes := llmtool.Read("list_notes", "List notes.",
		func(c *llmtool.ReadCtx, in ListNotesIn) (struct{}, error) { return struct{}{}, nil },
		llmtool.Summary("List notes"))
	addNote := llmtool.Write("addNote", "Add a note.",
		func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) { return struct{}{}, nil },
		llmtool.Summary("Add a note"), llmtool.FriendlyName("Adding note"),
		llmtool.ManPage("EXAMPLES\n    {}\n        Adds an empty note."))
	reg, err := llmtool.NewRegistry(nil, nil, llmtool.DefineTools("notes", listNotes, addNote))
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range lint.Check(reg, nil) {
		fmt.Println(f)
	}
	// Output:
	// list_notes: no man page; add llmtool.ManPage with an EXAMPLES section [man-examples]
	// list_notes: parameter limit says (default 20) but its default is 10; make them agree [default-stated]
	// addNote: name "addNote" is not lower_snake_case of at most 64 characters; rename it, such as "add_note" [name]
	// addNote: friendly name "Adding note" starts with a gerund; use the imperative, such as "Add note" [friendly-name]
}
