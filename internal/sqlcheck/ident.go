package sqlcheck

import "strings"

// QuoteIdent quotes name as an SQL identifier, the same way on SQLite and
// PostgreSQL: in double quotes, a double quote in it doubled. The scanner
// reads it back (token.unquoted).
func QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
