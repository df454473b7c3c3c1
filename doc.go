// Package llmtool defines LLM tools once and serves every definition to two
// consumers: an MCP server (package mcpadapter) and the host application's
// own chat (package chatadapter). Tools use the host's SQLite or PostgreSQL
// database through database/sql, and llmtool owns the transaction around
// each call.
//
// This page is the manual. It teaches the model of the library in the
// order a host meets it; the feature packages document their own parts, and
// docs/DESIGN.md in the repository records why things are as they are.
//
// # Tools
//
// A tool is declared once with [Read] or [Write]: a name, a one-line
// description, a handler over typed input and output, and options such as
// [Category], [Summary], [FriendlyName], [ManPage] and [Guards]:
//
//	type GetBookIn struct {
//		ID       int `json:"id" desc:"ID of the book." minimum:"1"`
//		MaxChars int `json:"maxChars,omitempty" desc:"Cut the title to this many characters (default 40)." default:"40" minimum:"1"`
//	}
//
//	var getBook = llmtool.Read("get_book", "Read a book's title.",
//		func(c *llmtool.ReadCtx, in GetBookIn) (BookOut, error) { ... },
//		llmtool.Category("Books"), llmtool.Summary("Read one book"), llmtool.FriendlyName("Read book"))
//
// The JSON Schemas (draft 2020-12) the model sees are inferred from the In
// and Out types, one tag per keyword, so commas and regular-expression
// quantifiers need no escaping: desc, default, enum:"a|b|c", minimum,
// maximum, minLength, maxLength, pattern, format, and ref:"note" for entity
// guards. A field without omitempty (and without a default) is required;
// objects are closed. Omitted arguments arrive with their default. A struct{}
// In is a tool without arguments; [InputSchema] supplies a schema of the
// host's own. In a result, a nil slice or map is encoded as [] or {} at any
// depth, as the output schema declares; a pointer to one (*[]T) is the list
// that can be null. Tag mistakes (minimum on a string, minLength above
// maxLength) and Out types holding channels, funcs or iterators panic where
// the tool is defined, so any test that imports the module fails.
//
// Tools ship in modules ([DefineTools]), the unit a third party writes:
// registering one is one argument of [NewRegistry], or [Registry.Add] later.
// [Registry.AddLoader] registers a heavy module lazily: its loader runs once,
// on first use, shared by concurrent first callers. Names are checked at
// registration: valid for MCP, OpenAI, Anthropic and Gemini, and unique.
//
// Descriptions stay short because every request carries them. The
// built-in read tool man lists the catalog by category, one line per tool,
// and shows a tool's NAME, SYNOPSIS and OPTIONS (from its schema) and its
// [ManPage] on demand (see [Options].ManPages). Package lint checks the
// conventions that keep a catalog cheap (short descriptions, defaults stated
// in the parameter's description, friendly names, man pages with EXAMPLES),
// and package cost counts what the catalog costs in tokens.
//
// # Reads and writes
//
// The handler's parameter type is the mark; there is no mutates flag to
// forget. A [*ReadCtx] can Query, in a transaction the database itself keeps
// read-only (one snapshot for the whole handler, ending with ROLLBACK); it
// has no Exec, and a read handler cannot be passed to [Write]. A read runs
// its guards and handler exactly once. With SQLite its queries run on
// statements the registry keeps prepared, keyed by query text, so pass
// values as ? arguments rather than formatting them into the SQL.
//
// A [*WriteCtx] can Exec too, in a write transaction that commits when the
// handler returns nil and rolls back when it returns an error, panics or is
// cancelled. With QueryContext, QueryRowContext, ExecContext and
// PrepareContext a *WriteCtx is what generated data layers (sqlc's DBTX)
// ask for, so pass c itself; there is no *sql.Tx to take. A write may run
// more than once (see Writes under contention), so effects outside the
// database (e-mails, HTTP calls, cache invalidation) belong in
// [WriteCtx.AfterCommit], which runs once, after the commit.
// [WriteCtx.Describe] writes the line an approval shows.
//
// Both are a [context.Context] of their own, cancelled when the handler
// returns, with [ReadCtx.Progress] and [ReadCtx.Log] for the client, and
// [ReadCtx.Engine] for the rare statement that must differ between engines.
// A handler's work is done when it returns: rows it left open are closed
// (a read logs a warning), and any later use of its context, or of rows
// and statements from it, fails with [database/sql.ErrTxDone] and is logged
// with the tool's name. A write handler that ignores its context past its
// deadline is abandoned [Options].WriteGrace (1 s) later: its transaction
// rolls back, its connection is closed, other writes go on, and the call's
// result says nothing was saved. The llmtoolvet analyzer reports goroutines,
// AfterCommit hooks and closures that carry a handler's context away.
//
// # The call path
//
// Both adapters call [Registry.Invoke], and nothing else runs a tool:
//
//	find the tool → middleware → policy → decode and validate the arguments
//	→ begin the transaction → entity checks and guards, in order → handler
//	→ encode the result, cut to its budget → commit or roll back
//	→ after-commit hooks → Result → audit
//
// A write's run reads begin → handler → before commit → commit → after
// commit, and llmtool's features (retry, the role, the capture, the row
// checks, the preview, the history, the audit) plug in at those points,
// each registered once; every statement of a handler, through Exec,
// Query, QueryRow or PrepareContext, takes the same path through them.
//
// So a call gets the same result bytes and database state over MCP and in
// chat. Every call carries a principal ([WithPrincipal], the authenticated
// user), a tenant ([WithTenant], the workspace or chat whose settings decide
// which tools run), a tool and its arguments:
//
//	ctx = llmtool.WithTenant(llmtool.WithPrincipal(ctx, user), "team-42")
//	res := reg.Invoke(ctx, llmtool.Call{Tool: "get_book", Args: []byte(`{"id": 1}`)})
//
// [Registry.List] lists what the caller may call; [Registry.Tool] finds one
// tool's [Spec]. The audit record of each call (tool, principal, tenant,
// outcome, duration, runs; never the arguments) goes to [Options].Audit,
// the log by default (package audit has the sinks, and a table of committed
// writes written in the write's own transaction).
//
// # Errors
//
// Errors are results: an error, a panic, bad arguments or a cancelled
// context rolls the transaction back and becomes a message that says what to
// do next; nothing escapes as a crash or a protocol error. A handler returns
// [InvalidArgs], [NotFound], [Denied], [Conflict] or [Limited], each with a
// corrective next action ([Error.Next]); only malformed arguments get the
// "Error: " prefix. Any other error is internal: the model gets a short
// sentence and the log gets the detail. A database that is busy past the
// timeout, full, read-only, failing or unreachable gets a sentence of its own
// with the next step ("The database is busy, so <tool> could not finish and
// changed nothing. Try again in a few seconds; ..."). Refusals wrap
// [ErrUnknownTool], [ErrToolDisabled], [ErrNoPrincipal], [ErrNotAuthorized]
// or [ErrInsufficientScope]; [KindOf] tells the kinds apart. Chat sends
// {"error": "..."}, MCP isError with the same text; a success never has an
// "error" property.
//
// Arguments are decoded with exact keys ({"MODE": ...} is an unknown
// parameter, named with the ones to send), missing or empty arguments mean
// {}, and an object sent as a JSON string is accepted. Bounds are compared
// as decimals, formats get jsonschema/v6's verdict, and numbers in messages
// are written as sent.
//
// # Guards and entities
//
// A module declares each kind of entity its tools reference once, as an
// [Entity] ([Module.WithEntities]). Every parameter tagged ref:"note" is then
// checked in a fixed order, inside the transaction, before the handler runs:
// exists, system (write tools never change a system entity, unless the tag
// says system-ok), protected (neither read nor changed, whatever the tool),
// and whether the principal may read or change it ([Entity].MayRead,
// MayChange). Then the tool's [Guards] run in the order given. No tool can
// forget a check: it comes from the parameter's type. Package guard has
// ready-made guards (RequireRole, DenyValues).
//
// The checks can follow the data too. An entity that names its tracked table
// and ID column ([Entity].Table and Key, with [Options].Changesets) has
// them run before commit on every row of that table a write updated or
// deleted, whatever tool or statement changed it: a tool that forgot its
// ref tag, undo_changes, a cascade, a trigger. They see the data as it was
// before the call, and refuse in the ref checks' words; nothing is saved.
//
// # Policy and tenants
//
// Before the arguments are decoded, policy admits the call, in this order:
// the kill switch of the tool ([Registry.SetEnabled]); a principal, if
// [Options].RequirePrincipal; the tenant's settings, kept by
// [Registry.Tenants] in the host's database (write tools are off in every
// tenant until SetWrites turns them on; SetTool and ResetTool override one
// tool; SetApproval requires approval); the OAuth scopes the tool declares
// ([Scopes]) against those of the principal's token ([Principal].Scopes,
// nil for principals not limited by scopes); and [Options].Authorize.
// Listings show exactly what the caller may call, and the settings'
// Subscribe reports changes, which mcpadapter turns into
// notifications/tools/list_changed. A refused call says what to do, such as
// asking the user to enable write tools ([Options].WritesOffAction).
//
// Settings live in the database, so a change made through one replica is
// seen by every replica within [Options].TenantCacheTTL (2 s).
//
// # Approval
//
// A write tool marked [NeedsApproval] (or required to by a tenant,
// Tenants().SetApproval; tool "" means every [Destructive] tool) does not
// commit on its first call: it runs, the registry records an
// [approval.Preview] of the change (its result, the rows changed per table,
// the tool's [WriteCtx.Describe] line, and with changesets every row), rolls
// back, and returns a failed [Result] whose Approval, an [approval.Request],
// holds the preview and a token. No transaction or lock is held while a
// person decides. The same call with [Call].Approval, an [approval.Answer],
// runs again and commits only if its change is still the one approved;
// otherwise it asks again with the new preview, and a denial saves nothing.
// Tokens are signed, expire ([Options].ApprovalTTL), are single-use and bound
// to the principal, tenant, tool and arguments; replicas that serve one
// another's approvals need the same [Options].ApprovalKey. [Call].DryRun
// previews any write tool and always rolls back.
//
// The adapters do the asking: mcpadapter shows the preview to the client's
// user as an elicitation, and the chat adapter pauses the turn until the host
// resumes it with the person's answer. The model cannot approve anything.
//
// # Changesets and undo
//
// [Options].Changesets names the host's tables to track
// ([changeset.Config]); every write call then knows the rows it changed,
// before and after:
//
//	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Changesets: changeset.Config{
//		Tables:    []string{"notes", "branches"},
//		Generated: map[string][]string{"notes": {"updated_at"}}, // set afresh on each run
//		Tools:     true,                                         // undo_changes, list_changes
//	}}, notes.Tools)
//
// Capture: on SQLite through the engine's pre-update hook, so rows the
// host's triggers and foreign-key cascades change are in it too; on
// PostgreSQL through row triggers the registry installs on each tracked table
// (there, a handler's SET CONSTRAINTS ALL IMMEDIATE after changing a tracked
// table is refused: name the constraints instead). [Result].Changeset lists
// each row: table, key, insert, update or delete, and the columns' values
// before and after, as JSON exactly as stored.
//
// Exact approval: an approval's Preview.Changeset shows the person each row,
// and the token binds its digest, so if anyone changes those rows before the
// person answers, nothing is saved and they are asked again. What the person
// approves is what commits: a call that asks for approval runs twice, both
// rolled back, and shows the second run; of the values that differ, only the
// engine's new ids (a sequence's, a rowid) and the columns declared
// Generated are bound as changed rather than to what, and any other value is
// bound as shown, so an approved run that would commit another one asks
// again. [Call].DryRun returns the changeset too.
//
// History: each committed changeset is stored in llmtool_changes in the
// write's own transaction (it exists if and only if the write committed),
// with the tool, principal, tenant and [Call].Conversation (the MCP
// session, or the chat's conversation); the call's audit record names its
// entry. [changeset.List] reads it by tenant, principal, conversation or
// row; Retention prunes it. The built-in readers list_changes and
// changes://recent need Changesets.ReadScopes (Scopes when nil), and leave
// out the rows of entities that are protected or that MayRead refuses to
// the reader, counting them in "withheld".
//
// Undo: the built-in write tool undo_changes ({"id": 42}, {"since": 40}
// for the conversation's changes after 40, or {} for its last one) sets
// every row back in one write call, through the same path as any write: the
// tenant's writes switch, the audit, approval if the tenant asks for it. It
// refuses, changing nothing, when a row changed since, and names the rows.
// Only the principal who made a change may undo it, or whom
// Changesets.MayUndo allows; an undo is itself a change, so undoing it
// redoes. A call that changed the schema, an untracked table or a value over
// MaxValue is recorded as not undoable, with the reason. A tracked write
// stores one more row in its own transaction; reads cost nothing more.
//
// In the host's words: an [Entity] with Table says how a change to its rows
// reads to a person (NameColumn, Columns, HiddenColumns, ColumnLabels,
// DeletedColumn), so an approval's question, a write's Result.Changeset
// and list_changes read `Delete note "Ideas": content "…"` rather than the
// row's IDs, timestamps and flags, in the call's [Call].Locale through
// [Options].Messages (changeset.Row.Text; the exact values stay beside it).
//
// # Writes under contention
//
// On SQLite the registry's writes take turns on one connection (BEGIN
// IMMEDIATE); on PostgreSQL writes run side by side in SERIALIZABLE
// transactions, with no process-wide lock. A run that loses to other writes
// (SQLSTATE 40001 or 40P01; on SQLite, the write lock another process holds
// past the busy timeout) rolls back and runs again, handler and all, on a
// fresh transaction, after a growing pause, until it commits or the call's
// deadline passes: its context's, else [Options].RetryFor (10 s) after the
// first run. There is no fixed count; a call that lost three runs takes its
// turn to run alone among the registry's writes, so later calls cannot keep
// overtaking it. Only when the deadline passes is the model told the database
// is busy and nothing changed. The audit record counts the runs and the time
// they lost (Attempts, RetryWait). This is why a write handler must do
// nothing outside its transaction but in [WriteCtx.AfterCommit].
//
// # Resources and prompts
//
// A module ships resources and prompts beside its tools, defined the same
// way. A [Resource] is data a client reads by URI, fixed ("notes://recent")
// or a template over In's fields ("book://{id}"); a [Prompt] is a message
// template a person picks, rendered from typed arguments into [Message]
// values. Both run through [Registry.Invoke] ([Call].Resource,
// [Call].Prompt) as read tools do: in a snapshot, with the entity checks of
// ref-tagged fields, the policy and the audit record, so a resource over a
// protected entity is refused exactly as a read tool is. [Registry.List]
// (with [ListOptions].Resources or Prompts) lists them, and
// [Registry.Complete] completes their arguments: an enum from its values, a
// ref field through [Entity].Complete. A write tool that declares [Updates]
// reports the resources it updated to [Registry.OnResourceUpdate], which
// mcpadapter sends to the clients subscribed to them. Tools, resources and
// prompts share one namespace.
//
// # PostgreSQL and replicas
//
// The same modules run on PostgreSQL through pgx's database/sql driver;
// nothing in a tool changes. [NewRegistry] asks the database which engine it
// is (or [Options].Engine says) and creates or migrates llmtool's own tables,
// idempotently, safely from every replica. Reads run in REPEATABLE READ READ
// ONLY transactions, writes in SERIALIZABLE ones (see Writes under
// contention). $1, $2 work on both engines; SQLite's ? and ?NNN in a
// handler's SQL are rewritten to $N for PostgreSQL, outside strings, quoted
// names and comments. Nothing a call needs lives in one process: serve
// replicas with mcpadapter's stateless HTTP, and share [Options].ApprovalKey
// and mcpadapter's RequestStateKey. A server that goes away gives the model
// "The database cannot be reached right now, so ... Try again in a few
// seconds"; nothing half-written is kept, and calls work again when it
// returns.
//
// # The boundary
//
// A handler's SQL may read and change the host's data and schema, and
// nothing else: not the transaction, not the connection's state, not
// llmtool's own tables (tenant settings, approvals, the audit). Statements
// that would (COMMIT, SET, PRAGMA foreign_keys = OFF, ATTACH, temp objects,
// reads and writes of llmtool_* tables however spelled, ...) are refused with
// [ErrStatementRefused], the call fails whatever the handler returns, and the
// connection goes back to the pool as the registry set it. On SQLite the
// engine's own authorizer refuses them as it compiles each statement; on
// PostgreSQL llmtool checks each statement's text, and with [Options].Role
// every call's guards and handler run as a role of the host's, so the server
// refuses whatever the role was not granted:
//
//	CREATE ROLE app_tools NOLOGIN;
//	GRANT app_tools TO app;                -- app: the user llmtool connects as
//	GRANT SELECT, INSERT, UPDATE, DELETE ON notes, tags TO app_tools;
//	GRANT USAGE ON SEQUENCE notes_id_seq TO app_tools;
//
// The boundary is for SQL a model wrote, run by a tool. It does not make a Go
// module safe to run: a tool module is code in the host's process, so review
// third-party modules as any dependency. The host's own tables are the
// tools' by design: prefer narrow tools to raw SQL, and require approval for
// destructive ones. docs/DESIGN.md has the threat model.
//
// # Middleware and limits
//
// [Options].Middleware wraps every call that found its tool, in the style of
// net/http: a [Middleware] gets the next [InvokeFunc] and a [*Request] (the
// call, the tool's [Spec], the principal and the tenant) and can refuse the
// call ([Request.Fail] with a [Limited] error), bound it (a context with a
// deadline) or watch it, for MCP and the chat alike. Package limit has rate
// limits, timeouts and concurrency caps. The model reads a sentence, never
// a crash: "Too many calls; create_note was not run. Try again in 3 s."
//
// # Output budgets
//
// Models pay for every byte a tool returns. [OutputBudget] on a tool, or
// [Call].OutputBudget for one consumer (which the adapters set from their
// own OutputBudget option; it lowers a tool's budget, never raises it),
// cuts a longer result to fit, inside the call's transaction,
// keeping it valid against the output schema: the largest top-level list
// keeps its longest prefix that fits, and the [Truncated] field the tool's
// Out declares says how many were shown of how many and how to get the rest
// ([Continue] builds the call: "Showing 8 of 20 notes; call list_notes with
// {"offset":8} for the rest."). A result that cannot be cut fails with a
// sentence asking for narrower arguments, and a write then saves nothing.
//
// # Large catalogs
//
// With hundreds of tools, a host should not send them all with every
// request. [Options].OnDemand marks tools as loaded on demand: listings then
// show the other tools, man, and the built-in find_tools, which searches the
// on-demand tools the caller may call and loads the best few for the tenant
// (an MCP client gets tools/list_changed; the next chat tool set has them).
// A tool named exactly runs whether loaded or not (policy still decides), and
// [Registry.UnloadTools] forgets what a tenant loaded. chatadapter's
// ToolSearch option uses the providers' own tool search instead.
//
// # Telemetry
//
// Set [Options].TracerProvider and [Options].MeterProvider (nil, the
// default, costs nothing: no spans, no metric calls, no allocations). Each
// call gets a span execute_tool <tool> (the GenAI semantic conventions, plus
// llmtool.module, llmtool.tenant, enduser.id, llmtool.outcome,
// llmtool.attempts, llmtool.write, llmtool.committed) with child spans
// llmtool.lock_wait, llmtool.guards, llmtool.handler and llmtool.commit, and
// the metrics [Options].MeterProvider lists. Over MCP the parent span is the
// client's traceparent (in the request's _meta, else the HTTP header); in
// chat it is whatever span the host's context carries.
//
// # Testing
//
// Three layers catch what the types do not. Package llmtooltest gives each
// test a fresh SQLite file (or PostgreSQL database) with the host's schema and
// calls tools through the same [Registry.Invoke]; every call also fails the
// test, naming the tool, if the handler left a goroutine running, used its
// context after returning, or returned output that does not match its output
// schema. The llmtoolvet analyzer (cmd/llmtoolvet) runs under go vet. lint.Require
// fails a test on any finding of lint.Check, and cost.Report with its Check
// fails one when the catalog is over a token budget. In CI:
//
//	go vet -vettool="$(go tool -n llmtoolvet || echo missing-llmtoolvet)" ./...
//	go test -race ./...
//
// # Configuration
//
// [NewRegistry] takes the host's *sql.DB (nil for a registry that only
// lists, as linting and counting need), an [*Options] (nil for the
// defaults) and the modules. Everything is fixed at NewRegistry; only
// switches that change at run time are methods ([Registry.SetEnabled],
// [Registry.Tenants]).
package llmtool
