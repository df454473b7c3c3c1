package sqlcheck

import "strings"

// Target returns the kind ("insert", "update" or "delete") and the table of
// the data-changing statement query runs, as far as its text says: the
// first statement's, after a WITH clause's common table expressions. It
// returns "" for other statements, and the table's name without its
// schema. REPLACE and INSERT OR REPLACE count as inserts; an upsert's
// updates count as inserts too (the text cannot tell them apart).
func Target(d Dialect, query string) (kind, table string) {
	sc := scanner{s: query, d: d}
	tok := sc.next()
	for tok.kind == tSemi {
		tok = sc.next()
	}
	if tok.kind == tWord && strings.EqualFold(tok.text, "WITH") {
		// Skip the CTEs: the statement's verb is the first word at depth 0
		// after them.
		depth := 0
		for {
			tok = sc.next()
			switch {
			case tok.kind == tEOF || tok.kind == tSemi:
				return "", ""
			case tok.kind == tOther && tok.text == "(":
				depth++
				continue
			case tok.kind == tOther && tok.text == ")":
				depth--
				continue
			}
			if depth == 0 && tok.kind == tWord && isVerb(tok.text) {
				break
			}
		}
	}
	if tok.kind != tWord {
		return "", ""
	}
	switch strings.ToUpper(tok.text) {
	case "INSERT", "REPLACE":
		kind = "insert"
	case "UPDATE":
		kind = "update"
	case "DELETE":
		kind = "delete"
	default:
		return "", ""
	}
	// INSERT [OR x] INTO t, REPLACE INTO t, UPDATE [OR x] [ONLY] t,
	// DELETE FROM [ONLY] t; a schema-qualified name keeps its last part.
	for {
		tok = sc.next()
		if tok.kind == tWord {
			switch strings.ToUpper(tok.text) {
			case "OR":
				sc.next() // ROLLBACK, ABORT, REPLACE, FAIL, IGNORE
				continue
			case "INTO", "FROM", "ONLY":
				continue
			}
		}
		break
	}
	if tok.kind != tWord && tok.kind != tQuoted {
		return "", ""
	}
	table = tok.unquoted()
	for {
		save := sc.i
		dot := sc.next()
		if dot.kind != tOther || dot.text != "." {
			sc.i = save
			break
		}
		name := sc.next()
		if name.kind != tWord && name.kind != tQuoted {
			break
		}
		table = name.unquoted()
	}
	return kind, table
}

func isVerb(w string) bool {
	switch strings.ToUpper(w) {
	case "INSERT", "REPLACE", "UPDATE", "DELETE", "SELECT":
		return true
	}
	return false
}

// schemaWords begin the statements SchemaChange reports.
var schemaWords = map[string]bool{"CREATE": true, "ALTER": true, "DROP": true, "TRUNCATE": true}

// SchemaChange returns the first statement of query that changes the
// schema (CREATE, ALTER, DROP) or empties tables (TRUNCATE, which row
// triggers do not see), shortened as a Refusal's statement, or "". Like
// Target it reads the text only: what a function the text calls does is
// not seen.
func SchemaChange(d Dialect, query string) string {
	if !containsFold(query, "create") && !containsFold(query, "alter") && !containsFold(query, "drop") && !containsFold(query, "truncate") {
		return ""
	}
	sc := scanner{s: query, d: d}
	for {
		start := sc.skip()
		tok := sc.next()
		switch {
		case tok.kind == tEOF:
			return ""
		case tok.kind == tSemi:
			continue
		}
		sc.rest()
		if tok.kind == tWord && schemaWords[strings.ToUpper(tok.text)] {
			return short(sc.s[start:sc.i])
		}
	}
}
