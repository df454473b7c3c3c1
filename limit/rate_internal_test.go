package limit

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// clock is a test's time, moved by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func (r *rater) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []string
	for k := range r.buckets {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// requireAbout fails the test unless got is want, to a microsecond: the
// limiter computes waits in floating point.
func requireAbout(t *testing.T, want, got time.Duration) {
	t.Helper()
	require.InDelta(t, float64(want), float64(got), float64(time.Microsecond), "got %v", got)
}

// take returns the wait until the next token, and a refusal takes
// no token: the wait does not grow with refused calls.
func TestRaterWait(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := newRater(1, 3*time.Second, func(*llmtool.Request) string { return "" }, c.now)
	require.Zero(t, r.take("a"))
	requireAbout(t, 3*time.Second, r.take("a"))
	requireAbout(t, 3*time.Second, r.take("a"))
	c.advance(2 * time.Second)
	requireAbout(t, time.Second, r.take("a"))
	c.advance(time.Second)
	require.Zero(t, r.take("a"))
	require.Zero(t, r.take("b"))
}

// A sweep drops the buckets that refilled and keeps the others: once a
// period, and whenever the buckets doubled in number.
func TestRaterEviction(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := newRater(2, time.Minute, func(*llmtool.Request) string { return "" }, c.now)

	// t0: two keys take a token each; "busy" takes both of its own.
	require.Zero(t, r.take("a"))
	require.Zero(t, r.take("b"))
	c.advance(50 * time.Second)
	require.Zero(t, r.take("busy"))
	require.Zero(t, r.take("busy"))
	require.Equal(t, []string{"a", "b", "busy"}, r.keys())

	// t0+61s: a period since the last sweep, so this call sweeps. a and b
	// refilled (a token takes 30 s); busy has 11 s of refill, and stays.
	c.advance(11 * time.Second)
	require.Zero(t, r.take("c"))
	require.Equal(t, []string{"busy", "c"}, r.keys())
	requireAbout(t, 19*time.Second, r.take("busy")) // its next token is 19 s away

	// Less than a period later, no sweep: busy refilled (at t0+110s) but
	// stays until the next one.
	c.advance(55 * time.Second) // t0+116s
	require.Zero(t, r.take("d"))
	require.Equal(t, []string{"busy", "c", "d"}, r.keys())

	// When the buckets reach minSweep, the next call sweeps: busy and c
	// are full; d (taken at t0+116s) and the new ones are not.
	for i := range minSweep - 3 {
		require.Zero(t, r.take(fmt.Sprintf("k%02d", i)))
	}
	require.Len(t, r.keys(), minSweep)
	require.Zero(t, r.take("e"))
	keys := r.keys()
	require.Len(t, keys, minSweep-1) // 64, less busy and c, plus e
	require.NotContains(t, keys, "busy")
	require.NotContains(t, keys, "c")
	require.Contains(t, keys, "d")
	require.Contains(t, keys, "e")

	// After a sweep that kept 62 buckets, the next size sweep waits for
	// 124; a period later, everything idle goes.
	r.mu.Lock()
	require.Equal(t, 2*(minSweep-2), r.sweepAt)
	r.mu.Unlock()
	c.advance(time.Minute)
	require.Zero(t, r.take("f"))
	require.Equal(t, []string{"f"}, r.keys())
}

func TestWaitText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want string
	}{
		{time.Nanosecond, "1 s"},
		{time.Millisecond, "1 s"},
		{999 * time.Millisecond, "1 s"},
		{time.Second, "1 s"},
		{time.Second + 2*time.Millisecond, "2 s"},
		{2999 * time.Millisecond, "3 s"},
		{3*time.Second + 1, "3 s"},                  // floating-point noise
		{3*time.Second + time.Millisecond, "3 s"},   // still within the slack
		{3*time.Second + 2*time.Millisecond, "4 s"}, // beyond it
		{119 * time.Second, "119 s"},
		{120 * time.Second, "2 min"},
		{121 * time.Second, "3 min"},
		{time.Hour, "60 min"},
		{2*time.Hour - time.Second, "120 min"},
		{2 * time.Hour, "2 h"},
		{25 * time.Hour, "25 h"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, waitText(tt.d), "%v", tt.d)
	}
}

func TestDurationText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want string
	}{
		{50 * time.Millisecond, "50 ms"},
		{999 * time.Millisecond, "999 ms"},
		{time.Second, "1 s"},
		{1500 * time.Millisecond, "1.5 s"},
		{1234 * time.Millisecond, "1.2 s"},
		{90 * time.Second, "90 s"},
		{2 * time.Minute, "2 min"},
		{150 * time.Second, "150 s"},
		{time.Hour, "60 min"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, durationText(tt.d), "%v", tt.d)
	}
}
