package llmtool_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/audit"
)

// tracer is a middleware that notes its name before and after next, and
// what it saw of the call.
func tracer(name string, log *[]string) llmtool.Middleware {
	return func(next llmtool.InvokeFunc) llmtool.InvokeFunc {
		return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
			who := "nobody"
			if req.Principal != nil {
				who = req.Principal.ID
			}
			*log = append(*log, name+" before "+req.Spec.Name+" as "+who+" in "+req.Tenant+" read="+boolText(req.Spec.ReadOnly))
			res := next(ctx, req)
			*log = append(*log, name+" after error="+boolText(res.IsError))
			return res
		}
	}
}

func boolText(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func TestMiddlewareOrder(t *testing.T) {
	t.Parallel()
	var log []string
	reg := newRegistryOpts(t, openDB(t), &llmtool.Options{Middleware: []llmtool.Middleware{tracer("outer", &log), nil, tracer("inner", &log)}}, itemTools)
	ctx := llmtool.WithTenant(alice(context.Background()), "team")
	require.NoError(t, reg.Tenants().SetWrites(ctx, "team", true))

	res := reg.Invoke(ctx, llmtool.Call{Tool: "get_item", Args: []byte(`{"id": 1}`)})
	require.False(t, res.IsError, res.Text())
	require.Equal(t, []string{
		"outer before get_item as alice in team read=yes",
		"inner before get_item as alice in team read=yes",
		"inner after error=no",
		"outer after error=no",
	}, log)

	// A call of an unknown tool fails before the middleware.
	log = nil
	res = reg.Invoke(ctx, llmtool.Call{Tool: "get_itme"})
	require.True(t, res.IsError)
	require.Empty(t, log)
}

// deny refuses calls of write tools, with a sentence for the model.
func deny(next llmtool.InvokeFunc) llmtool.InvokeFunc {
	return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
		if !req.Spec.ReadOnly {
			return req.Fail(llmtool.Denied("Writes are paused for maintenance.").Next("Try again after 18:00."))
		}
		return next(ctx, req)
	}
}

// slowDown refuses every call as a limit would.
func slowDown(next llmtool.InvokeFunc) llmtool.InvokeFunc {
	return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
		return req.Fail(llmtool.Limited("Too many calls of %s; try again in 3 s.", req.Spec.Name))
	}
}

// asBob runs the rest of the call as bob.
func asBob(next llmtool.InvokeFunc) llmtool.InvokeFunc {
	return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
		return next(llmtool.WithPrincipal(ctx, &llmtool.Principal{ID: "bob"}), req)
	}
}

func TestMiddlewareRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		mw         llmtool.Middleware
		tool, args string
		want       string // the model's message; "" for success
		outcome    string
		principal  string
		rows       int
	}{
		{name: "refused write", mw: deny, tool: "add_item", args: `{"name":"pear"}`,
			want: "Writes are paused for maintenance. Try again after 18:00.", outcome: audit.OutcomeRefused, principal: "alice", rows: 1},
		{name: "read passes", mw: deny, tool: "get_item", args: `{"id":1}`, outcome: audit.OutcomeOK, principal: "alice", rows: 1},
		{name: "limited", mw: slowDown, tool: "get_item", args: `{"id":1}`,
			want: "Too many calls of get_item; try again in 3 s.", outcome: "limited", principal: "alice", rows: 1},
		{name: "principal changed", mw: asBob, tool: "add_item", args: `{"name":"pear"}`, outcome: audit.OutcomeOK, principal: "bob", rows: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := openDB(t)
			rec := &recorder{}
			reg := newRegistryOpts(t, db, &llmtool.Options{Middleware: []llmtool.Middleware{tc.mw}, Audit: []audit.Sink{rec}}, itemTools)
			res := reg.Invoke(alice(context.Background()), llmtool.Call{Tool: tc.tool, Args: []byte(tc.args)})
			if tc.want == "" {
				require.False(t, res.IsError, res.Text())
				require.NotContains(t, decodeObj(t, res.JSON), "error")
			} else {
				require.True(t, res.IsError)
				require.Equal(t, tc.want, res.Text())
				require.JSONEq(t, `{"error":`+jsonQuote(tc.want)+`}`, string(res.JSON))
			}
			require.Equal(t, tc.rows, countItems(t, db))
			require.Len(t, rec.recs, 1)
			require.Equal(t, tc.outcome, rec.recs[0].Outcome)
			require.Equal(t, tc.tool, rec.recs[0].Tool)
			if tc.mw != nil && tc.principal == "bob" {
				// The audit record names who the call came from: the
				// context Invoke was given.
				require.Equal(t, "alice", rec.recs[0].Principal)
			}
		})
	}
}

func jsonQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

func TestMiddlewareFailNil(t *testing.T) {
	t.Parallel()
	bad := func(next llmtool.InvokeFunc) llmtool.InvokeFunc {
		return func(ctx context.Context, req *llmtool.Request) llmtool.Result { return req.Fail(nil) }
	}
	logs := &syncBuffer{}
	rec := &recorder{}
	reg := newRegistryOpts(t, openDB(t), &llmtool.Options{Middleware: []llmtool.Middleware{bad}, Audit: []audit.Sink{rec},
		Logger: slog.New(slog.NewTextHandler(logs, nil))}, itemTools)
	// A middleware's panic is a failed call, as a handler's is.
	res := invoke(reg, "get_item", `{"id":1}`)
	require.True(t, res.IsError)
	require.Equal(t, "Internal error in get_item; the details were logged. Try again once; if it fails again, tell the user the tool is failing.", res.Text())
	require.Contains(t, logs.String(), `msg="llmtool: tool panicked" tool=get_item panic="llmtool: Request.Fail called with a nil error"`)
	require.Equal(t, audit.OutcomePanic, rec.recs[0].Outcome)
}
