package mcpadapter

import "time"

// The handler of a session's tools/call over HTTP (httpcall.go) runs on a
// goroutine of its own, not on the request's: at revision 2025-11-25 a tool
// may end the HTTP response with CloseStream while it runs on, and only the
// request's goroutine can end the response, by returning.
//
// A new goroutine starts with a small stack, which the call chain (mcp-go,
// Registry.Invoke, the SQLite driver) then grows two or three times, each
// time copying a deeper stack: about a tenth of a call's CPU. So handler
// goroutines serve one call after another, as net/http's connection
// goroutine serves one request after another for a handler that runs on
// it, and the stack the first call grew serves the next. A goroutine that
// got no call for between one and two handlerIdle periods ends, and so do
// the idle ones when the Server is closed.

// handlerIdle is how long an idle handler goroutine waits for a call,
// between one and two times over, before it ends.
const handlerIdle = 10 * time.Second

// handlerPool hands calls to idle handler goroutines, starting one when
// none is idle.
type handlerPool struct {
	calls  chan handled    // unbuffered: an idle goroutine receives here
	closed <-chan struct{} // closed by Server.Close
	idle   time.Duration   // handlerIdle
}

// handled is a call the pool runs: a *callRun.
type handled interface{ handle() }

func newHandlerPool(closed <-chan struct{}) *handlerPool {
	return &handlerPool{calls: make(chan handled), closed: closed, idle: handlerIdle}
}

// run runs c's handler on an idle goroutine, or on a new one.
func (p *handlerPool) run(c handled) {
	select {
	case p.calls <- c:
	default:
		go p.serve(c)
	}
}

// serve handles c, then the calls handed to it, until it was idle a whole
// handlerIdle period or the Server is closed.
func (p *handlerPool) serve(c handled) {
	idle := time.NewTimer(p.idle)
	defer idle.Stop()
	used := true // a call came since the timer last fired
	for {
		c.handle()
		c = nil // not kept while idle
		for c == nil {
			select {
			case c = <-p.calls:
				used = true
			case <-idle.C:
				if !used {
					return
				}
				used = false
				idle.Reset(p.idle)
			case <-p.closed:
				return
			}
		}
	}
}
