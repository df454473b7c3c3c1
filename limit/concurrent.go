package limit

import (
	"context"
	"sync"

	"github.com/llmtool/llmtool"
)

// Concurrent returns a middleware that lets at most perTool[name] calls
// of a tool named in perTool run at once, and def of every other tool;
// each tool counts its own calls, and 0 (as def or in perTool) means no
// cap. perTool may be nil, for one cap for every tool:
//
//	limit.Concurrent(4, nil)
//	limit.Concurrent(8, map[string]int{"export_notes": 1})
//
// A call beyond the cap is refused at once rather than queued: a queued
// call would hold the model's turn, and its caller's timeout, while it
// waits, and the model can do something else meanwhile. It never reaches
// the tool; the model reads
//
//	Too many calls of export_notes are running at once (limit 1). Try again in a moment.
//
// the audit records the outcome "limited", and Result.Err wraps
// ErrConcurrency. A call counts from the moment it passes this middleware
// until its Result is back, the wait for the write lock included. The
// counts live in memory, in one process. The map is copied; names that
// are no tool's are ignored. Concurrent panics on a negative cap.
func Concurrent(def int, perTool map[string]int) llmtool.Middleware {
	return concurrent("Concurrent", def, perTool)
}

func concurrent(fn string, def int, m map[string]int) llmtool.Middleware {
	m = perTool(fn, "cap", def, m)
	s := &slots{def: def, caps: m, sems: make(map[string]chan struct{})}
	return func(next llmtool.InvokeFunc) llmtool.InvokeFunc {
		return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
			name := req.Spec.Name
			sem, n := s.of(name)
			if sem == nil {
				return next(ctx, req)
			}
			select {
			case sem <- struct{}{}:
			default:
				return req.Fail(&refusal{
					shown: llmtool.Limited("Too many calls of %s are running at once (limit %d).", name, n).Next("Try again in a moment."),
					why:   []error{ErrConcurrency},
				})
			}
			defer func() { <-sem }()
			return next(ctx, req)
		}
	}
}

// slots holds a semaphore per capped tool, made on the tool's first call.
type slots struct {
	def  int
	caps map[string]int

	mu   sync.Mutex
	sems map[string]chan struct{} // per tool, of its cap; a running call holds one element
}

// of returns the semaphore of the tool and its cap, or nil if the tool is
// not capped.
func (s *slots) of(name string) (chan struct{}, int) {
	n, ok := s.caps[name]
	if !ok {
		n = s.def
	}
	if n == 0 {
		return nil, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sem := s.sems[name]
	if sem == nil {
		sem = make(chan struct{}, n)
		s.sems[name] = sem
	}
	return sem, n
}
