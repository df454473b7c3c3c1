package text

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFirstSentence(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                 "",
		"  Read a note.  More here. ":      "Read a note.",
		"Version 1.2 of it. Next":          "Version 1.2 of it.",
		"Is it? Yes.":                      "Is it?",
		"First line\nsecond line.":         "First line",
		"No full stop":                     "No full stop",
		"Ends here.\nNext paragraph.":      "Ends here.",
		"Wow! Such tool":                   "Wow!",
		"e.g.the dots need a space after.": "e.g.the dots need a space after.",
	} {
		require.Equal(t, want, FirstSentence(in), "%q", in)
	}
}

func TestGroup(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 1240: "1,240", 123456: "123,456", 1234567: "1,234,567", -1234: "-1,234"} {
		require.Equal(t, want, Group(n), "%d", n)
	}
}
