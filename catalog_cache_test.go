package llmtool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/tenant"
)

// catalogCaches are the tenant caches under which man and find_tools must
// answer: none at all (examples/notes-mcp's), and one that is fresh when
// the call is admitted and stale when the catalog filters by it, which a
// long-lived cache hits when it expires between the two. expire, when
// set, makes the tenant's cached settings stale during admission.
var catalogCaches = []struct {
	name   string
	ttl    time.Duration
	expire bool
}{
	{name: "cache off", ttl: tenant.NoCache},
	{name: "cache expires mid-call", ttl: time.Hour, expire: true},
}

// expireAtAdmission returns an Options.Authorize that, for llmtool's own
// tools, marks the tenant's cached settings stale once *reg is set:
// admission calls it right after it read the settings, so whatever the
// call reads of them afterwards misses the cache.
func expireAtAdmission(reg **llmtool.Registry) func(context.Context, *llmtool.Principal, *llmtool.Spec) error {
	return func(ctx context.Context, _ *llmtool.Principal, s *llmtool.Spec) error {
		if *reg != nil && s.Module == "llmtool" {
			(*reg).Tenants().Expire(llmtool.TenantFrom(ctx))
		}
		return nil
	}
}

// man and find_tools filter what they show by the tenant's settings,
// which llmtool reads at admission: never as a statement of the tool,
// which the tool's transaction refuses on llmtool's own tables. So they
// answer whether the tenant cache is off or expires mid-call, on either
// engine, and the log holds no failure.
func TestCatalogToolsTenantCache(t *testing.T) {
	t.Parallel()
	calls := []struct {
		name    string
		tool    string
		args    string
		want    string // the answer's text, exactly
		wantErr string // the refusal, when the call fails
	}{{
		name: "man catalog", tool: "man", args: `{}`,
		want: `Tools you can call, by category. For a tool's options and examples, call man with {"name": "<tool>"}.

General
  get_note    Read a note's title and content.
  find_tools  Find tools by what they do and load them

More tools load on demand (6), by category; call find_tools with what you want to do to load the best matches:
  Billing (4)
  CRM (2)
`,
	}, {
		name: "man category", tool: "man", args: `{"name": "Billing"}`,
		wantErr: `No manual entry for "Billing". Call man with no arguments to list all tools.`,
	}, {
		name: "man page", tool: "man", args: `{"name": "refund_invoice"}`,
		want: `NAME
    refund_invoice - Refund a paid invoice

SYNOPSIS
    refund_invoice invoiceId
    Arguments: one JSON object, such as {"invoiceId": "..."}.

OPTIONS
    invoiceId (string, required)
        ID of the invoice.

DESCRIPTION
    Refund a paid invoice, in full or in part.
`,
	}, {
		name: "find_tools", tool: "find_tools", args: `{"query": "refund an invoice"}`,
		want: "Loaded 3 tools for \"refund an invoice\"; call them like any other tool:\n" +
			"  refund_invoice   Refund a paid invoice [Billing]\n" +
			"  list_invoices    List a customer's invoices, newest first. [Billing]\n" +
			"  get_invoice_pdf  Render an invoice as a PDF document. [Billing]\n" +
			"For a tool's options and examples, call man with {\"name\": \"<tool>\"}.\n",
	}}
	for _, cache := range catalogCaches {
		for _, call := range calls {
			t.Run(cache.name+"/"+call.name, func(t *testing.T) {
				t.Parallel()
				var reg *llmtool.Registry
				opts := &llmtool.Options{OnDemand: notNotes, TenantCacheTTL: cache.ttl}
				if cache.expire {
					opts.Authorize = expireAtAdmission(&reg)
				}
				r, logs := newRegOpts(t, openDB(t), opts, onDemandModules()...)
				ctx := inTenant("w")
				require.NoError(t, r.Tenants().SetWrites(ctx, "w", true)) // and caches the settings
				reg = r
				res := reg.Invoke(ctx, llmtool.Call{Tool: call.tool, Args: []byte(call.args)})
				if call.wantErr != "" {
					require.True(t, res.IsError, res.Text())
					require.Equal(t, llmtool.KindNotFound, llmtool.KindOf(res.Err))
					require.Equal(t, call.wantErr, res.Text())
				} else {
					require.Equal(t, call.want, richText(t, res))
				}
				require.NotContains(t, logs.String(), "level=ERROR")
			})
		}
	}
}
