package sqlcheck

// A refusedFunc is a function that acts on the session, the server or
// files rather than on the call's data, so calling it from a query would
// leave state behind the call's transaction or reach outside it.
type refusedFunc struct {
	reason  string // completes "calls NAME, which ..."
	instead string
}

const (
	advisoryInstead = "use pg_advisory_xact_lock or pg_try_advisory_xact_lock, whose locks end with the call's transaction."
	fileInstead     = "pass file contents as query arguments; reading and writing files is the host's business."
	serverInstead   = "leave server administration to the host's operators."
	notifyInstead   = "return what changed from the handler and let the host notify its listeners."
	linkInstead     = "give the tool what it needs in the host's database, through its module."
)

var (
	sessionSettings = refusedFunc{"changes the session's settings", pgSetInstead}
	sessionLock     = refusedFunc{"takes a session-level advisory lock, which outlives the call's transaction", advisoryInstead}
	sessionUnlock   = refusedFunc{"releases session-level advisory locks, which belong to the host", advisoryInstead}
	serverFile      = refusedFunc{"reads or writes files on the database server", fileInstead}
	serverAdmin     = refusedFunc{"acts on the server or on other sessions, outside the call's transaction", serverInstead}
)

// refusedFuncs are refused by lower-case name. A call is refused whether
// the name is written plain, in any case, quoted ("set_config"), with
// Unicode escapes (U&"\0073et_config") or qualified
// (pg_catalog.set_config): the name is the identifier before "(".
var refusedFuncs = map[string]refusedFunc{
	"load_extension":      {"changes the connection's state", setInstead},
	"set_config":          sessionSettings,
	"lo_import":           serverFile,
	"lo_export":           serverFile,
	"pg_read_file":        serverFile,
	"pg_read_binary_file": serverFile,
	"pg_ls_dir":           serverFile,
	"pg_stat_file":        serverFile,
	"pg_notify":           {"notifies other sessions on the server", notifyInstead},

	"pg_terminate_backend":     serverAdmin,
	"pg_cancel_backend":        serverAdmin,
	"pg_reload_conf":           serverAdmin,
	"pg_rotate_logfile":        serverAdmin,
	"pg_promote":               serverAdmin,
	"pg_switch_wal":            serverAdmin,
	"pg_backup_start":          serverAdmin,
	"pg_backup_stop":           serverAdmin,
	"pg_start_backup":          serverAdmin,
	"pg_stop_backup":           serverAdmin,
	"pg_drop_replication_slot": serverAdmin,
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
	{"dblink", refusedFunc{"runs SQL on another connection, outside the call's transaction", linkInstead}},
	{"pg_file_", serverFile},                // adminpack: pg_file_write, _rename, _unlink, _sync
	{"pg_stat_reset", serverAdmin},          // pg_stat_reset, _shared, _single_table_counters, ...
	{"pg_create_", serverAdmin},             // restore points and replication slots
	{"pg_copy_", serverAdmin},               // pg_copy_logical_replication_slot, ...
	{"pg_replication_origin_", serverAdmin}, // origins and their session setup
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
	// Every refused name starts with d, l, p or s: most identifiers end
	// here, without a copy.
	switch name[0] | 0x20 {
	case 'd', 'l', 'p', 's':
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

// refuseCall refuses the statement for calling the function named by
// name.
func (sc *scanner) refuseCall(start int, name token, f refusedFunc) *Refusal {
	return sc.refuseRest(start, "calls "+name.text+", which "+f.reason, f.instead)
}
