package sqlcheck

import (
	"strconv"
	"strings"
)

// maxParam bounds the parameter numbers Rebind counts with; a text that
// names a larger one fails on PostgreSQL (at most 65535 parameters) and
// on SQLite (?32766) alike.
const maxParam = 1 << 20

// Rebind returns query with SQLite's positional placeholders written as
// PostgreSQL's, and whether it rewrote anything, so a tool module written
// for SQLite runs on PostgreSQL with the same arguments:
//
//   - ?NNN becomes $NNN;
//   - a bare ? becomes $k, where k is one more than the largest number
//     used before it in the text (SQLite's rule: "?, ?5, ?" binds the
//     first, fifth and sixth arguments, "$1, $5, $6");
//   - numbering starts again after each ";", as SQLite prepares and binds
//     each statement of a text by itself (PostgreSQL refuses a text of
//     several statements with arguments anyway);
//   - ?? becomes a single ?, PostgreSQL's jsonb operator (as in JDBC), and
//     so do ??| and ??& for ?| and ?&. SQLite reads ?? as an error, so a
//     text written for it never has one.
//
// The text is read by PostgreSQL's lexical rules (with
// standard_conforming_strings on, the default): nothing inside string
// literals (including E'...' with backslash escapes and $tag$...$tag$),
// quoted identifiers or comments (-- and nesting /* */) changes. A space
// is put between a new $k and a letter, digit or $ next to it (or a "."
// before it), which PostgreSQL would otherwise read as one token with it:
// THEN?1 becomes THEN $1.
//
// A text that already uses a $N placeholder outside its literals is
// PostgreSQL's own and is returned unchanged, ? and all: there a ? is
// PostgreSQL's, such as jsonb's ?, ?| and ?& operators. Write a text in
// one style: a module written for both engines uses $N, which SQLite
// (modernc) binds to the Nth argument, or ?. SQLite's named parameters
// (:name, @name, $name) are not rewritten; PostgreSQL has none.
//
// Rebind returns at once, without allocating, when query has no ?; it
// allocates the new text once otherwise. Callers cache the result per
// text (see [Cache.CheckRebind]).
func Rebind(query string) (string, bool) {
	if strings.IndexByte(query, '?') < 0 {
		return query, false
	}
	sc := scanner{s: query, d: Postgres}
	var b strings.Builder // the new text, up to query[done:]
	done, largest := 0, 0
	for {
		sc.skip()
		if sc.i >= len(query) {
			break
		}
		c := query[sc.i]
		switch {
		case c == '$' && sc.i+1 < len(query) && query[sc.i+1] >= '0' && query[sc.i+1] <= '9':
			return query, false // PostgreSQL's own placeholders
		case c == ';':
			largest = 0 // SQLite numbers each statement's own
			sc.i++
			continue
		case c != '?':
			sc.next()
			continue
		}
		q := sc.i
		sc.i++
		if done == 0 {
			b.Grow(len(query) + 16)
		}
		b.WriteString(query[done:q])
		if sc.i < len(query) && query[sc.i] == '?' {
			sc.i++
			b.WriteByte('?')
			done = sc.i
			continue
		}
		digits := sc.i
		n := 0
		for sc.i < len(query) && query[sc.i] >= '0' && query[sc.i] <= '9' {
			n = min(n*10+int(query[sc.i]-'0'), maxParam)
			sc.i++
		}
		if q > 0 && (isIdent(query[q-1]) || query[q-1] == '.') {
			b.WriteByte(' ')
		}
		b.WriteByte('$')
		if sc.i > digits {
			b.WriteString(query[digits:sc.i])
		} else {
			n = min(largest+1, maxParam)
			var num [8]byte
			b.Write(strconv.AppendInt(num[:0], int64(n), 10))
		}
		largest = max(largest, n)
		if sc.i < len(query) && isIdent(query[sc.i]) {
			b.WriteByte(' ')
		}
		done = sc.i
	}
	if b.Len() == 0 {
		return query, false
	}
	b.WriteString(query[done:])
	return b.String(), true
}
