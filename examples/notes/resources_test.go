package notes_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/llmtooltest"
)

// Seeded content quoted by the tests below.
const (
	roadmapHTML  = `<h2>Q3 roadmap</h2><ul><li>Ship the offline sync engine</li><li>Migrate the search index to FTS5</li><li>Write the plugin API documentation</li></ul>`
	pancakesHTML = `<p>Whisk 250 g flour, 2 eggs, 500 ml milk and a pinch of salt. Rest the batter for 30 minutes, then fry thin pancakes in a hot buttered pan.</p>`
)

// requireSuccess stops the test unless res succeeded with a JSON object
// that has no "error" property.
func requireSuccess(t *testing.T, res llmtool.Result) {
	t.Helper()
	require.False(t, res.IsError, res.Text())
	var obj map[string]any
	require.NoError(t, json.Unmarshal(res.JSON, &obj), string(res.JSON))
	require.NotContains(t, obj, "error")
}

// TestNoteResource reads note://{noteId} through Invoke, as mcpadapter's
// resources/read does: the content with the note's MIME type, and the
// entity guards of get_note.
func TestNoteResource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fixture func(t *testing.T, h *llmtooltest.Harness)
		uri     string
		want    []llmtool.Content
		err     string
		kind    llmtool.Kind
	}{
		{name: "text note", uri: "note://roadmap", want: []llmtool.Content{{Type: "text", Text: roadmapHTML, MIMEType: "text/html"}}},
		{name: "escaped ID", uri: "note://road%6Dap", want: []llmtool.Content{{Type: "text", Text: roadmapHTML, MIMEType: "text/html"}}},
		{name: "code note", uri: "note://snippet", want: []llmtool.Content{{Type: "text", Text: "package main", MIMEType: "text/x-go"}},
			fixture: func(t *testing.T, h *llmtooltest.Harness) {
				_, err := h.DB().ExecContext(t.Context(), `INSERT INTO notes (noteId, title, type, mime, content) VALUES ('snippet', 'Snippet', 'code', 'text/x-go', 'package main')`)
				require.NoError(t, err)
			}},
		{name: "system note, no MIME type", uri: "note://_globalNoteMap", want: []llmtool.Content{{Type: "text", Text: ""}}},
		{name: "protected", uri: "note://secret", err: protected("secret", "noteId"), kind: llmtool.KindDenied},
		{name: "missing", uri: "note://nope", err: notFound("nope", "noteId"), kind: llmtool.KindNotFound},
		{name: "deleted", uri: "note://pancakes", fixture: func(t *testing.T, h *llmtooltest.Harness) { deleteNote("pancakes")(t, h.DB()) },
			err: notFound("pancakes", "noteId"), kind: llmtool.KindNotFound},
		{name: "not a note URI", uri: "note://roadmap/children",
			err: `No resource has the URI "note://roadmap/children". Read a resource the server lists, or a URI that matches one of its templates.`, kind: llmtool.KindNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			if tt.fixture != nil {
				tt.fixture(t, h)
			}
			res := h.Registry().Invoke(h.Context(), llmtool.Call{Resource: tt.uri})
			if tt.err != "" {
				require.True(t, res.IsError, string(res.JSON))
				require.Equal(t, tt.err, res.Text())
				require.Equal(t, tt.kind, llmtool.KindOf(res.Err))
				require.Nil(t, res.Content)
				return
			}
			requireSuccess(t, res)
			require.Equal(t, tt.want, res.Content)
		})
	}
}

// TestCompleteNoteIDs completes the note resource's {noteId} and
// summarize_note's noteId through Registry.Complete: live IDs with the
// prefix in byte order, without the protected note.
func TestCompleteNoteIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	deleteNote("meetings")(t, h.DB())
	tests := []struct {
		target, arg, prefix string
		want                []string
		err                 string
	}{
		{target: "note", arg: "noteId", prefix: "", want: []string{"_globalNoteMap", "_hidden", "_lbRoot", "_share", "pancakes", "projects", "recipes", "roadmap", "root"}},
		{target: "note", arg: "noteId", prefix: "r", want: []string{"recipes", "roadmap", "root"}},
		{target: "note", arg: "noteId", prefix: "roa", want: []string{"roadmap"}},
		{target: "note", arg: "noteId", prefix: "s", want: []string{}}, // secret is protected
		{target: "note", arg: "noteId", prefix: "m", want: []string{}}, // meetings is deleted
		{target: "note", arg: "noteId", prefix: "R", want: []string{}}, // case matters
		{target: "note", arg: "noteId", prefix: "_", want: []string{"_globalNoteMap", "_hidden", "_lbRoot", "_share"}},
		{target: "note", arg: "noteId", prefix: "%", want: []string{}},
		{target: "summarize_note", arg: "noteId", prefix: "p", want: []string{"pancakes", "projects"}},
		{target: "summarize_note", arg: "title", err: `Error: prompt "summarize_note" has no argument "title". Complete one of its arguments: noteId.`},
	}
	for _, tt := range tests {
		t.Run(tt.target+" "+tt.prefix, func(t *testing.T) {
			t.Parallel()
			got, err := h.Registry().Complete(h.Context(), tt.target, tt.arg, tt.prefix)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestSummarizeNotePrompt renders summarize_note through Invoke, as
// mcpadapter's prompts/get and chatadapter.Adapter.Prompt do.
func TestSummarizeNotePrompt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	tests := []struct {
		name, args string
		want       string // the one user message's text
		err        string
	}{
		{name: "note", args: `{"noteId": "pancakes"}`,
			want: "Summarize the note \"Pancakes\" (ID pancakes) in at most three sentences.\nIts content (text/html) follows between the lines.\n---\n" + pancakesHTML + "\n---"},
		{name: "empty note", args: `{"noteId": "_hidden"}`,
			want: "Summarize the note \"Hidden Notes\" (ID _hidden) in at most three sentences.\nThe note is empty; say so."},
		{name: "protected", args: `{"noteId": "secret"}`, err: protected("secret", "noteId")},
		{name: "missing", args: `{"noteId": "nope"}`, err: notFound("nope", "noteId")},
		{name: "no argument", args: `{}`, err: `Error: /noteId: missing required parameter "noteId". Send "noteId" as a string (ID of the note).`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := h.Registry().Invoke(h.Context(), llmtool.Call{Prompt: "summarize_note", Args: []byte(tt.args)})
			if tt.err != "" {
				require.True(t, res.IsError, string(res.JSON))
				require.Equal(t, tt.err, res.Text())
				require.Nil(t, res.Messages)
				return
			}
			requireSuccess(t, res)
			require.Equal(t, []llmtool.Message{{Role: "user", Content: llmtool.TextContent(tt.want)}}, res.Messages)
		})
	}
}

// TestResourceAndPromptListed: the module lists its resource and prompt
// apart from its tools, with write tools off too.
func TestResourceAndPromptListed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, &llmtooltest.Options{WritesOff: true})
	resources, err := h.Registry().List(h.Context(), &llmtool.ListOptions{Resources: true})
	require.NoError(t, err)
	require.Len(t, resources, 1)
	require.Equal(t, []string{"note", "note://{noteId}", "Note", "A note's content, with its MIME type."},
		[]string{resources[0].Name, resources[0].URI, resources[0].FriendlyName, resources[0].Description})
	prompts, err := h.Registry().List(h.Context(), &llmtool.ListOptions{Prompts: true})
	require.NoError(t, err)
	require.Len(t, prompts, 1)
	require.Equal(t, []string{"summarize_note", "Summarize note", "Ask for a short summary of a note."},
		[]string{prompts[0].Name, prompts[0].FriendlyName, prompts[0].Description})
	require.True(t, prompts[0].Prompt)
	require.Equal(t, "noteId", prompts[0].Params[0].Name)
	require.True(t, prompts[0].Params[0].Required)
}
