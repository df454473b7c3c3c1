// Package sqlcheck decides whether SQL that a tool handler runs may run.
//
// llmtool owns each call's transaction and the connection under it: it
// begins the transaction, commits or rolls it back, and hands the
// connection back to the pool exactly as it found it. A handler's SQL may
// read and change data and schema, and nothing else: statements that
// control the transaction (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE,
// END), change the connection's settings (PRAGMA with a value, SET),
// attach other database files (ATTACH, DETACH), or create objects that
// live with the connection (CREATE TEMP ...) are refused before they reach
// the database.
//
// The check is an allow-list over the first keyword of every statement in
// the text, found with a tokenizer that follows the engine's rules for
// comments, string literals and quoted identifiers, so a second statement
// hidden after a semicolon is checked too. Anything it does not recognize
// is refused: a false refusal is a clear error for the tool's author, a
// false acceptance would be a hole. Calls of functions that act on the
// session, the server or files (load_extension, set_config, session-level
// advisory locks, dblink, ...) are refused wherever they appear.
//
// On PostgreSQL (see postgres.go) the check also refuses what the server
// keeps per session rather than per transaction or does outside it: SET
// and RESET, DISCARD, PREPARE, EXECUTE and DEALLOCATE, cursors, LISTEN,
// UNLISTEN and NOTIFY, COPY, DO, LOAD, VACUUM, CLUSTER, CHECKPOINT,
// SELECT ... INTO TEMP, objects in pg_temp, code (CREATE FUNCTION,
// PROCEDURE, EXTENSION, ...), roles and privileges (GRANT, REVOKE, CREATE
// ROLE, ...) and the server's configuration (ALTER SYSTEM, CREATE
// DATABASE, ...), any statement that changes something and names
// pg_settings (an UPDATE of it, or of a view over it, calls set_config at
// session level), and writes to the system catalogs.
//
// On both engines a text that names one of llmtool's own tables
// (llmtool_*: tenant settings, used approvals, the audit, the history),
// to read it or to change it, is refused, however the name is spelled: in
// any case, quoted, schema-qualified, or (PostgreSQL) as a U&"..."
// identifier, which the tokenizer decodes, UESCAPE included. So are, on
// PostgreSQL, the functions that read a table by a name held in a value
// (table_to_xml, database_to_xml, crosstab, ...), which no text check
// could follow, a trigger whose function gets such a name as a string
// argument, foreign tables (whose options name a table as a string), and
// the column statistics (pg_stats), which hold sample values of every
// table. A function of the host's that reads llmtool's tables is beyond a
// text check: Options.Role stops it.
//
// [Rebind] turns SQLite's ? and ?NNN placeholders into PostgreSQL's $N,
// so a tool module is written once for both engines; [Cache.CheckRebind]
// checks and rebinds a text once.
package sqlcheck

import (
	"strings"
)

// Dialect selects the engine's lexical rules.
type Dialect uint8

const (
	// SQLite: '' strings, "", [] and `` identifiers, non-nesting /* */.
	SQLite Dialect = iota
	// Postgres: also E'' strings with backslash escapes, $tag$ quoting
	// and nesting /* */ comments.
	Postgres
)

// Refusal says why a statement may not run and what to do instead.
type Refusal struct {
	// Statement is the refused statement, shortened to 80 bytes.
	Statement string
	// Reason completes "the statement ...", as in "controls the
	// transaction".
	Reason string
	// Instead is a sentence that says what to do instead.
	Instead string
}

// Error returns the refusal as one sentence and the advice.
func (r *Refusal) Error() string {
	return "statement " + quote(r.Statement) + " " + r.Reason + "; " + r.Instead
}

func quote(s string) string { return "`" + s + "`" }

const (
	txInstead     = "llmtool begins each call's transaction, commits it when the handler returns nil and rolls it back when it returns an error: return an error to undo the call's work."
	setInstead    = "configure the connection where the host opens the database (for SQLite, in the DSN's _pragma parameters)."
	pragmaInstead = "read a pragma with SELECT * FROM pragma_<name>(...); set pragmas where the host opens the database (in the DSN's _pragma parameters)."
	attachInstead = "attach other databases where the host opens the database, or give the tool what it needs through its module."
	tempInstead   = "create temporary objects in the host's setup code, or use a CTE (WITH ...) or an ordinary table."
	otherInstead  = "a tool may run SELECT, WITH, VALUES, INSERT, UPDATE, DELETE, REPLACE, and CREATE, ALTER, DROP, ANALYZE or REINDEX on the host's database."
)

// allowed are the statements a handler may run, by first keyword.
var allowed = map[string]bool{
	"SELECT": true, "WITH": true, "VALUES": true, "INSERT": true, "UPDATE": true,
	"DELETE": true, "REPLACE": true, "CREATE": true, "DROP": true, "ALTER": true,
	"ANALYZE": true, "REINDEX": true, "EXPLAIN": true, "PRAGMA": true,
	// PostgreSQL's own statements that stay inside the transaction.
	"TABLE": true, "MERGE": true, "TRUNCATE": true, "LOCK": true, "SHOW": true,
}

// refusedReasons names what a refused statement would do, by first keyword.
var refusedReasons = map[string][2]string{
	"BEGIN":      {"controls the transaction", txInstead},
	"COMMIT":     {"controls the transaction", txInstead},
	"END":        {"controls the transaction", txInstead},
	"ROLLBACK":   {"controls the transaction", txInstead},
	"SAVEPOINT":  {"controls the transaction", txInstead},
	"RELEASE":    {"controls the transaction", txInstead},
	"START":      {"controls the transaction", txInstead},
	"ABORT":      {"controls the transaction", txInstead},
	"PREPARE":    {"controls the transaction or the session", txInstead},
	"ATTACH":     {"attaches another database to the connection", attachInstead},
	"DETACH":     {"detaches a database from the connection", attachInstead},
	"SET":        {"changes the connection's settings", setInstead},
	"RESET":      {"changes the connection's settings", setInstead},
	"DISCARD":    {"changes the connection's state", setInstead},
	"LOAD":       {"loads code into the connection", setInstead},
	"DEALLOCATE": {"changes the connection's state", setInstead},
	"LISTEN":     {"changes the connection's state", setInstead},
	"UNLISTEN":   {"changes the connection's state", setInstead},
	"VACUUM":     {"rewrites the database outside the call's transaction", "run VACUUM from the host's maintenance code."},
}

// readPragmas take an argument and only report: table_info(notes).
var readPragmas = map[string]bool{
	"TABLE_INFO": true, "TABLE_XINFO": true, "INDEX_INFO": true, "INDEX_XINFO": true,
	"INDEX_LIST": true, "FOREIGN_KEY_LIST": true, "FOREIGN_KEY_CHECK": true,
	"INTEGRITY_CHECK": true, "QUICK_CHECK": true, "TABLE_LIST": true,
}

// actingPragmas do something even without a value.
var actingPragmas = map[string]bool{
	"OPTIMIZE": true, "SHRINK_MEMORY": true, "WAL_CHECKPOINT": true, "INCREMENTAL_VACUUM": true,
}

// Check returns nil if every statement in query may run, or the first
// refusal.
func Check(d Dialect, query string) *Refusal {
	if strings.IndexByte(query, 0) >= 0 {
		return &Refusal{Statement: short(strings.ReplaceAll(query, "\x00", `\0`)), Reason: "contains a NUL byte, which would hide the rest of the text from the database", Instead: "pass values as query arguments, not in the SQL text."}
	}
	sc := scanner{s: query, d: d}
	r := sc.check()
	if r == nil {
		r = protected(d, query, false)
	}
	if r == nil && d == Postgres && strings.IndexByte(query, '\\') >= 0 {
		// With standard_conforming_strings off (a server's or role's
		// setting, not the default) PostgreSQL reads a backslash in '...'
		// as an escape: the text must pass read that way too.
		sc = scanner{s: query, d: d, backslashes: true}
		if r = sc.check(); r == nil {
			r = protected(d, query, true)
		}
	}
	return r
}

// check checks every statement of the text.
func (sc *scanner) check() *Refusal {
	for {
		start := sc.skip()
		tok := sc.next()
		switch tok.kind {
		case tEOF:
			return nil
		case tSemi:
			continue
		}
		if r := sc.statement(tok, start); r != nil {
			return r
		}
	}
}

// statement checks one statement whose first token is first, consuming it
// through its terminating semicolon.
func (sc *scanner) statement(first token, start int) *Refusal {
	sc.first = first
	if first.kind == tOther && first.text == "(" { // PostgreSQL: (SELECT ...)
		return sc.body(start)
	}
	other := otherInstead
	if sc.d == Postgres {
		other = pgOtherInstead
	}
	if first.kind != tWord {
		return sc.refuseRest(start, "is not a statement a tool may run", other)
	}
	kw := strings.ToUpper(first.text)
	if sc.d == Postgres {
		if r, done := sc.pgStatement(kw, start); done {
			return r
		}
	}
	if rr, ok := refusedReasons[kw]; ok {
		return sc.refuseRest(start, rr[0], rr[1])
	}
	if !allowed[kw] {
		return sc.refuseRest(start, "is not a statement a tool may run", other)
	}
	switch kw {
	case "EXPLAIN":
		// The explained statement is compiled, and some statements act
		// while they compile (SQLite sets flag pragmas then): check it.
		next := sc.next()
		if next.kind == tWord && strings.EqualFold(next.text, "QUERY") {
			sc.next() // PLAN
			next = sc.next()
		}
		if next.kind == tEOF || next.kind == tSemi {
			return nil
		}
		return sc.statement(next, start)
	case "PRAGMA":
		if sc.d != SQLite {
			return sc.refuseRest(start, "is not a statement a tool may run", other)
		}
		return sc.pragma(start)
	case "CREATE", "DROP", "ALTER":
		return sc.ddl(start, kw)
	}
	return sc.body(start)
}

// refuseRest consumes the rest of the statement and refuses it.
func (sc *scanner) refuseRest(start int, reason, instead string) *Refusal {
	end := sc.i
	sc.rest()
	return &Refusal{Statement: short(sc.s[start:max(end, sc.i)]), Reason: reason, Instead: instead}
}

// rest consumes what is left of the current statement.
func (sc *scanner) rest() {
	for {
		if k := sc.next().kind; k == tEOF || k == tSemi {
			return
		}
	}
}

// body consumes the rest of a statement, refusing calls of the functions
// in refusedFuncs and, on PostgreSQL, SELECT ... INTO TEMP.
func (sc *scanner) body(start int) *Refusal { return sc.scan(start, false) }

// scan is body; with ddl (PostgreSQL's CREATE, ALTER and DROP) it also
// refuses an object in the pg_temp schema and CREATE TABLE ... AS EXECUTE.
// (CREATE OPERATOR and CREATE AGGREGATE, which name functions without a
// call, are refused whole by pgDDL.)
func (sc *scanner) scan(start int, ddl bool) *Refusal {
	prev := sc.first
	into := false // after SELECT's INTO, before the new table's name
	for {
		tok := sc.next()
		switch tok.kind {
		case tEOF, tSemi:
			return nil
		case tOther:
			switch {
			case tok.text == "(" && (prev.kind == tWord || prev.kind == tQuoted):
				if f, ok := sc.calledFunc(prev); ok {
					return sc.refuseCall(start, prev, f)
				}
			case tok.text == "." && ddl && isTempSchema(prev):
				return sc.refuseRest(start, tempSchemaReason, tempInstead)
			}
			into = false
		case tWord, tQuoted:
			if sc.d != Postgres {
				break
			}
			is := func(w string) bool { return tok.kind == tWord && strings.EqualFold(tok.text, w) }
			switch {
			case into && (is("TEMP") || is("TEMPORARY")):
				return sc.refuseRest(start, tempReason, tempInstead)
			case into && (is("LOCAL") || is("GLOBAL") || is("UNLOGGED") || is("TABLE")):
			case into:
				into = false
				if isTempSchema(tok) && sc.peekDot() {
					return sc.refuseRest(start, tempSchemaReason, tempInstead)
				}
			case is("INTO"):
				// INSERT INTO and MERGE INTO name a table that exists.
				into = prev.kind != tWord || !strings.EqualFold(prev.text, "INSERT") && !strings.EqualFold(prev.text, "MERGE")
			case ddl && is("EXECUTE") && prev.kind == tWord && strings.EqualFold(prev.text, "AS"):
				return sc.refuseRest(start, executeRefusal[0], executeRefusal[1]) // CREATE TABLE t AS EXECUTE
			}
		default:
			into = false
		}
		prev = tok
	}
}

// pragma checks PRAGMA [schema.]name [= value | (value)].
func (sc *scanner) pragma(start int) *Refusal {
	name := sc.next()
	if name.kind != tWord && name.kind != tQuoted {
		return sc.refuseRest(start, "is not a pragma a tool may run", pragmaInstead)
	}
	tok := sc.next()
	if tok.kind == tOther && tok.text == "." {
		if name = sc.next(); name.kind != tWord && name.kind != tQuoted {
			return sc.refuseRest(start, "is not a pragma a tool may run", pragmaInstead)
		}
		tok = sc.next()
	}
	n := strings.ToUpper(name.unquoted())
	switch {
	case tok.kind == tEOF || tok.kind == tSemi:
		if actingPragmas[n] {
			return &Refusal{Statement: short(sc.s[start:sc.i]), Reason: "changes the database or the connection outside the call's transaction", Instead: pragmaInstead}
		}
		return nil
	case tok.kind == tOther && tok.text == "(" && readPragmas[n]:
		return sc.body(start)
	}
	return sc.refuseRest(start, "sets a pragma, which changes the connection's settings", pragmaInstead)
}

// ddl checks CREATE, DROP and ALTER: objects in the temp schema live with
// the connection, not the database. The head, up to the first "(" or AS,
// BEGIN or SELECT, must not say TEMP, TEMPORARY or "temp".name.
func (sc *scanner) ddl(start int, kw string) *Refusal {
	trigger := false
	var prev token
	for {
		tok := sc.next()
		switch {
		case tok.kind == tEOF || tok.kind == tSemi:
			return nil
		case tok.kind == tOther && tok.text == "(":
			return sc.after(start, trigger, false)
		case tok.kind == tOther && tok.text == "." && prev.kind == tQuoted && strings.EqualFold(prev.unquoted(), "temp"):
			return sc.refuseRest(start, "names an object in the temp schema, which lives with the connection, not the database", tempInstead)
		case tok.kind == tWord:
			switch strings.ToUpper(tok.text) {
			case "TEMP", "TEMPORARY":
				return sc.refuseRest(start, "creates or changes an object that lives with the connection, not the database", tempInstead)
			case "TRIGGER":
				trigger = kw == "CREATE"
			case "AS", "SELECT":
				return sc.after(start, trigger, false)
			case "BEGIN":
				return sc.after(start, trigger, true)
			}
		}
		prev = tok
	}
}

// after consumes the rest of a DDL statement once its head is read.
func (sc *scanner) after(start int, trigger, inBody bool) *Refusal {
	if trigger {
		return sc.triggerBody(start, inBody)
	}
	return sc.body(start)
}

// triggerBody consumes a trigger's BEGIN ... END body, whose statements
// end in semicolons of their own; CASE ... END inside them nests. The
// body's statements run later, as the trigger fires, in the transaction of
// the statement that fired it; SQLite allows only DML there, and calls of
// refused functions are refused as in body.
func (sc *scanner) triggerBody(start int, inBody bool) *Refusal {
	cases := 0
	var prev token
	for {
		tok := sc.next()
		switch tok.kind {
		case tEOF:
			return nil
		case tSemi:
			if !inBody {
				return nil
			}
		case tOther:
			if tok.text == "(" && (prev.kind == tWord || prev.kind == tQuoted) {
				if f, ok := sc.calledFunc(prev); ok {
					return sc.refuseCall(start, prev, f)
				}
			}
		case tWord:
			switch strings.ToUpper(tok.text) {
			case "BEGIN":
				inBody = true
			case "CASE":
				cases++
			case "END":
				if cases > 0 {
					cases--
				} else if inBody {
					inBody = false
				}
			}
		}
		prev = tok
	}
}

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.TrimRight(s, "; ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
