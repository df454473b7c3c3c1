// Package llmtool defines LLM tools once and serves every definition to two
// consumers: an MCP server (package mcpadapter) and the host application's
// own chat (package chatadapter). Tools use the host's database through
// database/sql, and llmtool owns the transaction around each call.
//
// # Tools
//
// A tool is declared once with [Read] or [Write]: a name, a one-line
// description, a handler over typed input and output, and options such as
// [Category] and [Guards]. The JSON Schemas the model sees are inferred from
// the In and Out types and their tags (desc, default, enum, minimum, ...):
//
//	var getNote = llmtool.Read("get_note", "Read a note's title and content.",
//		func(c *llmtool.ReadCtx, in GetNoteIn) (NoteOut, error) { ... })
//
// In a result, a nil slice or map is encoded as [] or {}, as the output
// schema declares; a pointer to one (*[]T) is the list that can be null.
//
// Tools ship in modules ([DefineTools]), the unit a third party writes.
//
// # Resources and prompts
//
// A module ships resources and prompts beside its tools, defined the same
// way. A [Resource] is data a client reads by URI, fixed ("notes://recent")
// or a template over In's fields ("note://{noteId}"); a [Prompt] is a
// message template a person picks, rendered from typed arguments into
// [Message] values. Both run through [Registry.Invoke] ([Call].Resource,
// [Call].Prompt) as read tools do: in a snapshot, with the entity checks and
// the policy, so a protected note is refused as a resource exactly as by
// get_note. [Registry.Complete] completes their arguments from enums and
// from [Entity].Complete; a write tool that declares [Changes] reports the
// resources it changed to [Registry.OnResourceChange].
//
// # Read and write
//
// The handler's parameter type is the mark. A [*ReadCtx] can Query in a
// read-only snapshot that ends with ROLLBACK; it has no Exec. A [*WriteCtx]
// can Exec too, in a write transaction that commits when the handler
// returns nil and rolls back when it returns an error, panics or is
// cancelled. On PostgreSQL, reads are REPEATABLE READ and writes
// SERIALIZABLE, retried when they lose a race, so effects outside the
// database belong in [WriteCtx.AfterCommit]. Statements that would change the transaction or the
// connection rather than data (COMMIT, SET, ATTACH, ...) are refused with
// [ErrStatementRefused]. A handler's work is done when it returns: any
// later use of its context fails with [database/sql.ErrTxDone].
//
// # The call path
//
// Both adapters call [Registry.Invoke], and nothing else runs a tool:
//
//	find the tool → policy → decode and validate the arguments → begin the
//	transaction → entity checks and guards, in order → handler → commit or
//	roll back → after-commit hooks → Result → audit
//
// So a call gets the same result, bytes and database state over MCP and in
// chat.
//
// # Guards and policy
//
// Parameters tagged ref:"note" are checked against the module's [Entity]
// (exists, system, protected, may the principal read or change it); then
// the tool's [Guards] run in order, inside the transaction. Before any of
// that, policy admits the call, in this order: the kill switch
// ([Registry.SetEnabled]); a principal ([WithPrincipal]) if
// [Options].RequirePrincipal; the tenant's settings ([WithTenant], kept by
// [Registry.Tenants]: write tools are off until SetWrites turns them on,
// SetTool overrides per tool); [Options].Authorize. Listings show exactly
// what the caller may call; the settings' Subscribe reports changes.
//
// # Approval and dry runs
//
// A write tool marked [NeedsApproval] (or required to by a tenant,
// Tenants().SetApproval) does not commit on its first call: it runs, the
// registry records an approval.Preview of the change (its result, rows per
// table, the tool's [WriteCtx.Describe] line), rolls back, and the Result
// carries an approval.Request (package approval has the data). No transaction or lock is held while a person
// decides. The same call with [Call].Approval runs again and commits only
// if its preview is the one approved; tokens are signed, single-use,
// expiring and bound to the principal, tenant, tool and arguments.
// [Call].DryRun previews any write tool and always rolls back.
//
// # Errors
//
// Errors are results: nothing a tool does escapes as a panic or a protocol
// error. A handler returns [InvalidArgs], [NotFound], [Denied] or
// [Conflict], each with a corrective next action ([Error.Next]); any other
// error is internal, and the model gets a short sentence while the log
// gets the detail. Refusals wrap [ErrToolDisabled], [ErrNoPrincipal] or
// [ErrNotAuthorized].
//
// # Configuration
//
// [NewRegistry] takes the host's *sql.DB, an [*Options] (nil for the
// defaults) and the modules. Only switches that change at run time are
// methods.
package llmtool
