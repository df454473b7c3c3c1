package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/examples/notes"
)

// fakeModel answers the n-th chat completion request with messages[n] and
// records the requests' messages.
type fakeModel struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests [][]json.RawMessage
}

func newFakeModel(t *testing.T, messages ...string) *fakeModel {
	m := &fakeModel{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		n := len(m.requests)
		m.requests = append(m.requests, body.Messages)
		m.mu.Unlock()
		if n >= len(messages) {
			w.Header().Set("Retry-After", "0") // chat tries again at once, and gives up after its retries
			http.Error(w, `{"error":{"message":"no more replies"}}`, http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, `{"choices":[{"message":%s}]}`, messages[n])
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func toolCall(id, name, args string) string {
	a, _ := json.Marshal(args)
	return `{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + string(a) + `}}]}`
}

func answer(text string) string {
	b, _ := json.Marshal(text)
	return `{"role":"assistant","content":` + string(b) + `}`
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// titlesUnderRoot lists the titles of root's live children, in order.
func titlesUnderRoot(t *testing.T, path string) []string {
	t.Helper()
	db, err := notes.Open(context.Background(), path)
	require.NoError(t, err)
	defer db.Close()
	kids, err := notes.Children(context.Background(), db, "root")
	require.NoError(t, err)
	var out []string
	for _, k := range kids {
		out = append(out, k.Title)
	}
	return out
}

func TestChat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		flags      []string
		wantStderr string
		wantResult string // the content of the tool message sent back, up to its first quote-free part
		created    bool
	}{
		{"writes enabled", []string{"-writes"}, "Create note… done\n", `{"noteId":`, true},
		{"writes off", nil, "Create note… failed\n", `{"error":`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dbPath := filepath.Join(t.TempDir(), "notes.db")
			m := newFakeModel(t,
				toolCall("call_1", "create_note", `{"parentNoteId":"root","title":"Shopping list"}`),
				answer("Done: I created the note."))
			var stdout, stderr bytes.Buffer
			args := append([]string{"-db", dbPath}, tt.flags...)
			args = append(args, "Create", "a", "shopping", "list")
			code := run(context.Background(), args,
				env(map[string]string{"OPENAI_BASE_URL": m.srv.URL + "/v1", "OPENAI_MODEL": "test"}),
				strings.NewReader(""), &stdout, &stderr)
			require.Equal(t, exitOK, code, stderr.String())
			require.Equal(t, "Done: I created the note.\n", stdout.String())
			require.Equal(t, tt.wantStderr, stderr.String())

			require.Len(t, m.requests, 2)
			require.Len(t, m.requests[0], 2)
			require.JSONEq(t, `{"role":"user","content":"Create a shopping list"}`, string(m.requests[0][1]))
			require.Len(t, m.requests[1], 4)
			var tool struct{ Role, ToolCallID, Content string }
			require.NoError(t, json.Unmarshal(m.requests[1][3], &tool))
			require.Equal(t, "tool", tool.Role)
			require.True(t, strings.HasPrefix(tool.Content, tt.wantResult), tool.Content)

			titles := titlesUnderRoot(t, dbPath)
			require.Equal(t, tt.created, contains(titles, "Shopping list"), titles)
		})
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Without a question on the command line, each line of standard input is
// one, in the same conversation.
func TestChatStdin(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "notes.db")
	m := newFakeModel(t, answer("Hello."), answer("Still here."))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-db", dbPath},
		env(map[string]string{"OPENAI_BASE_URL": m.srv.URL + "/v1", "OPENAI_MODEL": "test"}),
		strings.NewReader("Hi\n\nStill there?\n"), &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	require.Equal(t, "Hello.\nStill here.\n", stdout.String())
	require.Empty(t, stderr.String())
	require.Len(t, m.requests, 2)
	require.Len(t, m.requests[1], 4, "system, Hi, Hello., Still there?")
	require.JSONEq(t, `{"role":"user","content":"Still there?"}`, string(m.requests[1][3]))
}

func TestChatErrors(t *testing.T) {
	t.Parallel()
	m := newFakeModel(t) // answers every request with a 500
	model := map[string]string{"OPENAI_BASE_URL": m.srv.URL + "/v1", "OPENAI_MODEL": "test"}
	tests := []struct {
		name   string
		args   []string
		vars   map[string]string
		code   int
		stderr string
	}{
		{"no model", nil, map[string]string{"OPENAI_API_KEY": "sk"}, exitUsage,
			"chat: set OPENAI_MODEL\n"},
		{"nothing set", nil, nil, exitUsage,
			"chat: set OPENAI_MODEL and OPENAI_API_KEY (or OPENAI_BASE_URL for a server that needs no key)\n"},
		{"no key for OpenAI", nil, map[string]string{"OPENAI_MODEL": "gpt"}, exitUsage,
			"chat: set OPENAI_API_KEY (or OPENAI_BASE_URL for a server that needs no key)\n"},
		{"bad flag", []string{"-nope"}, nil, exitUsage,
			"flag provided but not defined: -nope\n"},
		{"server error", []string{"Hi"}, map[string]string{"OPENAI_BASE_URL": m.srv.URL + "/v1", "OPENAI_MODEL": "test"}, exitError,
			"chat: chatadapter: POST " + m.srv.URL + `/v1/chat/completions: 500 Internal Server Error: {"error":{"message":"no more replies"}}` + "\n"},
		{"protected note in a prompt", []string{"-prompt", "summarize_note", "-arg", "noteId=secret"}, model, exitError,
			`chat: prompt summarize_note: Note "secret" (noteId) is protected; tools may neither read nor change it. Work with another note, or ask the user to remove the protection.` + "\n"},
		{"unknown prompt", []string{"-prompt", "nope"}, model, exitError,
			`chat: no prompt is named "nope"; -prompt takes summarize_note` + "\n"},
		{"prompt without its argument", []string{"-prompt", "summarize_note"}, model, exitError,
			`chat: prompt summarize_note: Error: /noteId: missing required parameter "noteId". Send "noteId" as a string (ID of the note).` + "\n"},
		{"-arg without -prompt", []string{"-arg", "noteId=roadmap"}, model, exitUsage,
			"chat: -arg is for -prompt; name the prompt with -prompt\n"},
		{"bad -arg", []string{"-prompt", "summarize_note", "-arg", "roadmap"}, model, exitUsage,
			`invalid value "roadmap" for flag -arg: "roadmap" is not NAME=VALUE` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			args := append([]string{"-db", filepath.Join(t.TempDir(), "notes.db")}, tt.args...)
			code := run(context.Background(), args, env(tt.vars), strings.NewReader(""), &stdout, &stderr)
			require.Equal(t, tt.code, code)
			got := stderr.String()
			if tt.code == exitUsage && (strings.HasPrefix(tt.stderr, "flag") || strings.HasPrefix(tt.stderr, "invalid value")) {
				got, _, _ = strings.Cut(got, "Usage of chat:") // the flag package adds the usage
			}
			require.Equal(t, tt.stderr, got)
			require.Empty(t, stdout.String())
		})
	}
}

// -prompt starts the conversation from a prompt of the notes module, a
// question on the command line following it; without one, standard input
// goes on with the conversation.
func TestChatPrompt(t *testing.T) {
	t.Parallel()
	const summarize = `{"role":"user","content":"Summarize the note \"Pancakes\" (ID pancakes) in at most three sentences.\nIts content (text/html) follows between the lines.\n---\n` +
		`<p>Whisk 250 g flour, 2 eggs, 500 ml milk and a pinch of salt. Rest the batter for 30 minutes, then fry thin pancakes in a hot buttered pan.</p>\n---"}`
	tests := []struct {
		name     string
		question []string
		stdin    string
		answers  []string
		want     [][]string // the messages after the system message, per request
	}{
		{name: "prompt alone", answers: []string{"Thin pancakes."},
			want: [][]string{{summarize}}},
		{name: "prompt and question", question: []string{"In", "French."}, answers: []string{"Des crêpes."},
			want: [][]string{{summarize, `{"role":"user","content":"In French."}`}}},
		{name: "prompt, then standard input", stdin: "Shorter?\n", answers: []string{"Thin pancakes.", "Pancakes."},
			want: [][]string{{summarize}, {summarize, `{"role":"assistant","content":"Thin pancakes."}`, `{"role":"user","content":"Shorter?"}`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			replies := make([]string, len(tt.answers))
			for i, a := range tt.answers {
				replies[i] = answer(a)
			}
			m := newFakeModel(t, replies...)
			var stdout, stderr bytes.Buffer
			args := append([]string{"-db", filepath.Join(t.TempDir(), "notes.db"), "-prompt", "summarize_note", "-arg", "noteId=pancakes"}, tt.question...)
			code := run(context.Background(), args,
				env(map[string]string{"OPENAI_BASE_URL": m.srv.URL + "/v1", "OPENAI_MODEL": "test"}),
				strings.NewReader(tt.stdin), &stdout, &stderr)
			require.Equal(t, exitOK, code, stderr.String())
			require.Equal(t, strings.Join(tt.answers, "\n")+"\n", stdout.String())
			require.Empty(t, stderr.String())
			require.Len(t, m.requests, len(tt.want))
			for i, want := range tt.want {
				var got []string
				for _, msg := range m.requests[i][1:] {
					got = append(got, string(msg))
				}
				require.Equal(t, want, got, "request %d", i)
			}
		})
	}
}

// titlesUnder lists the titles of a note's live children, in order.
func titlesUnder(t *testing.T, path, parent string) []string {
	t.Helper()
	db, err := notes.Open(context.Background(), path)
	require.NoError(t, err)
	defer db.Close()
	kids, err := notes.Children(context.Background(), db, parent)
	require.NoError(t, err)
	var out []string
	for _, k := range kids {
		out = append(out, k.Title)
	}
	return out
}

// With -approve, a destructive call waits for the person's answer on
// standard input, and the model reads what came of it.
// deleteRows are the rows deleting the pancakes note changes, as chat
// shows them before it asks for approval, in the words of notes.Tools' entities.
const deleteRows = `  Delete note "Pancakes": content "<p>Whisk 250 g flour, 2 eggs, 500 ml milk and a pinch of sal…", type "text"
  Delete branch: under "recipes"
  Delete attribute "cuisine": value "french"
`

var stamp = regexp.MustCompile(`"\d{4}-\d\d-\d\dT[0-9:.]+Z"`)

// timeless replaces the times in s, which change from run to run.
func timeless(s string) string { return stamp.ReplaceAllString(s, "<time>") }

func TestChatApproval(t *testing.T) {
	t.Parallel()
	const ask = `Delete note {"noteId":"pancakes"}: Delete note "Pancakes". (notes: 1 updated; branches: 1 updated; attributes: 1 updated)` + "\n" + deleteRows + "Approve? [y/N] "
	tests := []struct {
		name       string
		flags      []string
		stdin      string
		wantStderr string
		wantResult string // the tool message's content
		kept       bool
	}{
		{"approved", []string{"-approve"}, "y\n", ask + "Delete note… done\n", `{"deletedNoteIds":["pancakes"]}`, false},
		{"approved, yes", []string{"-approve"}, " Yes \n", ask + "Delete note… done\n", `{"deletedNoteIds":["pancakes"]}`, false},
		{"denied", []string{"-approve"}, "n\n", ask + "Delete note… not approved\n",
			`{"error":"The user denied this change. Nothing was saved. Ask the user what to do instead."}`, true},
		{"end of input denies", []string{"-approve"}, "", ask + "\nDelete note… not approved\n",
			`{"error":"The user denied this change. Nothing was saved. Ask the user what to do instead."}`, true},
		{"without -approve", nil, "", "Delete note… done\n", `{"deletedNoteIds":["pancakes"]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dbPath := filepath.Join(t.TempDir(), "notes.db")
			m := newFakeModel(t, toolCall("call_1", "delete_note", `{"noteId":"pancakes"}`), answer("Done."))
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"-db", dbPath, "-writes"}, tt.flags...), "Delete", "the", "pancakes")
			code := run(context.Background(), args,
				env(map[string]string{"OPENAI_BASE_URL": m.srv.URL + "/v1", "OPENAI_MODEL": "test"}),
				strings.NewReader(tt.stdin), &stdout, &stderr)
			require.Equal(t, exitOK, code, stderr.String())
			require.Equal(t, "Done.\n", stdout.String())
			require.Equal(t, tt.wantStderr, timeless(stderr.String()))
			require.Len(t, m.requests, 2, "one request before the pause, one after the answer")
			require.Len(t, m.requests[1], 4)
			var tool struct{ Role, Content string }
			require.NoError(t, json.Unmarshal(m.requests[1][3], &tool))
			require.Equal(t, "tool", tool.Role)
			require.Equal(t, tt.wantResult, tool.Content)
			require.Equal(t, tt.kept, contains(titlesUnder(t, dbPath, "recipes"), "Pancakes"))
		})
	}
}
