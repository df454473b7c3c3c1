package llmtool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/jsonenc"
)

// Kind classifies a tool error. It decides how the error is rendered for the
// model and how the call is recorded in the audit log.
type Kind uint8

const (
	// KindInternal is any error that is not an *Error: a bug, a database
	// failure, a panic. The model sees a short message without the detail,
	// which goes to the log: a generic one, or, for a database that is busy,
	// full, read-only or failing (told apart by SQLite's result code), one
	// that names the condition and the next step.
	KindInternal Kind = iota
	// KindInvalidArgs means the arguments were malformed. Only this kind is
	// rendered with the "Error: " prefix.
	KindInvalidArgs
	// KindNotFound means something the call refers to does not exist.
	KindNotFound
	// KindDenied means the caller may not do this (policy, protection,
	// authorization).
	KindDenied
	// KindConflict means the call is well-formed but clashes with the
	// current state (a duplicate, a stale edit, a cycle).
	KindConflict
	// KindCancelled means the caller's context was cancelled or timed out
	// before the call finished.
	KindCancelled
	// KindLimited means a limit the host set stopped the call: too many
	// calls (a rate limit or a concurrency cap) or one that ran too long
	// (a timeout). Nothing was saved; the message says when to try again.
	KindLimited
)

var kindNames = [...]string{
	KindInternal:    "internal",
	KindInvalidArgs: "invalid_args",
	KindNotFound:    "not_found",
	KindDenied:      "denied",
	KindConflict:    "conflict",
	KindCancelled:   "cancelled",
	KindLimited:     "limited",
}

// String returns the kind's audit name, such as "not_found".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Error is an error a tool reports to the model. Create one with
// InvalidArgs, NotFound, Denied or Conflict and add the corrective next
// action with Next:
//
//	return out, llmtool.NotFound("Note %q not found.", id).Next("Call search_notes to find the ID.")
//
// Its Error method returns exactly the text the model sees.
type Error struct {
	// Kind classifies the error.
	Kind Kind
	// Message says what went wrong, as a sentence.
	Message string
	// NextAction tells the model what to do instead, as a sentence.
	NextAction string

	err error // wrapped cause, if the message was built with %w
}

// newError formats a message like fmt.Errorf, keeping any %w cause.
func newError(k Kind, format string, args []any) *Error {
	e := fmt.Errorf(format, args...)
	cause := errors.Unwrap(e)
	if w, ok := e.(interface{ Unwrap() []error }); ok {
		cause = errors.Join(w.Unwrap()...)
	}
	return &Error{Kind: k, Message: e.Error(), err: cause}
}

// InvalidArgs reports malformed arguments. It is rendered with the
// "Error: " prefix, which is reserved for this kind. Arguments are formatted
// as by fmt.Errorf, so %w wraps a cause.
func InvalidArgs(format string, args ...any) *Error { return newError(KindInvalidArgs, format, args) }

// NotFound reports that something the call names does not exist.
func NotFound(format string, args ...any) *Error { return newError(KindNotFound, format, args) }

// Denied reports that the caller may not do what it asked.
func Denied(format string, args ...any) *Error { return newError(KindDenied, format, args) }

// Conflict reports that the call clashes with the current state.
func Conflict(format string, args ...any) *Error { return newError(KindConflict, format, args) }

// Limited reports that a limit stopped the call, such as a rate limit; say
// when to try again: Limited("Too many calls; try again in %d s.", n).
func Limited(format string, args ...any) *Error { return newError(KindLimited, format, args) }

// Next returns a copy of e that tells the model what to do next, such as
// "Call search_notes to find the ID.". The action is appended to the
// message when rendered.
func (e *Error) Next(action string) *Error {
	c := *e
	c.NextAction = action
	return &c
}

// Error returns the text the model sees: the message, then the next action;
// invalid-argument errors start with "Error: ".
func (e *Error) Error() string {
	var b strings.Builder
	if e.Kind == KindInvalidArgs {
		b.WriteString("Error: ")
	}
	b.WriteString(e.Message)
	if e.NextAction != "" {
		if !endsSentence(e.Message) {
			b.WriteByte('.')
		}
		b.WriteByte(' ')
		b.WriteString(e.NextAction)
	}
	return b.String()
}

// Unwrap returns the cause wrapped with %w, if any.
func (e *Error) Unwrap() error { return e.err }

func endsSentence(s string) bool {
	s = strings.TrimRight(s, " ")
	if s == "" {
		return true
	}
	switch s[len(s)-1] {
	case '.', '!', '?', ':':
		return true
	}
	return false
}

// KindOf returns the kind of err: the kind of the first *Error in its chain,
// KindCancelled for context errors, and KindInternal otherwise.
func KindOf(err error) Kind {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Kind
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return KindCancelled
	}
	return KindInternal
}

// ErrUnknownTool is wrapped by the result of a call to a tool the registry
// does not know, and of a read of a resource or a rendering of a prompt it
// does not know. MCP servers answer such a call with a protocol error.
var ErrUnknownTool = errors.New("llmtool: unknown tool")

// ErrToolDisabled is wrapped by the result of a call to a tool that is
// switched off, globally or for the caller's tenant.
var ErrToolDisabled = errors.New("llmtool: tool disabled")

// panicError is the error behind a result whose handler panicked. The model
// sees the generic internal message; the log gets Value and Stack.
type panicError struct {
	Tool  string
	Value any
	Stack []byte
}

// Error describes the panic.
func (p *panicError) Error() string {
	return fmt.Sprintf("llmtool: tool %s panicked: %v", p.Tool, p.Value)
}

// render returns the text the model sees for err raised by tool.
func render(tool string, err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Error()
	}
	switch KindOf(err) {
	case KindCancelled:
		if errors.Is(err, context.DeadlineExceeded) {
			return "The call to " + tool + " timed out before it finished; nothing was saved. Call it again, with less work if possible."
		}
		return "The call to " + tool + " was cancelled before it finished; nothing was saved. Call it again if it is still needed."
	}
	// A database in trouble is not the tool's fault, and the model's next
	// step differs by condition. The sentences hold for read and write tools
	// alike (render does not know which ran): a failed write rolled back, a
	// read changes nothing. Only busy, full and read-only say "changed
	// nothing": a disk error can strike while a commit is made durable. The
	// kind stays KindInternal, so the registry still logs the detail.
	switch dbConditionOf(err) {
	case dbBusy:
		return "The database is busy, so " + tool + " could not finish and changed nothing. Try again in a few seconds; if it is still busy, tell the user."
	case dbFull:
		return "The database is full, so " + tool + " could not finish and changed nothing. Tell the user the database or its disk is full."
	case dbReadOnly:
		return "The database is read-only, so " + tool + " could not finish and changed nothing. Tell the user the database cannot be written."
	case dbIOErr:
		return "The database's disk reported an error, so " + tool + " could not finish. Tell the user the disk or the database file needs checking."
	case dbCorrupt:
		return "The database file is damaged, so " + tool + " could not finish. Tell the user the database file needs repair."
	case dbUnavailable:
		return "The database cannot be reached right now, so " + tool + " could not finish. Try again in a few seconds; if it keeps failing, tell the user the database is down."
	}
	return "Internal error in " + tool + "; the details were logged. Try again once; if it fails again, tell the user the tool is failing."
}

// dbCondition is a state of the database that render names for the model.
type dbCondition uint8

const (
	dbNone        dbCondition = iota
	dbBusy                    // a write that ran out of time to other writes (retry.go), or SQLite's lock another connection holds (engine.Locked)
	dbFull                    // SQLITE_FULL: disk or max_page_count reached
	dbReadOnly                // SQLITE_READONLY: the file cannot be written
	dbIOErr                   // SQLITE_IOERR: the OS reported an I/O error
	dbCorrupt                 // SQLITE_CORRUPT, SQLITE_NOTADB: a damaged file
	dbUnavailable             // PostgreSQL down, restarting, refusing connections
)

// SQLite primary result codes: the low byte of an extended result code
// such as SQLITE_BUSY_SNAPSHOT (517).
const (
	sqliteReadOnly = 8
	sqliteIOErr    = 10
	sqliteCorrupt  = 11
	sqliteFull     = 13
	sqliteNotADB   = 26
)

// readToolWrite is the text txn.go wraps around a read tool's refused
// write. That SQLITE_READONLY comes from the read transaction, not the
// file: it is a bug in the tool and stays a generic internal error.
const readToolWrite = "is a read tool, so the database refuses its writes"

// dbConditionOf classifies err by the SQLite result code of the first error
// in its chain with a Code() int method (modernc.org/sqlite's *sqlite.Error
// has one; the core does not import the driver, and NewRegistry refuses
// other SQLite drivers), never by a message: a handler's error, or a
// not-found message quoting the model's argument, may say "disk I/O
// error".
func dbConditionOf(err error) dbCondition {
	if c := pgConditionOf(err); c != dbNone {
		return c
	}
	if errors.Is(err, errBusy) || engine.Locked(err) {
		return dbBusy
	}
	var c dbCondition
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff {
		case sqliteFull:
			c = dbFull
		case sqliteReadOnly:
			c = dbReadOnly
		case sqliteIOErr:
			c = dbIOErr
		case sqliteCorrupt, sqliteNotADB:
			c = dbCorrupt
		}
	}
	if c == dbReadOnly && strings.Contains(err.Error(), readToolWrite) {
		return dbNone
	}
	return c
}

// pgConditionOf classifies a PostgreSQL error by its SQLSTATE, and a
// connection the server refused or dropped as unavailable.
func pgConditionOf(err error) dbCondition {
	switch {
	case engine.Unavailable(err):
		return dbUnavailable
	case engine.Busy(err):
		return dbBusy
	case engine.DiskFull(err):
		return dbFull
	case engine.ReadOnlyViolation(err) && !strings.Contains(err.Error(), readToolWrite):
		return dbReadOnly // a write on a standby server
	}
	return dbNone
}

// errorJSON renders {"error": msg}.
func errorJSON(msg string) []byte {
	b := make([]byte, 0, len(msg)+16)
	b = append(b, `{"error":`...)
	b = jsonenc.AppendString(b, msg)
	return append(b, '}')
}
