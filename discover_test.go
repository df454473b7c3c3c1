package llmtool_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

type InvoiceIn struct {
	InvoiceID string `json:"invoiceId" desc:"ID of the invoice."`
}

type idOut struct {
	ID string `json:"id"`
}

// onDemandModules returns a module that is always listed (notes) and two
// that load on demand (billing, crm).
func onDemandModules() []*llmtool.Module {
	read := func(name, desc string, opts ...llmtool.Option) *llmtool.Tool {
		return llmtool.Read(name, desc, func(_ *llmtool.ReadCtx, in InvoiceIn) (idOut, error) { return idOut{ID: in.InvoiceID}, nil }, opts...)
	}
	write := func(name, desc string, opts ...llmtool.Option) *llmtool.Tool {
		return llmtool.Write(name, desc, func(_ *llmtool.WriteCtx, in InvoiceIn) (idOut, error) { return idOut{ID: in.InvoiceID}, nil }, opts...)
	}
	notes := llmtool.DefineTools("notes", read("get_note", "Read a note's title and content."))
	billing := llmtool.DefineTools("billing",
		read("list_invoices", "List a customer's invoices, newest first.", llmtool.Category("Billing")),
		write("refund_invoice", "Refund a paid invoice, in full or in part.", llmtool.Category("Billing"), llmtool.Summary("Refund a paid invoice")),
		read("get_invoice_pdf", "Render an invoice as a PDF document.", llmtool.Category("Billing")),
		read("tax_report", "Sum the taxes collected over a period.", llmtool.Category("Billing")))
	crm := llmtool.DefineTools("crm",
		read("find_contact", "Find a contact by name or email address.", llmtool.Category("CRM"), llmtool.Scopes("crm:read")),
		read("export_contacts", "Export the contacts as a CSV file.", llmtool.Category("CRM")))
	return []*llmtool.Module{notes, billing, crm}
}

func notNotes(s *llmtool.Spec) bool { return s.Module != "notes" }

func newOnDemand(t *testing.T, opts *llmtool.Options) *llmtool.Registry {
	t.Helper()
	o := llmtool.Options{OnDemand: notNotes}
	if opts != nil {
		o = *opts
		o.OnDemand = notNotes
	}
	reg, _ := newRegOpts(t, openDB(t), &o, onDemandModules()...)
	return reg
}

func findTools(ctx context.Context, reg *llmtool.Registry, args string) llmtool.Result {
	return reg.Invoke(ctx, llmtool.Call{Tool: "find_tools", Args: []byte(args)})
}

// find_tools finds on-demand tools by the words of their descriptions,
// names, summaries and categories, within what the caller may call, and
// only the tools it found join the tenant's listing.
func TestFindTools(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		tenant    string
		writes    bool
		principal *llmtool.Principal
		disable   string
		query     string
		want      string   // the answer; "" when the call fails with wantErr
		wantErr   string   // the refusal
		listed    []string // the tenant's listing afterwards
	}{{
		name: "description words", tenant: "w", writes: true, query: `{"query": "refund a paid invoice"}`,
		want: "Loaded 3 tools for \"refund a paid invoice\"; call them like any other tool:\n" +
			"  refund_invoice   Refund a paid invoice [Billing]\n" +
			"  list_invoices    List a customer's invoices, newest first. [Billing]\n" +
			"  get_invoice_pdf  Render an invoice as a PDF document. [Billing]\n" +
			"For a tool's options and examples, call man with {\"name\": \"<tool>\"}.\n",
		listed: []string{"get_note", "list_invoices", "refund_invoice", "get_invoice_pdf", "man", "find_tools"},
	}, {
		name: "limit and stems", tenant: "w", writes: true, query: `{"query": "Exporting CONTACTS", "limit": 1}`,
		want: "Loaded 1 tool for \"Exporting CONTACTS\"; call them like any other tool:\n" +
			"  export_contacts  Export the contacts as a CSV file. [CRM]\n" +
			"For a tool's options and examples, call man with {\"name\": \"<tool>\"}.\n",
		listed: []string{"get_note", "export_contacts", "man", "find_tools"},
	}, {
		name: "write tools off in the tenant", tenant: "r", query: `{"query": "refund"}`,
		wantErr: `No tools match "refund". Try other words, or call man for the catalog.`,
		listed:  []string{"get_note", "man", "find_tools"},
	}, {
		name: "a disabled tool", tenant: "w", writes: true, disable: "export_contacts", query: `{"query": "export csv"}`,
		wantErr: `No tools match "export csv". Try other words, or call man for the catalog.`,
		listed:  []string{"get_note", "man", "find_tools"},
	}, {
		name: "a token without the tool's scope", tenant: "w", principal: &llmtool.Principal{ID: "u", Scopes: []string{}}, query: `{"query": "contact"}`,
		want: "Loaded 1 tool for \"contact\"; call them like any other tool:\n" +
			"  export_contacts  Export the contacts as a CSV file. [CRM]\n" +
			"For a tool's options and examples, call man with {\"name\": \"<tool>\"}.\n",
		listed: []string{"get_note", "export_contacts", "man", "find_tools"},
	}, {
		name: "no match", tenant: "w", query: `{"query": "weather forecast"}`,
		wantErr: `No tools match "weather forecast". Try other words, or call man for the catalog.`,
		listed:  []string{"get_note", "man", "find_tools"},
	}, {
		name: "only stop words", tenant: "w", query: `{"query": "the tools for it"}`,
		wantErr: `No tools match "the tools for it". Try other words, or call man for the catalog.`,
		listed:  []string{"get_note", "man", "find_tools"},
	}, {
		name: "an always-listed tool is not searched", tenant: "w", query: `{"query": "note"}`,
		wantErr: `No tools match "note". Try other words, or call man for the catalog.`,
		listed:  []string{"get_note", "man", "find_tools"},
	}, {
		name: "empty query", tenant: "w", query: `{"query": ""}`,
		wantErr: "Error: /query: 0 characters is shorter than the minimum 1. Send a string of at least 1 character.",
		listed:  []string{"get_note", "man", "find_tools"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := newOnDemand(t, nil)
			ctx := llmtool.WithTenant(context.Background(), tt.tenant)
			if tt.principal != nil {
				ctx = llmtool.WithPrincipal(ctx, tt.principal)
			}
			require.NoError(t, reg.Tenants().SetWrites(ctx, tt.tenant, tt.writes))
			if tt.disable != "" {
				require.NoError(t, reg.SetEnabled(tt.disable, false))
			}
			require.Equal(t, []string{"get_note", "man", "find_tools"}, listNames(t, reg, ctx))
			res := findTools(ctx, reg, tt.query)
			if tt.wantErr != "" {
				require.True(t, res.IsError)
				require.Equal(t, tt.wantErr, res.Text())
			} else {
				require.Equal(t, tt.want, richText(t, res))
			}
			require.Equal(t, tt.listed, listNames(t, reg, ctx))
			// Another tenant's listing is its own.
			require.Equal(t, []string{"get_note", "man", "find_tools"}, listNames(t, reg, inTenant("other")))
		})
	}
}

// find_tools loads at most 20 tools per call.
func TestFindToolsLimit(t *testing.T) {
	t.Parallel()
	reg := newOnDemand(t, nil)
	res := findTools(context.Background(), reg, `{"query": "invoice", "limit": 21}`)
	require.True(t, res.IsError)
	require.Equal(t, "Error: /limit: 21 is above the maximum 20. Send an integer from 1 to 20.", res.Text())
}

// Loading decides what is listed, not what may be called: an on-demand
// tool named exactly runs unloaded, and policy still refuses what the
// tenant may not call.
func TestOnDemandCallByName(t *testing.T) {
	t.Parallel()
	reg := newOnDemand(t, nil)
	ctx := inTenant("r")
	res := reg.Invoke(ctx, llmtool.Call{Tool: "list_invoices", Args: []byte(`{"invoiceId": "in_1"}`)})
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"id":"in_1"}`, string(res.JSON))
	res = reg.Invoke(ctx, llmtool.Call{Tool: "refund_invoice", Args: []byte(`{"invoiceId": "in_1"}`)})
	require.True(t, res.IsError)
	require.Equal(t, `Tool "refund_invoice" changes data, and write tools are off in tenant "r". Ask the user to enable write tools for this tenant, then call refund_invoice again.`, res.Text())
	require.Equal(t, []string{"get_note", "man", "find_tools"}, listNames(t, reg, ctx))
}

// Subscribers hear of a tenant's loaded tools when they change, and only
// then; UnloadTools forgets them.
func TestOnDemandNotifies(t *testing.T) {
	t.Parallel()
	reg := newOnDemand(t, nil)
	var mu sync.Mutex
	var heard []string
	cancel := reg.Tenants().Subscribe(func(tenant string) {
		mu.Lock()
		heard = append(heard, tenant)
		mu.Unlock()
	})
	defer cancel()
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), heard...)
	}
	ctx := inTenant("s")
	richText(t, findTools(ctx, reg, `{"query": "invoice pdf", "limit": 1}`))
	require.Equal(t, []string{"s"}, seen())
	richText(t, findTools(ctx, reg, `{"query": "invoice pdf", "limit": 1}`)) // loaded already
	require.Equal(t, []string{"s"}, seen())
	require.Equal(t, []string{"get_note", "get_invoice_pdf", "man", "find_tools"}, listNames(t, reg, ctx))

	unloaded, err := reg.List(ctx, &llmtool.ListOptions{Unloaded: true})
	require.NoError(t, err)
	require.Equal(t, []string{"list_invoices", "tax_report", "find_contact", "export_contacts"}, names(unloaded))

	reg.UnloadTools("s")
	require.Equal(t, []string{"s", "s"}, seen())
	require.Equal(t, []string{"get_note", "man", "find_tools"}, listNames(t, reg, ctx))
	reg.UnloadTools("s") // nothing to forget
	require.Equal(t, []string{"s", "s"}, seen())
}

// The man catalog counts what is not loaded yet by category, and shows the
// page of an on-demand tool whether or not it is loaded.
func TestOnDemandMan(t *testing.T) {
	t.Parallel()
	reg := newOnDemand(t, nil)
	ctx := inTenant("r")
	require.Equal(t, `Tools you can call, by category. For a tool's options and examples, call man with {"name": "<tool>"}.

General
  get_note    Read a note's title and content.
  find_tools  Find tools by what they do and load them

More tools load on demand (5), by category; call find_tools with what you want to do to load the best matches:
  Billing (3)
  CRM (2)
`, richText(t, manText(t, reg, ctx, ``)))
	require.Contains(t, richText(t, manText(t, reg, ctx, `{"name": "tax_report"}`)), "NAME\n    tax_report - Sum the taxes collected over a period.\n")
	spec, ok := reg.Tool(ctx, "find_tools")
	require.True(t, ok)
	require.Equal(t, "Find tools", spec.FriendlyName)
	res := manText(t, reg, ctx, `{"name": "refund_invoice"}`) // a write tool, and writes are off
	require.True(t, res.IsError)
	require.Equal(t, `No manual entry for "refund_invoice". Call man with no arguments to list all tools.`, res.Text())

	richText(t, findTools(ctx, reg, `{"query": "contacts"}`))
	require.Contains(t, richText(t, manText(t, reg, ctx, ``)), "More tools load on demand (3), by category; call find_tools with what you want to do to load the best matches:\n  Billing (3)\n")
	require.Contains(t, richText(t, manText(t, reg, ctx, `{"name": "export_contacts"}`)), "NAME\n    export_contacts - Export the contacts as a CSV file.\n")
	res = manText(t, reg, ctx, `{"name": "export_contact"}`)
	require.True(t, res.IsError)
	require.Equal(t, `No manual entry for "export_contact". Did you mean "export_contacts"? Call man with no arguments to list all tools.`, res.Text())

	// With find_tools switched off, the catalog does not send the model to it.
	require.NoError(t, reg.SetEnabled("find_tools", false))
	require.NotContains(t, richText(t, manText(t, reg, ctx, ``)), "find_tools")
}

// Without Options.OnDemand there is no find_tools and nothing changes.
func TestNoOnDemand(t *testing.T) {
	t.Parallel()
	reg, _ := newRegOpts(t, openDB(t), nil, onDemandModules()...)
	ctx := inTenant("r")
	require.Equal(t, []string{"get_note", "list_invoices", "get_invoice_pdf", "tax_report", "find_contact", "export_contacts", "man"}, listNames(t, reg, ctx))
	res := findTools(ctx, reg, `{"query": "invoice"}`)
	require.True(t, res.IsError)
	require.True(t, errors.Is(res.Err, llmtool.ErrUnknownTool))
	unloaded, err := reg.List(ctx, &llmtool.ListOptions{Unloaded: true})
	require.NoError(t, err)
	require.Empty(t, unloaded)
}

// A tenant keeps at most 64 tools loaded; those loaded longest ago leave
// its listing first, and stay callable.
func TestOnDemandLoadedBound(t *testing.T) {
	t.Parallel()
	var tools []*llmtool.Tool
	for i := range 70 {
		tools = append(tools, llmtool.Read(fmt.Sprintf("report_%02d", i), fmt.Sprintf("Print the report of region zone%02d.", i),
			func(*llmtool.ReadCtx, struct{}) (idOut, error) { return idOut{ID: "x"}, nil }))
	}
	reg, _ := newRegOpts(t, openDB(t), &llmtool.Options{OnDemand: func(*llmtool.Spec) bool { return true }}, llmtool.DefineTools("reports", tools...))
	ctx := inTenant("q")
	for i := range 70 {
		require.Equal(t, fmt.Sprintf("Loaded 1 tool for \"zone%02d\"; call them like any other tool:\n  report_%02d  Print the report of region zone%02d. [General]\n", i, i, i)+
			"For a tool's options and examples, call man with {\"name\": \"<tool>\"}.\n",
			richText(t, findTools(ctx, reg, fmt.Sprintf(`{"query": "zone%02d"}`, i))))
	}
	var want []string
	for i := 6; i < 70; i++ {
		want = append(want, fmt.Sprintf("report_%02d", i))
	}
	require.Equal(t, append(want, "man", "find_tools"), listNames(t, reg, ctx))
	res := reg.Invoke(ctx, llmtool.Call{Tool: "report_00"})
	require.False(t, res.IsError, res.Text())
}

// BenchmarkFindToolsRatio compares a find_tools call over 1,000 on-demand
// tools (20 modules of 50) with a plain read of one of them called by
// name, on the same registry in the same run: one of each per round, in an
// order shuffled every round by a seeded generator. find_tools is a read
// call too (a read transaction, its audit record), plus the search: the
// ratio is what the search adds. It reports the ratio of total and of
// median times ("-p50"), and each path's p10, p50 and p90 in ns.
func BenchmarkFindToolsRatio(b *testing.B) {
	nouns := []string{"invoice", "contact", "product", "ticket", "shipment", "campaign", "employee", "order", "asset", "course"}
	verbs := []string{"list", "get", "create", "update", "archive"}
	var mods []*llmtool.Module
	for m := range 20 {
		var tools []*llmtool.Tool
		for j := range 50 {
			noun, verb := nouns[j/5], verbs[j%5]
			tools = append(tools, llmtool.Read(fmt.Sprintf("m%02d_%s_%s", m, verb, noun),
				fmt.Sprintf("%s a %s of module %d, with its fields and history.", verb, noun, m),
				func(_ *llmtool.ReadCtx, in InvoiceIn) (idOut, error) { return idOut{ID: in.InvoiceID}, nil },
				llmtool.Category(fmt.Sprintf("Module %d", m))))
		}
		mods = append(mods, llmtool.DefineTools(fmt.Sprintf("m%02d", m), tools...))
	}
	reg, err := llmtool.NewRegistry(benchDB(b), &llmtool.Options{
		Logger:   slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})),
		OnDemand: func(*llmtool.Spec) bool { return true },
	}, mods...)
	require.NoError(b, err)
	ctx := inTenant("bench")
	plain := llmtool.Call{Tool: "m07_get_ticket", Args: []byte(`{"invoiceId": "t1"}`)}
	find := llmtool.Call{Tool: "find_tools", Args: []byte(`{"query": "archive a shipment of module 12"}`)}
	paths := []func(){
		func() {
			if res := reg.Invoke(ctx, plain); res.IsError {
				b.Fatal(res.Text())
			}
		},
		func() {
			if res := reg.Invoke(ctx, find); res.IsError {
				b.Fatal(res.Text())
			}
		},
	}
	t := shuffledRounds(b, len(paths), func(j int) { paths[j]() })
	t.report(b, 1, 0, "find/read")
	t.reportSpread(b, []string{"read", "find"}, "ns", 1)
}

// The listing of a tenant with loaded tools is cached per change; a seeded
// random run of loads, unloads, switches and write settings checks it
// against the listing computed from scratch after every step.
func TestOnDemandListingDifferential(t *testing.T) {
	t.Parallel()
	reg := newOnDemand(t, nil)
	specs, err := reg.List(context.Background(), &llmtool.ListOptions{All: true})
	require.NoError(t, err)
	var tools []*llmtool.Spec // host tools, in registration order
	for _, s := range specs {
		if s.URI == "" && !s.Prompt && s.Module != "llmtool" {
			tools = append(tools, s)
		}
	}
	tenants := []string{"a", "b"}
	writes := map[string]bool{}
	off := map[string]bool{}
	loaded := map[string]map[string]bool{"a": {}, "b": {}}
	queries := []string{"invoice", "refund", "contact", "taxes", "pdf document", "export csv", "weather"}
	rng := rand.New(rand.NewPCG(14, 2026))
	for step := range 300 {
		tenant := tenants[rng.IntN(len(tenants))]
		ctx := inTenant(tenant)
		switch op := rng.IntN(10); {
		case op < 5:
			q := queries[rng.IntN(len(queries))]
			res := findTools(ctx, reg, fmt.Sprintf(`{"query": %q, "limit": %d}`, q, 1+rng.IntN(3)))
			if !res.IsError {
				for _, s := range tools {
					if strings.Contains(res.Content[0].Text, "\n  "+s.Name+" ") {
						loaded[tenant][s.Name] = true
					}
				}
			}
		case op < 7:
			name := tools[rng.IntN(len(tools))].Name
			off[name] = !off[name]
			require.NoError(t, reg.SetEnabled(name, !off[name]))
		case op < 9:
			writes[tenant] = !writes[tenant]
			require.NoError(t, reg.Tenants().SetWrites(ctx, tenant, writes[tenant]))
		default:
			reg.UnloadTools(tenant)
			loaded[tenant] = map[string]bool{}
		}
		for _, sc := range tenants {
			var want []string
			for _, s := range tools {
				if !off[s.Name] && (s.ReadOnly || writes[sc]) && (s.Module == "notes" || loaded[sc][s.Name]) {
					want = append(want, s.Name)
				}
			}
			want = append(want, "man", "find_tools")
			require.Equal(t, want, listNames(t, reg, inTenant(sc)), "step %d, tenant %s", step, sc)
		}
	}
}
