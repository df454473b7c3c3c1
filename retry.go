package llmtool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtool/llmtool/internal/engine"
)

// Writes under contention: one policy for both engines, for write calls
// and for changes of the tenant settings.
//
// A run of a write that loses to other writes rolls back, saving nothing:
// on PostgreSQL a serialization failure (40001) or a deadlock (40P01); on
// SQLite the write lock another process holds past the busy timeout
// (SQLITE_BUSY, at BEGIN IMMEDIATE; engine.Locked). The
// registry runs it again, handler and all, on a fresh transaction, after
// a pause that doubles from run to run, up to maxPause, with jitter, so
// that writers that collided do not collide again in step. It goes on
// until a run commits or the call's deadline passes: the deadline of the
// call's context, or, when it has none, Options.RetryFor after the first
// run began. There is no fixed number of runs: under a hot row a call
// that keeps losing keeps its turn coming, where a count would fail it
// while calls that came later succeed.
//
// Backoff alone is unfair under a hot row: the writer that just committed
// starts its next call at once and finds the row free, while one that lost
// wakes from its pause at a random moment, mostly to find the row taken
// again. So a call that lost starveAfter runs takes its turn (turns): it
// runs alone on this registry, which holds back the other writes' runs
// until it ends, and pauses short again.
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
// for other transactions; do turns it into errBusy.
var errContended = errors.New("waited for other transactions until the call's deadline")

// retry is the retry policy of one write: its runs and its deadline.
type retry struct {
	deadline time.Time
	first    time.Time // when the first run began
	last     time.Time // when the latest run began
	runs     int
	base     int  // runs before the pauses started over (alone)
	alone    bool // holds the registry's turn (turns)
}

// newRetry returns the policy of a write that starts now under ctx, with
// Options.RetryFor retryFor.
func newRetry(ctx context.Context, retryFor time.Duration) retry {
	now := time.Now()
	p := retry{first: now, last: now}
	if d, ok := ctx.Deadline(); ok {
		p.deadline = d
	} else {
		p.deadline = now.Add(retryFor)
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

// delay is the pause before the run after p.runs: a duration drawn from
// the upper half of firstPause·2^(runs-1), at most maxPause, cut to the
// time left before the deadline; zero or less once the deadline passed.
func (p *retry) delay() time.Duration {
	left := time.Until(p.deadline)
	if left <= 0 {
		return left
	}
	d := min(firstPause<<min(max(p.runs-p.base, 1)-1, 16), maxPause)
	return min(d/2+rand.N(d/2+1), left)
}

// pause waits before the next run. It reports false, without waiting,
// when the deadline has passed, and false when ctx ends before the pause
// does. A pause does not outlast the deadline.
func (p *retry) pause(ctx context.Context) bool {
	d := p.delay()
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

// busy is the error of a write that ran out of time to other writes: lost
// is the error of its latest run that lost (nil if none did), last the
// error that ended it, lost itself or a run the deadline ended. It wraps
// errBusy and lost, never the deadline (which would make it a timeout,
// KindCancelled). tool names the write call's tool; "" is a change of the
// tenant settings.
func (p *retry) busy(tool string, lost, last error) error {
	what := "tenant settings"
	if tool != "" {
		what = "tool " + tool
	}
	head := fmt.Sprintf("llmtool: %s: %d runs over %s", what, p.runs, p.wait().Round(time.Millisecond))
	switch {
	case lost == nil:
		return fmt.Errorf("%s: %w (%v)", head, errBusy, last)
	case last == lost:
		return fmt.Errorf("%s: %w: %w", head, errBusy, lost)
	}
	return fmt.Errorf("%s: %w: %w (then: %v)", head, errBusy, lost, last)
}

// do runs run, a write's run, until it returns again false (it committed,
// or failed for another reason) or the deadline passes while it loses to
// other writes: then the error wraps errBusy. again reports a run that
// lost: nothing was saved, and it may run again on a fresh transaction.
// A run whose error wraps errContended ended with the deadline while it
// waited for other transactions. tu is the registry's turns, or nil; tool
// names the write for busy.
func (p *retry) do(ctx context.Context, tu *turns, tool string, run func() (again bool, err error)) error {
	defer func() {
		if p.alone {
			tu.leave()
		}
	}()
	var lost error // the latest run's that lost
	for {
		if err := tu.before(ctx, p); err != nil {
			if errors.Is(err, context.Canceled) {
				return err
			}
			return p.busy(tool, lost, fmt.Errorf("%w: %w", errContended, err))
		}
		p.begin()
		again, err := run()
		switch {
		case errors.Is(err, errContended):
			return p.busy(tool, lost, err)
		case !again:
			return err
		}
		lost = err
		if !p.pause(ctx) {
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
			return p.busy(tool, lost, lost)
		}
	}
}

// runWrites runs a write call's runs (see do).
func (r *Registry) runWrites(ctx context.Context, t *Tool, args []byte, pa *prepared, res *Result) (out []byte, committed bool, err error) {
	p := newRetry(ctx, r.retryFor)
	err = p.do(ctx, &r.turns, t.spec.Name, func() (again bool, err error) {
		if p.runs > 1 {
			retried(ctx, pa.traced, p.runs) // telemetry.go
		}
		out, committed, again, err = r.execWrite(ctx, t, args, pa, res, &p)
		if again {
			r.logger().Debug("llmtool: write lost to other writes and runs again", "tool", t.spec.Name, "run", p.runs, "err", err)
		}
		return again, err
	})
	pa.attempts, pa.retryWait = p.runs, p.wait()
	if err != nil {
		return nil, false, err
	}
	return out, committed, nil
}

// runAgain is the one decision whether a write's run that failed with err
// runs again. A BEGIN that failed is beginFailed's to judge. After it, a
// run that lost to other writes (a serialization failure, a deadlock,
// SQLite's lock held by another process, PostgreSQL's stale plan, or a
// statement the handler ran that lost, even if the handler ignored its
// error) runs again while the call's deadline allows. So does a commit that PostgreSQL's capture
// check refused because a tracked row changed that the statements did not
// name: the run again reads the capture, as the tool's calls will from
// now on (changesets.go). A refusal or a failure of the call never runs
// again. A deadline that passes once the call lost, or while it waited
// for other transactions, is contention (errContended).
//
// A statement the handler ran through a prepared *sql.Stmt runs where
// llmtool does not see it (database/sql's type, not llmtool's): if it
// lost and the handler swallowed its error, PostgreSQL's transaction is
// found ended (25P02) only by llmtool's own statements, and the call
// fails saying so, since what failed is not known.
func (r *Registry) runAgain(ctx context.Context, cs *callState, p *retry, err error) (again bool, _ error) {
	if cs.wtx == nil {
		return beginFailed(ctx, err) // no transaction began
	}
	if cs.refusal() != nil || cs.failure() != nil {
		return false, err
	}
	if engine.Aborted(err) && cs.returned && !cs.retry.lost.Load() {
		return false, fmt.Errorf("llmtool: tool %s: a statement of its run failed, which ended PostgreSQL's transaction, but its handler returned no error: return every statement's error (a statement that lost to another write then runs the call again): %w", cs.tool.spec.Name, err)
	}
	lost := engine.Retryable(err) || engine.StalePlan(err) || cs.retry.lost.Load()
	if engine.Untaken(err) && !cs.exact {
		r.tracked.exact.Store(cs.tool.spec.Name, true)
		lost = true
	}
	switch {
	case lost && ctx.Err() == nil:
		return true, err
	case lost:
		return false, p.ended(ctx.Err(), err)
	case r.contended(ctx, cs, p, err):
		return false, fmt.Errorf("%w: %w", errContended, err)
	}
	return false, err
}

// contended reports whether the call's deadline ended a run while it
// waited for other transactions, err being the run's error: in a run after
// one that lost (runs > 1), or, on PostgreSQL, with a statement the
// deadline cut while the server showed a session waiting for a lock
// (dbconn.LockWatch). (A deadline that ends the wait for the write lock
// or a connection is contention too; beginFailed knows that one.)
func (r *Registry) contended(ctx context.Context, cs *callState, p *retry, err error) bool {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return p.runs > 1 || cs.retry.cut.Load() && cs.retry.lockWait
}

// runRetry is what one run of a write call knows of the other writes it
// met (retry.go): which run it is, and what its statements met.
type runRetry struct {
	attempt  int           // the run: 1, more after retries
	wait     time.Duration // the time earlier runs and pauses took (retry.wait)
	lost     atomic.Bool   // a statement lost to another write (engine.Retryable): run again
	cut      atomic.Bool   // the call's deadline cut a statement
	lockWait bool          // PostgreSQL: a session waited for a lock near the deadline (dbconn.LockWatch)
}

// retryHooks plug retry into the write path (hooks.go): a statement of
// the handler that failed is classified as it fails.
var retryHooks = writeHooks{statement: []func(*callState, string, int64, error){
	func(cs *callState, query string, _ int64, err error) {
		if err != nil {
			cs.stmtFailed(query, err)
		}
	},
}}

// stmtFailed notes a write call's statement query that failed with err:
// one that lost to another write makes the run roll back and run again
// even if the handler ignores the error; one the call's deadline cut is
// noted for contended; one that ran the capture's check early
// (PostgreSQL's SET CONSTRAINTS, changesets.go) is the call's refusal.
func (cs *callState) stmtFailed(query string, err error) {
	switch {
	case engine.Retryable(err):
		cs.retry.lost.Store(true)
	case errors.Is(err, context.DeadlineExceeded):
		cs.retry.cut.Store(true)
	case engine.Untaken(err):
		_ = cs.refuseStatement(untakenRefusal(query))
	}
}

// ended is the error of a run that the end of the call's context (cerr)
// stopped before it began, or after it lost to other writes (lost, the
// run's error; nil if it did not run). A deadline that passes once the
// call lost is contention; a cancellation is the caller's.
func (p *retry) ended(cerr, lost error) error {
	switch {
	case errors.Is(cerr, context.DeadlineExceeded) && lost != nil:
		return fmt.Errorf("%w: %w", errContended, lost)
	case errors.Is(cerr, context.DeadlineExceeded) && p.runs > 1:
		return fmt.Errorf("%w: %w", errContended, cerr)
	case lost != nil:
		return fmt.Errorf("%w (its run had lost to other writes: %v)", cerr, lost)
	}
	return cerr
}

// beginFailed classifies the failure of a write's BEGIN (with the write
// token and the connection before it): SQLite refusing the write lock
// another process holds runs again (again), and a deadline that passed
// while the run waited is contention.
func beginFailed(ctx context.Context, err error) (again bool, _ error) {
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

// starveAfter is how many runs a write may lose before it runs alone on
// its registry.
const starveAfter = 3

// turns makes a registry's write that lost starveAfter runs run alone: it
// waits for the turn (one at a time, in the order they came), and while
// any such call waits or runs, the registry's other writes wait before
// each run. Runs already under way end as they would; the call's next
// run, after a short pause, meets no other write of this registry (other
// processes' writes still compete). Without a starving call, a run pays
// one atomic load.
type turns struct {
	want  atomic.Int32  // calls that lost starveAfter runs, waiting for the turn or holding it
	token chan struct{} // the turn: held by the call that runs alone
	mu    sync.Mutex    // orders changes of want with free
	free  chan struct{} // closed when want drops to 0; nil while it is 0
}

func newTurns() turns { return turns{token: make(chan struct{}, 1)} }

// before readies p's next run: it takes the turn for a call that lost
// starveAfter runs, or lets any call that waits for the turn or holds it
// go first. It returns ctx's error if ctx ends while it waits, and
// context.DeadlineExceeded once p's deadline passes (Options.RetryFor
// after the first run, for a call whose context has none): a waiting call
// keeps to its own deadline. A nil turns lets every run go.
func (tu *turns) before(ctx context.Context, p *retry) error {
	switch {
	case tu == nil, p.alone:
		return nil
	case p.runs >= starveAfter:
		ctx, cancel := context.WithDeadline(ctx, p.deadline)
		defer cancel()
		if err := tu.take(ctx); err != nil {
			return err
		}
		p.alone, p.base = true, p.runs
		return nil
	case tu.want.Load() == 0:
		return nil
	}
	tu.mu.Lock()
	free := tu.free
	tu.mu.Unlock()
	if free == nil {
		return nil
	}
	ctx, cancel := context.WithDeadline(ctx, p.deadline)
	defer cancel()
	select {
	case <-free:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// take waits for the turn.
func (tu *turns) take(ctx context.Context) error {
	tu.mu.Lock()
	if tu.want.Add(1) == 1 {
		tu.free = make(chan struct{})
	}
	tu.mu.Unlock()
	select {
	case tu.token <- struct{}{}:
		return nil
	case <-ctx.Done():
		tu.done()
		return ctx.Err()
	}
}

// leave gives the turn back.
func (tu *turns) leave() {
	<-tu.token
	tu.done()
}

func (tu *turns) done() {
	tu.mu.Lock()
	if tu.want.Add(-1) == 0 {
		close(tu.free)
		tu.free = nil
	}
	tu.mu.Unlock()
}
