// Package callinfo lets llmtool's own packages learn about the call a
// handler context belongs to, without API on the context for it:
// ReadCtx.Value answers Key with an Info.
package callinfo

// Key is the context key ReadCtx.Value answers with the call's Info.
type Key struct{}

// Info describes the call a handler context belongs to.
type Info struct {
	Tool  string // the tool's name
	Write bool   // a write tool's call: its transaction holds the writer
	// Late reports a use after the handler returned (logged and counted
	// by the registry) and returns the error to give; nil while the
	// handler runs.
	Late func(op string) error
}
