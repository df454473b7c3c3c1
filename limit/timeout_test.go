package limit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/limit"
)

// The tools stopped here wait for their context to end, so the deadline
// always ends them; the short durations only keep the test quick. They are
// long enough for hold_note's insert to run before the deadline, which the
// test checks.
func TestTimeout(t *testing.T) {
	t.Parallel()
	const short = 250 * time.Millisecond
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	tests := []struct {
		name    string
		mw      llmtool.Middleware
		ctx     context.Context // nil for context.Background()
		tool    string
		args    string
		want    string // the failure's message, "" for a success
		outcome string
		json    string // the success's JSON
		notes   int    // notes in the database after the call
	}{
		{
			name: "a write tool stopped rolls back", mw: limit.Timeout(time.Hour, map[string]time.Duration{"hold_note": short}),
			tool: "hold_note", args: `{"title": "A"}`, outcome: "limited",
			want: "hold_note took longer than 250 ms and was stopped; nothing was saved. Call it again with less work, or tell the user.",
		},
		{
			name: "a read tool's slow query is stopped", mw: limit.Timeout(short, nil),
			tool: "slow_count", outcome: "limited",
			want: "slow_count took longer than 250 ms and was stopped. Call it again with less work, or tell the user.",
		},
		{
			name: "a call within its time succeeds", mw: limit.Timeout(time.Hour, nil),
			tool: "create_note", args: `{"title": "A"}`, outcome: "ok", json: `{"id":1}`, notes: 1,
		},
		{
			name: "the handler sees the deadline", mw: limit.Timeout(time.Hour, nil),
			tool: "has_deadline", outcome: "ok", json: `{"deadline":true}`,
		},
		{
			name: "a tool given 0 has no deadline", mw: limit.Timeout(time.Hour, map[string]time.Duration{"has_deadline": 0}),
			tool: "has_deadline", outcome: "ok", json: `{"deadline":false}`,
		},
		{
			name: "no default timeout", mw: limit.Timeout(0, map[string]time.Duration{"create_note": time.Hour}),
			tool: "has_deadline", outcome: "ok", json: `{"deadline":false}`,
		},
		{
			name: "the tool's own error is kept", mw: limit.Timeout(short, nil),
			tool: "wait_conflict", outcome: "conflict",
			want: "The notes changed while they were counted. Call count_notes again.",
		},
		{
			name: "the caller's cancellation is not a timeout", mw: limit.Timeout(time.Hour, nil), ctx: cancelled,
			tool: "create_note", args: `{"title": "A"}`, outcome: "cancelled",
			want: "The call to create_note was cancelled before it finished; nothing was saved. Call it again if it is still needed.",
		},
		{
			name: "the caller's own deadline is not this timeout", mw: limit.Timeout(time.Hour, nil), ctx: expired,
			tool: "create_note", args: `{"title": "A"}`, outcome: "cancelled",
			want: "The call to create_note timed out before it finished; nothing was saved. Call it again, with less work if possible.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.mw)
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			res := f.call(ctx, tt.tool, tt.args)
			switch {
			case tt.want == "":
				requireOK(t, res)
				require.JSONEq(t, tt.json, string(res.JSON))
			case tt.outcome == "limited":
				requireLimited(t, res, tt.want, limit.ErrTimeout)
				require.ErrorIs(t, res.Err, context.DeadlineExceeded)
			default:
				require.True(t, res.IsError)
				require.Equal(t, tt.want, res.Text())
				require.NotErrorIs(t, res.Err, limit.ErrTimeout)
			}
			if tt.tool == "hold_note" {
				require.NoError(t, <-f.inserted, "the insert ran before the deadline")
			}
			require.Equal(t, tt.notes, f.countNotes(t))
			require.Equal(t, []string{tt.tool + ": " + tt.outcome}, f.outcomes())
		})
	}
}

// Two timeouts nest: the inner, shorter one stops the call and reports
// it; the outer one leaves the inner's result alone.
func TestTimeoutNested(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mw   []llmtool.Middleware
		want string
	}{
		{"inner shorter", []llmtool.Middleware{limit.Timeout(time.Hour, nil), limit.Timeout(100*time.Millisecond, nil)},
			"hold_read took longer than 100 ms and was stopped. Call it again with less work, or tell the user."},
		{"outer shorter", []llmtool.Middleware{limit.Timeout(100*time.Millisecond, nil), limit.Timeout(time.Hour, nil)},
			"hold_read took longer than 100 ms and was stopped. Call it again with less work, or tell the user."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.mw...)
			requireLimited(t, f.call(context.Background(), "hold_read", ""), tt.want, limit.ErrTimeout)
			require.Equal(t, "hold_read", <-f.started)
		})
	}
}

func TestTimeoutPanics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"negative default", func() { limit.Timeout(-time.Second, nil) }, "limit.Timeout: the default timeout is negative (-1s); use 0 for no limit"},
		{"negative for a tool", func() { limit.Timeout(time.Second, map[string]time.Duration{"create_note": -1}) },
			"limit.Timeout: the timeout of create_note is negative (-1ns); use 0 for no limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.PanicsWithValue(t, tt.want, tt.f)
		})
	}
}
