package llmtool_test

import (
	"context"
	"fmt"
	"log"

	"github.com/llmtool/llmtool"
)

// InvoiceQuery is the input of the example's billing tools.
type InvoiceQuery struct {
	Customer string `json:"customer" desc:"ID of the customer."`
}

// A large catalog is not sent whole: the modules Options.OnDemand marks
// stay out of listings until the model asks find_tools for what it needs.
// Listings of the tenant then show the tools found, and MCP clients get
// tools/list_changed.
func ExampleOptions_onDemand() {
	db, done := exampleNotes()
	defer done()
	noop := func(*llmtool.ReadCtx, InvoiceQuery) (struct{}, error) { return struct{}{}, nil }
	billing := llmtool.DefineTools("billing",
		llmtool.Read("list_invoices", "List a customer's invoices, newest first.", noop, llmtool.Category("Billing")),
		llmtool.Read("dunning_status", "Tell which reminders an overdue customer was sent.", noop, llmtool.Category("Billing")),
		llmtool.Read("tax_summary", "Sum a customer's taxes per rate.", noop, llmtool.Category("Billing")))
	notes := llmtool.DefineTools("notes",
		llmtool.Read("find_notes", "Find notes by words.", func(*llmtool.ReadCtx, FindNotesIn) (struct{}, error) { return struct{}{}, nil }))
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		OnDemand: func(s *llmtool.Spec) bool { return s.Module == "billing" },
	}, notes, billing)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	listed := func(ctx context.Context) (names []string) {
		specs, _ := reg.List(ctx, nil)
		for _, s := range specs {
			names = append(names, s.Name)
		}
		return names
	}

	ctx := llmtool.WithTenant(context.Background(), "chat-42")
	fmt.Println(listed(ctx))
	res := reg.Invoke(ctx, llmtool.Call{Tool: "find_tools", Args: []byte(`{"query": "overdue invoices"}`)})
	fmt.Print(res.Content[0].Text)
	fmt.Println(listed(ctx))
	fmt.Println(listed(llmtool.WithTenant(context.Background(), "chat-43")))
	reg.UnloadTools("chat-42") // the conversation ended
	fmt.Println(listed(ctx))
	// Output:
	// [find_notes man find_tools]
	// Loaded 2 tools for "overdue invoices"; call them like any other tool:
	//   list_invoices   List a customer's invoices, newest first. [Billing]
	//   dunning_status  Tell which reminders an overdue customer was sent. [Billing]
	// For a tool's options and examples, call man with {"name": "<tool>"}.
	// [find_notes list_invoices dunning_status man find_tools]
	// [find_notes man find_tools]
	// [find_notes man find_tools]
}
