package llmtool

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/internal/engine"
)

// TestRetryDelay: the pause after each run is drawn from the upper half of
// 2 ms·2^(run-1), at most 100 ms, and never outlasts the deadline.
func TestRetryDelay(t *testing.T) {
	t.Parallel()
	far := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		runs   int
		lo, hi time.Duration
	}{
		{1, time.Millisecond, 2 * time.Millisecond},
		{2, 2 * time.Millisecond, 4 * time.Millisecond},
		{3, 4 * time.Millisecond, 8 * time.Millisecond},
		{6, 32 * time.Millisecond, 64 * time.Millisecond},
		{7, 50 * time.Millisecond, 100 * time.Millisecond}, // 128 ms, capped
		{60, 50 * time.Millisecond, 100 * time.Millisecond},
	} {
		p := retry{deadline: far, runs: tc.runs}
		for range 200 {
			d := p.delay()
			require.GreaterOrEqual(t, d, tc.lo, "run %d", tc.runs)
			require.LessOrEqual(t, d, tc.hi, "run %d", tc.runs)
		}
	}

	soon := retry{deadline: time.Now().Add(3 * time.Millisecond), runs: 20}
	require.LessOrEqual(t, soon.delay(), 3*time.Millisecond, "cut to the time left")

	past := retry{deadline: time.Now().Add(-time.Millisecond), runs: 1}
	require.LessOrEqual(t, past.delay(), time.Duration(0))
	require.False(t, past.pause(context.Background()), "no pause once the deadline passed")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := retry{deadline: far, runs: 60}
	require.False(t, stopped.pause(ctx), "a pause ends with the call's context")
}

// TestRetryDeadline: the deadline is the context's, else RetryFor after
// the first run; Wait runs from the first run's start to the last's.
func TestRetryDeadline(t *testing.T) {
	t.Parallel()
	before := time.Now()
	p := newRetry(context.Background(), 7*time.Second)
	require.WithinRange(t, p.deadline, before.Add(7*time.Second), time.Now().Add(7*time.Second))

	at := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), at)
	defer cancel()
	p = newRetry(ctx, 7*time.Second)
	require.Equal(t, at, p.deadline, "the context's deadline, longer than RetryFor, wins")

	p.begin()
	require.Equal(t, 1, p.runs)
	require.Zero(t, p.wait(), "a call run once lost nothing")
	p.first = p.first.Add(-30 * time.Millisecond)
	p.begin()
	require.Equal(t, 2, p.runs)
	require.GreaterOrEqual(t, p.wait(), 30*time.Millisecond)
}

// TestRetryBusyError: the error of a write that ran out of time renders as
// the busy sentence, keeps the database's error of the latest run that
// lost, and is never a timeout.
func TestRetryBusyError(t *testing.T) {
	t.Parallel()
	busySentence := "The database is busy, so bump could not finish and changed nothing. Try again in a few seconds; if it is still busy, tell the user."
	lost := fmt.Errorf("write qty: %w", &pgconn.PgError{Severity: "ERROR", Code: "40001", Message: "could not serialize access due to concurrent update"})
	cut := fmt.Errorf("%w: %w", errContended, context.DeadlineExceeded)
	p := retry{runs: 3}
	p.last = p.first.Add(25 * time.Millisecond)
	const head = "llmtool: tool bump: 3 runs over 25ms: the database stayed busy with other writes until the call's deadline; nothing was saved"
	for _, tc := range []struct {
		name       string
		lost, last error
		text       string
	}{
		{"the last run lost", lost, lost, head + ": write qty: ERROR: could not serialize access due to concurrent update (SQLSTATE 40001)"},
		{"the deadline ended a run after one that lost", lost, cut,
			head + ": write qty: ERROR: could not serialize access due to concurrent update (SQLSTATE 40001) (then: waited for other transactions until the call's deadline: context deadline exceeded)"},
		{"the deadline ended the first run's wait", nil, cut, head + " (waited for other transactions until the call's deadline: context deadline exceeded)"},
	} {
		err := p.busy("bump", tc.lost, tc.last)
		require.EqualError(t, err, tc.text, tc.name)
		require.ErrorIs(t, err, errBusy, tc.name)
		require.Equal(t, tc.lost != nil, errors.Is(err, lost), tc.name)
		require.Equal(t, tc.lost != nil, engine.Retryable(err), "the database's error stays in the chain: %s", tc.name)
		require.NotErrorIs(t, err, context.DeadlineExceeded, tc.name)
		require.Equal(t, KindInternal, KindOf(err), tc.name)
		require.Equal(t, busySentence, render("bump", err), tc.name)
	}
}

// TestTurns: a call that lost starveAfter runs takes the turn, one at a
// time, and while one waits for it or holds it, other runs wait; a run
// whose context ends while it waits gets the context's error.
func TestTurns(t *testing.T) {
	t.Parallel()
	tu := newTurns()
	ctx := context.Background()
	fresh := &retry{runs: 1, deadline: time.Now().Add(time.Hour)}
	require.NoError(t, tu.before(ctx, fresh), "no starving call: a run goes")

	starving := &retry{runs: starveAfter, deadline: time.Now().Add(time.Hour)}
	require.NoError(t, tu.before(ctx, starving))
	require.True(t, starving.alone)
	require.Equal(t, starveAfter, starving.base, "its pauses start over")
	require.NoError(t, tu.before(ctx, starving), "it holds the turn")

	waited := make(chan error, 1)
	go func() { waited <- tu.before(ctx, fresh) }()
	second := &retry{runs: starveAfter + 2, deadline: time.Now().Add(time.Hour)}
	took := make(chan error, 1)
	go func() { took <- tu.before(ctx, second) }()
	for tu.want.Load() < 2 { // the second starving call waits for the turn
		runtime.Gosched()
	}

	short, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, tu.before(short, &retry{runs: 1, deadline: time.Now().Add(time.Hour)}), context.Canceled, "a run whose context ended stops waiting")
	require.ErrorIs(t, tu.before(short, &retry{runs: starveAfter, deadline: time.Now().Add(time.Hour)}), context.Canceled, "so does a starving call's")
	// A call whose context has no deadline keeps to its own (RetryFor).
	past := time.Now().Add(-time.Millisecond)
	require.ErrorIs(t, tu.before(ctx, &retry{runs: 1, deadline: past}), context.DeadlineExceeded, "a run past its deadline stops waiting")
	require.ErrorIs(t, tu.before(ctx, &retry{runs: starveAfter, deadline: past}), context.DeadlineExceeded, "so does a starving call's")

	tu.leave() // the first starving call ends; the second takes the turn
	require.NoError(t, <-took)
	require.True(t, second.alone)
	select {
	case err := <-waited:
		t.Fatalf("a run went while a starving call held the turn: %v", err)
	default:
	}
	tu.leave()
	require.NoError(t, <-waited, "the run goes once no call starves")
	require.Zero(t, tu.want.Load())
	require.NoError(t, tu.before(ctx, &retry{runs: 2}))
	var none *turns
	require.NoError(t, none.before(ctx, &retry{runs: 10}), "nil turns: every run goes")
}
