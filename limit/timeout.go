package limit

import (
	"context"
	"time"

	"github.com/llmtool/llmtool"
)

// Timeout returns a middleware that gives each call of a tool named in
// perTool that long to finish, and every other call def: the call's
// context gets a deadline that long from the start of the call. 0 (as def
// or in perTool) means no timeout; perTool may be nil, for one timeout for
// every call:
//
//	limit.Timeout(10*time.Second, nil)
//	limit.Timeout(5*time.Second, map[string]time.Duration{
//		"import_notes": time.Minute,
//		"search_notes": 2 * time.Second,
//	})
//
// The deadline bounds all of the call: the wait for the write lock, the
// transaction, the guards, the handler and the commit. The handler sees it
// as its context's deadline (ReadCtx.Deadline) and as Done closing; its
// queries are interrupted (the driver watches each statement's context),
// so a handler that passes its context on returns at once, and a write
// tool's transaction rolls back, as for any cancelled call. Go cannot stop
// a handler that ignores its context: its call ends when it returns. A
// write handler so stuck holds the write path (on SQLite, every tenant's
// writes wait for it) at most llmtool.Options.WriteGrace (1 s by default)
// past the deadline: the registry then rolls its transaction back, closes
// its connection and lets the next write go on, and the handler's later
// statements fail with sql.ErrTxDone. The model then reads, for a write
// tool,
//
//	create_note took longer than 2 s and was stopped; nothing was saved. Call it again with less work, or tell the user.
//
// and, for a read tool (resources and prompts too), the same without
// "nothing was saved". The audit records the outcome "limited", and
// Result.Err wraps ErrTimeout and context.DeadlineExceeded.
//
// Only this middleware's own deadline is reported so: a call its caller
// cancelled, or that ran into the caller's own earlier deadline, fails as
// any cancelled call does ("The call to create_note was cancelled ..."),
// and a tool that answers the deadline with its own *llmtool.Error (a
// Conflict, say) keeps its message. The map is copied; names that are no
// tool's are ignored. Timeout panics on a negative duration.
func Timeout(def time.Duration, perTool map[string]time.Duration) llmtool.Middleware {
	return timeouts("Timeout", def, perTool)
}

func timeouts(fn string, def time.Duration, m map[string]time.Duration) llmtool.Middleware {
	m = perTool(fn, "timeout", def, m)
	return func(next llmtool.InvokeFunc) llmtool.InvokeFunc {
		return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
			d, ok := m[req.Spec.Name]
			if !ok {
				d = def
			}
			if d == 0 {
				return next(ctx, req)
			}
			tctx, cancel := context.WithTimeoutCause(ctx, d, ErrTimeout)
			defer cancel()
			res := next(tctx, req)
			// Ours only: the caller's context is live, the deadline that
			// ended tctx is this one (not an earlier one of the caller's),
			// and the call failed as cancelled, not with a tool's error.
			if !res.IsError || ctx.Err() != nil || context.Cause(tctx) != ErrTimeout ||
				llmtool.KindOf(res.Err) != llmtool.KindCancelled {
				return res
			}
			var shown *llmtool.Error
			if req.Spec.ReadOnly {
				shown = llmtool.Limited("%s took longer than %s and was stopped.", req.Spec.Name, durationText(d))
			} else {
				shown = llmtool.Limited("%s took longer than %s and was stopped; nothing was saved.", req.Spec.Name, durationText(d))
			}
			return req.Fail(&refusal{
				shown: shown.Next("Call it again with less work, or tell the user."),
				why:   []error{ErrTimeout, context.DeadlineExceeded},
			})
		}
	}
}
