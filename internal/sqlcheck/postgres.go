package sqlcheck

import "strings"

// PostgreSQL's rules. A handler's statement runs inside llmtool's
// transaction on a pooled connection, so besides the statements that end
// the transaction, the refusals below close what PostgreSQL keeps per
// session rather than per transaction (settings once the transaction
// commits, session-level advisory locks and prepared statements even when
// it rolls back, cursors WITH HOLD, LISTEN, temporary objects), what acts
// outside the transaction or the database (COPY with files and programs,
// dblink, server functions, ALTER SYSTEM, VACUUM, CHECKPOINT), and code
// whose statements the check cannot see (DO, CREATE FUNCTION and
// PROCEDURE, extensions).
//
// Allowed on PostgreSQL besides the shared list: CALL (a procedure that
// runs COMMIT or ROLLBACK inside llmtool's transaction fails with
// "invalid transaction termination"; its arguments are checked like a
// SELECT's), COMMENT, REFRESH MATERIALIZED VIEW (it rewrites the view's
// data inside the transaction and rolls back with it), SET CONSTRAINTS
// (it lasts until the transaction ends) and CREATE UNLOGGED TABLE (an
// ordinary table of the database, only not crash-safe).

const (
	pgSetInstead      = "configure sessions where the host opens the database (the DSN's options) or with ALTER ROLE/DATABASE ... SET as the administrator; read a setting with SHOW or current_setting()."
	pgOtherInstead    = "a tool may run SELECT, WITH, VALUES, TABLE, INSERT, UPDATE, DELETE, MERGE, TRUNCATE, LOCK, SHOW, CALL, COMMENT, REFRESH MATERIALIZED VIEW, SET CONSTRAINTS, and CREATE, ALTER, DROP, ANALYZE or REINDEX on the host's database."
	prepareInstead    = "run the statement itself, with its arguments: the driver prepares and caches statements."
	cursorInstead     = "run the query with the handler's Query and read its rows; page with LIMIT and a keyset."
	listenInstead     = "listen on a connection the host keeps for it, outside the tool's calls."
	copyInstead       = "insert rows with INSERT (many at once with several VALUES rows or unnest) and read them with SELECT; files, programs and bulk loads are the host's business."
	doInstead         = "write the logic in the handler, one statement at a time, or call a function the host's migrations define."
	codeInstead       = "define functions, procedures, operators and extensions in the host's migrations; a tool may call them."
	securityInstead   = "manage roles and privileges in the host's migrations or as the database administrator; a tool changes data and schema."
	serverConfInstead = "leave the configuration of the server and its databases to the administrator."
	discardInstead    = "leave the session to llmtool and the host: llmtool hands each connection back as it found it."
	schemaReason      = "creates or renames a schema, which can shadow the application's tables for every later call through the search path"
	schemaInstead     = "create and rename schemas in the application's own migrations, not in a tool's SQL."
	triggerArgReason  = "gives its trigger function a string that names, or may name, a table llmtool keeps for itself (" + ownPrefix + "*)"
	triggerArgInstead = "pass trigger functions plain names of the host's tables ('notes'), without escapes."
	foreignReason     = "creates or changes a foreign table, whose rows another connection or a file holds, outside the call's transaction"
	foreignInstead    = "define foreign tables in the host's migrations; a tool may read them."

	tempReason       = "creates or changes an object that lives with the connection, not the database"
	tempSchemaReason = "names an object in the temp schema, which lives with the connection, not the database"
	setReason        = "changes the settings of the session or of the call's transaction"
	codeReason       = "defines or changes code that llmtool cannot check"
	securityReason   = "changes roles, privileges or security labels"
	serverReason     = "configures the server or a whole database"
)

var (
	cursorRefusal   = [2]string{"declares or uses a cursor, which can outlive the call's transaction (WITH HOLD)", cursorInstead}
	listenRefusal   = [2]string{"changes what the session listens to, which outlives the call", listenInstead}
	securityRefusal = [2]string{securityReason, securityInstead}
	executeRefusal  = [2]string{"runs a statement prepared on the session, which llmtool cannot check", prepareInstead}
)

// pgRefused are the statements refused on PostgreSQL, by first keyword,
// before the shared list (BEGIN, COMMIT, ...) is consulted. SET and
// PREPARE have rules of their own in pgStatement.
var pgRefused = map[string][2]string{
	"RESET":      {"changes the session's settings", pgSetInstead},
	"DISCARD":    {"discards the session's state (prepared statements, temporary tables, plans), which belongs to the host", discardInstead},
	"LOAD":       {"loads a shared library into the session", "load libraries in the server's configuration (shared_preload_libraries or session_preload_libraries)."},
	"PREPARE":    {"prepares a statement on the session, which outlives the call's transaction", prepareInstead},
	"EXECUTE":    executeRefusal,
	"DEALLOCATE": {"removes a statement prepared on the session, which belongs to the host's driver", prepareInstead},
	"DECLARE":    cursorRefusal,
	"FETCH":      cursorRefusal,
	"MOVE":       cursorRefusal,
	"CLOSE":      cursorRefusal,
	"LISTEN":     listenRefusal,
	"UNLISTEN":   listenRefusal,
	"NOTIFY":     {"notifies other sessions on the server", notifyInstead},
	"COPY":       {"copies between a table and a file, a program or the client's stream, outside the queries llmtool checks", copyInstead},
	"DO":         {"runs an anonymous code block, whose statements llmtool cannot check", doInstead},
	"GRANT":      securityRefusal,
	"REVOKE":     securityRefusal,
	"REASSIGN":   securityRefusal,
	"SECURITY":   securityRefusal, // SECURITY LABEL
	"VACUUM":     {"rewrites the database outside the call's transaction", "run VACUUM from the host's maintenance code."},
	"CLUSTER":    {"rewrites a table for maintenance, holding an exclusive lock", "run CLUSTER from the host's maintenance code."},
	"CHECKPOINT": {"forces a checkpoint of the whole server", "leave checkpoints to the server, or run CHECKPOINT from the host's maintenance code."},
}

// pgAllowed are PostgreSQL's statements a handler may run besides the
// shared list.
var pgAllowed = map[string]bool{"CALL": true, "COMMENT": true, "REFRESH": true}

// pgCreateModifiers may stand between CREATE and the kind of object it
// creates. TEMP and TEMPORARY are refused there.
var pgCreateModifiers = map[string]bool{
	"OR": true, "REPLACE": true, "GLOBAL": true, "LOCAL": true, "UNLOGGED": true, "UNIQUE": true,
	"MATERIALIZED": true, "RECURSIVE": true, "TRUSTED": true, "PROCEDURAL": true, "CONSTRAINT": true, "DEFAULT": true,
}

// pgStatement checks the statements whose rules are PostgreSQL's own. It
// reports done=false for the rest, which the shared rules check.
func (sc *scanner) pgStatement(kw string, start int) (r *Refusal, done bool) {
	switch kw {
	case "SET":
		if sc.peekWord("CONSTRAINTS") {
			return sc.body(start), true
		}
		return sc.refuseRest(start, setReason, pgSetInstead), true
	case "PREPARE":
		if sc.peekWord("TRANSACTION") {
			return sc.refuseRest(start, "controls the transaction", txInstead), true
		}
	case "EXPLAIN":
		return sc.pgExplain(start), true
	case "CREATE", "ALTER", "DROP":
		return sc.pgDDL(start, kw), true
	}
	if rr, ok := pgRefused[kw]; ok {
		return sc.refuseRest(start, rr[0], rr[1]), true
	}
	if pgAllowed[kw] {
		return sc.body(start), true
	}
	return nil, false
}

// peekWord reports whether the next token is the word w, without
// consuming it.
func (sc *scanner) peekWord(w string) bool {
	save := sc.i
	t := sc.next()
	sc.i = save
	return t.kind == tWord && strings.EqualFold(t.text, w)
}

// pgExplain checks EXPLAIN [ANALYZE] [VERBOSE] stmt and EXPLAIN (options)
// stmt: the explained statement runs under ANALYZE, so it is checked as a
// statement of its own.
func (sc *scanner) pgExplain(start int) *Refusal {
	next := sc.next()
	for next.kind == tWord {
		switch strings.ToUpper(next.text) {
		case "ANALYZE", "ANALYSE", "VERBOSE":
			next = sc.next()
			continue
		}
		break
	}
	if next.kind == tOther && next.text == "(" {
		save := sc.i
		t := sc.next()
		if t.kind == tWord && !isQueryStart(t.text) || t.kind == tQuoted {
			// An option list: pass it.
			for depth := 1; depth > 0; {
				switch {
				case t.kind == tEOF || t.kind == tSemi:
					return nil
				case t.kind == tOther && t.text == "(":
					depth++
				case t.kind == tOther && t.text == ")":
					depth--
				}
				if depth > 0 {
					t = sc.next()
				}
			}
			next = sc.next()
		} else {
			sc.i = save // (SELECT ...)
		}
	}
	if next.kind == tEOF || next.kind == tSemi {
		return nil
	}
	return sc.statement(next, start)
}

// isQueryStart reports whether a word starts a query in parentheses.
func isQueryStart(w string) bool {
	for _, k := range [...]string{"SELECT", "WITH", "VALUES", "TABLE"} {
		if strings.EqualFold(w, k) {
			return true
		}
	}
	return false
}

// pgDDL checks CREATE, ALTER and DROP on PostgreSQL: by the kind of object
// (code, roles, the server), by TEMP before it, and then the rest of the
// statement as scan does with ddl set.
func (sc *scanner) pgDDL(start int, kw string) *Refusal {
	var obj, obj2 string
	for {
		save := sc.i
		tok := sc.next()
		if tok.kind != tWord {
			sc.i = save
			break
		}
		w := strings.ToUpper(tok.text)
		if kw == "CREATE" && (w == "TEMP" || w == "TEMPORARY") {
			return sc.refuseRest(start, tempReason, tempInstead)
		}
		if kw == "CREATE" && pgCreateModifiers[w] {
			continue
		}
		obj = w
		save = sc.i
		if t := sc.next(); t.kind == tWord {
			obj2 = strings.ToUpper(t.text)
		}
		sc.i = save
		break
	}
	switch obj {
	case "FUNCTION", "PROCEDURE", "ROUTINE", "AGGREGATE", "OPERATOR", "LANGUAGE", "EXTENSION", "TRANSFORM", "EVENT":
		if kw != "DROP" {
			return sc.refuseRest(start, codeReason, codeInstead)
		}
	case "ROLE", "USER", "GROUP", "OWNED":
		return sc.refuseRest(start, securityReason, securityInstead)
	case "DEFAULT":
		if obj2 == "PRIVILEGES" {
			return sc.refuseRest(start, securityReason, securityInstead)
		}
	case "SYSTEM", "DATABASE", "TABLESPACE", "SUBSCRIPTION", "PUBLICATION", "SERVER":
		return sc.refuseRest(start, serverReason, serverConfInstead)
	case "FOREIGN":
		switch {
		case obj2 == "DATA":
			return sc.refuseRest(start, serverReason, serverConfInstead)
		case obj2 == "TABLE" && kw != "DROP":
			// Its rows come from another connection or a file, by names
			// in its options ('llmtool_changes' on a loopback server).
			return sc.refuseRest(start, foreignReason, foreignInstead)
		}
	case "SCHEMA":
		if kw == "CREATE" || kw == "ALTER" {
			// A schema named like the connecting user comes first in the
			// default search path ("$user", public), so a table in it
			// shadows the host's for every later call, in every tenant.
			return sc.refuseRest(start, schemaReason, schemaInstead)
		}
	case "TRIGGER":
		if sc.triggerArgNamesOwn() {
			return sc.refuseRest(start, triggerArgReason, triggerArgInstead)
		}
	case "RULE":
		// A rule's action runs as the rule fires; its statements are
		// checked as the text's own, but NOTIFY may stand alone there.
		save := sc.i
		for tok := sc.next(); tok.kind != tEOF && tok.kind != tSemi; tok = sc.next() {
			if tok.kind == tWord && strings.EqualFold(tok.text, "NOTIFY") {
				return sc.refuseRest(start, pgRefused["NOTIFY"][0], pgRefused["NOTIFY"][1])
			}
		}
		sc.i = save
	}
	return sc.scan(start, true)
}

// triggerArgNamesOwn reports whether the rest of a CREATE TRIGGER holds a
// string that names one of llmtool's tables, or that the check cannot
// read as plain text. A trigger function gets its arguments as strings,
// and some use them as table names in SQL of their own (refint's
// check_foreign_key deletes from the table its arguments name), where
// 'llmtool_changes' is the table. Escapes (E'...', U&'...', a backslash)
// could spell the name, and dollar quotes hide nothing either way, but
// are refused alike: a trigger's arguments are names and words. It
// consumes nothing.
func (sc *scanner) triggerArgNamesOwn() bool {
	save := sc.i
	defer func() { sc.i = save }()
	var prev token
	for {
		tok := sc.next()
		switch tok.kind {
		case tEOF, tSemi:
			return false
		case tString:
			if tok.text[0] != '\'' || strings.IndexByte(tok.text, '\\') >= 0 || containsFold(tok.text, "llmtool") ||
				prev.kind == tOther && prev.text == "&" {
				return true
			}
		}
		prev = tok
	}
}

// isTempSchema reports whether tok names PostgreSQL's temporary schema:
// pg_temp, or pg_temp_N as the server names it.
func isTempSchema(tok token) bool {
	if tok.kind != tWord && tok.kind != tQuoted {
		return false
	}
	n := tok.unquoted()
	if len(n) < 7 || !strings.EqualFold(n[:7], "pg_temp") {
		return false
	}
	if len(n) == 7 {
		return true
	}
	if n[7] != '_' || len(n) == 8 {
		return false
	}
	for _, c := range []byte(n[8:]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// peekDot reports whether the next token is ".", without consuming it.
func (sc *scanner) peekDot() bool {
	save := sc.i
	t := sc.next()
	sc.i = save
	return t.kind == tOther && t.text == "."
}
