package sqlcheck

import "strings"

// ownPrefix starts the names of the tables llmtool keeps in the host's
// database: scope settings, used approval tokens, migrations, the audit
// table (by default).
const ownPrefix = "llmtool_"

// changeWords are the keywords of statements that change data or schema,
// in a statement of their own or in a common table expression.
var changeWords = map[string]bool{
	"INSERT": true, "UPDATE": true, "DELETE": true, "REPLACE": true, "MERGE": true, "UPSERT": true,
	"CREATE": true, "DROP": true, "ALTER": true, "TRUNCATE": true, "GRANT": true, "REVOKE": true, "COPY": true,
}

// ownTables refuses a statement that names one of llmtool's own tables
// and changes anything: a tool may read them (a tool that lists the audit
// table, say), but not write them, or it could turn on write tools for a
// scope or forget that an approval was used.
func ownTables(d Dialect, query string) *Refusal {
	if !containsFold(query, ownPrefix) {
		return nil
	}
	sc := scanner{s: query, d: d}
	own, change := false, false
	for {
		tok := sc.next()
		if tok.kind == tEOF {
			break
		}
		if tok.kind != tWord && tok.kind != tQuoted {
			continue
		}
		name := tok.unquoted()
		if len(name) >= len(ownPrefix) && strings.EqualFold(name[:len(ownPrefix)], ownPrefix) {
			own = true
		}
		if tok.kind == tWord && changeWords[strings.ToUpper(name)] {
			change = true
		}
	}
	if own && change {
		return &Refusal{Statement: short(query), Reason: "changes a table llmtool keeps for itself (" + ownPrefix + "*)",
			Instead: "change llmtool's settings through the Registry (Tenants().SetWrites, SetApproval, ...), never in a tool's SQL."}
	}
	return nil
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
