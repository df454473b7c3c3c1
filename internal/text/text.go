// Package text holds the small pieces of wording that several of
// llmtool's packages write the same way: a description's first sentence
// (the catalog's and find_tools's line for a tool), numbers with
// thousands separators (the sentences about output budgets) and lists of
// alternatives ("a", "b" or "c").
package text

import (
	"strconv"
	"strings"
)

// FirstSentence returns the first sentence of text, trimmed: up to the
// first '.', '!' or '?' followed by a space, a line break or the end, or
// up to the first line break, whichever comes first.
func FirstSentence(text string) string {
	text = strings.TrimSpace(text)
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '.', '!', '?':
			if i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n' {
				return text[:i+1]
			}
		case '\n':
			return strings.TrimSpace(text[:i])
		}
	}
	return text
}

// Group writes n with thousands separators: 1,240.
func Group(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// QuoteOr lists quoted alternatives: "a", "b" or "c".
func QuoteOr(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
