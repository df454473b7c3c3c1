package llmtool

import (
	"context"
	"encoding/json"
	"time"
)

// A Request is a call on its way through the registry's middleware
// (Options.Middleware) to its tool, resource or prompt: the call as the
// adapter sent it, the spec of what it calls, and who calls it where.
//
// Principal and Tenant are those of the call's context, for reading; a
// middleware that changes them passes next a context made with
// WithPrincipal or WithTenant.
type Request struct {
	// Call is the call as the adapter sent it.
	Call Call
	// Spec is the spec of the tool, resource or prompt the call found.
	Spec *Spec
	// Principal is who the call runs as, or nil.
	Principal *Principal
	// Tenant is the tenant the call runs in ("" for the default tenant).
	Tenant string

	reg   *Registry
	entry *entry
	args  json.RawMessage // a resource's template variables, as arguments
	// What the call path learned, for the audit record.
	refused   bool
	committed bool
	attempts  int
	retryWait time.Duration
	preview   *previewState
}

// InvokeFunc runs a call that found its tool: the registry's own call path
// (policy, arguments, transaction, guards, handler, commit), or a
// middleware around it. It returns a Result whatever happens, as Invoke
// does.
type InvokeFunc func(ctx context.Context, req *Request) Result

// Middleware wraps the call path, as net/http middleware wraps a Handler:
// it gets the next InvokeFunc and returns one that runs before and after
// it, or instead of it. A middleware can refuse a call (return req.Fail
// with a sentence that says what to do next, without calling next), bound
// it (call next with a context that has a deadline), or observe it (look
// at the Result next returns). Both adapters' calls pass through it, and so
// do the registry's own tools (man), resources and prompts.
//
// Middleware runs after the registry found what the call names (a call of
// an unknown tool fails before it) and before the registry's policy, the
// arguments' validation and the transaction, none of which it can skip.
// A middleware must not keep req after it returns.
type Middleware func(next InvokeFunc) InvokeFunc

// Fail returns the failed Result of req for err, as the model sees it: an
// *Error gives its message and next action (Limited, Denied, ...); any
// other error is rendered as the registry renders a tool's (a context
// deadline says the call timed out and nothing was saved). A Denied error
// is recorded as a refusal in the audit record.
func (req *Request) Fail(err error) Result {
	if err == nil {
		panic("llmtool: Request.Fail called with a nil error")
	}
	if KindOf(err) == KindDenied {
		req.refused = true
	}
	return req.reg.failure(req.Spec.Name, err)
}

// chain returns the call path wrapped in mw, the first outermost.
func (r *Registry) chain(mw []Middleware) InvokeFunc {
	h := r.call
	for i := len(mw) - 1; i >= 0; i-- {
		if mw[i] != nil {
			h = mw[i](h)
		}
	}
	return h
}
