package llmtool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// completingNote is noteKind with ID completion.
var completingNote = func() *llmtool.Entity {
	e := *noteKind
	e.Complete = func(c *llmtool.ReadCtx, prefix string, limit int) ([]string, error) {
		rows, err := c.Query(`SELECT id FROM notes WHERE id LIKE ? || '%' ORDER BY id LIMIT ?`, prefix, limit)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		return ids, rows.Err()
	}
	return &e
}()

var noteResource = llmtool.Resource("note", "note://{noteId}", "A note's title, as text.",
	func(c *llmtool.ReadCtx, in NoteRef) (llmtool.Rich, error) {
		var title string
		if err := c.QueryRow(`SELECT title FROM notes WHERE id = ?`, in.NoteID).Scan(&title); err != nil {
			return llmtool.Rich{}, err
		}
		return llmtool.Rich{Content: []llmtool.Content{llmtool.TextContent(title)}}, nil
	}, llmtool.FriendlyName("Note"))

var aboutResource = llmtool.Resource("about", "notes://about", "What this server holds.",
	func(*llmtool.ReadCtx, struct{}) (llmtool.Rich, error) {
		return llmtool.Rich{Content: []llmtool.Content{
			llmtool.TextContent("Notes."),
			llmtool.ResourceContent("notes://about/logo", "image/png", "", []byte{1, 2}),
		}}, nil
	})

type SummarizeIn struct {
	NoteID string `json:"noteId" ref:"note" desc:"ID of the note to summarize."`
	Style  string `json:"style,omitempty" enum:"short|bullets|bold" default:"short" desc:"How to summarize (default short)."`
}

var summarizePrompt = llmtool.Prompt("summarize_note", "Summarize a note.",
	func(c *llmtool.ReadCtx, in SummarizeIn) ([]llmtool.Message, error) {
		var title string
		if err := c.QueryRow(`SELECT title FROM notes WHERE id = ?`, in.NoteID).Scan(&title); err != nil {
			return nil, err
		}
		return []llmtool.Message{{Role: "user", Content: llmtool.TextContent(fmt.Sprintf("Summarize %q in %s style.", title, in.Style))}}, nil
	})

func resourceRegistry(t *testing.T) *llmtool.Registry {
	t.Helper()
	reg, _ := newReg(t, openNotes(t), llmtool.DefineTools("notes", getNote, noteResource, aboutResource, summarizePrompt).WithEntities(completingNote))
	return reg
}

func TestResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	reg := resourceRegistry(t)
	ctx := alice(context.Background())
	tests := []struct {
		name     string
		call     llmtool.Call
		want     string // the error message; "" for success
		kind     llmtool.Kind
		content  []llmtool.Content
		messages []llmtool.Message
	}{
		{name: "template", call: llmtool.Call{Resource: "note://n1"},
			content: []llmtool.Content{llmtool.TextContent("Shopping")}},
		{name: "escaped variable", call: llmtool.Call{Resource: "note://n%31"},
			content: []llmtool.Content{llmtool.TextContent("Shopping")}},
		{name: "fixed", call: llmtool.Call{Resource: "notes://about"},
			content: []llmtool.Content{llmtool.TextContent("Notes."), llmtool.ResourceContent("notes://about/logo", "image/png", "", []byte{1, 2})}},
		{name: "missing entity", call: llmtool.Call{Resource: "note://zz"},
			want: `Note "zz" (noteId) does not exist. Call search_notes to find the note's ID.`, kind: llmtool.KindNotFound},
		{name: "protected entity", call: llmtool.Call{Resource: "note://n2"},
			want: `Note "n2" (noteId) is protected; tools may neither read nor change it. Work with another note, or ask the user to remove the protection.`, kind: llmtool.KindDenied},
		{name: "another's entity", call: llmtool.Call{Resource: "note://n3"},
			want: `You may not read note "n3" (noteId). Choose a note you have access to, or ask its owner to share it.`, kind: llmtool.KindDenied},
		{name: "unknown URI", call: llmtool.Call{Resource: "note://n1/extra"},
			want: `No resource has the URI "note://n1/extra". Read a resource the server lists, or a URI that matches one of its templates.`, kind: llmtool.KindNotFound},
		{name: "resource called as a tool", call: llmtool.Call{Tool: "note", Args: []byte(`{"noteId":"n1"}`)},
			want: `Unknown tool "note". Did you mean "get_note"?`, kind: llmtool.KindNotFound},
		{name: "prompt", call: llmtool.Call{Prompt: "summarize_note", Args: []byte(`{"noteId":"n1","style":"bullets"}`)},
			messages: []llmtool.Message{{Role: "user", Content: llmtool.TextContent(`Summarize "Shopping" in bullets style.`)}}},
		{name: "prompt default", call: llmtool.Call{Prompt: "summarize_note", Args: []byte(`{"noteId":"n1"}`)},
			messages: []llmtool.Message{{Role: "user", Content: llmtool.TextContent(`Summarize "Shopping" in short style.`)}}},
		{name: "prompt bad argument", call: llmtool.Call{Prompt: "summarize_note", Args: []byte(`{"noteId":"n1","style":"long"}`)},
			want: `Error: /style: "long" is not an allowed value. Send one of "short", "bullets", "bold".`, kind: llmtool.KindInvalidArgs},
		{name: "prompt protected", call: llmtool.Call{Prompt: "summarize_note", Args: []byte(`{"noteId":"n2"}`)},
			want: `Note "n2" (noteId) is protected; tools may neither read nor change it. Work with another note, or ask the user to remove the protection.`, kind: llmtool.KindDenied},
		{name: "unknown prompt", call: llmtool.Call{Prompt: "get_note"},
			want: `Unknown prompt "get_note". Use one of the prompts the server lists.`, kind: llmtool.KindNotFound},
		{name: "prompt called as a tool", call: llmtool.Call{Tool: "summarize_note"},
			want: `Unknown tool "summarize_note". Call one of the tools you were given.`, kind: llmtool.KindNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := reg.Invoke(ctx, tt.call)
			if tt.want != "" {
				require.True(t, res.IsError, "result: %s", res.JSON)
				require.Equal(t, tt.want, res.Text())
				require.Equal(t, tt.kind, llmtool.KindOf(res.Err))
				return
			}
			require.False(t, res.IsError, "result: %s", res.JSON)
			var obj map[string]any
			require.NoError(t, json.Unmarshal(res.JSON, &obj))
			require.NotContains(t, obj, "error")
			require.Equal(t, tt.content, res.Content)
			require.Equal(t, tt.messages, res.Messages)
		})
	}
	t.Run("unknown names wrap ErrUnknownTool", func(t *testing.T) {
		t.Parallel()
		for _, c := range []llmtool.Call{{Resource: "x://y"}, {Prompt: "nope"}, {Tool: "note"}} {
			res := reg.Invoke(ctx, c)
			require.True(t, errors.Is(res.Err, llmtool.ErrUnknownTool), "%+v: %v", c, res.Err)
		}
	})
}

func TestResourceAndPromptListings(t *testing.T) {
	t.Parallel()
	reg := resourceRegistry(t)
	ctx := alice(context.Background())
	names := func(specs []*llmtool.Spec, err error) []string {
		require.NoError(t, err)
		var out []string
		for _, s := range specs {
			out = append(out, s.Name+" "+s.URI+fmt.Sprint(s.Prompt))
		}
		return out
	}
	require.Equal(t, []string{"get_note false", "man false"}, names(reg.List(ctx, nil)))
	require.Equal(t, []string{"note note://{noteId}false", "about notes://aboutfalse"}, names(reg.List(ctx, &llmtool.ListOptions{Resources: true})))
	require.Equal(t, []string{"summarize_note true"}, names(reg.List(ctx, &llmtool.ListOptions{Prompts: true})))

	require.NoError(t, reg.SetEnabled("about", false))
	require.Equal(t, []string{"note note://{noteId}false"}, names(reg.List(ctx, &llmtool.ListOptions{Resources: true})))
	res := reg.Invoke(ctx, llmtool.Call{Resource: "notes://about"})
	require.Equal(t, `Tool "about" is switched off. Use another tool, or ask the user to have an administrator enable it.`, res.Text())

	// Options.Authorize sees resources and prompts as it sees tools.
	authz, _ := newRegOpts(t, openNotes(t), &llmtool.Options{Authorize: func(_ context.Context, _ *llmtool.Principal, s *llmtool.Spec) error {
		if s.URI != "" || s.Prompt {
			return errors.New("no")
		}
		return nil
	}}, llmtool.DefineTools("notes", getNote, noteResource, summarizePrompt).WithEntities(completingNote))
	require.Equal(t, []string(nil), names(authz.List(ctx, &llmtool.ListOptions{Resources: true})))
	require.Equal(t, []string(nil), names(authz.List(ctx, &llmtool.ListOptions{Prompts: true})))
	res = authz.Invoke(ctx, llmtool.Call{Resource: "note://n1"})
	require.Equal(t, `You may not use note. Use another tool, or ask an administrator for access.`, res.Text())
	require.ErrorIs(t, res.Err, llmtool.ErrNotAuthorized)
}

func TestComplete(t *testing.T) {
	t.Parallel()
	reg := resourceRegistry(t)
	tests := []struct {
		name, target, arg, prefix string
		anon                      bool
		want                      []string
		err                       string
	}{
		{name: "entity IDs", target: "note", arg: "noteId", prefix: "n", want: []string{"n1"}}, // n2 protected, n3 bob's
		{name: "entity IDs, prefix", target: "note", arg: "noteId", prefix: "r", want: []string{"root"}},
		{name: "no match", target: "note", arg: "noteId", prefix: "q", want: []string{}},
		{name: "without principal", target: "note", arg: "noteId", prefix: "", anon: true, want: []string{"root"}},
		{name: "prompt argument", target: "summarize_note", arg: "noteId", prefix: "", want: []string{"n1", "root"}},
		{name: "enum", target: "summarize_note", arg: "style", prefix: "b", want: []string{"bullets", "bold"}},
		{name: "free text", target: "about", arg: "x", err: `Error: resource "about" has no argument "x". It takes no arguments.`},
		{name: "unknown argument", target: "summarize_note", arg: "title",
			err: `Error: prompt "summarize_note" has no argument "title". Complete one of its arguments: noteId, style.`},
		{name: "unknown name", target: "nope", arg: "noteId", err: `Unknown tool "nope". Call one of the tools you were given.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			if !tt.anon {
				ctx = alice(ctx)
			}
			got, err := reg.Complete(ctx, tt.target, tt.arg, tt.prefix)
			if tt.err != "" {
				require.Error(t, err)
				require.Equal(t, tt.err, err.Error())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestResourceDefinitionPanics(t *testing.T) {
	t.Parallel()
	read := func(*llmtool.ReadCtx, NoteRef) (llmtool.Rich, error) { return llmtool.Rich{}, nil }
	type IntIn struct {
		N int `json:"n"`
	}
	tests := []struct {
		name, want string
		define     func()
	}{
		{name: "variable not a field", want: `llmtool: resource "r": template variable {id} must be a string field of llmtool_test.NoteRef with the JSON name "id"`,
			define: func() { llmtool.Resource("r", "note://{id}", "d", read) }},
		{name: "required field missing", want: `llmtool: resource "r": field "noteId" of llmtool_test.NoteRef is required but is not a variable of "notes://all"; add {noteId} to the URI or make the field optional`,
			define: func() { llmtool.Resource("r", "notes://all", "d", read) }},
		{name: "integer variable", want: `llmtool: resource "r": template variable {n} must be a string field of llmtool_test.IntIn with the JSON name "n"`,
			define: func() {
				llmtool.Resource("r", "n://{n}", "d", func(*llmtool.ReadCtx, IntIn) (llmtool.Rich, error) { return llmtool.Rich{}, nil })
			}},
		{name: "not absolute", want: `llmtool: resource "r": "{noteId}" is not an absolute URI (or URI template): give it a scheme, as in "note://{noteId}"`,
			define: func() { llmtool.Resource("r", "{noteId}", "d", read) }},
		{name: "stray brace", want: `llmtool: resource "r": "note://{noteId}}" has a brace that is not a {variable}; a variable is letters, digits and underscores in braces`,
			define: func() { llmtool.Resource("r", "note://{noteId}}", "d", read) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.PanicsWithValue(t, tt.want, tt.define)
		})
	}
}

type RetitleIn struct {
	NoteID string `json:"noteId" ref:"note" desc:"ID of the note."`
	Title  string `json:"title" desc:"The new title."`
}

type NewNoteOut struct {
	NoteID string `json:"noteId"`
}

var retitle = llmtool.Write("retitle_note", "Retitle a note.",
	func(c *llmtool.WriteCtx, in RetitleIn) (struct{}, error) {
		_, err := c.Exec(`UPDATE notes SET title = ? WHERE id = ?`, in.Title, in.NoteID)
		return struct{}{}, err
	}, llmtool.Updates("note", "about"))

var addNote = llmtool.Write("add_note", "Add a note.",
	func(c *llmtool.WriteCtx, in struct {
		Title string `json:"title" desc:"The title."`
	}) (NewNoteOut, error) {
		_, err := c.Exec(`INSERT INTO notes (id, title, owner) VALUES ('n9', ?, 'alice')`, in.Title)
		return NewNoteOut{NoteID: "n9"}, err
	}, llmtool.Updates("note"))

var failing = llmtool.Write("failing_retitle", "Retitle, then fail.",
	func(c *llmtool.WriteCtx, in RetitleIn) (struct{}, error) {
		return struct{}{}, llmtool.Conflict("Not now.")
	}, llmtool.Updates("note"))

func TestResourceChanges(t *testing.T) {
	t.Parallel()
	reg, _ := newReg(t, openNotes(t), llmtool.DefineTools("notes", getNote, noteResource, aboutResource, retitle, addNote, failing).WithEntities(completingNote))
	ctx := alice(context.Background())
	require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))
	var got []string
	cancel := reg.OnResourceUpdate(func(uri string) { got = append(got, uri) })

	for _, c := range []llmtool.Call{
		{Tool: "retitle_note", Args: []byte(`{"noteId":"n1","title":"Groceries"}`)},
		{Tool: "add_note", Args: []byte(`{"title":"New"}`)},
		{Tool: "failing_retitle", Args: []byte(`{"noteId":"n1","title":"X"}`)},
		{Tool: "retitle_note", Args: []byte(`{"noteId":"zz","title":"X"}`)},
	} {
		reg.Invoke(ctx, c)
	}
	require.Equal(t, []string{"note://n1", "notes://about", "note://n9"}, got, "committed calls only, arguments then results")
	cancel()
	reg.Invoke(ctx, llmtool.Call{Tool: "retitle_note", Args: []byte(`{"noteId":"n1","title":"Again"}`)})
	require.Len(t, got, 3)

	_, err := llmtool.NewRegistry(openNotes(t), nil, llmtool.DefineTools("w", retitle).WithEntities(noteKind))
	require.EqualError(t, err, `llmtool: tool "retitle_note" of module "w" declares Updates("note"), but no registered module defines a resource of that name; define it with llmtool.Resource, or register its module first`)
	require.PanicsWithValue(t, `llmtool: tool "r": a Read tool updates no resource; Updates is for Write tools`, func() {
		llmtool.Read("r", "d", func(*llmtool.ReadCtx, struct{}) (struct{}, error) { return struct{}{}, nil }, llmtool.Updates("note"))
	})
}
