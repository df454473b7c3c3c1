package limit

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/llmtool/llmtool"
)

// Errors wrapped by the Result.Err of a call a limit stopped, so a host can
// tell the limits apart (the audit outcome of all three is "limited"):
//
//	if errors.Is(res.Err, limit.ErrRate) { ... }
//
// The model never sees their text; it sees the sentence of the
// *llmtool.Error that Result.Err also wraps.
var (
	// ErrRate is wrapped by the result of a call that Rate refused.
	ErrRate = errors.New("limit: rate limit reached")
	// ErrConcurrency is wrapped by the result of a call that Concurrent
	// refused.
	ErrConcurrency = errors.New("limit: too many calls running at once")
	// ErrTimeout is wrapped, with context.DeadlineExceeded, by the result
	// of a call that Timeout stopped.
	ErrTimeout = errors.New("limit: call ran past its timeout")
)

// A Key says which calls share a rate limit: calls with equal keys draw on
// one token bucket, and a call whose key is "" is not limited at all. The
// provided keys are ByPrincipal, ByTenant, ByTool and ByPrincipalTool; a
// host writes its own to limit some calls only:
//
//	writes := func(req *llmtool.Request) string {
//		if req.Spec.ReadOnly {
//			return "" // reads are not limited
//		}
//		return limit.ByPrincipal(req)
//	}
//
// A Key runs on every call, before the call's policy; it must be safe for
// concurrent use and must not keep req.
type Key func(req *llmtool.Request) string

// ByPrincipal limits each principal's calls of all tools together. Calls
// without a principal (or with an empty ID) share one bucket of their own,
// so an anonymous caller is limited too.
func ByPrincipal(req *llmtool.Request) string {
	if p := req.Principal; p != nil && p.ID != "" {
		return "principal:" + p.ID
	}
	return "anonymous"
}

// ByTenant limits the calls made in each tenant (workspace, chat)
// together, whoever makes them; the default tenant "" is a tenant like any
// other.
func ByTenant(req *llmtool.Request) string { return "tenant:" + req.Tenant }

// ByTool limits each tool's calls, by anyone, together.
func ByTool(req *llmtool.Request) string { return req.Spec.Name }

// ByPrincipalTool limits each principal's calls of each tool: a principal
// that used up its calls of one tool can still call the others.
func ByPrincipalTool(req *llmtool.Request) string {
	// A tool name never holds a NUL, so the key splits one way only.
	return req.Spec.Name + "\x00" + ByPrincipal(req)
}

// refusal is the error behind a limit's failed Result: the *llmtool.Error
// the model sees (its kind, KindLimited, gives the audit outcome
// "limited"), and the sentinel and cause a host matches with errors.Is.
type refusal struct {
	shown *llmtool.Error
	why   []error
}

func (r *refusal) Error() string   { return r.shown.Error() }
func (r *refusal) Unwrap() []error { return append([]error{r.shown}, r.why...) }

// waitText returns how long a model should wait, for a message: whole seconds
// rounded up (at least 1) below two minutes, whole minutes rounded up
// below two hours, whole hours rounded up beyond. A millisecond of slack
// keeps a delay of 3 s computed in floating point (3.000000001 s) from
// reading as 4 s.
func waitText(d time.Duration) string {
	const slack = time.Millisecond
	s := math.Ceil((d - slack).Seconds())
	switch {
	case s < 1:
		return "1 s"
	case s < 120:
		return strconv.Itoa(int(s)) + " s"
	case s < 2*3600:
		return strconv.Itoa(int(math.Ceil(s/60))) + " min"
	}
	return strconv.Itoa(int(math.Ceil(s/3600))) + " h"
}

// durationText renders a timeout for a message: "500 ms", "2 s", "1.5 s",
// "5 min".
func durationText(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + " ms"
	case d >= 2*time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " min"
	}
	return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + " s"
}

// perTool copies a map of per-tool settings, panicking on a negative one
// or a negative default; fn names the function and what the setting in
// the panic.
func perTool[V int | time.Duration](fn, what string, def V, m map[string]V) map[string]V {
	if def < 0 {
		panic(fmt.Sprintf("limit.%s: the default %s is negative (%v); use 0 for no limit", fn, what, def))
	}
	c := make(map[string]V, len(m))
	for name, v := range m {
		if v < 0 {
			panic(fmt.Sprintf("limit.%s: the %s of %s is negative (%v); use 0 for no limit", fn, what, name, v))
		}
		c[name] = v
	}
	return c
}
