package sqlcheck

import "strings"

// A refusedFunc is a function that acts on the session, the server or
// files rather than on the call's data, so calling it from a query would
// leave state behind the call's transaction or reach outside it.
type refusedFunc struct {
	reason  string // completes "calls NAME, which ..."
	instead string
	args    int // refused only when called with this many arguments; 0: always
	// named: refused unless the first argument is one plain string that
	// names no table of llmtool's ('notes_id_seq'): a sequence function
	// takes a regclass, which a string, an expression or an OID gives.
	named bool
}

const (
	advisoryInstead = "use pg_advisory_xact_lock or pg_try_advisory_xact_lock, whose locks end with the call's transaction."
	fileInstead     = "pass file contents as query arguments; reading and writing files is the host's business."
	serverInstead   = "leave server administration to the host's operators."
	notifyInstead   = "return what changed from the handler and let the host notify its listeners."
	linkInstead     = "give the tool what it needs in the host's database, through its module."
	sqlTextInstead  = "run the query as a statement of its own, which llmtool checks."
	namedInstead    = "name the tables in the query (SELECT ... FROM t), where llmtool checks them; build XML with xmlelement, xmlforest and xmlagg."
)

var (
	sessionSettings = refusedFunc{reason: "changes the session's settings", instead: pgSetInstead}
	sessionLock     = refusedFunc{reason: "takes a session-level advisory lock, which outlives the call's transaction", instead: advisoryInstead}
	sessionUnlock   = refusedFunc{reason: "releases session-level advisory locks, which belong to the host", instead: advisoryInstead}
	serverFile      = refusedFunc{reason: "reads or writes files on the database server", instead: fileInstead}
	serverAdmin     = refusedFunc{reason: "acts on the server or on other sessions, outside the call's transaction", instead: serverInstead}
	sqlText         = refusedFunc{reason: "runs SQL given as text, which llmtool cannot check", instead: sqlTextInstead}
	tableByValue    = refusedFunc{reason: "reads a table or a cursor named by a value (a string or an OID), which llmtool cannot check", instead: namedInstead}
	everyTable      = refusedFunc{reason: "reads every table of the database or of a schema, llmtool's own among them", instead: namedInstead}
	rawPages        = refusedFunc{reason: "reads or changes the raw pages of a table or of the write-ahead log, which hold the rows of every table", instead: "read and change data through its tables."}
	ownSequence     = refusedFunc{reason: "names its sequence by a value that may be one of llmtool's (" + ownPrefix + "*): setting it would make llmtool's next history entries collide, reading it counts every tenant's", instead: "name the host's sequence as a plain string: setval('notes_id_seq', n).", named: true}
	sessionRandom   = refusedFunc{reason: "seeds the session's random numbers, which outlives the call", instead: "call random() unseeded; for repeatable values, derive them from the arguments (md5, hashtext)."}
)

// refusedFuncs are refused by lower-case name. A call is refused whether
// the name is written plain, in any case, quoted ("set_config"), with
// Unicode escapes (U&"\0073et_config") or qualified
// (pg_catalog.set_config): the name is the identifier before "(".
var refusedFuncs = map[string]refusedFunc{
	"load_extension":      {reason: "changes the connection's state", instead: setInstead},
	"set_config":          sessionSettings,
	"lo_import":           serverFile,
	"lo_export":           serverFile,
	"pg_read_file":        serverFile,
	"pg_read_binary_file": serverFile,
	"pg_read_file_old":    serverFile,
	"pg_stat_file":        serverFile,
	"pg_notify":           {reason: "notifies other sessions on the server", instead: notifyInstead},
	"setseed":             sessionRandom,

	"query_to_xml":               sqlText,
	"query_to_xmlschema":         sqlText,
	"query_to_xml_and_xmlschema": sqlText,
	"ts_stat":                    sqlText,
	"ts_rewrite":                 {reason: sqlText.reason, instead: "use ts_rewrite(query, target, substitute), which takes tsquery values instead of a query.", args: 2},

	// A table named by a value, not in the text: the check cannot tell
	// the host's tables from llmtool's.
	"table_to_xml":                  tableByValue,
	"table_to_xmlschema":            tableByValue,
	"table_to_xml_and_xmlschema":    tableByValue,
	"cursor_to_xml":                 tableByValue,
	"cursor_to_xmlschema":           tableByValue,
	"schema_to_xml":                 everyTable,
	"schema_to_xmlschema":           everyTable,
	"schema_to_xml_and_xmlschema":   everyTable,
	"database_to_xml":               everyTable,
	"database_to_xmlschema":         everyTable,
	"database_to_xml_and_xmlschema": everyTable,
	"connectby":                     tableByValue, // tablefunc
	"xpath_table":                   tableByValue, // xml2
	"setval":                        ownSequence,
	"pg_sequence_last_value":        ownSequence,
	"get_raw_page":                  rawPages, // pageinspect
	"bt_page_items":                 rawPages, // pageinspect, by an index's name

	"pg_terminate_backend":           serverAdmin,
	"pg_cancel_backend":              serverAdmin,
	"pg_reload_conf":                 serverAdmin,
	"pg_rotate_logfile":              serverAdmin,
	"pg_promote":                     serverAdmin,
	"pg_switch_wal":                  serverAdmin,
	"pg_backup_start":                serverAdmin,
	"pg_backup_stop":                 serverAdmin,
	"pg_start_backup":                serverAdmin,
	"pg_stop_backup":                 serverAdmin,
	"pg_drop_replication_slot":       serverAdmin,
	"pg_logical_emit_message":        serverAdmin,
	"pg_log_backend_memory_contexts": serverAdmin,
	"pg_rotate_logfile_old":          serverAdmin,
	"pg_replication_slot_advance":    serverAdmin,
	"pg_import_system_collations":    serverAdmin,
	"pg_stop_making_pinned_objects":  serverAdmin,
	"pg_nextoid":                     serverAdmin,
}

// refusedFuncPrefixes name families of functions, in the order they are
// tried. The transaction-level advisory locks (pg_advisory_xact_lock,
// pg_try_advisory_xact_lock and their _shared forms) match none.
var refusedFuncPrefixes = []struct {
	prefix string
	f      refusedFunc
}{
	{"pg_advisory_lock", sessionLock},     // pg_advisory_lock, _shared
	{"pg_try_advisory_lock", sessionLock}, // pg_try_advisory_lock, _shared
	{"pg_advisory_unlock", sessionUnlock}, // _unlock, _unlock_shared, _unlock_all
	{"dblink", refusedFunc{reason: "runs SQL on another connection, outside the call's transaction", instead: linkInstead}},
	{"pg_file_", serverFile},
	{"pg_ls_", serverFile},                  // pg_ls_dir, _logdir, _waldir, _tmpdir, ...                // adminpack: pg_file_write, _rename, _unlink, _sync
	{"pg_stat_reset", serverAdmin},          // pg_stat_reset, _shared, _single_table_counters, ...
	{"pg_create_", serverAdmin},             // restore points and replication slots
	{"pg_copy_", serverAdmin},               // pg_copy_logical_replication_slot, ...
	{"pg_replication_origin_", serverAdmin}, // origins and their session setup
	{"pg_logical_slot_", serverAdmin},       // reading a slot's changes consumes them
	{"pg_wal_replay_", serverAdmin},         // pausing and resuming recovery
	{"binary_upgrade_", serverAdmin},        // pg_upgrade's own
	{"crosstab", sqlText},                   // tablefunc: crosstab, crosstab2, ...
	{"heap_force_", rawPages},               // pg_surgery: heap_force_kill, heap_force_freeze
	{"pg_get_wal_", rawPages},               // pg_walinspect: records and blocks
}

// maxFuncName bounds the names lookupFunc compares.
const maxFuncName = 48

// lookupFunc returns the refusal for a call of the function named by an
// identifier token (a word or a quoted identifier), if it is refused.
func lookupFunc(tok token) (refusedFunc, bool) {
	name := tok.text
	if tok.kind == tQuoted {
		name = tok.unquoted()
	}
	if len(name) < len("dblink") || len(name) > maxFuncName {
		return refusedFunc{}, false
	}
	// Every refused name starts with b, c, d, g, h, l, p, q, s, t or x:
	// most identifiers end here, without a copy.
	switch name[0] | 0x20 {
	case 'b', 'c', 'd', 'g', 'h', 'l', 'p', 'q', 's', 't', 'x':
	default:
		return refusedFunc{}, false
	}
	var buf [maxFuncName]byte
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	lower := buf[:len(name)]
	if f, ok := refusedFuncs[string(lower)]; ok {
		return f, true
	}
	for _, p := range refusedFuncPrefixes {
		if len(lower) >= len(p.prefix) && string(lower[:len(p.prefix)]) == p.prefix {
			return p.f, true
		}
	}
	return refusedFunc{}, false
}

// calledFunc returns the refusal for a call of the function named by
// name, whose "(" sc has just passed.
func (sc *scanner) calledFunc(name token) (refusedFunc, bool) {
	f, ok := lookupFunc(name)
	switch {
	case !ok:
		return f, false
	case f.named:
		return f, !sc.plainFirstArg()
	case f.args == 0:
		return f, true
	}
	return f, sc.countArgs() == f.args
}

// plainFirstArg reports whether the call whose "(" sc has just passed
// starts with one plain '...' string, without escapes, that names no
// table of llmtool's, and a "," or ")" after it. It consumes nothing.
func (sc *scanner) plainFirstArg() bool {
	save := sc.i
	defer func() { sc.i = save }()
	arg := sc.next()
	if arg.kind != tString || arg.text[0] != '\'' || strings.IndexByte(arg.text, '\\') >= 0 || containsFold(arg.text, "llmtool") {
		return false
	}
	next := sc.next()
	return next.kind == tOther && (next.text == "," || next.text == ")")
}

// countArgs counts the arguments of the call whose "(" sc has just
// passed, without consuming them.
func (sc *scanner) countArgs() int {
	save := sc.i
	defer func() { sc.i = save }()
	commas, depth := 0, 0
	for empty := true; ; empty = false {
		tok := sc.next()
		switch {
		case tok.kind == tEOF || tok.kind == tSemi:
			return commas + 1
		case tok.kind != tOther:
		case tok.text == "(" || tok.text == "[":
			depth++
		case tok.text == ")" || tok.text == "]":
			if depth == 0 {
				if empty {
					return 0
				}
				return commas + 1
			}
			depth--
		case tok.text == "," && depth == 0:
			commas++
		}
	}
}

// refuseCall refuses the statement for calling the function named by
// name.
func (sc *scanner) refuseCall(start int, name token, f refusedFunc) *Refusal {
	return sc.refuseRest(start, "calls "+name.text+", which "+f.reason, f.instead)
}
