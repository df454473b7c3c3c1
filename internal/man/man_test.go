package man_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/internal/man"
)

func TestCatalogEmpty(t *testing.T) {
	t.Parallel()
	require.Equal(t, "No tools are available here.\n", man.Catalog(nil, nil))
	// A page's catalog line is its first non-empty line, trimmed.
	require.Equal(t, "No tools are available here.\n\n"+
		"Reference pages (call man with {\"name\": \"<page>\"}):\n"+
		"  a       First line.\n"+
		"  longer  \n", man.Catalog(nil, []man.Page{{Name: "a", Text: "\n  First line.  \nSecond."}, {Name: "longer", Text: " \n"}}))
}

func TestCatalogGroups(t *testing.T) {
	t.Parallel()
	tools := []man.Tool{
		{Name: "a", Category: "Notes", Summary: "A"},
		{Name: "bb", Description: "Has no category! So it is General."},
		{Name: "ccc", Category: "Notes", Description: "Ends at the line break\nnot here."},
		{Name: "d", Category: "General", Description: "Version 1.2 is current"},
		{Name: "e", Category: "Tags", Description: "  What is it? A tag.  "},
	}
	require.Equal(t, `Tools you can call, by category. For a tool's options and examples, call man with {"name": "<tool>"}.

Notes
  a    A
  ccc  Ends at the line break

General
  bb  Has no category!
  d   Version 1.2 is current

Tags
  e  What is it?
`, man.Catalog(tools, nil))
}

func TestToolPage(t *testing.T) {
	t.Parallel()
	require.Equal(t, `NAME
    get_time - Tell the current time.

SYNOPSIS
    get_time
    Arguments: none; send {}.

DESCRIPTION
    Tell the current time. Uses the server clock.
`, man.ToolPage(man.Tool{Name: "get_time", Description: "Tell the current time. Uses the server clock.", ManPage: "  \n"}))

	// Without an Example the SYNOPSIS shows none; enums, defaults and
	// descriptions of several lines are shown as given.
	require.Equal(t, `NAME
    set_kind - Set a note's kind

SYNOPSIS
    set_kind id [kind] [tags]

OPTIONS
    id (string, required)
    kind (string, optional, default "text", one of "text", "code")
        The kind.

        Text is the default.
    tags (array, optional)
        Labels.

DESCRIPTION
    Set the kind of a note.
    Its content is kept.

SEE ALSO
    get_note
`, man.ToolPage(man.Tool{
		Name: "set_kind", Summary: "Set a note's kind",
		Description: "Set the kind of a note.\n   Its content is kept.",
		Params: []man.Param{
			{Name: "id", Type: "string", Required: true},
			{Name: "kind", Type: "string", Default: `"text"`, Enum: []string{`"text"`, `"code"`}, Description: "The kind.\n\n  Text is the default."},
			{Name: "tags", Type: "array", Description: "Labels."},
		},
		ManPage: "\nSEE ALSO\n    get_note\n",
	}))
}
