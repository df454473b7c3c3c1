package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// The scripted model: what the page talks to when no model is configured.
// It is an OpenAI-compatible /v1/chat/completions endpoint, served on a
// loopback port of this process, so the page goes through the same client
// path (chatadapter's Runner, streaming) as with a real model. It reads
// the conversation it is sent, as a model does, and turns a few phrasings
// of the person's last message into tool calls, one step at a time:
//
//	create a note called X under Y   find_note Y, then create_note
//	rename X to Y                    find_note X, then rename_note
//	delete X                         find_note X, then delete_note (asks for approval)
//	show X                           find_note X
//	list notes                       get_child_notes of root
//	undo                             undo_changes (this conversation's last change)
//
// "slowly create a note called X under Y" stops in the middle of writing
// the create_note call (the hold), so the person can press Stop and see
// that nothing was written; "slowly list notes" stops in the middle of
// its answer, whose words stay, cut. Anything else gets the list above.
// Before listing, it thinks aloud, as reasoning models stream it
// (reasoning_content, as DeepSeek, vLLM and llama.cpp send it).

// phrasings is what the scripted model understands, shown on the page.
var phrasings = []string{
	"create a note called Ideas under Projects",
	"rename Ideas to Plans",
	"delete Plans",
	"show Roadmap",
	"list notes",
	"undo",
	"slowly create a note called Draft under Projects",
	"slowly list notes",
}

// scripted is the scripted model's HTTP handler.
type scripted struct {
	// delay is the pause between two streamed pieces, so a person sees
	// the text arrive; 0 in tests.
	delay time.Duration
	// hold is where a slow turn waits, in the middle of its write call,
	// until it returns or ctx ends (the person pressed Stop).
	hold func(ctx context.Context) error
}

// holdFor returns a hold that waits d.
func holdFor(d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// wireMessage is a message of the conversation as the model reads it.
type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// modelCall is a tool call the scripted model makes.
type modelCall struct {
	name string
	args map[string]any
}

// answer is one response: its reasoning, text, calls, and whether it
// holds before the arguments of its write call are complete (or, without
// calls, halfway through its text).
type answer struct {
	thinking string
	text     string
	calls    []modelCall
	slow     bool
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		writeAPIError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint %s %s; this model answers POST /v1/chat/completions", r.Method, r.URL.Path))
		return
	}
	var req struct {
		Messages []wireMessage `json:"messages"`
		Stream   bool          `json:"stream"`
		Options  struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&req); err != nil {
		writeAPIError(w, http.StatusBadRequest, "the body is not a chat completion request: "+err.Error())
		return
	}
	a := reply(req.Messages)
	id := fmt.Sprintf("call_%d", len(req.Messages))
	if !req.Stream {
		writeCompletion(w, a, id)
		return
	}
	s.stream(r.Context(), w, a, id, req.Options.IncludeUsage)
}

func writeAPIError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}

func (a answer) toolCalls(id string) []any {
	var calls []any
	for i, c := range a.calls {
		args, _ := json.Marshal(c.args)
		calls = append(calls, map[string]any{"id": fmt.Sprintf("%s_%d", id, i+1), "type": "function",
			"function": map[string]any{"name": c.name, "arguments": string(args)}})
	}
	return calls
}

func finishReason(a answer) string {
	if len(a.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// usage is a rough count, a token per four bytes, so a host's usage
// display has figures to show.
func usage(a answer) map[string]any {
	n := len(a.text)/4 + 1
	return map[string]any{"prompt_tokens": 100, "completion_tokens": n, "total_tokens": 100 + n}
}

func writeCompletion(w http.ResponseWriter, a answer, id string) {
	msg := map[string]any{"role": "assistant", "content": a.text}
	if calls := a.toolCalls(id); calls != nil {
		msg["tool_calls"] = calls
		if a.text == "" {
			msg["content"] = nil
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-" + id, "object": "chat.completion", "model": "scripted",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finishReason(a)}}, "usage": usage(a)})
}

// stream sends a as OpenAI streams it: the text a word at a time, each
// call's name, then its arguments in pieces; a slow answer holds halfway
// through its last call's arguments, and ends without finishing when the
// hold fails.
func (s *scripted) stream(ctx context.Context, w http.ResponseWriter, a answer, id string, withUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		if s.delay > 0 {
			t := time.NewTimer(s.delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return false
			}
		}
		return true
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-" + id, "object": "chat.completion.chunk", "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for _, word := range strings.SplitAfter(a.thinking, " ") {
		if word != "" && !send(chunk(map[string]any{"reasoning_content": word}, nil)) {
			return
		}
	}
	words := strings.SplitAfter(a.text, " ") // a word and the space after it
	for i, word := range words {
		if a.slow && len(a.calls) == 0 && i == len(words)/2 && s.hold != nil && s.hold(ctx) != nil {
			return // the person stopped: the answer is never complete
		}
		if word == "" {
			continue
		}
		if !send(chunk(map[string]any{"content": word}, nil)) {
			return
		}
	}
	for i, c := range a.toolCalls(id) {
		call := c.(map[string]any)
		fn := call["function"].(map[string]any)
		args := fn["arguments"].(string)
		if !send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": call["id"], "type": "function",
			"function": map[string]any{"name": fn["name"], "arguments": ""}}}}, nil)) {
			return
		}
		half := len(args) / 2
		for k, piece := range []string{args[:half], args[half:]} {
			if !send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": piece}}}}, nil)) {
				return
			}
			if k == 0 && a.slow && i == len(a.calls)-1 && s.hold != nil {
				if s.hold(ctx) != nil {
					return // the person stopped: the call is never complete
				}
			}
		}
	}
	if !send(chunk(map[string]any{}, finishReason(a))) {
		return
	}
	if withUsage {
		c := chunk(nil, nil)
		c["choices"], c["usage"] = []any{}, usage(a)
		if !send(c) {
			return
		}
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// The phrasings, as regular expressions over the person's message
// (lower-cased for matching; the names keep their case).
var (
	reCreate = regexp.MustCompile(`(?i)^(slowly\s+)?(?:create|add|make)\s+(?:a\s+)?note\s+(?:called|named|titled)\s+(.+?)\s+(?:under|in)\s+(.+)$`)
	reRename = regexp.MustCompile(`(?i)^rename\s+(.+?)\s+to\s+(.+)$`)
	reDelete = regexp.MustCompile(`(?i)^(?:delete|remove)\s+(?:the\s+note\s+)?(.+)$`)
	reShow   = regexp.MustCompile(`(?i)^(?:show|open|read)\s+(?:the\s+note\s+)?(.+)$`)
	reList   = regexp.MustCompile(`(?i)^(?:list|what|which)\b.*\bnotes?\b`)
	reUndo   = regexp.MustCompile(`(?i)^undo\b`)
)

// step is what the turn has done since the person's message: the tool
// results, in order, with the tool each answers.
type step struct {
	tool   string
	result json.RawMessage
}

// reply is the scripted model's next answer to the conversation.
func reply(msgs []wireMessage) answer {
	user := -1
	for i, m := range msgs {
		if m.Role == "user" {
			user = i
		}
	}
	if user < 0 {
		return answer{text: help("Hello!")}
	}
	names := map[string]string{}
	var done []step
	for _, m := range msgs[user+1:] {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Function.Name
		}
		if m.Role == "tool" {
			done = append(done, step{tool: names[m.ToolCallID], result: content(m.Content)})
		}
	}
	text := strings.TrimRight(strings.TrimSpace(contentText(msgs[user].Content)), ".!?")
	slowList := false
	if rest, ok := strings.CutPrefix(strings.ToLower(text), "slowly "); ok && reList.MatchString(rest) {
		text, slowList = rest, true
	}
	var last *step
	if len(done) > 0 {
		last = &done[len(done)-1]
	}
	if m := reCreate.FindStringSubmatch(text); m != nil {
		return create(unquote(m[2]), unquote(m[3]), m[1] != "", last)
	}
	if m := reRename.FindStringSubmatch(text); m != nil {
		return onNote(unquote(m[1]), last, "rename_note", map[string]any{"title": unquote(m[2])},
			func(string) string { return fmt.Sprintf("Renamed %q to %q.", unquote(m[1]), unquote(m[2])) })
	}
	if reUndo.MatchString(text) {
		if last == nil {
			return answer{calls: []modelCall{{name: "undo_changes", args: map[string]any{}}}}
		}
		if e := toolError(last.result); e != "" {
			return answer{text: "I could not undo it: " + e}
		}
		return answer{text: "Undone: the conversation's last change is reverted."}
	}
	if m := reDelete.FindStringSubmatch(text); m != nil {
		title := unquote(m[1])
		return onNote(title, last, "delete_note", map[string]any{}, func(string) string { return fmt.Sprintf("Deleted %q.", title) })
	}
	if m := reShow.FindStringSubmatch(text); m != nil {
		title := unquote(m[1])
		if last == nil {
			return answer{calls: []modelCall{{name: "find_note", args: map[string]any{"title": title}}}}
		}
		if e := toolError(last.result); e != "" {
			return answer{text: e}
		}
		var found struct {
			Note *struct {
				Title          string `json:"title"`
				ChildCount     int    `json:"childCount"`
				ContentPreview string `json:"contentPreview"`
			} `json:"note"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(last.result, &found)
		if found.Note == nil {
			return answer{text: found.Message}
		}
		return answer{text: fmt.Sprintf("%s (%d children): %s", found.Note.Title, found.Note.ChildCount, found.Note.ContentPreview)}
	}
	if reList.MatchString(text) {
		if last == nil {
			return answer{thinking: "The person wants the notes: I read the root's children first.",
				calls: []modelCall{{name: "get_child_notes", args: map[string]any{"noteId": "root"}}}}
		}
		var tree struct {
			Children []struct {
				Title string `json:"title"`
			} `json:"children"`
		}
		_ = json.Unmarshal(last.result, &tree)
		var titles []string
		for _, c := range tree.Children {
			titles = append(titles, c.Title)
		}
		return answer{thinking: fmt.Sprintf("%d notes at the top; I name them in order.", len(titles)),
			text: "At the top: " + strings.Join(titles, ", ") + ".", slow: slowList}
	}
	return answer{text: help("I am the scripted model, and I only know a few phrasings.")}
}

func help(first string) string {
	return first + " Try: " + strings.Join(phrasings, "; ") + "."
}

// create finds the parent, then creates the note under it.
func create(title, parent string, slow bool, last *step) answer {
	switch {
	case last == nil && strings.EqualFold(parent, "root"):
		return answer{text: fmt.Sprintf("Creating %q at the top.", title), slow: slow,
			calls: []modelCall{{name: "create_note", args: map[string]any{"parentNoteId": "root", "title": title}}}}
	case last == nil:
		return answer{calls: []modelCall{{name: "find_note", args: map[string]any{"title": parent}}}}
	case last.tool == "find_note":
		id, msg := foundID(last.result)
		if id == "" {
			return answer{text: msg}
		}
		return answer{text: fmt.Sprintf("Creating %q under %q.", title, parent), slow: slow,
			calls: []modelCall{{name: "create_note", args: map[string]any{"parentNoteId": id, "title": title}}}}
	}
	if e := toolError(last.result); e != "" {
		return answer{text: "I could not create it: " + e}
	}
	return answer{text: fmt.Sprintf("Created %q under %q.", title, parent)}
}

// onNote finds the note titled title, then calls tool on it with args
// (and its noteId), then says done's sentence or the tool's error.
func onNote(title string, last *step, tool string, args map[string]any, done func(id string) string) answer {
	switch {
	case last == nil:
		return answer{calls: []modelCall{{name: "find_note", args: map[string]any{"title": title}}}}
	case last.tool == "find_note":
		id, msg := foundID(last.result)
		if id == "" {
			return answer{text: msg}
		}
		args["noteId"] = id
		return answer{calls: []modelCall{{name: tool, args: args}}}
	}
	if e := toolError(last.result); e != "" {
		if strings.Contains(e, "denied") {
			return answer{text: fmt.Sprintf("All right, I left %q as it was.", title)}
		}
		return answer{text: "That did not work: " + e}
	}
	return answer{text: done("")}
}

// foundID reads find_note's result: the note's ID, or what to say.
func foundID(result json.RawMessage) (string, string) {
	if e := toolError(result); e != "" {
		return "", e
	}
	var found struct {
		Note *struct {
			ID string `json:"noteId"`
		} `json:"note"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(result, &found)
	if found.Note == nil {
		return "", found.Message
	}
	return found.Note.ID, ""
}

// toolError is a result's error message, "" for a success.
func toolError(result json.RawMessage) string {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(result, &e)
	return e.Error
}

// content is a tool message's content: the JSON its string holds.
func content(c json.RawMessage) json.RawMessage {
	return json.RawMessage(contentText(c))
}

// contentText is a message content's text: the string, or its text parts.
func contentText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(c, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// unquote trims the quotes a person may put around a title.
func unquote(s string) string {
	s = strings.TrimSpace(s)
	for _, q := range []string{`"`, `'`, "“", "”"} {
		s = strings.TrimPrefix(strings.TrimSuffix(s, q), q)
	}
	return strings.TrimSpace(s)
}
