package llmtool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/llmtool/llmtool/internal/engine"
)

// Writes under contention: one policy for both engines, for write calls
// and for changes of the tenant settings.
//
// A run of a write that loses to other writes rolls back, saving nothing:
// on PostgreSQL a serialization failure (40001) or a deadlock (40P01); on
// SQLite the write lock another process holds past the busy timeout
// (SQLITE_BUSY, at BEGIN IMMEDIATE) or a table lock (SQLITE_LOCKED). The
// registry runs it again, handler and all, on a fresh transaction, after
// a pause that doubles from run to run, up to maxPause, with jitter, so
// that writers that collided do not collide again in step. It goes on
// until a run commits or the call's deadline passes: the deadline of the
// call's context, or, when it has none, Options.RetryFor after the first
// run began. There is no fixed number of runs: under a hot row a call
// that keeps losing keeps its turn coming, where a count would fail it
// while calls that came later succeed.
//
// When the deadline passes while the call loses or waits for another
// transaction, the model hears that the database is busy and nothing
// changed (errBusy, rendered by errors.go), not that the call "timed out"
// and should do less work: waiting for the write lock or a connection, in
// a run after one that lost, or, on PostgreSQL, in a statement the server
// shows waiting for a lock.

// defaultRetryFor is Options.RetryFor's default.
const defaultRetryFor = 10 * time.Second

// The pauses between runs: firstPause·2^(run-1), at most maxPause, each
// drawn from its upper half. maxPause keeps a call that lost many times
// from sleeping through the moments the row is free.
const (
	firstPause = 2 * time.Millisecond
	maxPause   = 100 * time.Millisecond
)

// errBusy is wrapped by the error of a write whose deadline passed while
// it lost to, or waited for, other writes. The model sees the busy
// sentence.
var errBusy = errors.New("the database stayed busy with other writes until the call's deadline; nothing was saved")

// errContended marks a run that the call's deadline ended while it waited
// for other transactions; runWrites turns it into errBusy.
var errContended = errors.New("waited for other transactions until the call's deadline")

// retry is the retry policy of one write: its runs and its deadline.
type retry struct {
	deadline time.Time
	first    time.Time // when the first run began
	last     time.Time // when the latest run began
	runs     int
}

// newRetry returns the policy of a write that starts now under ctx.
func (r *Registry) newRetry(ctx context.Context) retry {
	now := time.Now()
	p := retry{first: now, last: now}
	if d, ok := ctx.Deadline(); ok {
		p.deadline = d
	} else {
		p.deadline = now.Add(r.retryFor)
	}
	return p
}

// begin counts a run that begins now.
func (p *retry) begin() {
	p.runs++
	if p.runs > 1 {
		p.last = time.Now()
	}
}

// wait is the time the write lost to other writes: from its first run's
// start to its last run's, the runs that rolled back and the pauses.
func (p *retry) wait() time.Duration { return p.last.Sub(p.first) }

// pause waits before the next run. It reports false, without waiting,
// when the deadline has passed, and false when ctx ends during the pause.
// A pause does not outlast the deadline.
func (p *retry) pause(ctx context.Context) bool {
	left := time.Until(p.deadline)
	if left <= 0 {
		return false
	}
	d := min(firstPause<<min(p.runs-1, 16), maxPause)
	d = min(d/2+rand.N(d/2+1), left)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// busy is the error of a write that ran out of time to other writes after
// last, its latest run's error. It wraps errBusy, and last unless last is
// the deadline itself (which would make it a timeout, KindCancelled).
func (p *retry) busy(tool string, last error) error {
	prefix := fmt.Sprintf("llmtool: tool %s: %d runs over %s", tool, p.runs, p.wait().Round(time.Millisecond))
	if errors.Is(last, context.DeadlineExceeded) || errors.Is(last, context.Canceled) {
		return fmt.Errorf("%s: %w (the last: %v)", prefix, errBusy, last)
	}
	return fmt.Errorf("%s: %w: %w", prefix, errBusy, last)
}

// runWrites runs a write call until a run commits, fails for another
// reason, or the call's deadline passes while it loses to other writes.
func (r *Registry) runWrites(ctx context.Context, t *Tool, args []byte, pa *prepared, res *Result) (out []byte, committed bool, err error) {
	p := r.newRetry(ctx)
	defer func() { pa.attempts, pa.retryWait = p.runs, p.wait() }()
	for {
		p.begin()
		if p.runs > 1 {
			retried(ctx, pa.traced, p.runs) // telemetry.go
		}
		var again bool
		out, committed, again, err = r.execWrite(ctx, t, args, pa, res, &p)
		switch {
		case errors.Is(err, errContended):
			return nil, false, p.busy(t.spec.Name, err)
		case !again:
			return out, committed, err
		}
		r.logger().Debug("llmtool: write lost to other writes and runs again", "tool", t.spec.Name, "run", p.runs, "err", err)
		if !p.pause(ctx) {
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil, false, ctx.Err()
			}
			return nil, false, p.busy(t.spec.Name, err)
		}
	}
}

// contended reports whether the call's deadline ended a run while it
// waited for other transactions, err being the run's error: in a run after
// one that lost (runs > 1), or, on PostgreSQL, with a statement the
// deadline cut that the server shows waiting for a lock. (A deadline that
// ends the wait for the write lock or a connection is contention too;
// execWrite knows that one without asking.)
func (r *Registry) contended(ctx context.Context, cs *callState, p *retry, err error) bool {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if p.runs > 1 {
		return true
	}
	cs.ctxMu.Lock()
	cut := cs.cut
	cs.ctxMu.Unlock()
	return cut != "" && r.tx.LockWait(ctx, cut)
}

// stmtFailed notes a write call's statement that failed with err: one that
// lost to another write makes the run roll back and run again even if the
// handler ignores the error; one the call's deadline cut is remembered for
// contended.
func (cs *callState) stmtFailed(query string, err error) {
	switch {
	case engine.Retryable(err):
		cs.retryable.Store(true)
	case errors.Is(err, context.DeadlineExceeded):
		cs.ctxMu.Lock()
		cs.cut = query
		cs.ctxMu.Unlock()
	}
}

// ended is the error of a run that did not begin because ctx had ended:
// after a run that lost, a deadline that passed during the pause is
// contention.
func (p *retry) ended(err error) error {
	if p.runs > 1 && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", errContended, err)
	}
	return err
}

// beginFailed classifies the failure of a write's BEGIN (with the write
// token and the connection before it): SQLite refusing the write lock
// another process holds runs again (retry), and a deadline that passed
// while the run waited is contention.
func beginFailed(ctx context.Context, err error) (retry bool, _ error) {
	switch cerr := ctx.Err(); {
	case errors.Is(cerr, context.DeadlineExceeded):
		return false, fmt.Errorf("llmtool: begin transaction: %w: %w", errContended, cerr)
	case cerr != nil:
		return false, cerr
	case engine.Retryable(err):
		return true, fmt.Errorf("llmtool: begin transaction: %w", err)
	}
	return false, beginErr(ctx, err)
}
