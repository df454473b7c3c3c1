package llmtool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/lint"
)

type SearchNotesIn struct {
	Query string `json:"query" desc:"Words to search for."`
	Limit int    `json:"limit,omitempty" desc:"How many results (default 10)." default:"10" minimum:"1"`
	Kind  string `json:"kind,omitempty" desc:"Note type (default text)." default:"text" enum:"text|code"`
}

type CreateNoteIn struct {
	ParentID string `json:"parentNoteId" desc:"ID of the parent note."`
	Title    string `json:"title" desc:"Title of the new note."`
}

func catalogModule() *llmtool.Module {
	search := llmtool.Read("search_notes", "Search notes by title and content.",
		func(*llmtool.ReadCtx, SearchNotesIn) (struct{}, error) { return struct{}{}, nil },
		llmtool.Category("Notes"), llmtool.Summary("Search notes by words"),
		llmtool.ManPage("EXAMPLES\n    {\"query\": \"milk\"}\n        Notes that mention milk."))
	create := llmtool.Write("create_note", "Create a note under a parent note. Returns its ID.",
		func(*llmtool.WriteCtx, CreateNoteIn) (struct{}, error) { return struct{}{}, nil },
		llmtool.Category("Notes"))
	clock := llmtool.Read("get_time", "Tell the current time. Uses the server clock.",
		func(*llmtool.ReadCtx, struct{}) (struct{}, error) { return struct{}{}, nil })
	return llmtool.DefineTools("notes", search, create, clock)
}

const searchSyntax = `Search syntax: words, "phrases" and #labels.

Words match anywhere in the title or content.`

func manText(t *testing.T, reg *llmtool.Registry, ctx context.Context, args string) llmtool.Result {
	t.Helper()
	return reg.Invoke(ctx, llmtool.Call{Tool: "man", Args: []byte(args)})
}

func richText(t *testing.T, res llmtool.Result) string {
	t.Helper()
	require.False(t, res.IsError, res.Text())
	var out llmtool.Rich
	require.NoError(t, json.Unmarshal(res.JSON, &out))
	require.NotContains(t, decodeObj(t, res.JSON), "error")
	require.Len(t, out.Content, 1)
	require.Equal(t, "text", out.Content[0].Type)
	return out.Content[0].Text
}

func TestManCatalog(t *testing.T) {
	t.Parallel()
	reg, _ := newRegOpts(t, openDB(t), &llmtool.Options{ManPages: map[string]string{"search-syntax": searchSyntax}}, catalogModule())
	readOnly := inTenant("readers")
	writers := inTenant("writers")
	require.NoError(t, reg.Tenants().SetWrites(writers, "writers", true))

	// A tenant that has only read tools sees only them.
	require.Equal(t, `Tools you can call, by category. For a tool's options and examples, call man with {"name": "<tool>"}.

Notes
  search_notes  Search notes by words

General
  get_time  Tell the current time.

Reference pages (call man with {"name": "<page>"}):
  search-syntax  Search syntax: words, "phrases" and #labels.
`, richText(t, manText(t, reg, readOnly, ``)))

	require.Equal(t, `Tools you can call, by category. For a tool's options and examples, call man with {"name": "<tool>"}.

Notes
  search_notes  Search notes by words
  create_note   Create a note under a parent note.

General
  get_time  Tell the current time.

Reference pages (call man with {"name": "<page>"}):
  search-syntax  Search syntax: words, "phrases" and #labels.
`, richText(t, manText(t, reg, writers, `{}`)))

	require.Equal(t, searchSyntax, richText(t, manText(t, reg, readOnly, `{"name":"search-syntax"}`)))
}

func TestManPageOfATool(t *testing.T) {
	t.Parallel()
	reg, _ := newReg(t, openDB(t), catalogModule())
	ctx := inTenant("readers")
	require.Equal(t, `NAME
    search_notes - Search notes by words

SYNOPSIS
    search_notes query [limit] [kind]
    Arguments: one JSON object, such as {"query": "..."}.

OPTIONS
    query (string, required)
        Words to search for.
    limit (integer, optional, default 10)
        How many results (default 10).
    kind (string, optional, default "text", one of "text", "code")
        Note type (default text).

DESCRIPTION
    Search notes by title and content.

EXAMPLES
    {"query": "milk"}
        Notes that mention milk.
`, richText(t, manText(t, reg, ctx, `{"name":"search_notes"}`)))

	require.Equal(t, `NAME
    get_time - Tell the current time.

SYNOPSIS
    get_time
    Arguments: none; send {}.

DESCRIPTION
    Tell the current time. Uses the server clock.
`, richText(t, manText(t, reg, ctx, `{"name":"get_time"}`)))

	text := richText(t, manText(t, reg, ctx, `{"name":"man"}`))
	require.Contains(t, text, "NAME\n    man - Show the catalog of tools, or one tool's manual page\n")
}

func TestManUnknownNames(t *testing.T) {
	t.Parallel()
	reg, _ := newReg(t, openDB(t), catalogModule())
	ctx := inTenant("readers")
	tests := []struct{ name, want string }{
		{"serch_notes", `No manual entry for "serch_notes". Did you mean "search_notes"? Call man with no arguments to list all tools.`},
		{"create_note", `No manual entry for "create_note". Call man with no arguments to list all tools.`},
		{"zzz", `No manual entry for "zzz". Call man with no arguments to list all tools.`},
	}
	for _, tc := range tests {
		res := manText(t, reg, ctx, `{"name":"`+tc.name+`"}`)
		require.True(t, res.IsError)
		require.Equal(t, tc.want, res.Text())
		require.Equal(t, llmtool.KindNotFound, llmtool.KindOf(res.Err))
	}
}

func TestManBuiltin(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	reg, _ := newReg(t, db, catalogModule())
	spec, ok := reg.Tool(context.Background(), "man")
	require.True(t, ok)
	require.True(t, spec.ReadOnly)
	require.Equal(t, "llmtool", spec.Module)
	require.Equal(t, "Read the manual", spec.FriendlyName)
	require.Equal(t, []string{"search_notes", "get_time", "man"}, listNames(t, reg, context.Background()), "man is listed last")
	builtinOnly, err := llmtool.NewRegistry(nil, nil)
	require.NoError(t, err)
	lint.Require(t, builtinOnly, &lint.Options{IncludeBuiltins: true})

	// Opting out: switch it off ...
	require.NoError(t, reg.SetEnabled("man", false))
	require.Equal(t, []string{"search_notes", "get_time"}, listNames(t, reg, context.Background()))
	require.ErrorIs(t, invoke(reg, "man", `{}`).Err, llmtool.ErrToolDisabled)

	// ... or bring a man of your own, which replaces it.
	own := llmtool.Read("man", "Our own manual.", func(*llmtool.ReadCtx, struct{}) (struct{}, error) { return struct{}{}, nil })
	reg2, _ := newReg(t, db, llmtool.DefineTools("help", own), catalogModule())
	spec, _ = reg2.Tool(context.Background(), "man")
	require.Equal(t, "help", spec.Module)
	require.Equal(t, []string{"man", "search_notes", "get_time"}, listNames(t, reg2, context.Background()))

	_, err = llmtool.NewRegistry(db, &llmtool.Options{ManPages: map[string]string{" ": "x"}})
	require.EqualError(t, err, "llmtool: Options.ManPages: a page needs a name")
}

func TestManPages(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	reg, _ := newRegOpts(t, db, &llmtool.Options{ManPages: map[string]string{
		"search-syntax": searchSyntax,
		" dates ":       "Dates: YYYY-MM-DD.",
		"get_time":      "A page that the tool of the same name hides.",
	}}, catalogModule())
	ctx := inTenant("readers")

	// Pages are listed by name, after the tools.
	require.Equal(t, `Tools you can call, by category. For a tool's options and examples, call man with {"name": "<tool>"}.

Notes
  search_notes  Search notes by words

General
  get_time  Tell the current time.

Reference pages (call man with {"name": "<page>"}):
  dates          Dates: YYYY-MM-DD.
  get_time       A page that the tool of the same name hides.
  search-syntax  Search syntax: words, "phrases" and #labels.
`, richText(t, manText(t, reg, ctx, `{}`)))
	require.Equal(t, "Dates: YYYY-MM-DD.", richText(t, manText(t, reg, ctx, `{"name":" dates"}`)))
	require.Contains(t, richText(t, manText(t, reg, ctx, `{"name":"get_time"}`)), "NAME\n    get_time - ")

	// Unknown names are matched against pages too.
	res := manText(t, reg, ctx, `{"name":"search-syntx"}`)
	require.Equal(t, `No manual entry for "search-syntx". Did you mean "search-syntax"? Call man with no arguments to list all tools.`, res.Text())

	_, err := llmtool.NewRegistry(db, &llmtool.Options{ManPages: map[string]string{"a": "x", " a": "y"}})
	require.EqualError(t, err, `llmtool: Options.ManPages: two pages are named "a"`)
}
