package dbconn

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite"

	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// On SQLite the engine itself keeps a handler's SQL inside its call: the
// registry installs an authorizer (modernc.org/sqlite's
// AuthorizerRegisterer, SQLite's sqlite3_set_authorizer) on every
// connection it runs a call on, and SQLite asks it about each operation of
// each statement while the statement is compiled, with the real names of
// the tables, however the text quoted or qualified them. The connection's
// Policy answers, by its Mode:
//
//   - ModeOwn while llmtool runs its own statements (BEGIN, COMMIT,
//     ROLLBACK, its own tables): the statement itself may do anything;
//     what runs inside a view, a trigger or a common table expression it
//     reaches is checked as in a write call (see below).
//   - ModeClosed once a stuck write was abandoned (see Pool.Watch):
//     nothing, and nothing is recorded.
//   - ModeOff: anything. No connection is in it during a call.
//   - ModeRead and ModeWrite while guards and the handler run. Denied:
//     any access to a table whose name starts with llmtool_ (llmtool's
//     own), sqlite_dbpage (the file's raw pages), anything in the temp
//     schema (objects there live with the connection, not the call),
//     ATTACH and DETACH, transaction control and savepoints, and every
//     PRAGMA but those that only read (sqlcheck.ReadOnlyPragma); in a read
//     call, every kind of write too. Reading sqlite_schema is allowed.
//
// A denied operation fails its statement's compilation (SQLITE_AUTH) and
// is recorded as the connection's Denial, which the call takes to fail
// with ErrStatementRefused.
//
// Switching the mode is a store, not a new authorizer: installing one
// expires the connection's prepared statements, which SQLite then compiles
// again, under the authorizer of that moment, when they next run. A
// switch leaves statements compiled under the previous mode alone. That
// is safe because nothing of the handler's is compiled in ModeOwn but
// what was authorized before: the registry switches to ModeOwn only after
// the handler returned and its context refuses new statements; results it
// left open are closed first (reads), and rows read on of a statement
// under way are not compiled again (writes: the *sql.Tx closes them when
// it ends). What remains is a statement the handler prepared, run again
// by a goroutine it left behind, which SQLite compiles again after a
// schema change (TestRecompiledInOwnMode): its text was authorized in the
// handler's mode, so it names the same tables (ATTACH and the temp schema,
// which could shadow a name, are refused); only a view, a trigger or a CTE
// could lead it elsewhere, and what runs inside those is checked as in a
// write call in every mode. The triggers a write handler created are
// checked once more before the commit (WriteTx.CheckTriggers), since
// SQLite checks a trigger's body only when a statement that fires it is
// compiled.

// Mode is what a connection's Policy allows.
type Mode int32

const (
	// ModeOff allows everything: the connection is between calls.
	ModeOff Mode = iota
	// ModeOwn allows llmtool's own statements.
	ModeOwn
	// ModeRead allows what a read call's handler may do.
	ModeRead
	// ModeWrite allows what a write call's handler may do.
	ModeWrite
	// ModeClosed allows nothing, and records no denial: the call was
	// abandoned (see Pool.Watch), and the connection is being closed.
	ModeClosed
)

// Policy is the authorizer's state on one connection: its mode, the last
// operation it denied, and the tables on which the handler created
// triggers (see WriteTx.CheckTriggers).
type Policy struct {
	mode   atomic.Int32
	denied atomic.Pointer[Denial]
	sets   bool // record the columns UPDATEs set (a write connection with a capture); set before the connection's first call

	mu       sync.Mutex
	triggers []string // tables the handler created triggers on, in ModeWrite
	schema   string   // the first schema change the handler made, in ModeWrite
	set      []string // "table\x00column" of each column an UPDATE compiled since reset may set (see assigned)
}

// SetMode switches the policy to m. A nil Policy (PostgreSQL) ignores it.
func (p *Policy) SetMode(m Mode) {
	if p != nil {
		p.mode.Store(int32(m))
	}
}

// reset readies a connection's policy for the next call: ModeOwn, no
// denial, no triggers.
func (p *Policy) reset() {
	p.SetMode(ModeOwn)
	p.denied.Store(nil)
	p.mu.Lock()
	p.triggers, p.schema, p.set = nil, "", p.set[:0]
	p.mu.Unlock()
}

// noteUpdate records that a statement compiled since reset may set
// column of table: SQLite asks about each column an UPDATE sets (an
// UPSERT's, a trigger's and a foreign key action's included) as it
// compiles it.
func (p *Policy) noteUpdate(table, column string) {
	k := table + "\x00" + column
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.set, k) {
		p.set = append(p.set, k)
	}
}

// assigned reports whether an UPDATE compiled since reset may set column
// of table (capture_text.go): a column no UPDATE set keeps its value in
// a row that only UPDATEs changed. A nil Policy reports true.
func (p *Policy) assigned(table, column string) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.set, func(k string) bool {
		t, c, _ := strings.Cut(k, "\x00")
		return strings.EqualFold(t, table) && strings.EqualFold(c, column)
	})
}

// schemaChange describes the first schema change the call's handler
// made ("create table x"), or returns "". A nil Policy returns "".
func (p *Policy) schemaChange() string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.schema
}

// Take returns the operation the policy denied since the last Take, or
// nil, and forgets it. A nil Policy returns nil.
func (p *Policy) Take() *Denial {
	if p == nil || p.denied.Load() == nil {
		return nil
	}
	return p.denied.Swap(nil)
}

// authorize is the connection's sqlite.AuthorizerFn.
func (p *Policy) authorize(action sqlite.AuthorizerActionCode, arg1, arg2, db, inner string) sqlite.AuthorizerReturnCode {
	m := Mode(p.mode.Load())
	if m == ModeClosed {
		return sqlite.AuthorizerDeny
	}
	if allowed(m, action, arg1, arg2, db, inner) {
		if m == ModeWrite {
			p.noteSchema(action, arg1, arg2)
		}
		if action == sqlite.AuthUpdate && p.sets && (m == ModeWrite || m == ModeOwn) {
			p.noteUpdate(arg1, arg2) // in ModeOwn too: what compiles there may run
		}
		return sqlite.AuthorizerOK
	}
	p.denied.Store(&Denial{Action: action, Arg1: arg1, Arg2: arg2, DB: db, Inner: inner, Mode: m})
	return sqlite.AuthorizerDeny
}

// noteSchema records a schema change a handler makes: the tables it
// creates triggers on (see WriteTx.CheckTriggers), and the first change,
// which makes its changeset not undoable.
func (p *Policy) noteSchema(action sqlite.AuthorizerActionCode, arg1, arg2 string) {
	var what string
	switch action {
	case sqlite.AuthCreateTable, sqlite.AuthCreateIndex, sqlite.AuthCreateTrigger, sqlite.AuthCreateView, sqlite.AuthCreateVTable:
		what = "create " + arg1
	case sqlite.AuthDropTable, sqlite.AuthDropIndex, sqlite.AuthDropTrigger, sqlite.AuthDropView, sqlite.AuthDropVTable:
		what = "drop " + arg1
	case sqlite.AuthAlterTable:
		what = "alter table " + arg2
	default:
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if action == sqlite.AuthCreateTrigger {
		p.triggers = append(p.triggers, arg2)
	}
	if p.schema == "" {
		p.schema = what
	}
}

// allowed decides an operation in mode m; see the package's authorizer
// comment.
func allowed(m Mode, action sqlite.AuthorizerActionCode, arg1, arg2, db, inner string) bool {
	switch m {
	case ModeOff:
		return true
	case ModeOwn:
		if inner == "" {
			return true
		}
		m = ModeWrite
	}
	if db == "temp" {
		return false
	}
	switch action {
	case sqlite.AuthSelect, sqlite.AuthFunction, sqlite.AuthRecursive:
		return true
	case sqlite.AuthRead:
		return !reserved(arg1)
	case sqlite.AuthPragma:
		return sqlcheck.ReadOnlyPragma(arg1)
	case sqlite.AuthCreateTempIndex, sqlite.AuthCreateTempTable, sqlite.AuthCreateTempTrigger, sqlite.AuthCreateTempView,
		sqlite.AuthDropTempIndex, sqlite.AuthDropTempTable, sqlite.AuthDropTempTrigger, sqlite.AuthDropTempView,
		sqlite.AuthAttach, sqlite.AuthDetach, sqlite.AuthTransaction, sqlite.AuthSavepoint:
		return false
	}
	// What is left changes data or schema: INSERT, UPDATE, DELETE,
	// CREATE, DROP, ALTER, ANALYZE, REINDEX. arg1 names a table, index,
	// trigger or view; for indexes, triggers and ALTER TABLE, arg2 names
	// the table.
	if m == ModeRead || reserved(arg1) {
		return false
	}
	switch action {
	case sqlite.AuthCreateIndex, sqlite.AuthDropIndex, sqlite.AuthCreateTrigger, sqlite.AuthDropTrigger, sqlite.AuthAlterTable:
		return !reserved(arg2)
	}
	return true
}

// ownPrefix starts the names of llmtool's own tables.
const ownPrefix = "llmtool_"

// reserved reports whether name is a table no handler may touch: one of
// llmtool's own (llmtool_*, in any case), sqlite_dbpage (the file's raw
// pages) or dbstat (their sizes, which tell how many rows llmtool's tables
// hold).
func reserved(name string) bool {
	return own(name) || strings.EqualFold(name, "sqlite_dbpage") || strings.EqualFold(name, "dbstat")
}

func own(name string) bool {
	return len(name) >= len(ownPrefix) && strings.EqualFold(name[:len(ownPrefix)], ownPrefix)
}

// Denial is an operation a Policy denied: the authorizer's arguments and
// the mode it was in.
type Denial struct {
	Action                sqlite.AuthorizerActionCode
	Arg1, Arg2, DB, Inner string
	Mode                  Mode
}

// Refusal says what statement was refused, why and what to do instead.
func (d *Denial) Refusal(statement string) *sqlcheck.Refusal {
	what := d.what()
	r := &sqlcheck.Refusal{Statement: sqlcheck.Short(statement)}
	switch {
	case d.DB == "temp" || isTemp(d.Action):
		r.Reason = what + ", in the temp schema, whose objects live with the connection, not the database"
		r.Instead = "create temporary objects in the host's setup code, or use a CTE (WITH ...) or an ordinary table."
	case d.Action == sqlite.AuthAttach:
		r.Reason = "attaches another database to the connection"
		r.Instead = "attach other databases where the host opens the database, or give the tool what it needs through its module."
	case d.Action == sqlite.AuthDetach:
		r.Reason = "detaches a database from the connection"
		r.Instead = "attach other databases where the host opens the database, or give the tool what it needs through its module."
	case d.Action == sqlite.AuthTransaction || d.Action == sqlite.AuthSavepoint:
		r.Reason = "controls the transaction (" + strings.TrimSpace(d.Arg1+" "+savepoint(d)) + ")"
		r.Instead = "llmtool begins each call's transaction, commits it when the handler returns nil and rolls it back when it returns an error: return an error to undo the call's work."
	case d.Action == sqlite.AuthPragma:
		r.Reason = "runs PRAGMA " + d.Arg1
		if d.Arg2 != "" {
			r.Reason += " with the value " + d.Arg2
		}
		r.Reason += ", and a tool may run only the pragmas that read whatever their argument (table_info, index_list, foreign_key_check, integrity_check, ...)"
		r.Instead = "read a table's columns with SELECT * FROM pragma_table_info('t') and the schema from sqlite_schema; set pragmas where the host opens the database (in the DSN's _pragma parameters)."
	case own(d.Arg1) || (d.Action != sqlite.AuthRead && own(d.Arg2)):
		r.Reason = what + ", a table llmtool keeps for itself"
		r.Instead = "llmtool's tables (" + ownPrefix + "*) are not a tool's to read or change: change llmtool's settings through the Registry (Tenants().SetWrites, SetApproval, ...)."
	case reserved(d.Arg1):
		r.Reason = what + ", the database file's raw pages"
		r.Instead = "read and change data through its tables."
	case d.Mode == ModeRead:
		r.Reason = what + " in a read tool"
		r.Instead = "declare the tool with llmtool.Write to change data."
	default:
		r.Reason = what
		r.Instead = "a tool may read and change the host's tables, and nothing else."
	}
	return r
}

func isTemp(a sqlite.AuthorizerActionCode) bool {
	switch a {
	case sqlite.AuthCreateTempIndex, sqlite.AuthCreateTempTable, sqlite.AuthCreateTempTrigger, sqlite.AuthCreateTempView,
		sqlite.AuthDropTempIndex, sqlite.AuthDropTempTable, sqlite.AuthDropTempTrigger, sqlite.AuthDropTempView:
		return true
	}
	return false
}

// savepoint is a savepoint operation's name (SAVEPOINT x: BEGIN x).
func savepoint(d *Denial) string {
	if d.Action == sqlite.AuthSavepoint {
		return d.Arg2
	}
	return ""
}

// what describes the denied operation: "updates llmtool_scope_settings".
func (d *Denial) what() string {
	var s string
	switch d.Action {
	case sqlite.AuthRead:
		s = "reads " + d.Arg1
	case sqlite.AuthInsert:
		s = "inserts into " + d.Arg1
	case sqlite.AuthUpdate:
		s = "updates " + d.Arg1
	case sqlite.AuthDelete:
		s = "deletes from " + d.Arg1
	case sqlite.AuthCreateTable, sqlite.AuthCreateTempTable:
		s = "creates table " + d.Arg1
	case sqlite.AuthCreateIndex, sqlite.AuthCreateTempIndex:
		s = "creates index " + d.Arg1 + " on " + d.Arg2
	case sqlite.AuthCreateTrigger, sqlite.AuthCreateTempTrigger:
		s = "creates trigger " + d.Arg1 + " on " + d.Arg2
	case sqlite.AuthCreateView, sqlite.AuthCreateTempView:
		s = "creates view " + d.Arg1
	case sqlite.AuthCreateVTable:
		s = "creates virtual table " + d.Arg1
	case sqlite.AuthDropTable, sqlite.AuthDropTempTable:
		s = "drops table " + d.Arg1
	case sqlite.AuthDropIndex, sqlite.AuthDropTempIndex:
		s = "drops index " + d.Arg1
	case sqlite.AuthDropTrigger, sqlite.AuthDropTempTrigger:
		s = "drops trigger " + d.Arg1
	case sqlite.AuthDropView, sqlite.AuthDropTempView:
		s = "drops view " + d.Arg1
	case sqlite.AuthDropVTable:
		s = "drops virtual table " + d.Arg1
	case sqlite.AuthAlterTable:
		s = "alters table " + d.Arg2
	case sqlite.AuthAnalyze:
		s = "analyzes " + d.Arg1
	case sqlite.AuthReindex:
		s = "reindexes " + d.Arg1
	default:
		s = fmt.Sprintf("runs operation %d on %q", d.Action, d.Arg1)
	}
	if d.Inner != "" {
		s += " (through " + d.Inner + ", a trigger, view or common table expression)"
	}
	return s
}

// errNoAuthorizer says the connection offers no authorizer.
var errNoAuthorizer = errors.New("llmtool: this SQLite connection does not offer modernc.org/sqlite's authorizer (sqlite.AuthorizerRegisterer), which llmtool installs on the connections it runs calls on to keep each tool's SQL inside its call; open the database with modernc.org/sqlite v1.62 or later (sqlite.Open in package github.com/llmtool/llmtool/sqlite does), not with another SQLite driver or a wrapper around its connections")

// install puts p's authorizer on conn, in ModeOwn.
func install(conn *sql.Conn, p *Policy) error {
	p.SetMode(ModeOwn)
	return conn.Raw(func(dc any) error {
		ar, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return fmt.Errorf("%w (its connection is a %T)", errNoAuthorizer, dc)
		}
		return ar.RegisterAuthorizer(p.authorize)
	})
}

// uninstall removes the authorizer from conn.
func uninstall(conn *sql.Conn) error {
	return conn.Raw(func(dc any) error {
		if ar, ok := dc.(sqlite.AuthorizerRegisterer); ok {
			return ar.RegisterAuthorizer(nil)
		}
		return nil
	})
}

// CheckAuthorizer reports an error if db's connections, which must be
// SQLite's, offer no authorizer for the registry to install.
func CheckAuthorizer(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("llmtool: a connection to check for SQLite's authorizer: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		if _, ok := dc.(sqlite.AuthorizerRegisterer); !ok {
			return fmt.Errorf("%w (its connection is a %T)", errNoAuthorizer, dc)
		}
		return nil
	})
}
