package limit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/limit"
)

// The three limits in one registry, in the order the package recommends:
// each refuses what it should, and the audit records each refusal as
// "limited".
func TestCompose(t *testing.T) {
	t.Parallel()
	f := newFixture(t,
		limit.Rate(2, time.Hour, limit.ByPrincipal),
		limit.Concurrent(1, nil),
		limit.Timeout(0, map[string]time.Duration{"slow_count": 250 * time.Millisecond}),
	)
	wait := holdCalls(t, f, "hold_read") // the anonymous caller's first call
	tests := []struct {
		principal string
		tool      string
		args      string
		want      string // "" for a success
		sentinel  error
	}{
		// Rate runs first, so a call Concurrent refuses used a token.
		{"", "hold_read", "", "Too many calls of hold_read are running at once (limit 1). Try again in a moment.", limit.ErrConcurrency},
		{"", "count_notes", "", "Too many calls; count_notes was not run. Try again in 30 min.", limit.ErrRate},
		{"ann", "slow_count", "", "slow_count took longer than 250 ms and was stopped. Call it again with less work, or tell the user.", limit.ErrTimeout},
		{"ann", "create_note", `{"title": "A"}`, "", nil},
		{"ann", "create_note", `{"title": "B"}`, "Too many calls; create_note was not run. Try again in 30 min.", limit.ErrRate},
	}
	for _, tt := range tests {
		res := f.call(as(tt.principal), tt.tool, tt.args)
		if tt.want == "" {
			requireOK(t, res)
		} else {
			requireLimited(t, res, tt.want, tt.sentinel)
		}
	}
	f.letGo()
	requireOK(t, wait()[0])
	require.Equal(t, 1, f.countNotes(t))
	require.Equal(t, []string{
		"hold_read: limited", "count_notes: limited", "slow_count: limited",
		"create_note: ok", "create_note: limited", "hold_read: ok",
	}, f.outcomes())
}

// The limits compose with a host's own middleware, which sees their
// refusals as it sees any failed call; a nil entry is skipped.
func TestComposeWithHostMiddleware(t *testing.T) {
	t.Parallel()
	var seen []string
	observe := func(next llmtool.InvokeFunc) llmtool.InvokeFunc {
		return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
			res := next(ctx, req)
			outcome := "ok"
			if res.IsError {
				outcome = llmtool.KindOf(res.Err).String()
			}
			seen = append(seen, req.Spec.Name+": "+outcome)
			return res
		}
	}
	f := newFixture(t, observe, nil, limit.Rate(1, time.Minute, limit.ByTool))
	requireOK(t, f.call(context.Background(), "count_notes", ""))
	requireLimited(t, f.call(context.Background(), "count_notes", ""), "Too many calls; count_notes was not run. Try again in 60 s.", limit.ErrRate)
	require.Equal(t, []string{"count_notes: ok", "count_notes: limited"}, seen)
}
