package chatadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/stretchr/testify/require"
)

// A generated catalog: modules of a business application, each with tools
// made of a verb and a noun of its domain, described as a real module's
// would be, with three parameters each.

type RecordIn struct {
	ID     string `json:"id,omitempty" desc:"ID of the record; omit it to act on the records the query matches."`
	Query  string `json:"query,omitempty" desc:"Words the records must contain; empty matches all."`
	Limit  int    `json:"limit,omitempty" desc:"How many records at most (default 20)." default:"20" minimum:"1" maximum:"100"`
	Format string `json:"format,omitempty" desc:"Output format (default json)." default:"json" enum:"json|csv|text"`
}

type RecordOut struct {
	ID    string `json:"id"`
	Count int    `json:"count"`
}

var domains = []struct{ module, category, nouns string }{
	{"billing", "Billing", "invoice payment refund credit_note tax_rate"},
	{"crm", "CRM", "contact company deal lead activity"},
	{"inventory", "Inventory", "product stock_level warehouse supplier batch"},
	{"hr", "People", "employee leave_request payslip position review"},
	{"support", "Support", "ticket macro sla escalation satisfaction_survey"},
	{"projects", "Projects", "project task milestone timesheet risk"},
	{"marketing", "Marketing", "campaign segment newsletter landing_page coupon"},
	{"shipping", "Shipping", "shipment parcel carrier return_label pickup"},
	{"purchasing", "Purchasing", "purchase_order quote vendor receipt contract"},
	{"accounting", "Accounting", "journal_entry ledger_account budget fiscal_period bank_statement"},
	{"assets", "Assets", "asset lease depreciation maintenance_job location"},
	{"docs", "Documents", "document folder template signature_request version"},
	{"calendar", "Calendar", "event room booking reminder availability"},
	{"analytics", "Analytics", "dashboard report metric alert export_job"},
	{"security", "Security", "user_account role api_key audit_event session"},
	{"ecommerce", "Shop", "order cart discount review wishlist"},
	{"manufacturing", "Manufacturing", "work_order bill_of_materials routing machine quality_check"},
	{"legal", "Legal", "matter clause obligation dispute trademark"},
	{"fleet", "Fleet", "vehicle driver fuel_log trip inspection"},
	{"learning", "Learning", "course lesson enrollment quiz certificate"},
}

var verbs = []struct {
	verb, desc string
	write      bool
}{
	{"list", "List the %[1]ss of %[2]s, newest first, with their status and owner.", false},
	{"get", "Read one %[1]s of %[2]s with all its fields and history.", false},
	{"create", "Create one %[1]s in %[2]s; returns the new %[1]s's ID.", true},
	{"update", "Change fields of one %[1]s in %[2]s; fields left out keep their value.", true},
	{"delete", "Delete one %[1]s from %[2]s for good.", true},
	{"export", "Export the %[1]ss of %[2]s that match a query as CSV or JSON.", false},
	{"archive", "Archive one %[1]s of %[2]s so it no longer shows in lists.", true},
	{"search", "Search the %[1]ss of %[2]s by words in any field.", false},
	{"count", "Count the %[1]ss of %[2]s that match a query.", false},
	{"summarize", "Summarize the %[1]ss of %[2]s over a period, with totals.", false},
}

// generated returns modules tools of per tools each (at most 20 modules of
// 50), module i named after domains[i].
func generated(modules, per int) []*llmtool.Module {
	var out []*llmtool.Module
	for _, d := range domains[:modules] {
		var tools []*llmtool.Tool
		for i := range per {
			noun := strings.Fields(d.nouns)[i/len(verbs)]
			v := verbs[i%len(verbs)]
			name := v.verb + "_" + noun
			if i%len(verbs) != 1 && i%len(verbs) != 2 && i%len(verbs) != 3 && i%len(verbs) != 4 && i%len(verbs) != 6 {
				name += "s" // list_invoices, get_invoice
			}
			name = d.module + "_" + name
			desc := fmt.Sprintf(v.desc, strings.ReplaceAll(noun, "_", " "), d.category)
			opts := []llmtool.Option{llmtool.Category(d.category)}
			if v.write {
				tools = append(tools, llmtool.Write(name, desc, func(_ *llmtool.WriteCtx, in RecordIn) (RecordOut, error) {
					return RecordOut{ID: in.ID, Count: 1}, nil
				}, opts...))
			} else {
				tools = append(tools, llmtool.Read(name, desc, func(_ *llmtool.ReadCtx, in RecordIn) (RecordOut, error) {
					return RecordOut{ID: in.ID, Count: 1}, nil
				}, opts...))
			}
		}
		out = append(out, llmtool.DefineTools(d.module, tools...))
	}
	return out
}

// coreModule is the host's own tools, always listed.
func coreModule() *llmtool.Module {
	return llmtool.DefineTools("core",
		llmtool.Read("whoami", "Tell who the user is and which workspace they are in.",
			func(*llmtool.ReadCtx, struct{}) (RecordOut, error) { return RecordOut{ID: "u1"}, nil }),
		llmtool.Read("search_everything", "Search every record of the workspace by words; returns IDs and titles.",
			func(_ *llmtool.ReadCtx, in RecordIn) (RecordOut, error) { return RecordOut{ID: in.Query}, nil }))
}

// onDemandRegistry registers the core module and modules generated
// modules of per tools, all on demand but core, with writes on in the
// returned context's tenant.
func onDemandRegistry(t testing.TB, modules, per int) (*llmtool.Registry, context.Context) {
	t.Helper()
	mods := append([]*llmtool.Module{coreModule()}, generated(modules, per)...)
	reg, err := llmtool.NewRegistry(openDB(t), &llmtool.Options{
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnDemand: func(s *llmtool.Spec) bool { return s.Module != "core" },
	}, mods...)
	require.NoError(t, err)
	ctx := llmtool.WithTenant(context.Background(), "ws")
	require.NoError(t, reg.Tenants().SetWrites(ctx, "ws", true))
	return reg, ctx
}

// The chat tool set grows with what find_tools loads, called through
// Dispatch like any tool.
func TestToolSetGrowsAfterFindTools(t *testing.T) {
	t.Parallel()
	reg, ctx := onDemandRegistry(t, 3, 10)
	a := chatadapter.New(reg, nil)
	for _, shape := range chatadapter.Shapes() {
		set, err := a.Tools(ctx, shape)
		require.NoError(t, err)
		require.Equal(t, []string{"whoami", "search_everything", "man", "find_tools"}, set.Names, shape)
		require.Nil(t, set.Deferred)
		require.Empty(t, set.Beta)
	}
	before, err := a.Tools(ctx, chatadapter.Anthropic)
	require.NoError(t, err)

	r, err := a.Dispatch(ctx, chatadapter.Anthropic, []byte(`{"role":"assistant","content":[`+
		`{"type":"tool_use","id":"c1","name":"find_tools","input":{"query":"create an invoice","limit":2}}]}`))
	require.NoError(t, err)
	require.Len(t, r.Outcomes, 1)
	require.False(t, r.Outcomes[0].Result.IsError, r.Outcomes[0].Result.Text())
	require.Equal(t, "Loaded 2 tools for \"create an invoice\"; call them like any other tool:\n"+
		"  billing_create_invoice  Create one invoice in Billing; returns the new invoice's ID. [Billing]\n"+
		"  billing_list_invoices   List the invoices of Billing, newest first, with their status and owner. [Billing]\n"+
		"For a tool's options and examples, call man with {\"name\": \"<tool>\"}.\n", r.Outcomes[0].Result.Content[0].Text)

	after, err := a.Tools(ctx, chatadapter.Anthropic)
	require.NoError(t, err)
	require.Equal(t, []string{"whoami", "search_everything", "billing_list_invoices", "billing_create_invoice", "man", "find_tools"}, after.Names)
	require.Greater(t, len(after.JSON), len(before.JSON))
	// Another tenant's set has not grown.
	other, err := a.Tools(llmtool.WithTenant(context.Background(), "other"), chatadapter.Anthropic)
	require.NoError(t, err)
	require.Equal(t, before.Names, other.Names)
}

// With Options.ToolSearch, the shapes whose provider searches tools get
// every tool, the unloaded on-demand ones deferred, and the provider's
// search tool in place of find_tools; the other shapes get find_tools.
func TestToolSearchSets(t *testing.T) {
	t.Parallel()
	reg, ctx := onDemandRegistry(t, 2, 2)
	a := chatadapter.New(reg, &chatadapter.Options{ToolSearch: true})
	deferred := []string{"billing_list_invoices", "billing_get_invoice", "crm_list_contacts", "crm_get_contact"}
	tests := []struct {
		shape  chatadapter.Shape
		search string
		def    string // billing_get_invoice's definition
	}{
		{chatadapter.Anthropic, `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`,
			`{"name":"billing_get_invoice","description":"Read one invoice of Billing with all its fields and history.","input_schema":%s,"defer_loading":true}`},
		{chatadapter.OpenAIResponses, `{"type":"tool_search"}`,
			`{"type":"function","name":"billing_get_invoice","description":"Read one invoice of Billing with all its fields and history.","parameters":%s,"strict":false,"defer_loading":true}`},
		{chatadapter.OpenAIResponsesStrict, `{"type":"tool_search"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.shape.String(), func(t *testing.T) {
			set, err := a.Tools(ctx, tt.shape)
			require.NoError(t, err)
			name, beta := "tool_search", ""
			if tt.shape == chatadapter.Anthropic {
				name, beta = "tool_search_tool_bm25", "advanced-tool-use-2025-11-20"
			}
			require.Equal(t, append([]string{"whoami", "search_everything", "man", name}, deferred...), set.Names)
			require.Equal(t, beta, set.Beta, "the anthropic-beta header the set needs")
			require.Equal(t, deferred, set.Deferred)
			require.JSONEq(t, tt.search, string(set.Tools[3]))
			require.JSONEq(t, tt.search, string(chatadapter.ToolSearchTool(tt.shape)))
			if tt.def != "" {
				spec, _ := reg.Tool(ctx, "billing_get_invoice")
				require.Equal(t, fmt.Sprintf(tt.def, spec.InputSchema), string(set.Tools[5]))
			}
			var all []json.RawMessage
			require.NoError(t, json.Unmarshal(set.JSON, &all))
			require.Equal(t, set.Tools, all)
			again, err := a.Tools(ctx, tt.shape)
			require.NoError(t, err)
			require.Same(t, set, again)
		})
	}
	for _, shape := range []chatadapter.Shape{chatadapter.OpenAIChat, chatadapter.OpenAIChatStrict, chatadapter.Gemini} {
		require.Nil(t, chatadapter.ToolSearchTool(shape))
		set, err := a.Tools(ctx, shape)
		require.NoError(t, err)
		require.Equal(t, []string{"whoami", "search_everything", "man", "find_tools"}, set.Names, shape)
		require.Nil(t, set.Deferred)
		require.Empty(t, set.Beta)
	}

	// A tool a tenant loaded is sent whole; one it may not call, not at all.
	res := reg.Invoke(ctx, llmtool.Call{Tool: "find_tools", Args: []byte(`{"query": "get contact", "limit": 1}`)})
	require.False(t, res.IsError, res.Text())
	set, err := a.Tools(ctx, chatadapter.Anthropic)
	require.NoError(t, err)
	require.Equal(t, []string{"whoami", "search_everything", "crm_get_contact", "man", "tool_search_tool_bm25",
		"billing_list_invoices", "billing_get_invoice", "crm_list_contacts"}, set.Names)
	readers := llmtool.WithTenant(context.Background(), "readers")
	require.NoError(t, reg.SetEnabled("crm_list_contacts", false))
	set, err = a.Tools(readers, chatadapter.Anthropic)
	require.NoError(t, err)
	require.Equal(t, []string{"billing_list_invoices", "billing_get_invoice", "crm_get_contact"}, set.Deferred)
}

// The provider's own search blocks in a turn are the provider's business:
// Dispatch runs the tool calls beside them, deferred tools included.
func TestDispatchBesideToolSearch(t *testing.T) {
	t.Parallel()
	reg, ctx := onDemandRegistry(t, 1, 2)
	a := chatadapter.New(reg, &chatadapter.Options{ToolSearch: true})
	const out = `{\"id\":\"in_1\",\"count\":1}`
	tests := []struct {
		shape chatadapter.Shape
		turn  string
		want  string
	}{
		{chatadapter.Anthropic, `{"role":"assistant","content":[` +
			`{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25","input":{"query":"invoice"}},` +
			`{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"billing_get_invoice"}]}},` +
			`{"type":"tool_use","id":"c1","name":"billing_get_invoice","input":{"id":"in_1"}}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"` + out + `"}],"is_error":false}]}`},
		{chatadapter.OpenAIResponses, `{"output":[` +
			`{"type":"tool_search_call","id":"ts_1","execution":"server","arguments":{"paths":["billing_get_invoice"]},"status":"completed"},` +
			`{"type":"tool_search_output","id":"tso_1","execution":"server","tools":[{"type":"function","name":"billing_get_invoice"}],"status":"completed"},` +
			`{"type":"function_call","call_id":"c1","name":"billing_get_invoice","arguments":"{\"id\":\"in_1\"}"}]}`,
			`{"type":"function_call_output","call_id":"c1","output":"` + out + `"}`},
	}
	for _, tt := range tests {
		r, err := a.Dispatch(ctx, tt.shape, []byte(tt.turn))
		require.NoError(t, err)
		require.Len(t, r.Messages, 1)
		require.Equal(t, tt.want, string(r.Messages[0]))
		require.NotContains(t, string(r.Outcomes[0].Result.JSON), `"error"`)
	}
}

// On-demand loading on a generated registry of 1,000 tools in 20 modules:
// the first request carries the host's own tools, man and find_tools, not
// the catalog. The sizes are those of the request's tools field; tokens
// are estimated as bytes/4 (no tokenizer is run). Run with -v for the
// table that BENCHMARKS.md records.
func TestOnDemandThousandTools(t *testing.T) {
	t.Parallel()
	reg, ctx := onDemandRegistry(t, 20, 50)
	all, err := reg.List(ctx, &llmtool.ListOptions{All: true})
	require.NoError(t, err)
	require.Len(t, all, 2+1000+2) // core, generated, man, find_tools

	a := chatadapter.New(reg, nil)
	native := chatadapter.New(reg, &chatadapter.Options{ToolSearch: true})
	catalog := func(shape chatadapter.Shape) int {
		listed, err := reg.List(ctx, nil)
		require.NoError(t, err)
		unloaded, err := reg.List(ctx, &llmtool.ListOptions{Unloaded: true})
		require.NoError(t, err)
		n := 1 // [ ]
		for _, s := range append(listed, unloaded...) {
			if s.Name == "find_tools" {
				continue
			}
			d, err := a.Definition(s, shape)
			require.NoError(t, err)
			n += len(d) + 1
		}
		return n
	}
	t.Logf("%-34s %10s %9s %12s %9s %8s", "shape", "whole B", "~tokens", "first req B", "~tokens", "ratio")
	for _, shape := range chatadapter.Shapes() {
		whole := catalog(shape)
		first, err := a.Tools(ctx, shape)
		require.NoError(t, err)
		require.Equal(t, []string{"whoami", "search_everything", "man", "find_tools"}, first.Names)
		require.Less(t, len(first.JSON)*50, whole, "the first request is under 2%% of the catalog")
		t.Logf("%-34s %10d %9d %12d %9d %7.2f%%", shape, whole, whole/4, len(first.JSON), len(first.JSON)/4, 100*float64(len(first.JSON))/float64(whole))
	}

	// After one find_tools call, five more tools.
	res := reg.Invoke(ctx, llmtool.Call{Tool: "find_tools", Args: []byte(`{"query": "refund a payment"}`)})
	require.False(t, res.IsError, res.Text())
	grown, err := a.Tools(ctx, chatadapter.Anthropic)
	require.NoError(t, err)
	require.Len(t, grown.Names, 4+5)
	t.Logf("Anthropic after find_tools {\"query\": \"refund a payment\"}: %d tools, %d B, ~%d tokens; find_tools answer %d B",
		len(grown.Names), len(grown.JSON), len(grown.JSON)/4, len(res.Content[0].Text))
	reg.UnloadTools("ws")

	// The providers' own search: every definition is in the request, the
	// deferred ones outside the model's context. Anthropic keeps a deferred
	// tool out of context entirely; OpenAI still shows the model a deferred
	// function's name and description.
	for _, shape := range []chatadapter.Shape{chatadapter.Anthropic, chatadapter.OpenAIResponses} {
		set, err := native.Tools(ctx, shape)
		require.NoError(t, err)
		require.Len(t, set.Deferred, 1000)
		inContext := 0
		for i, d := range set.Tools {
			if i < len(set.Tools)-len(set.Deferred) {
				inContext += len(d) + 1
			} else if shape == chatadapter.OpenAIResponses {
				s, _ := reg.Tool(ctx, set.Names[i])
				inContext += len(s.Name) + len(s.Description)
			}
		}
		t.Logf("%s, ToolSearch: request %d B; in the model's context about %d B, ~%d tokens (estimate)", shape, len(set.JSON), inContext, inContext/4)
	}
}
