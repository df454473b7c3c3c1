package lint_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/lint"
)

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

const examplesPage = "EXAMPLES\n    {\"id\": \"n1\"}\n        Reads note n1."

type lintIn struct {
	ID string `json:"id" desc:"ID of the note."`
}

// lintRead and lintWrite define tools that pass every rule unless opts
// say otherwise.
func lintRead[In any](name, desc string, opts ...llmtool.Option) *llmtool.Tool {
	base := []llmtool.Option{llmtool.Summary("Do it"), llmtool.ManPage(examplesPage)}
	return llmtool.Read(name, desc, func(*llmtool.ReadCtx, In) (struct{}, error) { return struct{}{}, nil }, append(base, opts...)...)
}

func lintWrite[In any](name, desc string, opts ...llmtool.Option) *llmtool.Tool {
	base := []llmtool.Option{llmtool.Summary("Do it"), llmtool.ManPage(examplesPage)}
	return llmtool.Write(name, desc, func(*llmtool.WriteCtx, In) (struct{}, error) { return struct{}{}, nil }, append(base, opts...)...)
}

type searchIn struct {
	Query string `json:"query" desc:"Words to search for in titles."`
}

type filterIn struct {
	Filter struct {
		Tag string `json:"tag"`
	} `json:"filter" desc:"Which notes."`
}

type describedFilterIn struct {
	Filter struct {
		Tag string `json:"tag" desc:"Tag to match."`
	} `json:"filter" desc:"Which notes."`
}

type limitNoStatementIn struct {
	Limit int `json:"limit,omitempty" desc:"How many results." default:"10"`
}

type limitWrongIn struct {
	Limit int `json:"limit,omitempty" desc:"How many results (default 20)." default:"10"`
}

type limitNoDefaultIn struct {
	Limit int `json:"limit,omitempty" desc:"How many results (default 10)."`
}

type limitRightIn struct {
	Limit int    `json:"limit,omitempty" desc:"How many results (default 10)." default:"10"`
	Kind  string `json:"kind,omitempty" desc:"Note type (default text)." default:"text" enum:"text|code"`
}

type enumPipesIn struct {
	Kind  string   `json:"kind" desc:"Note type." enum:"text|code|book"`
	Tags  []string `json:"tags,omitempty" desc:"Tags." enum:"a|b,c"`
	Greet string   `json:"greet,omitempty" desc:"Greeting." enum:"[\"hello, world\",\"hi\"]"`
}

type enumCommasIn struct {
	Kind string   `json:"kind" desc:"Note type." enum:"text,code,book"`
	Tags []string `json:"tags,omitempty" desc:"Tags." enum:"a,b"`
}

func lintFindings(t *testing.T, rule string, mods []*llmtool.Module, setup func(*llmtool.Registry), opts *lint.Options) []string {
	t.Helper()
	reg, err := llmtool.NewRegistry(nil, &llmtool.Options{Logger: quietLogger()}, mods...)
	require.NoError(t, err)
	if setup != nil {
		setup(reg)
	}
	var out []string
	for _, f := range lint.Check(reg, opts) {
		if f.Rule == rule {
			out = append(out, f.String())
		}
	}
	return out
}

func TestRules(t *testing.T) {
	t.Parallel()
	mod := func(tools ...*llmtool.Tool) []*llmtool.Module {
		return []*llmtool.Module{llmtool.DefineTools("m", tools...)}
	}
	undeclared := func(r *llmtool.Registry) {
		r.AddLoader("late", func(context.Context) (*llmtool.Module, error) {
			type in struct {
				ID string `json:"id" ref:"tag" desc:"ID of the tag."`
			}
			return llmtool.DefineTools("late", lintRead[in]("get_tag", "Read a tag.")), nil
		})
	}
	declared := func(r *llmtool.Registry) {
		r.AddLoader("late", func(context.Context) (*llmtool.Module, error) {
			type in struct {
				ID string `json:"id" ref:"tag" desc:"ID of the tag."`
			}
			kind := &llmtool.Entity{Kind: "tag", Exists: func(*llmtool.ReadCtx, string) (bool, error) { return true, nil }}
			return llmtool.DefineTools("late", lintRead[in]("get_tag", "Read a tag.")).WithEntities(kind), nil
		})
	}
	tests := []struct {
		rule      string
		good, bad []*llmtool.Module
		goodSetup func(*llmtool.Registry)
		badSetup  func(*llmtool.Registry)
		opts      *lint.Options
		want      []string
	}{
		{rule: "lean-description",
			good: mod(lintRead[lintIn]("get_note", "Read a note.")),
			bad:  mod(lintRead[lintIn]("get_note", strings.Repeat("word ", 60))),
			want: []string{"get_note: description is about 75 tokens, over the budget of 60; keep one or two sentences and move details to the man page [lean-description]"}},
		{rule: "lean-description", opts: &lint.Options{DescriptionBudget: 10},
			good: mod(lintRead[lintIn]("get_note", "Read a note.")),
			bad:  mod(lintRead[lintIn]("get_note", "Read a note's title, type, content and attributes.")),
			want: []string{"get_note: description is about 13 tokens, over the budget of 10; keep one or two sentences and move details to the man page [lean-description]"}},
		{rule: "repeated-param-description",
			good: mod(lintRead[searchIn]("search_notes", "Search notes.")),
			bad:  mod(lintRead[searchIn]("search_notes", "Search notes. Words to search for in titles.")),
			want: []string{"search_notes: the description repeats the description of parameter query, which is sent with it anyway; remove it from the description [repeated-param-description]"}},
		{rule: "param-description",
			good: mod(lintRead[describedFilterIn]("find_notes", "Find notes.")),
			bad:  mod(lintRead[filterIn]("find_notes", "Find notes.")),
			want: []string{"find_notes: parameter filter.tag has no description; add a desc tag [param-description]"}},
		{rule: "default-stated",
			good: mod(lintRead[limitRightIn]("list_notes", "List notes.")),
			bad: mod(lintRead[limitNoStatementIn]("list_a", "List notes."), lintRead[limitWrongIn]("list_b", "List notes."),
				lintRead[limitNoDefaultIn]("list_c", "List notes.")),
			want: []string{
				`list_a: parameter limit has the default 10 but its description does not say so; end it with "(default 10)" [default-stated]`,
				`list_b: parameter limit says (default 20) but its default is 10; make them agree [default-stated]`,
				`list_c: parameter limit says (default 10) but has no default; add the tag default:"10", or remove the statement [default-stated]`,
			}},
		{rule: "name",
			good: mod(lintRead[lintIn]("get_note", "Read a note.")),
			bad:  mod(lintRead[lintIn]("getNote", "Read a note.")),
			want: []string{`getNote: name "getNote" is not lower_snake_case of at most 64 characters; rename it, such as "get_note" [name]`}},
		{rule: "summary",
			good: mod(lintRead[lintIn]("get_note", "Read a note.")),
			bad:  mod(lintRead[lintIn]("get_note", "Read a note.", llmtool.Summary(""))),
			want: []string{`get_note: no summary for the man catalog; add llmtool.Summary("...") with one short line [summary]`}},
		{rule: "friendly-name",
			good: mod(lintWrite[lintIn]("create_note", "Create a note.", llmtool.FriendlyName("Create note")),
				lintRead[lintIn]("get_note", "Read a note.")),
			bad: mod(lintWrite[lintIn]("create_note", "Create a note."),
				lintWrite[lintIn]("rename_note", "Rename a note.", llmtool.FriendlyName("Renaming note")),
				lintWrite[lintIn]("move_note", "Move a note.", llmtool.FriendlyName("Moves note")),
				lintWrite[lintIn]("tag_note", "Tag a note.", llmtool.FriendlyName("Tagged note"))),
			want: []string{
				`create_note: write tool without a friendly name; add llmtool.FriendlyName("...") in the imperative, such as "Create note" [friendly-name]`,
				`rename_note: friendly name "Renaming note" starts with a gerund; use the imperative, such as "Rename note" [friendly-name]`,
				`move_note: friendly name "Moves note" starts with a third-person verb; use the imperative, such as "Move note" [friendly-name]`,
				`tag_note: friendly name "Tagged note" starts with a past participle; use the imperative, such as "Tag note" [friendly-name]`,
			}},
		{rule: "man-examples",
			good: mod(lintRead[lintIn]("get_note", "Read a note.", llmtool.ManPage("Reads one note.\n\n## Examples:\n    {\"id\": \"n1\"}"))),
			bad: mod(lintRead[lintIn]("get_note", "Read a note.", llmtool.ManPage("")),
				lintRead[lintIn]("get_tag", "Read a tag.", llmtool.ManPage("Reads one tag, see EXAMPLES below."))),
			want: []string{
				"get_note: no man page; add llmtool.ManPage with an EXAMPLES section [man-examples]",
				"get_tag: man page has no EXAMPLES section; add a line EXAMPLES followed by example calls [man-examples]",
			}},
		{rule: "entity-ref", goodSetup: declared, badSetup: undeclared,
			want: []string{`get_tag: tool "get_tag": field id references entity kind "tag", which no registered module declares; declare it with an llmtool.Entity and attach it with Module.WithEntities (or fix the ref tag) (loader "late") [entity-ref]`}},
		{rule: "enum-separator",
			good: mod(lintRead[enumPipesIn]("list_notes", "List notes.")),
			bad:  mod(lintRead[enumCommasIn]("list_notes", "List notes.")),
			want: []string{
				`list_notes: parameter kind has enum:"text,code,book", which allows the one value "text,code,book"; separate values with |, as in enum:"text|code|book" (for one value that contains commas, skip this rule for the tool with lint.Options.SkipFor) [enum-separator]`,
				`list_notes: parameter tags has enum:"a,b", which allows the one value "a,b"; separate values with |, as in enum:"a|b" (for one value that contains commas, skip this rule for the tool with lint.Options.SkipFor) [enum-separator]`,
			}},
		{rule: "loader",
			goodSetup: func(r *llmtool.Registry) {
				r.AddLoader("ok", func(context.Context) (*llmtool.Module, error) { return llmtool.DefineTools("ok"), nil })
			},
			badSetup: func(r *llmtool.Registry) {
				r.AddLoader("broken", func(context.Context) (*llmtool.Module, error) { return nil, errors.New("no plugin dir") })
			},
			want: []string{`llmtool: loader "broken": no plugin dir; fix the loader so its module registers [loader]`}},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprintf("%d %s", i, tc.rule), func(t *testing.T) {
			t.Parallel()
			require.Empty(t, lintFindings(t, tc.rule, tc.good, tc.goodSetup, tc.opts), "good definition")
			require.Equal(t, tc.want, lintFindings(t, tc.rule, tc.bad, tc.badSetup, tc.opts), "bad definition")
		})
	}
}

func TestSkips(t *testing.T) {
	t.Parallel()
	reg, err := llmtool.NewRegistry(nil, nil, llmtool.DefineTools("m",
		lintRead[lintIn]("get_note", "Read a note.", llmtool.Summary("")),
		lintRead[lintIn]("get_tag", "Read a tag.", llmtool.Summary(""))))
	require.NoError(t, err)
	require.Len(t, lint.Check(reg, nil), 2)
	require.Empty(t, lint.Check(reg, &lint.Options{Skip: []string{"summary"}}))
	fs := lint.Check(reg, &lint.Options{SkipFor: map[string][]string{"get_note": {"summary"}}})
	require.Len(t, fs, 1)
	require.Equal(t, "get_tag", fs[0].Tool)
}

// fakeT records what Require reports; the rest of testing.TB is not
// called.
type fakeT struct {
	testing.TB
	errors []string
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeT) FailNow() { f.failed = true }

func TestRequire(t *testing.T) {
	t.Parallel()
	clean, err := llmtool.NewRegistry(nil, nil, llmtool.DefineTools("m", lintRead[lintIn]("get_note", "Read a note.")))
	require.NoError(t, err)
	ft := &fakeT{}
	lint.Require(ft, clean, nil)
	require.False(t, ft.failed)
	require.Empty(t, ft.errors)
	lint.Require(t, clean, nil)

	dirty, err := llmtool.NewRegistry(nil, nil, llmtool.DefineTools("m", lintRead[lintIn]("getNote", "Read a note.", llmtool.Summary(""))))
	require.NoError(t, err)
	ft = &fakeT{}
	lint.Require(ft, dirty, nil)
	require.True(t, ft.failed)
	require.Equal(t, []string{
		`llmtool lint: getNote: name "getNote" is not lower_snake_case of at most 64 characters; rename it, such as "get_note" [name]`,
		`llmtool lint: getNote: no summary for the man catalog; add llmtool.Summary("...") with one short line [summary]`,
	}, ft.errors)
}

type nestedEnumIn struct {
	Items []struct {
		Kind string `json:"kind" desc:"Kind." enum:"a,b"`
		Tag  string `json:"tag" desc:"Tag." enum:"[\"x,y\"]"`
	} `json:"items" desc:"Items."`
}

// The parameter rules read nested parameters, through arrays too; the
// schema cannot tell a one-value JSON-array enum tag from a comma-separated
// one, so both are reported (see the package doc).
func TestNestedEnum(t *testing.T) {
	t.Parallel()
	mods := []*llmtool.Module{llmtool.DefineTools("m", lintRead[nestedEnumIn]("list_notes", "List notes."))}
	require.Equal(t, []string{
		`list_notes: parameter items[].kind has enum:"a,b", which allows the one value "a,b"; separate values with |, as in enum:"a|b" (for one value that contains commas, skip this rule for the tool with lint.Options.SkipFor) [enum-separator]`,
		`list_notes: parameter items[].tag has enum:"x,y", which allows the one value "x,y"; separate values with |, as in enum:"x|y" (for one value that contains commas, skip this rule for the tool with lint.Options.SkipFor) [enum-separator]`,
	}, lintFindings(t, "enum-separator", mods, nil, nil))
	require.Empty(t, lintFindings(t, "enum-separator", mods, nil, &lint.Options{SkipFor: map[string][]string{"list_notes": {"enum-separator"}}}))
}

type address struct {
	City string `json:"city"`
}

type suppliedIn struct {
	Name  string   `json:"name"`
	Limit int      `json:"limit,omitempty"`
	Home  address  `json:"home"`
	Work  *address `json:"work,omitempty"`
}

// A supplied InputSchema is linted as the model gets it: descriptions
// beside a $ref or in its definition count, and a recursive definition is
// walked once.
func TestSuppliedSchema(t *testing.T) {
	t.Parallel()
	schema := `{"type": "object",
		"$defs": {"address": {"type": "object", "description": "A postal address.",
			"properties": {"city": {"type": "string"}, "next": {"$ref": "#/$defs/address"}}}},
		"properties": {
			"name": {"type": "string", "description": "Full name."},
			"limit": {"type": "integer", "description": "How many (default 5).", "default": 10},
			"home": {"$ref": "#/$defs/address"},
			"work": {"$ref": "#/$defs/address", "description": "Where they work."}},
		"required": ["name", "home"]}`
	mods := []*llmtool.Module{llmtool.DefineTools("m",
		lintRead[suppliedIn]("find_person", "Find a person.", llmtool.InputSchema(json.RawMessage(schema))))}
	var got []string
	reg, err := llmtool.NewRegistry(nil, &llmtool.Options{Logger: quietLogger()}, mods...)
	require.NoError(t, err)
	for _, f := range lint.Check(reg, nil) {
		got = append(got, f.String())
	}
	require.Equal(t, []string{
		`find_person: parameter limit says (default 5) but its default is 10; make them agree [default-stated]`,
		`find_person: parameter home.city has no description; add a desc tag [param-description]`,
		`find_person: parameter work.city has no description; add a desc tag [param-description]`,
	}, got)
}

// Resources and prompts are linted like tools, but need no summary or man
// page: the man catalog lists tools only.
func TestResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	type docIn struct {
		ID string `json:"id"`
	}
	res := llmtool.Resource("Doc", "doc://{id}", "A document.", func(*llmtool.ReadCtx, docIn) (llmtool.Rich, error) { return llmtool.Rich{}, nil })
	prompt := llmtool.Prompt("review_doc", "Review a document.", func(*llmtool.ReadCtx, docIn) ([]llmtool.Message, error) { return nil, nil })
	mods := []*llmtool.Module{llmtool.DefineTools("m", res, prompt)}
	for rule, want := range map[string][]string{
		"summary":           nil,
		"man-examples":      nil,
		"name":              {`Doc: name "Doc" is not lower_snake_case of at most 64 characters; rename it, such as "doc" [name]`},
		"param-description": {"Doc: parameter id has no description; add a desc tag [param-description]", "review_doc: parameter id has no description; add a desc tag [param-description]"},
	} {
		require.Equal(t, want, lintFindings(t, rule, mods, nil, nil), rule)
	}
}
