// Package text holds the small pieces of wording that several of
// llmtool's packages write the same way: a description's first sentence
// (the catalog's and find_tools's line for a tool) and numbers with
// thousands separators (the sentences about output budgets).
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
