package sqlcheck

import "strings"

// ownPrefix starts the names of the tables llmtool keeps in the host's
// database: scope settings, used approval tokens, migrations, the audit
// table (by default).
const ownPrefix = "llmtool_"

// changeWords are the keywords of statements that change data or schema,
// in a statement of their own or in a common table expression, or that
// lock a table for the rest of the call's transaction. INTO counts for
// SELECT ... INTO, which creates a table.
var changeWords = map[string]bool{
	"INSERT": true, "UPDATE": true, "DELETE": true, "REPLACE": true, "MERGE": true, "UPSERT": true,
	"CREATE": true, "DROP": true, "ALTER": true, "TRUNCATE": true, "GRANT": true, "REVOKE": true, "COPY": true,
	"INTO": true, "LOCK": true,
}

// writeWords are the keywords after which PostgreSQL names the table a
// statement writes to: INSERT INTO t, UPDATE [ONLY] t, DELETE FROM [ONLY]
// t, MERGE INTO [ONLY] t, TRUNCATE [TABLE] [ONLY] t, u.
var writeWords = map[string]bool{"INSERT": true, "UPDATE": true, "DELETE": true, "MERGE": true, "TRUNCATE": true}

// statsTables are PostgreSQL's column statistics: they hold sample values
// (most common values, histogram bounds) of every analyzed table's
// columns, llmtool's own among them.
var statsTables = map[string]bool{
	"pg_stats": true, "pg_statistic": true, "pg_stats_ext": true, "pg_stats_ext_exprs": true, "pg_statistic_ext_data": true,
}

const (
	ownReason       = "changes a table llmtool keeps for itself (" + ownPrefix + "*)"
	ownInstead      = "change llmtool's settings through the Registry (Tenants().SetWrites, SetApproval, ...), never in a tool's SQL."
	ownReadReason   = "names a table llmtool keeps for itself (" + ownPrefix + "*), which no tool may read"
	ownReadInstead  = "llmtool's tables hold every tenant's settings, approvals and history: read them through the Registry (Tenants().Writes, changeset.List, the list_changes tool), never in a tool's SQL."
	statsReason     = "reads the planner's column statistics, which hold sample values of every table, llmtool's own among them"
	statsInstead    = "read the host's tables themselves; leave column statistics to the planner."
	settingsReason  = "names pg_settings in a statement that changes data or schema, and a write to pg_settings changes the session's settings"
	catalogReasonOf = "writes to the system catalog "
	catalogInstead  = "leave the system catalogs to PostgreSQL: change the schema with CREATE, ALTER and DROP, and configure sessions where the host opens the database."
)

// protected refuses a text that reaches what is not the host's data: one
// of llmtool's own tables, read or written (they hold every tenant's
// settings, used approvals, audit and history: a write could turn on
// write tools for a tenant or forget that an approval was used, a read
// would show one tenant's history to another), and on PostgreSQL the
// server's settings through pg_settings (whose update rule calls
// set_config at session level, so the next call on the pooled connection
// would run with them), the system catalogs, written, and the column
// statistics, read (pg_stats shows sample values of llmtool's tables).
// Functions that read a table by a name held in a value (table_to_xml,
// database_to_xml, ...) are refused wherever they are called (funcs.go).
//
// Names are compared as PostgreSQL and SQLite resolve them: unquoted ones
// in any case, quoted ones ("llmtool_x"), U&"..." identifiers decoded
// (U&"llmtool\005Fx"), and a qualified name (public.llmtool_x) by its
// last part. The pass is coarse on purpose: a text that names such a
// table anywhere is refused (as changing it when the text changes
// anything anywhere), so that no way of reaching the table through a
// view, a rule, a trigger or a common table expression is missed; a
// string that holds the name ('llmtool_x') names nothing. backslashes reads '...' as PostgreSQL does
// with standard_conforming_strings off (see Check).
func protected(d Dialect, query string, backslashes bool) *Refusal {
	if !mayNameProtected(d, query) {
		return nil
	}
	sc := scanner{s: query, d: d, backslashes: backslashes}
	own, settings, change, stats := false, false, false, false
	catalog := "" // the first system catalog a statement writes to
	var ddl ddlHead
	for {
		tok := sc.next()
		if tok.kind == tEOF {
			break
		}
		if d == Postgres && catalog == "" {
			catalog = ddl.next(&sc, tok)
		}
		if tok.kind != tWord && tok.kind != tQuoted {
			continue
		}
		name := tok.unquoted()
		switch {
		case hasPrefixFold(name, ownPrefix):
			own = true
		case d == Postgres && strings.EqualFold(name, "pg_settings"):
			settings = true
		case d == Postgres && hasPrefixFold(name, "pg_stat") && statsTables[strings.ToLower(name)]:
			stats = true
		}
		if tok.kind != tWord {
			continue
		}
		kw := strings.ToUpper(name)
		if changeWords[kw] {
			change = true
		}
		if d == Postgres && catalog == "" && writeWords[kw] {
			catalog = sc.catalogTarget(kw)
		}
	}
	switch {
	case own && change:
		return &Refusal{Statement: short(query), Reason: ownReason, Instead: ownInstead}
	case settings && change:
		return &Refusal{Statement: short(query), Reason: settingsReason, Instead: pgSetInstead}
	case catalog != "":
		return &Refusal{Statement: short(query), Reason: catalogReasonOf + catalog, Instead: catalogInstead}
	case own:
		return &Refusal{Statement: short(query), Reason: ownReadReason, Instead: ownReadInstead}
	case stats:
		return &Refusal{Statement: short(query), Reason: statsReason, Instead: statsInstead}
	}
	return nil
}

// mayNameProtected reports whether query may name a table protected
// checks for, so that most texts skip its scan. On PostgreSQL a U&"..."
// identifier may spell any name with escapes.
func mayNameProtected(d Dialect, query string) bool {
	if containsFold(query, ownPrefix) {
		return true
	}
	return d == Postgres && (containsFold(query, "pg_") || containsFold(query, "information_schema") || containsFold(query, `u&"`))
}

// catalogTarget returns the name of the table that the statement whose
// keyword kw (one of writeWords) sc has just passed writes to, if it is a
// system catalog's, or "". It consumes nothing. A catalog's table is one
// in a schema named pg_* (pg_catalog, pg_toast) or information_schema, or
// an unqualified pg_* name, which PostgreSQL looks up in pg_catalog
// first. TRUNCATE's every table counts.
func (sc *scanner) catalogTarget(kw string) string {
	save := sc.i
	defer func() { sc.i = save }()
	for {
		tok := sc.next()
		if tok.kind == tWord {
			switch strings.ToUpper(tok.text) {
			case "INTO", "FROM", "TABLE", "ONLY":
				continue
			}
		}
		if tok.kind != tWord && tok.kind != tQuoted {
			return ""
		}
		parts := []string{tok.unquoted()}
		next := sc.next()
		for next.kind == tOther && next.text == "." {
			n := sc.next()
			if n.kind != tWord && n.kind != tQuoted {
				return ""
			}
			parts = append(parts, n.unquoted())
			next = sc.next()
		}
		if isCatalog(parts) {
			return strings.Join(parts, ".")
		}
		if kw != "TRUNCATE" {
			return ""
		}
		if next.kind == tOther && next.text == "*" { // TRUNCATE t * (and its descendants)
			next = sc.next()
		}
		if next.kind != tOther || next.text != "," {
			return ""
		}
	}
}

// ddlHead follows the statements of a text for protected, to find the
// objects a CREATE, ALTER or DROP names in its head (up to its first "(",
// or the AS, SELECT, WITH, VALUES, BEGIN or EXECUTE that starts its body;
// a rule's head runs on through ON ... TO table, up to DO or WHERE): the
// table, view, index or trigger it creates, changes or drops, and the
// table an index, trigger, rule or policy is ON or TO. PostgreSQL refuses
// such statements on pg_catalog's and pg_toast's relations unless
// allow_system_table_mods is on, but lets a superuser create, replace and
// drop objects in information_schema, which every tool that reads it
// would then see. Types and defaults, which name pg_catalog's objects
// more often, come later or in parentheses.
type ddlHead struct {
	started bool // a statement's first word has been seen
	in      bool // in the head of a CREATE, ALTER or DROP
	rule    bool // the statement creates a rule
}

// next takes the text's next token and returns the system object the
// head of a CREATE, ALTER or DROP names there, or "".
func (h *ddlHead) next(sc *scanner, tok token) string {
	switch {
	case tok.kind == tSemi:
		*h = ddlHead{}
		return ""
	case !h.started:
		h.started = true
		if tok.kind == tWord {
			switch strings.ToUpper(tok.text) {
			case "CREATE", "ALTER", "DROP":
				h.in = true
			}
		}
		return ""
	case !h.in:
		return ""
	case tok.kind == tOther && tok.text == "(":
		h.in = false
		return ""
	case tok.kind == tWord:
		switch strings.ToUpper(tok.text) {
		case "RULE":
			h.rule = true
		case "AS":
			h.in = h.rule
		case "SELECT", "WITH", "VALUES", "BEGIN", "EXECUTE":
			h.in = false
		case "DO", "WHERE":
			h.in = !h.rule
		}
		if !h.in {
			return ""
		}
	}
	if tok.kind != tWord && tok.kind != tQuoted {
		return ""
	}
	schema := tok.unquoted()
	if !strings.EqualFold(schema, "information_schema") && !hasPrefixFold(schema, "pg_toast") {
		return ""
	}
	save := sc.i
	defer func() { sc.i = save }()
	if dot := sc.next(); dot.kind != tOther || dot.text != "." {
		return ""
	}
	if name := sc.next(); name.kind == tWord || name.kind == tQuoted {
		return schema + "." + name.unquoted()
	}
	return ""
}

// isCatalog reports whether the name's parts name a system catalog's
// table (see catalogTarget).
func isCatalog(parts []string) bool {
	if len(parts) == 1 {
		return hasPrefixFold(parts[0], "pg_")
	}
	schema := parts[len(parts)-2]
	return hasPrefixFold(schema, "pg_") || strings.EqualFold(schema, "information_schema")
}

// hasPrefixFold reports whether s starts with the lower-case ASCII prefix
// in any case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// containsFold reports whether s contains the lower-case ASCII substr in
// any case, without allocating.
func containsFold(s, substr string) bool {
	for i := 0; i+len(substr) <= len(s); i++ {
		j := 0
		for ; j < len(substr); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != substr[j] {
				break
			}
		}
		if j == len(substr) {
			return true
		}
	}
	return false
}
