package llmtool

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/i18n"
)

// Options configures a Registry. A nil *Options, like the zero value,
// gives the defaults; they are fixed when the registry is built.
type Options struct {
	// Logger receives internal errors, refused statements, uses of a
	// handler's context after it returned, and (unless Audit is set)
	// the audit records. Default: slog.Default().
	Logger *slog.Logger

	// Engine is the database's engine: "sqlite" or "postgres". Empty
	// means NewRegistry asks the database (one query); declare it to
	// skip that, or when a proxy in front of the database answers for
	// it. Any other engine is refused: llmtool's read-only enforcement
	// and transactions depend on it.
	Engine string

	// Authorize decides whether a principal may call a tool; nil allows
	// whatever the tenant allows. It returns nil to allow the call. It
	// is consulted for every call and, to decide what a listing shows,
	// for every tool on every listing, so it should be cheap (no
	// database round trip per tool). The principal is nil when the call
	// has none.
	//
	// To refuse, return an error. The model sees the message and next
	// action of the first *Error in its chain (such as
	// llmtool.Denied("Only editors may delete notes.").Next("Ask an
	// editor to do it.")), or, when the chain has none, a standard
	// message that names the tool and keeps the error's text from the
	// model. Either way the call's Result.Err is an *Error of KindDenied
	// that wraps ErrNotAuthorized and Authorize's error, and the audit
	// outcome is "refused".
	Authorize func(ctx context.Context, p *Principal, tool *Spec) error

	// RequirePrincipal refuses every call without a principal in its
	// context and empties every listing without one. Turn it on when
	// tools must always run as an authenticated user, as behind the MCP
	// HTTP transport.
	RequirePrincipal bool

	// Audit lists the sinks that receive a record of every call. Nil
	// means one sink: Logger, at Info level. A audit.TxSink among them
	// writes its record inside each write's own transaction.
	Audit []audit.Sink

	// TenantCacheTTL is how long the registry keeps a tenant's settings in
	// memory before reading them again. Changes made through this
	// registry (Tenants().SetWrites, SetTool, ResetTool, SetApproval)
	// take effect at once whatever the TTL; a change made by another
	// process sharing the database is seen once the cached copy is older
	// than the TTL, and then reported to subscribers. Zero means
	// two seconds; tenant.NoCache reads the settings on every
	// listing and call (a primary-key lookup), for several processes or
	// replicas sharing one database.
	TenantCacheTTL time.Duration

	// WritesOffAction is the corrective next action of the refusal of a
	// write tool in a tenant whose writes are off: how the user enables
	// them in the host application, such as "Ask the user to turn on
	// 'Allow changes' in the chat settings, then try again.". Default:
	// "Ask the user to enable write tools for this tenant, then call
	// <tool> again.".
	WritesOffAction string

	// ApprovalKey signs approval tokens (HMAC-SHA256); replicas that
	// serve one another's approvals need the same key. It must be at
	// least 16 bytes long, or NewRegistry fails (a shorter key is found
	// from one token by trying every value): use 32 random bytes
	// (crypto/rand.Read), kept secret. Default: 32 random bytes per
	// registry, so an approval is honoured only by the process that asked
	// for it, which remembers the tokens used. With a key set, each
	// approved commit also records its token in the table
	// llmtool_approvals, in its transaction, so that no replica honours a
	// token twice.
	ApprovalKey []byte
	// ApprovalTTL is how long a person has to approve a previewed change.
	// Default: 15 minutes.
	ApprovalTTL time.Duration

	// ValidateOutput checks every successful result against the tool's
	// output schema; a mismatch becomes an internal error. Test harnesses
	// turn it on; it costs a decode per call.
	ValidateOutput bool

	// ManPages are reference pages, such as a search syntax, that the
	// man tool lists after the tools (by name; each page's first
	// non-empty line is its summary) and shows by name. A tool of the
	// same name takes precedence over a page.
	//
	// The man catalog keeps the descriptions sent with every request short: a
	// model that needs more calls the built-in read tool "man".
	//
	//   - man with no arguments lists the tools this tenant and principal may
	//     call, grouped by category ("General" when a tool has none) in the
	//     order categories first appear, one line each (the tool's Summary, else
	//     the first sentence of its description), then the reference pages of
	//     Options.ManPages.
	//   - man {"name": "<tool>"} shows NAME, SYNOPSIS and OPTIONS generated from
	//     the input schema (parameters in declaration order, with type,
	//     required, default and allowed values), then DESCRIPTION, then the
	//     tool's ManPage, whose EXAMPLES section package lint requires.
	//   - man {"name": "<page>"} shows a reference page.
	//   - An unknown name is answered with the closest names and how to list
	//     all. Tools the tenant may not call are unknown to man, as to List.
	//
	// Package man renders the catalog and the pages. NewRegistry registers man
	// in module "llmtool"; listings show it after the host's tools. To opt out,
	// switch it off (reg.SetEnabled("man", false)) or register a tool of your
	// own named "man", which replaces it. A chat UI's help command can invoke
	// it like any tool; its Result.Content holds the text.
	ManPages map[string]string

	// OnDemand marks the tools it returns true for, at registration, as
	// loaded on demand, for catalogs too large to send whole with every
	// request, such as s.Module != "notes" to keep one module listed and
	// load the rest when needed. Listings (List, the MCP tools/list, chat
	// tool sets) leave such a tool out until a tenant loads it with the
	// built-in read tool find_tools, which NewRegistry adds when
	// OnDemand is set: find_tools {"query": "refund an invoice"} searches
	// the names, categories, summaries and descriptions of the on-demand
	// tools the caller may call, answers with the best few (one line
	// each) and loads them for the call's tenant; subscribers then hear of
	// the tenant's change (MCP clients get tools/list_changed). The man
	// catalog counts the tools not loaded yet by category.
	//
	// Loading decides what is listed, not what may be called: an on-demand
	// tool called by its exact name runs whether loaded or not, and
	// policy (SetEnabled, writes per tenant, Authorize, token scopes)
	// applies to it and to find_tools as to any tool. What a tenant loaded
	// lives in memory until Registry.UnloadTools. Chat adapters can send
	// providers that search tools themselves every tool with the on-demand
	// ones marked deferred instead (see ListOptions.Unloaded). Default: nil,
	// every tool listed.
	OnDemand func(tool *Spec) bool

	// Middleware wraps every call that found its tool, resource or prompt,
	// from either adapter, the first outermost (see Middleware): rate
	// limits, timeouts and concurrency caps (package limit), or the host's
	// own. Default: none.
	Middleware []Middleware

	// TracerProvider, when set, gives every call a span (see Invoke), a
	// child of the span in the call's context, with child spans for the
	// wait for the write lock, the guards, the handler and the commit.
	// Pass otel.GetTracerProvider() to use the process's global one; the
	// registry never reads the globals itself. The spans' instrumentation
	// scope is "github.com/llmtool/llmtool". Default: nil, no spans, and
	// no cost.
	TracerProvider trace.TracerProvider

	// MeterProvider, when set, records the registry's metrics through
	// OpenTelemetry's metric API, under the instrumentation scope
	// "github.com/llmtool/llmtool":
	//
	//   - llmtool.calls ({call}), a counter of calls, and
	//     llmtool.call.duration (s), a histogram of their durations, both
	//     by gen_ai.tool.name, llmtool.module, llmtool.outcome (the audit
	//     record's: "ok", "refused", "limited", "invalid_args", ...) and
	//     llmtool.write; a call whose tool was not found counts under the
	//     tool name "_OTHER", so that names a model makes up make no
	//     series of their own;
	//   - llmtool.lock.wait (s), how long write calls waited for their
	//     transaction (SQLite's write lock, a connection, BEGIN), per run,
	//     by gen_ai.tool.name;
	//   - llmtool.result.size (By), the size of results' JSON, by
	//     gen_ai.tool.name;
	//   - llmtool.retries ({run}), a counter of the runs again of write
	//     calls that lost to other writes (see RetryFor), and
	//     llmtool.retry.wait (s), a histogram of the time each such call
	//     lost (the audit record's RetryWait), both by gen_ai.tool.name.
	//
	// Default: nil, no metrics, and no cost.
	MeterProvider metric.MeterProvider

	// WriteGrace bounds how long a write call whose context ended
	// (cancelled by its caller, or past a deadline such as
	// limit.Timeout's) may keep the write path while its handler has not
	// returned. Once it is over, the registry abandons the call: it rolls
	// the transaction back, closes its connection rather than reusing it
	// and, on SQLite, where writes take turns, lets the next write go on.
	// Go cannot stop the handler's goroutine: the handler's later
	// statements fail with sql.ErrTxDone, and Invoke returns once the
	// handler does, with a result that says the call was stopped and
	// nothing saved. A handler that passes its context to whatever waits
	// returns in time. Default (zero or negative): one second.
	WriteGrace time.Duration

	// RetryFor bounds how long a write call whose context has no
	// deadline keeps running again when it loses to other writes. A run
	// that loses (on PostgreSQL a serialization failure or a deadlock; on
	// SQLite the write lock another process holds past the busy timeout)
	// rolls back, saving nothing, and the registry runs the handler again
	// on a fresh transaction, after a pause that doubles from run to run
	// (2 ms, 4 ms, ..., at most 100 ms, with jitter), until a run commits
	// or the call's deadline passes: its context's deadline, or, when it
	// has none, RetryFor after its first run began. There is no fixed
	// number of runs; a call that lost three takes its turn to run alone
	// among the registry's writes, so that later calls do not keep
	// overtaking it. When the deadline passes first, the model is told
	// the database is busy and nothing changed, and to try again in a few
	// seconds. The audit record counts the runs (audit.Record.Attempts)
	// and the time they took (RetryWait). Changes of the tenant settings
	// are run again the same way. Default (zero or negative): ten seconds.
	RetryFor time.Duration

	// Role, on PostgreSQL, names the role that tools' SQL runs as. Each
	// call's transaction switches to it (SET LOCAL ROLE) before the
	// guards and the handler run, and back to the user llmtool connects
	// as before llmtool's own statements in it (the audit record, a used
	// approval), so the server itself refuses whatever the role has no
	// privilege for, even SQL that llmtool's statement check lets
	// through. Give it what the tools need on the application's tables
	// and nothing else:
	//
	//	CREATE ROLE app_tools NOLOGIN;
	//	GRANT app_tools TO app;  -- app: the user llmtool connects as
	//	GRANT SELECT, INSERT, UPDATE, DELETE ON notes, tags TO app_tools;
	//	GRANT USAGE ON SEQUENCE notes_id_seq TO app_tools;
	//
	// NewRegistry fails, saying which GRANT, REVOKE or ALTER ROLE to run,
	// unless the role exists, the connecting user may switch to it, it is
	// neither a superuser nor a member of the connecting user, and it
	// holds no privilege on llmtool's own tables (llmtool_*; create an
	// audit.Table first, and keep its default name). Without CREATE on
	// the database and its schemas, and without owning the application's
	// tables, the role also keeps tools from creating schemas and tables
	// that would shadow others' (by the search path), and from changing
	// row-level security or policies.
	//
	// A read call costs nothing more (the connections the registry keeps
	// for reads switch to the role once); a write call runs two more
	// statements, entering the role and leaving it. llmtool's built-in
	// man and find_tools then read the tenant's settings on a connection of
	// their own rather than in the call's transaction. Default: "", tools'
	// SQL runs as the connecting user, checked by the statement check
	// alone. Setting it on SQLite is an error.
	Role string

	// Changesets names the tables whose rows each write call captures
	// exactly, before and after (package changeset): the Result's
	// Changeset, the rows an approval binds, and the history in the table
	// llmtool_changes, written in the call's own transaction, which the
	// built-in tool undo_changes undoes (Changesets.Tools). SQLite
	// captures through modernc.org/sqlite's pre-update hook; PostgreSQL
	// through row triggers that NewRegistry installs on the tables
	// (changeset.Config.Tables says what they see). Default: no table is
	// tracked, and approvals bind row counts per table.
	Changesets changeset.Config
	// Messages holds the words of changes in each locale (the keys
	// "llm.change.…" and "llm.entities.…": Entity.NameColumn), in which
	// the registry describes a changed row to a person in the locale of
	// its call (Call.Locale). The chat adapter's catalog serves: a host
	// builds one and passes it to both. Nil: the English embedded in
	// package i18n.
	Messages *i18n.Catalog
}
