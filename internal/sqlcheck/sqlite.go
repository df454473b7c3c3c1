package sqlcheck

import "strings"

// On SQLite the registry no longer reads a handler's SQL: the engine's
// authorizer (internal/dbconn) decides, and reuses these.

// ReadOnlyPragma reports whether the SQLite pragma name only reports,
// whatever argument it is given: table_info(t), index_list(t),
// integrity_check and the others Check accepts with an argument
// (readPragmas), and the pragmas that have no value to set
// (statusPragmas). SQLite's authorizer, which passes a missing argument
// as "", cannot tell PRAGMA query_only from PRAGMA query_only set to the
// empty string (which turns query_only off), so a pragma that can also set
// a value is not one of them, even where it is written without one.
func ReadOnlyPragma(name string) bool {
	n := strings.ToUpper(name)
	return readPragmas[n] || statusPragmas[n]
}

// statusPragmas report and have no value to set; SQLite ignores an
// argument. Modules run some themselves while a statement runs (FTS5
// reads data_version), under the authorizer of the handler's call.
var statusPragmas = map[string]bool{
	"COLLATION_LIST": true, "COMPILE_OPTIONS": true, "DATA_VERSION": true, "DATABASE_LIST": true,
	"FREELIST_COUNT": true, "FUNCTION_LIST": true, "MODULE_LIST": true, "PAGE_COUNT": true, "PRAGMA_LIST": true,
}

// Short shortens a statement for a Refusal as Check does: whitespace
// collapsed, at most 80 bytes.
func Short(statement string) string { return short(statement) }
