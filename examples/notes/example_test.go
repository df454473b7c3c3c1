package notes_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/examples/notes"
)

// The notes module is one line to register. Write tools stay off until the
// tenant enables them; the entity guards keep system and protected notes
// safe whatever the tool.
func Example() {
	dir, err := os.MkdirTemp("", "notes-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	db, err := notes.Open(ctx, filepath.Join(dir, "notes.db")) // created and seeded
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.DiscardHandler)}, notes.Tools)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	ctx = llmtool.WithTenant(ctx, "workspace-1")

	call := func(tool, args string) {
		fmt.Println(reg.Invoke(ctx, llmtool.Call{Tool: tool, Args: []byte(args)}).Text())
	}
	call("search_notes", `{"query": "flour", "limit": 1}`)
	call("get_note_content", `{"noteId": "secret"}`)
	call("rename_note", `{"noteId": "pancakes", "title": "Crêpes"}`)

	if err := reg.Tenants().SetWrites(ctx, "workspace-1", true); err != nil {
		log.Fatal(err)
	}
	call("rename_note", `{"noteId": "root", "title": "Top"}`)
	call("edit_note_content", `{"noteId": "pancakes", "oldText": "2 eggs", "newText": "3 eggs"}`)
	// Output:
	// {"results":[{"noteId":"pancakes","title":"Pancakes","snippet":"Whisk 250 g **flour**, 2 eggs, 500 ml milk and a pinch of salt. Rest…","isProtected":false}]}
	// Note "secret" (noteId) is protected; tools may neither read nor change it. Work with another note, or ask the user to remove the protection.
	// Tool "rename_note" changes data, and write tools are off in tenant "workspace-1". Ask the user to enable write tools for this tenant, then call rename_note again.
	// Note "root" (noteId) is a system note; rename_note must not change it. Leave system notes as they are and choose another note.
	// {"noteId":"pancakes","title":"Pancakes","type":"text","parents":[{"noteId":"recipes","title":"Recipes"}],"contentLength":144}
}
