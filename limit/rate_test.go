package limit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/limit"
)

// rateCall is one call of a rate test: who calls what where, and the
// refusal expected ("" for a success).
type rateCall struct {
	principal string // "" for none
	tenant    string
	tool      string
	want      string
}

// The waits in these messages are the bucket's refill time less the few
// milliseconds between the calls, rounded up: they hold however slowly the
// calls run, up to a second apart.
func TestRate(t *testing.T) {
	t.Parallel()
	const create = `{"title": "A"}`
	onlyWrites := func(req *llmtool.Request) string {
		if req.Spec.ReadOnly {
			return ""
		}
		return limit.ByPrincipal(req)
	}
	tests := []struct {
		name  string
		mw    llmtool.Middleware
		calls []rateCall
	}{
		{"by tool, one every 3 s", limit.Rate(1, 3*time.Second, limit.ByTool), []rateCall{
			{tool: "create_note"},
			{tool: "create_note", want: "Too many calls; create_note was not run. Try again in 3 s."},
			{principal: "bob", tool: "create_note", want: "Too many calls; create_note was not run. Try again in 3 s."},
			{tool: "count_notes"}, // a bucket of its own
			{tool: "count_notes", want: "Too many calls; count_notes was not run. Try again in 3 s."},
		}},
		{"a burst of 3 a minute", limit.Rate(3, time.Minute, limit.ByTool), []rateCall{
			{tool: "create_note"},
			{tool: "create_note"},
			{tool: "create_note"},
			{tool: "create_note", want: "Too many calls; create_note was not run. Try again in 20 s."},
		}},
		{"by principal, all tools together", limit.Rate(2, time.Hour, limit.ByPrincipal), []rateCall{
			{principal: "ann", tool: "create_note"},
			{principal: "ann", tool: "count_notes"},
			{principal: "ann", tool: "create_note", want: "Too many calls; create_note was not run. Try again in 30 min."},
			{principal: "ann", tool: "count_notes", want: "Too many calls; count_notes was not run. Try again in 30 min."},
			{principal: "bob", tool: "create_note"},
		}},
		{"callers without a principal share a bucket", limit.Rate(1, time.Minute, limit.ByPrincipal), []rateCall{
			{tool: "create_note"},
			{tool: "count_notes", want: "Too many calls; count_notes was not run. Try again in 60 s."},
			{principal: "ann", tool: "count_notes"},
		}},
		{"by tenant", limit.Rate(1, time.Hour, limit.ByTenant), []rateCall{
			{principal: "ann", tenant: "team-a", tool: "count_notes"},
			{principal: "bob", tenant: "team-a", tool: "count_notes", want: "Too many calls; count_notes was not run. Try again in 60 min."},
			{principal: "ann", tenant: "team-b", tool: "count_notes"},
			{principal: "ann", tool: "count_notes"}, // the default tenant
		}},
		{"by principal and tool", limit.Rate(1, 2*time.Hour, limit.ByPrincipalTool), []rateCall{
			{principal: "ann", tool: "create_note"},
			{principal: "ann", tool: "create_note", want: "Too many calls; create_note was not run. Try again in 2 h."},
			{principal: "ann", tool: "count_notes"},
			{principal: "bob", tool: "create_note"},
		}},
		{"an empty key is not limited", limit.Rate(1, time.Minute, onlyWrites), []rateCall{
			{principal: "ann", tool: "count_notes"},
			{principal: "ann", tool: "count_notes"},
			{principal: "ann", tool: "create_note"},
			{principal: "ann", tool: "count_notes"},
			{principal: "ann", tool: "create_note", want: "Too many calls; create_note was not run. Try again in 60 s."},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.mw)
			var outcomes []string
			created := 0
			for i, c := range tt.calls {
				ctx := llmtool.WithTenant(as(c.principal), c.tenant)
				args := ""
				if c.tool == "create_note" {
					args = create
				}
				res := f.call(ctx, c.tool, args)
				if c.want == "" {
					requireOK(t, res)
					outcomes = append(outcomes, c.tool+": ok")
					if c.tool == "create_note" {
						created++
					}
				} else {
					requireLimited(t, res, c.want, limit.ErrRate)
					outcomes = append(outcomes, c.tool+": limited")
				}
				require.Equal(t, created, f.countNotes(t), "notes after call %d", i+1)
			}
			require.Equal(t, outcomes, f.outcomes())
		})
	}
}

// Rate runs before the registry's policy: a call the policy refuses (a
// write where writes are off) uses a token, and a call Rate refuses never
// reaches the policy.
func TestRateCountsCallsThePolicyRefuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t, limit.Rate(1, time.Minute, limit.ByPrincipal))
	ctx := llmtool.WithTenant(as("ann"), "read-only")
	res := f.call(ctx, "create_note", `{"title": "A"}`)
	require.Equal(t, `Tool "create_note" changes data, and write tools are off in tenant "read-only". Ask the user to enable write tools for this tenant, then call create_note again.`, res.Text())
	requireLimited(t, f.call(ctx, "create_note", `{"title": "A"}`), "Too many calls; create_note was not run. Try again in 60 s.", limit.ErrRate)
	require.Equal(t, []string{"create_note: refused", "create_note: limited"}, f.outcomes())
}

func TestRatePanics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"no calls", func() { limit.Rate(0, time.Minute, limit.ByTool) }, "limit.Rate: n is 0; allow at least 1 call per period"},
		{"no period", func() { limit.Rate(1, 0, limit.ByTool) }, "limit.Rate: the period is 0s; give a positive duration such as time.Minute"},
		{"no key", func() { limit.Rate(1, time.Minute, nil) }, "limit.Rate: the key is nil; pass limit.ByPrincipal, limit.ByTool or a Key of your own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.PanicsWithValue(t, tt.want, tt.f)
		})
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	spec := &llmtool.Spec{Name: "create_note"}
	tests := []struct {
		name string
		key  limit.Key
		req  llmtool.Request
		want string
	}{
		{"principal", limit.ByPrincipal, llmtool.Request{Spec: spec, Principal: &llmtool.Principal{ID: "ann"}}, "principal:ann"},
		{"no principal", limit.ByPrincipal, llmtool.Request{Spec: spec}, "anonymous"},
		{"principal without an ID", limit.ByPrincipal, llmtool.Request{Spec: spec, Principal: &llmtool.Principal{}}, "anonymous"},
		{"principal named anonymous", limit.ByPrincipal, llmtool.Request{Spec: spec, Principal: &llmtool.Principal{ID: "anonymous"}}, "principal:anonymous"},
		{"tenant", limit.ByTenant, llmtool.Request{Spec: spec, Tenant: "team-a"}, "tenant:team-a"},
		{"default tenant", limit.ByTenant, llmtool.Request{Spec: spec}, "tenant:"},
		{"tool", limit.ByTool, llmtool.Request{Spec: spec}, "create_note"},
		{"principal and tool", limit.ByPrincipalTool, llmtool.Request{Spec: spec, Principal: &llmtool.Principal{ID: "ann"}}, "create_note\x00principal:ann"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.key(&tt.req))
		})
	}
}
