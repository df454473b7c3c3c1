package sqlcheck

import "strings"

type tokKind uint8

const (
	tEOF    tokKind = iota
	tWord           // an unquoted identifier or keyword
	tQuoted         // a quoted identifier: "x", [x], `x`
	tString         // a string or blob literal
	tSemi           // ;
	tOther          // anything else, one byte or one number or parameter
)

type token struct {
	kind tokKind
	text string
}

// unquoted returns a word's text, or a quoted identifier's name.
func (t token) unquoted() string {
	if t.kind == tQuoted && len(t.text) >= 2 {
		inner := t.text[1 : len(t.text)-1]
		switch t.text[0] {
		case '"':
			return strings.ReplaceAll(inner, `""`, `"`)
		case '`':
			return strings.ReplaceAll(inner, "``", "`")
		}
		return inner
	}
	return t.text
}

// scanner splits SQL text into tokens by the engine's lexical rules. An
// unterminated literal or comment runs to the end of the text, as the
// engines read it (and then refuse it).
type scanner struct {
	s     string
	i     int
	d     Dialect
	first token // the first word of the statement being checked

	// backslashes reads a backslash in a '...' string as an escape, as
	// PostgreSQL does with standard_conforming_strings off.
	backslashes bool
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdent(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9' || c == '$'
}

// skip passes white space and comments and returns the new position.
func (sc *scanner) skip() int {
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		switch {
		case isSpace(c):
			sc.i++
		case c == '-' && strings.HasPrefix(sc.s[sc.i:], "--"):
			if j := strings.IndexByte(sc.s[sc.i:], '\n'); j >= 0 {
				sc.i += j + 1
			} else {
				sc.i = len(sc.s)
			}
		case c == '/' && strings.HasPrefix(sc.s[sc.i:], "/*"):
			sc.blockComment()
		default:
			return sc.i
		}
	}
	return sc.i
}

// blockComment passes /* ... */; PostgreSQL's nest.
func (sc *scanner) blockComment() {
	depth := 0
	for sc.i < len(sc.s) {
		switch {
		case strings.HasPrefix(sc.s[sc.i:], "/*"):
			depth++
			sc.i += 2
			if sc.d != Postgres && depth > 1 {
				depth = 1
			}
		case strings.HasPrefix(sc.s[sc.i:], "*/"):
			sc.i += 2
			if depth--; depth == 0 {
				return
			}
		default:
			sc.i++
		}
	}
}

// next returns the next token.
func (sc *scanner) next() token {
	sc.skip()
	if sc.i >= len(sc.s) {
		return token{kind: tEOF}
	}
	start := sc.i
	c := sc.s[sc.i]
	switch {
	case c == ';':
		sc.i++
		return token{kind: tSemi, text: ";"}
	case c == '\'':
		sc.quoted('\'', sc.backslashes)
		return token{kind: tString, text: sc.s[start:sc.i]}
	case c == '"':
		sc.quoted('"', false)
		return token{kind: tQuoted, text: sc.s[start:sc.i]}
	case (c == '`' || c == '[') && sc.d == SQLite:
		if c == '[' {
			if j := strings.IndexByte(sc.s[sc.i:], ']'); j >= 0 {
				sc.i += j + 1
			} else {
				sc.i = len(sc.s)
			}
		} else {
			sc.quoted('`', false)
		}
		return token{kind: tQuoted, text: sc.s[start:sc.i]}
	case c == '$' && sc.d == Postgres:
		if sc.dollarQuoted() {
			return token{kind: tString, text: sc.s[start:sc.i]}
		}
		sc.i++
		for sc.i < len(sc.s) && sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9' {
			sc.i++
		}
		return token{kind: tOther, text: sc.s[start:sc.i]}
	case isIdentStart(c):
		if (c == 'E' || c == 'e') && sc.d == Postgres && sc.i+1 < len(sc.s) && sc.s[sc.i+1] == '\'' {
			sc.i++
			sc.quoted('\'', true)
			return token{kind: tString, text: sc.s[start:sc.i]}
		}
		if (c == 'U' || c == 'u') && sc.d == Postgres && strings.HasPrefix(sc.s[sc.i+1:], `&"`) {
			sc.i += 2
			sc.quoted('"', false)
			return sc.unicodeIdent(start)
		}
		for sc.i < len(sc.s) && isIdent(sc.s[sc.i]) {
			sc.i++
		}
		return token{kind: tWord, text: sc.s[start:sc.i]}
	case c == '?' && sc.d == SQLite:
		// A parameter: ?NNN, digits only, as SQLite reads it.
		sc.i++
		for sc.i < len(sc.s) && sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9' {
			sc.i++
		}
		return token{kind: tOther, text: sc.s[start:sc.i]}
	case (c == ':' || c == '@' || c == '$') && sc.d == SQLite:
		// A parameter: :name, @name, $name. Its name is not a word of
		// the statement. (In PostgreSQL ?, : and @ are operator
		// characters, one token each, so that E'...' after them is read
		// as the escape string it is.)
		sc.i++
		for sc.i < len(sc.s) && isIdent(sc.s[sc.i]) {
			sc.i++
		}
		return token{kind: tOther, text: sc.s[start:sc.i]}
	case c >= '0' && c <= '9':
		// The letters and $ after a number are part of the token: where
		// PostgreSQL reads 0A$x$ as 0 and the identifier A$x$, and 1$x$
		// as 1 and a string, no string starts here either (a number
		// followed by a string is a syntax error there).
		for sc.i < len(sc.s) && (isIdent(sc.s[sc.i]) || sc.s[sc.i] == '.') {
			sc.i++
		}
		return token{kind: tOther, text: sc.s[start:sc.i]}
	}
	sc.i++
	return token{kind: tOther, text: sc.s[start:sc.i]}
}

// quoted passes a literal that starts at sc.i with q and ends at the next
// q not doubled; with backslash, a backslash escapes the next byte.
func (sc *scanner) quoted(q byte, backslash bool) {
	sc.i++
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		switch {
		case backslash && c == '\\':
			sc.i += 2
			continue
		case c == q:
			if sc.i+1 < len(sc.s) && sc.s[sc.i+1] == q {
				sc.i += 2
				continue
			}
			sc.i++
			return
		}
		sc.i++
	}
	sc.i = len(sc.s)
}

// dollarQuoted passes PostgreSQL's $tag$ ... $tag$ if one starts at sc.i.
func (sc *scanner) dollarQuoted() bool {
	j := sc.i + 1
	for j < len(sc.s) && sc.s[j] != '$' {
		if !isIdent(sc.s[j]) || sc.s[j] == '$' || (j == sc.i+1 && sc.s[j] >= '0' && sc.s[j] <= '9') {
			return false
		}
		j++
	}
	if j >= len(sc.s) {
		return false
	}
	tag := sc.s[sc.i : j+1]
	if k := strings.Index(sc.s[j+1:], tag); k >= 0 {
		sc.i = j + 1 + k + len(tag)
	} else {
		sc.i = len(sc.s)
	}
	return true
}

// unicodeIdent finishes PostgreSQL's U&"..." identifier, which starts at
// start and whose closing quote sc.i has passed, with its optional
// UESCAPE 'c' clause. It returns the identifier as the plain quoted
// identifier it names, so a function's name is checked whatever way it is
// spelled (U&"\0073et_config" is set_config).
func (sc *scanner) unicodeIdent(start int) token {
	raw := sc.s[start+2 : sc.i]
	esc := byte('\\')
	save := sc.i
	if t := sc.next(); t.kind == tWord && strings.EqualFold(t.text, "UESCAPE") {
		if t = sc.next(); t.kind == tString && len(t.text) == 3 && t.text[0] == '\'' {
			esc = t.text[1]
		} else {
			sc.i = save
		}
	} else {
		sc.i = save
	}
	name, ok := decodeUnicode(token{kind: tQuoted, text: raw}.unquoted(), esc)
	if !ok { // PostgreSQL refuses it: keep the text, which names nothing
		return token{kind: tQuoted, text: sc.s[start:sc.i]}
	}
	return token{kind: tQuoted, text: QuoteIdent(name)}
}

// decodeUnicode replaces PostgreSQL's escapes in a U& identifier: esc
// followed by four hex digits, esc + and six hex digits, or esc twice.
func decodeUnicode(s string, esc byte) (string, bool) {
	if strings.IndexByte(s, esc) < 0 {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != esc {
			b.WriteByte(s[i])
			continue
		}
		n := 4
		switch {
		case i+1 < len(s) && s[i+1] == esc:
			b.WriteByte(esc)
			i++
			continue
		case i+1 < len(s) && s[i+1] == '+':
			n = 6
			i++
		}
		if i+1+n > len(s) {
			return "", false
		}
		r := 0
		for _, h := range []byte(s[i+1 : i+1+n]) {
			switch {
			case h >= '0' && h <= '9':
				r = r*16 + int(h-'0')
			case h >= 'a' && h <= 'f':
				r = r*16 + int(h-'a'+10)
			case h >= 'A' && h <= 'F':
				r = r*16 + int(h-'A'+10)
			default:
				return "", false
			}
		}
		b.WriteRune(rune(r))
		i += n
	}
	return b.String(), true
}
