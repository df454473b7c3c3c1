package limit_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/limit"
)

// holdCalls starts a call of each tool in goroutines and returns once all
// their handlers run (each reports on f.started), so they hold their
// slots until f.release is closed; wait then returns their results.
func holdCalls(t *testing.T, f *fixture, tools ...string) (wait func() []llmtool.Result) {
	t.Helper()
	results := make(chan llmtool.Result, len(tools))
	for _, tool := range tools {
		go func() { results <- f.call(context.Background(), tool, "") }()
	}
	var started []string
	for range tools {
		started = append(started, <-f.started)
	}
	slices.Sort(started)
	require.Equal(t, slices.Sorted(slices.Values(tools)), started)
	return func() []llmtool.Result {
		out := make([]llmtool.Result, 0, len(tools))
		for range tools {
			out = append(out, <-results)
		}
		return out
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	type call struct {
		tool string
		want string // "" for a success
	}
	tests := []struct {
		name  string
		mw    llmtool.Middleware
		hold  []string // calls that run and wait while the others are made
		calls []call
	}{
		{"each tool its own cap", limit.Concurrent(2, nil), []string{"hold_read", "hold_read", "hold_other", "hold_other"}, []call{
			{"hold_read", "Too many calls of hold_read are running at once (limit 2). Try again in a moment."},
			{"hold_other", "Too many calls of hold_other are running at once (limit 2). Try again in a moment."},
			{"count_notes", ""},
		}},
		{"a cap for one tool only", limit.Concurrent(0, map[string]int{"hold_read": 1}), []string{"hold_read", "hold_other", "hold_other", "hold_other"}, []call{
			{"hold_read", "Too many calls of hold_read are running at once (limit 1). Try again in a moment."},
			{"count_notes", ""},
		}},
		{"a default and an override", limit.Concurrent(1, map[string]int{"hold_other": 2}), []string{"hold_read", "hold_other", "hold_other"}, []call{
			{"hold_read", "Too many calls of hold_read are running at once (limit 1). Try again in a moment."},
			{"hold_other", "Too many calls of hold_other are running at once (limit 2). Try again in a moment."},
			{"count_notes", ""},
		}},
		{"a tool given 0 is not capped", limit.Concurrent(1, map[string]int{"hold_other": 0}), []string{"hold_read", "hold_other", "hold_other", "hold_other"}, []call{
			{"hold_read", "Too many calls of hold_read are running at once (limit 1). Try again in a moment."},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.mw)
			wait := holdCalls(t, f, tt.hold...)
			var outcomes []string
			for _, c := range tt.calls {
				res := f.call(context.Background(), c.tool, "")
				if c.want == "" {
					requireOK(t, res)
					outcomes = append(outcomes, c.tool+": ok")
				} else {
					requireLimited(t, res, c.want, limit.ErrConcurrency)
					outcomes = append(outcomes, c.tool+": limited")
				}
			}
			// The refused calls never reached their handlers.
			require.Empty(t, f.started)
			require.Equal(t, outcomes, f.outcomes())

			f.letGo()
			for _, res := range wait() {
				requireOK(t, res)
			}
			// The slots are free again.
			for _, c := range tt.calls {
				requireOK(t, f.call(context.Background(), c.tool, ""))
			}
		})
	}
}

func TestConcurrentPanics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"negative default", func() { limit.Concurrent(-1, nil) }, "limit.Concurrent: the default cap is negative (-1); use 0 for no limit"},
		{"negative for a tool", func() { limit.Concurrent(1, map[string]int{"create_note": -2}) },
			"limit.Concurrent: the cap of create_note is negative (-2); use 0 for no limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.PanicsWithValue(t, tt.want, tt.f)
		})
	}
}

// The map given is copied: changing it later changes nothing.
func TestConcurrentCopiesMap(t *testing.T) {
	t.Parallel()
	caps := map[string]int{"hold_read": 1}
	f := newFixture(t, limit.Concurrent(0, caps))
	caps["hold_read"] = 5
	wait := holdCalls(t, f, "hold_read")
	requireLimited(t, f.call(context.Background(), "hold_read", ""),
		"Too many calls of hold_read are running at once (limit 1). Try again in a moment.", limit.ErrConcurrency)
	f.letGo()
	requireOK(t, wait()[0])
}
