package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The app over HTTP, without a browser: what each request refuses, a
// turn's stream, and a paused turn that outlives a restart.

func TestRefusals(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ana, ben := s.client("ana"), s.client("ben")
	id := s.newConversation(ana)
	conv := fmt.Sprintf("/api/conversations/%d", id)
	tests := []struct {
		name   string
		c      *http.Client
		method string
		path   string
		body   string
		status int
		want   string
	}{
		{"not signed in", http.DefaultClient, http.MethodGet, "/api/tree", "", 401, `{"error":"Sign in first."}`},
		{"a form, not JSON", ana, http.MethodPost, "/api/conversations", "", 415, `{"error":"Send JSON (Content-Type: application/json)."}`},
		{"another user's conversation", ben, http.MethodGet, conv, "", 404, `{"error":"No such conversation."}`},
		{"another user's conversation, sent to", ben, http.MethodPost, conv + "/send", `{"text":"list notes"}`, 404, `{"error":"No such conversation."}`},
		{"no such conversation", ana, http.MethodGet, "/api/conversations/x", "", 404, `{"error":"No such conversation."}`},
		{"an empty message", ana, http.MethodPost, conv + "/send", `{"text":"  "}`, 400, `{"error":"Send {\"text\": \"...\"}, not empty."}`},
		{"an answer with nothing pending", ana, http.MethodPost, conv + "/answer", `{"approve":true}`, 409, `{"error":"Nothing waits for an answer in this conversation."}`},
		{"an answer that is not JSON", ana, http.MethodPost, conv + "/answer", `yes`, 400,
			`{"error":"Send {\"approve\": true} or {\"approve\": false}, or a question's {\"property\": ..., \"value\": ...}."}`},
		{"an undo without an id", ana, http.MethodPost, conv + "/undo", `{}`, 400, `{"error":"Send {\"changeset\": N}, the id of a change."}`},
		{"no such note", ana, http.MethodGet, "/api/notes/nope", "", 404, `{"error":"No such note."}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := s.call(tt.c, tt.method, tt.path, tt.body)
			require.Equal(t, tt.status, status)
			require.JSONEq(t, tt.want, body)
		})
	}

	// An undo of a change that is not there is the tool's refusal, shown
	// on the card.
	status, body := s.call(ana, http.MethodPost, conv+"/undo", `{"changeset":99}`)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"ok":false,"error":"There is no change 99 in this workspace. Call list_changes for the ids of recent changes."}`, body)

	// A bad sign-in.
	res, err := http.PostForm(s.srv.URL+"/login", map[string][]string{"user": {"eve"}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
}

// A turn streams its items and saves the conversation: a created note's
// card has its changeset, Undo through the page's endpoint takes it back,
// and the model hears of it with the next message.
func TestTurnOverHTTP(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ana := s.client("ana")
	id := s.newConversation(ana)
	conv := fmt.Sprintf("/api/conversations/%d", id)

	status, stream := s.call(ana, http.MethodPost, conv+"/send", `{"text":"create a note called Ideas under Projects"}`)
	require.Equal(t, http.StatusOK, status)
	got := items(t, stream)
	var kinds []string
	for _, it := range got {
		kinds = append(kinds, fmt.Sprint(it["type"]))
	}
	require.Equal(t, []string{"user", "forming", "forming", "forming", "call", "done", "text", "text", "text", "text",
		"forming", "forming", "forming", "call", "done", "text", "text", "text", "text", "end"}, kinds)
	// the call as the model writes it: its name first, then its arguments in two pieces
	require.Equal(t, item{"type": "forming", "step": 1.0, "index": 0.0, "tool": "find_note", "name": "Find note", "write": false, "text": ""}, got[1])
	require.Equal(t, `{"title":"Projects"}`, fmt.Sprint(got[2]["text"], got[3]["text"]))
	require.Equal(t, "Find note", got[4]["name"])
	require.Equal(t, map[string]any{"title": "Projects"}, got[4]["args"])
	require.Equal(t, true, got[10]["write"])
	created := got[14]
	require.Equal(t, true, created["ok"])
	require.Equal(t, "Create note… done", created["label"])
	require.Equal(t, `Create note "Ideas": type "text"; Create branch: under "projects"`, created["summary"])
	cs := int64(created["changeset"].(float64))
	require.Positive(t, cs)
	require.Equal(t, `Created "Ideas" under "Projects".`, got[19]["answer"])
	require.Equal(t, 1, s.noteCount("ana", "Ideas"))
	require.Zero(t, s.noteCount("ben", "Ideas"), "ben's notes are his own")

	status, body := s.call(ana, http.MethodPost, conv+"/undo", fmt.Sprintf(`{"changeset":%d}`, cs))
	require.Equal(t, http.StatusOK, status)
	var undone struct {
		OK   bool `json:"ok"`
		Item item `json:"item"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &undone))
	require.True(t, undone.OK, body)
	require.Equal(t, float64(cs), undone.Item["changeset"])
	require.Zero(t, s.noteCount("ana", "Ideas"))

	// The saved conversation: the log the page draws, and the model's
	// messages, to which the next turn adds what the person did.
	c, err := s.app.store.get(t.Context(), "ana", id)
	require.NoError(t, err)
	require.Equal(t, "create a note called Ideas under Projects", c.Title)
	require.Len(t, c.Log, 11, "the text pieces of a step, and a forming call's, join into one item")
	var forming item
	require.NoError(t, json.Unmarshal(c.Log[1], &forming))
	require.Equal(t, `{"title":"Projects"}`, forming["text"])
	require.Len(t, c.Messages, 6)
	require.Equal(t, []string{fmt.Sprintf("(Meanwhile I undid change %d myself, from the page.)", cs)}, c.Notices)
	_, stream = s.call(ana, http.MethodPost, conv+"/send", `{"text":"list notes"}`)
	require.Equal(t, "At the top: Projects, Recipes, Secret, Hidden Notes, Shared Notes.", items(t, stream)[len(items(t, stream))-1]["answer"])
	c, err = s.app.store.get(t.Context(), "ana", id)
	require.NoError(t, err)
	require.Empty(t, c.Notices)
	require.Contains(t, string(c.Messages[6]), "Meanwhile I undid change")
}

// A turn paused for approval is kept in the database: after a restart,
// the answer resumes it, and an approval's token still holds (the app
// keeps its key).
func TestPausedTurnOutlivesRestart(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ana := s.client("ana")
	id := s.newConversation(ana)
	conv := fmt.Sprintf("/api/conversations/%d", id)
	_, stream := s.call(ana, http.MethodPost, conv+"/send", `{"text":"delete Pancakes"}`)
	got := items(t, stream)
	approval := got[len(got)-2]
	require.Equal(t, "approval", approval["type"])
	require.Equal(t, `Delete note "Pancakes".`, approval["summary"])
	require.Equal(t, approval["id"], got[len(got)-1]["pending"])
	status, body := s.call(ana, http.MethodPost, conv+"/send", `{"text":"list notes"}`)
	require.Equal(t, http.StatusConflict, status)
	require.JSONEq(t, `{"error":"A change waits for your approval: approve or deny it first."}`, body)

	s.srv.Close()
	s.app.close()
	s.start(s.ep) // a new process over the same files
	ana = s.client("ana")
	_, body = s.call(ana, http.MethodGet, conv, "")
	var view struct {
		Pending string `json:"pending"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &view))
	require.Equal(t, approval["id"], view.Pending)

	_, stream = s.call(ana, http.MethodPost, conv+"/answer", `{"approve":true}`)
	got = items(t, stream)
	require.Equal(t, "Delete note… done", got[0]["label"])
	require.Equal(t, `Deleted "Pancakes".`, got[len(got)-1]["answer"])
	require.Zero(t, s.noteCount("ana", "Pancakes"))
	status, body = s.call(ana, http.MethodPost, conv+"/answer", `{"approve":true}`)
	require.Equal(t, http.StatusConflict, status)
	require.JSONEq(t, `{"error":"Nothing waits for an answer in this conversation."}`, body)
}

// One turn at a time in a conversation: a second one is refused while the
// first runs.
func TestOneTurnAtATime(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ana := s.client("ana")
	id := s.newConversation(ana)
	conv := fmt.Sprintf("/api/conversations/%d", id)
	done := make(chan string)
	go func() {
		_, stream := s.call(ana, http.MethodPost, conv+"/send", `{"text":"slowly create a note called Draft under Projects"}`)
		done <- stream
	}()
	s.waitHold()
	status, body := s.call(ana, http.MethodPost, conv+"/send", `{"text":"list notes"}`)
	require.Equal(t, http.StatusConflict, status)
	require.JSONEq(t, `{"error":"A turn is running in this conversation; wait for it to end, or press Stop."}`, body)
	close(s.gate.release)
	got := items(t, <-done)
	require.Equal(t, `Created "Draft" under "Projects".`, got[len(got)-1]["answer"])
}

// The scripted model's phrasings, step by step: what it calls, and what
// it says once the tools answered.
func TestScriptedModel(t *testing.T) {
	t.Parallel()
	user := func(text string) wireMessage {
		b, _ := json.Marshal(text)
		return wireMessage{Role: "user", Content: b}
	}
	called := func(id, tool string) wireMessage {
		m := wireMessage{Role: "assistant"}
		m.ToolCalls = append(m.ToolCalls, struct {
			ID       string `json:"id"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}{ID: id})
		m.ToolCalls[0].Function.Name = tool
		return m
	}
	result := func(id, content string) wireMessage {
		b, _ := json.Marshal(content)
		return wireMessage{Role: "tool", ToolCallID: id, Content: b}
	}
	found := `{"note":{"noteId":"projects","title":"Projects"}}`
	tests := []struct {
		name  string
		msgs  []wireMessage
		calls string // the calls, as "name args" lines
		text  string
		slow  bool
	}{
		{"create: find the parent", []wireMessage{user("Create a note called Ideas under Projects.")}, `find_note {"title":"Projects"}`, "", false},
		{"create: then create", []wireMessage{user("create a note called Ideas under Projects"), called("c1", "find_note"), result("c1", found)},
			`create_note {"parentNoteId":"projects","title":"Ideas"}`, `Creating "Ideas" under "Projects".`, false},
		{"create at the top", []wireMessage{user(`create a note called "Top" under root`)}, `create_note {"parentNoteId":"root","title":"Top"}`, `Creating "Top" at the top.`, false},
		{"create slowly", []wireMessage{user("slowly create a note called Draft under Projects"), called("c1", "find_note"), result("c1", found)},
			`create_note {"parentNoteId":"projects","title":"Draft"}`, `Creating "Draft" under "Projects".`, true},
		{"create: the parent is missing", []wireMessage{user("create a note called X under Nowhere"), called("c1", "find_note"), result("c1", `{"error":"No note has a title matching \"Nowhere\"."}`)},
			"", `No note has a title matching "Nowhere".`, false},
		{"create: refused", []wireMessage{user("create a note called X under Projects"), called("c1", "find_note"), result("c1", found), called("c2", "create_note"), result("c2", `{"error":"Write tools are off."}`)},
			"", "I could not create it: Write tools are off.", false},
		{"rename", []wireMessage{user("rename Ideas to Plans"), called("c1", "find_note"), result("c1", `{"note":{"noteId":"n1"}}`)},
			`rename_note {"noteId":"n1","title":"Plans"}`, "", false},
		{"delete, denied", []wireMessage{user("delete Plans"), called("c1", "find_note"), result("c1", `{"note":{"noteId":"n1"}}`), called("c2", "delete_note"),
			result("c2", `{"error":"The user denied this change. Nothing was saved."}`)}, "", `All right, I left "Plans" as it was.`, false},
		{"delete, refused", []wireMessage{user("delete Shared Notes"), called("c1", "find_note"), result("c1", `{"note":{"noteId":"_share"}}`), called("c2", "delete_note"),
			result("c2", `{"error":"Note \"_share\" is a system note."}`)}, "", `That did not work: Note "_share" is a system note.`, false},
		{"undo", []wireMessage{user("undo")}, `undo_changes {}`, "", false},
		{"undo, done", []wireMessage{user("undo that"), called("c1", "undo_changes"), result("c1", `{"undone":[4]}`)}, "", "Undone: the conversation's last change is reverted.", false},
		{"list", []wireMessage{user("list notes")}, `get_child_notes {"noteId":"root"}`, "", false},
		{"anything else", []wireMessage{user("hi")}, "", help("I am the scripted model, and I only know a few phrasings."), false},
		{"no user message", nil, "", help("Hello!"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := reply(tt.msgs)
			var calls []string
			for _, c := range a.calls {
				b, _ := json.Marshal(c.args)
				calls = append(calls, c.name+" "+string(b))
			}
			require.Equal(t, tt.calls, strings.Join(calls, "\n"))
			require.Equal(t, tt.text, a.text)
			require.Equal(t, tt.slow, a.slow)
		})
	}
}

func TestEndpointFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		ok   bool
		base string
		err  string
	}{
		{env: nil},
		{env: map[string]string{"OPENAI_MODEL": "gpt-4.1-mini", "OPENAI_API_KEY": "sk-1"}, ok: true, base: "https://api.openai.com/v1"},
		{env: map[string]string{"OPENAI_MODEL": "qwen2.5:7b", "OPENAI_BASE_URL": "http://localhost:11434/v1"}, ok: true, base: "http://localhost:11434/v1"},
		{env: map[string]string{"OPENAI_MODEL": "gpt-4.1-mini"}, err: "set OPENAI_API_KEY (or OPENAI_BASE_URL for a server that needs no key)"},
		{env: map[string]string{"OPENAI_API_KEY": "sk-1"}, err: "set OPENAI_MODEL too, or unset OPENAI_BASE_URL and OPENAI_API_KEY for the scripted model"},
	}
	for _, tt := range tests {
		ep, ok, err := endpointFromEnv(func(k string) string { return tt.env[k] })
		if tt.err != "" {
			require.EqualError(t, err, tt.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tt.ok, ok)
		require.Equal(t, tt.base, ep.BaseURL)
	}
}

// A tool that asks the person (find_note, when two notes have the title)
// pauses the turn with the question and its choices; the chosen value
// resumes it.
func TestQuestion(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ana := s.client("ana")
	conv := fmt.Sprintf("/api/conversations/%d", s.newConversation(ana))
	s.call(ana, http.MethodPost, conv+"/send", `{"text":"create a note called Roadmap under Recipes"}`)
	require.Equal(t, 2, s.noteCount("ana", "Roadmap"))

	_, stream := s.call(ana, http.MethodPost, conv+"/send", `{"text":"show Roadmap"}`)
	got := items(t, stream)
	q := got[len(got)-2]
	require.Equal(t, "question", q["type"])
	require.Equal(t, `Find note asks: 2 notes have a title matching "Roadmap". Which one do you mean?`, q["prompt"])
	choices := q["choices"].([]any)
	require.Len(t, choices, 2)
	require.Contains(t, choices, map[string]any{"property": "noteId", "value": "roadmap", "label": "Roadmap (in Projects)"})
	require.Equal(t, q["id"], got[len(got)-1]["pending"])

	_, stream = s.call(ana, http.MethodPost, conv+"/answer", `{"property":"noteId","value":"roadmap"}`)
	got = items(t, stream)
	require.Equal(t, "Find note… done", got[0]["label"])
	require.Regexp(t, `^Roadmap \(0 children\): Q3 roadmap`, got[len(got)-1]["answer"])
}

// Closing the tab in the middle of a turn is Stop: the request's context
// ends, nothing half-written remains, the conversation is saved with what
// finished and goes on.
func TestClosedTab(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ana := s.client("ana")
	id := s.newConversation(ana)
	conv := fmt.Sprintf("/api/conversations/%d", id)
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.srv.URL+conv+"/send", strings.NewReader(`{"text":"slowly create a note called Draft under Projects"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := ana.Do(req)
	require.NoError(t, err)
	s.waitHold()
	for in := bufio.NewScanner(res.Body); !strings.Contains(in.Text(), `"type":"forming","write":true`); { // the page saw the words and the call forming
		require.True(t, in.Scan(), "the stream ended before create_note was forming")
	}
	cancel() // the tab is gone
	res.Body.Close()
	s.waitSaved(id)
	require.Zero(t, s.noteCount("ana", "Draft"))
	c, err := s.app.store.get(t.Context(), "ana", id)
	require.NoError(t, err)
	var last item
	require.NoError(t, json.Unmarshal(c.Log[len(c.Log)-1], &last))
	require.Equal(t, item{"type": "end", "answer": `Creating "Draft" under "Projects".`, "cut": true, "error": "Stopped. What finished before stays; nothing else was saved.", "stopped": true}, last)
	require.Len(t, c.Messages, 4, "the question, find_note's call and its result, and the words the model had written, cut")
	require.JSONEq(t, `{"role":"assistant","content":"Creating \"Draft\" under \"Projects\"."}`, string(c.Messages[3]))
	require.Nil(t, c.Paused)

	_, stream := s.call(ana, http.MethodPost, conv+"/send", `{"text":"create a note called Final under Projects"}`)
	got := items(t, stream)
	require.Equal(t, `Created "Final" under "Projects".`, got[len(got)-1]["answer"])
}
