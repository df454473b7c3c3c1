package llmtool_test

import (
	"context"
	"fmt"
	"log"

	"github.com/llmtool/llmtool"
)

// Write tools are off in every tenant until the tenant enables them; the
// setting persists in the host's database. Listings and calls both honour
// it, and a refused call says how to get it enabled.
func ExampleRegistry_Tenants() {
	db, done := exampleNotes()
	defer done()
	type AddNoteIn struct {
		Title string `json:"title" desc:"Title of the note."`
	}
	addNote := llmtool.Write("add_note", "Add a note.",
		func(c *llmtool.WriteCtx, in AddNoteIn) (struct{}, error) {
			_, err := c.Exec(`INSERT INTO notes (id, title, parent) VALUES (lower(hex(randomblob(4))), ?, 'root')`, in.Title)
			return struct{}{}, err
		}, llmtool.FriendlyName("Add note"))
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: exampleLogger()}, llmtool.DefineTools("notes", addNote))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	ctx := llmtool.WithTenant(context.Background(), "team-wiki")
	call := llmtool.Call{Tool: "add_note", Args: []byte(`{"title": "Ideas"}`)}

	fmt.Println(reg.Invoke(ctx, call).Text())
	if err := reg.Tenants().SetWrites(ctx, "team-wiki", true); err != nil {
		log.Fatal(err)
	}
	fmt.Println(reg.Invoke(ctx, call).Text())
	specs, _ := reg.List(ctx, nil)
	for _, s := range specs {
		fmt.Println("listed:", s.Name)
	}
	settings, _ := reg.Tenants().List(ctx)
	for _, s := range settings {
		fmt.Printf("tenant %q: writes %v\n", s.Tenant, s.Enabled)
	}
	// Output:
	// Tool "add_note" changes data, and write tools are off in tenant "team-wiki". Ask the user to enable write tools for this tenant, then call add_note again.
	// {}
	// listed: add_note
	// listed: man
	// tenant "team-wiki": writes true
}

// Tenants().Subscribe tells an adapter when what a tenant may call changed, so an MCP
// server can send notifications/tools/list_changed.
func ExampleRegistry_Tenants_subscribe() {
	db, done := exampleNotes()
	defer done()
	reg, err := llmtool.NewRegistry(db, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	cancel := reg.Tenants().Subscribe(func(tenant string) { fmt.Printf("tools changed in tenant %q\n", tenant) })
	defer cancel()
	ctx := context.Background()
	_ = reg.Tenants().SetWrites(ctx, "chat-42", true)
	_ = reg.Tenants().SetWrites(ctx, "chat-42", true) // no change, no notification
	_ = reg.SetEnabled("man", false)                  // every tenant
	// Output:
	// tools changed in tenant "chat-42"
	// tools changed in tenant ""
}

// Options.Authorize decides per tool and principal; listings leave out what it
// refuses.
func ExampleOptions_authorize() {
	db, done := exampleNotes()
	defer done()
	purge := llmtool.Write("purge_notes", "Delete every note in the trash.",
		func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) { return struct{}{}, nil },
		llmtool.Destructive(), llmtool.FriendlyName("Empty trash"))
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		Logger: exampleLogger(),
		Authorize: func(ctx context.Context, p *llmtool.Principal, tool *llmtool.Spec) error {
			if tool.Destructive && !p.HasRole("admin") {
				return llmtool.Denied("Only administrators may call %s.", tool.Name).Next("Ask an administrator to do it.")
			}
			return nil
		},
	}, llmtool.DefineTools("notes", purge))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "bob", Roles: []string{"editor"}})
	_ = reg.Tenants().SetWrites(ctx, "", true)
	fmt.Println(reg.Invoke(ctx, llmtool.Call{Tool: "purge_notes"}).Text())
	// Output:
	// Only administrators may call purge_notes. Ask an administrator to do it.
}
