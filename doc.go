// Package llmtool defines LLM tools once and serves every definition to two
// consumers: an MCP server (package mcpadapter) and the host application's
// own chat (package chatadapter). Tools read and write the database the host
// already has, through database/sql, and llmtool owns the transaction
// around each call.
//
// # Tools
//
// A tool is declared once with [Read] or [Write]: a name, a one-line
// description, a handler over typed input and output, and options such as
// [Category] and [Guards]. The JSON Schemas for the model are inferred from
// the In and Out types and their struct tags (desc, default, enum, minimum,
// maximum, minLength, maxLength, pattern, format, ref):
//
//	type GetNoteIn struct {
//		NoteID string `json:"noteId" desc:"ID of the note to read."`
//	}
//
//	var getNote = llmtool.Read("get_note", "Read a note's title and content.",
//		func(c *llmtool.ReadCtx, in GetNoteIn) (NoteOut, error) { ... },
//		llmtool.Category("Notes"))
//
// Tools ship in modules ([DefineTools]), the unit a third party writes; a
// host registers a module with one line.
//
// # Read and write
//
// The handler's parameter type is the mark. A read tool's handler gets a
// [*ReadCtx]: it can Query and QueryRow in a read-only transaction that is
// a consistent snapshot and ends with ROLLBACK, and it has no Exec. A
// write tool's handler gets a [*WriteCtx]: it can Exec too, in a write
// transaction, serialized with the registry's other writes, that commits
// when the handler returns nil and rolls back when it returns an error,
// panics or is cancelled. There is no flag to forget.
//
// Statements that would change the transaction or the connection rather
// than data (COMMIT, SAVEPOINT, a PRAGMA that sets a value, ATTACH, ...)
// are refused before they reach the database, with [ErrStatementRefused].
// A handler's work is done when it returns: its context is cancelled then,
// and any later use of it fails with [database/sql.ErrTxDone].
//
// # The call path
//
// Both adapters call [Registry.Invoke], and nothing else runs a tool:
//
//	resolve lazy modules → find the tool → policy (enabled? allowed for the
//	scope and the principal?) → decode and validate the arguments, apply
//	defaults → begin the transaction → entity checks and guards, in order →
//	handler → commit or roll back → after-commit hooks → Result → audit
//
// So a call gets the same result, bytes and database state through MCP and
// through chat.
//
// # Guards
//
// Entity kinds ([Entity]) are declared once, by the module that owns them;
// a parameter tagged ref:"note" is checked, in a fixed order, for existence,
// system entities (write tools), protection, and whether the principal may
// act on it. Then the tool's own [Guards] run in the order declared, inside
// the transaction, before the handler.
//
// # Policy
//
// Policy decides which tools a call may run and a listing shows, in this
// order, before the arguments are even decoded:
//
//  1. the global kill switch, [Registry.SetEnabled];
//  2. the principal ([WithPrincipal]), when [Options].RequirePrincipal
//     says every call needs one;
//  3. the scope's settings (a tenant, workspace or chat, from
//     [WithScope]): read tools are on and write tools off until
//     [Registry.SetWrites]; [Registry.SetScopeTool] overrides that per
//     tool either way. The settings live in the host's database, and a
//     failed read of them never enables writes;
//  4. [Options.Authorize], if the host set it.
//
// A refused call is recorded with the audit outcome "refused" and answers
// the model with a sentence that says what to do instead; its error wraps
// [ErrToolDisabled] (1 and 3), [ErrNoPrincipal] (2) or [ErrNotAuthorized]
// (4) and has [KindDenied]. Listings show exactly what the caller may
// call, and [Registry.Subscribe] reports changes.
//
// # Errors
//
// Errors are results: nothing a tool does escapes as a panic or a
// protocol error. A handler returns [InvalidArgs] for malformed arguments
// (rendered with the "Error: " prefix, as schema failures are), or
// [NotFound], [Denied] or [Conflict] for outcomes, each with a corrective
// next action ([Error.Next]). Any other error is internal: the model sees
// a short generic sentence, and the registry's logger gets the detail.
//
// # Configuration
//
// [NewRegistry] takes the host's *sql.DB, an [*Options] (nil for the
// defaults) and the modules. Options are fixed when the registry is
// built; only switches that change at run time (SetEnabled, the scope
// settings) are methods.
package llmtool
