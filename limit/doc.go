// Package limit provides the limits a host puts on tool calls, as
// llmtool middleware: rate limits ([Rate]), timeouts ([Timeout]) and caps
// on calls running at once ([Concurrent]).
//
// A host lists them in llmtool.Options.Middleware, the first outermost,
// and every call passes through them, from the MCP server and the chat
// alike:
//
//	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
//		Middleware: []llmtool.Middleware{
//			limit.Rate(30, time.Minute, limit.ByPrincipal),
//			limit.Concurrent(4, nil),
//			limit.Timeout(10 * time.Second, nil),
//		},
//	}, notes.Tools)
//
// # Rate limits
//
// [Rate] allows n calls per period for each [Key] and refuses the rest:
// [ByPrincipal] gives each user a budget for all tools, [ByTool] each tool
// one for everyone, [ByPrincipalTool] each user one per tool, [ByTenant]
// each tenant or chat one. A Key of the host's own picks the calls to
// limit; a call whose key is "" is not limited, so
//
//	limit.Rate(10, time.Hour, func(req *llmtool.Request) string {
//		if req.Spec.Name != "send_email" {
//			return ""
//		}
//		return limit.ByPrincipal(req)
//	})
//
// lets each user send ten emails an hour and leaves the other tools
// alone. Several Rate middlewares stack: a burst limit per user and a
// daily one per tenant are two entries.
//
// # Timeouts
//
// [Timeout] gives every call a deadline, a default and, if wanted, one
// per tool. The deadline is the call's context's: the handler sees it, its
// queries are interrupted, and a write tool's transaction rolls back when
// the handler returns. A write handler that ignores its context keeps the
// write path at most llmtool.Options.WriteGrace longer: the registry then
// rolls the write back and lets other writes go on, and the call ends
// when the handler returns at last.
//
// # Concurrency caps
//
// [Concurrent] lets at most n calls of each tool run at once, a default
// and, if wanted, a cap per tool: one export at a time, say, while
// searches run eight at once.
//
// # What the model sees
//
// Rate and the caps never wait: a call over their limit is refused at once
// and never reaches the tool, so a model is never left hanging, and a
// refusal costs the host nothing. A timeout ends a call that ran too
// long, as soon as its handler returns. Either way the model reads a sentence that says what happened and
// what to do, as for any failed call:
//
//	Too many calls; create_note was not run. Try again in 3 s.
//	Too many calls of export_notes are running at once (limit 1). Try again in a moment.
//	create_note took longer than 2 s and was stopped; nothing was saved. Call it again with less work, or tell the user.
//
// Each is an *llmtool.Error of kind llmtool.KindLimited, so the audit
// records the call's outcome as "limited", and the Result's Err wraps
// [ErrRate], [ErrConcurrency] or [ErrTimeout] for the host to tell them
// apart.
//
// # Order
//
// Middleware runs in list order, each around the next. Put Rate first, so
// that a call it refuses never takes one of Concurrent's slots, and
// Timeout last, so that its deadline measures the call itself. Every
// limit runs before the registry's policy, so calls the policy would
// refuse count too. The limits keep their state in memory, per middleware
// and per process: a host that runs several processes behind a balancer
// limits each process.
package limit
