package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/chatadapter"
	chatrun "github.com/llmtool/llmtool/chatadapter/run"
)

// The chat panel's turns. A turn runs inside the request that asked for
// it (send, or answer for a turn paused for approval) and streams to the
// page as server-sent events; when the person presses Stop, or closes the
// tab, the request's context ends and so does the turn (chatadapter rolls
// back a write in progress). Whatever happened, the conversation is saved
// when the turn ends: the messages for the model, the paused turn if it
// waits for approval, and the log the page draws it from.

// conversationPrefix starts the id of a chat conversation in the change
// history ("chat-12"); MCP sessions have ids of their own.
const conversationPrefix = "chat-"

// newTitle is a conversation's title until its first message.
const newTitle = "New conversation"

// item is one entry of a conversation's log, as the page draws it: the
// same JSON goes over the stream and into the log.
type item map[string]any

// turn is a running turn's link to the page and the conversation's log.
type turn struct {
	mu  sync.Mutex
	sse *sse
	c   *conversation
}

// put sends it to the page and keeps it in the log; the pieces of one
// step's text, of its thinking, and of one forming call join into one
// item there.
func (t *turn) put(it item) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sse.send("item", it)
	if k := it["type"]; (k == "text" || k == "thinking" || k == "forming") && len(t.c.Log) > 0 {
		var last item
		if json.Unmarshal(t.c.Log[len(t.c.Log)-1], &last) == nil && last["type"] == k &&
			fmt.Sprint(last["step"]) == fmt.Sprint(it["step"]) && fmt.Sprint(last["index"]) == fmt.Sprint(it["index"]) {
			last["text"] = fmt.Sprint(last["text"]) + fmt.Sprint(it["text"])
			t.c.Log[len(t.c.Log)-1], _ = json.Marshal(last)
			return
		}
	}
	b, _ := json.Marshal(it)
	t.c.Log = append(t.c.Log, b)
}

// event turns chatadapter's events into the page's items.
func (t *turn) event(e chatadapter.Event) {
	switch e.Kind {
	case chatadapter.TextDelta:
		t.put(item{"type": "text", "step": e.Step, "text": e.Text})
	case chatadapter.ReasoningDelta:
		t.put(item{"type": "thinking", "step": e.Step, "text": e.Text})
	case chatadapter.CallInputDelta: // a call the model is writing: its card, then its arguments as they come
		t.put(item{"type": "forming", "step": e.Step, "index": e.Index, "tool": e.Tool, "name": e.FriendlyName, "write": e.Write, "text": e.Text})
	case chatadapter.CallStarted:
		t.put(item{"type": "call", "id": e.CallID, "index": e.Index, "tool": e.Tool, "name": e.FriendlyName, "args": json.RawMessage(validJSON(e.Args)), "write": e.Write})
	case chatadapter.CallPaused:
		t.put(pendingItem(e.CallID, e.Pending))
	case chatadapter.CallFinished:
		it := item{"type": "done", "id": e.CallID, "ok": !e.IsError, "label": e.Label}
		if e.IsError {
			it["error"] = e.Result.Text() // what the model reads
			it["denied"] = errors.Is(e.Err, approval.ErrRefused)
		}
		if cs := e.Result.Changeset; cs != nil && cs.ID != 0 {
			it["changeset"] = cs.ID
			it["summary"], it["worded"] = changedLine(cs)
			it["rows"] = strings.Split(cs.String(), "\n")
			it["undoable"] = cs.NotUndoable == ""
		}
		t.put(it)
	case chatadapter.ModelRetry: // the step's attempt failed before its words: what it thought and began to call goes
		t.put(item{"type": "status", "text": e.Label, "retry": e.Step})
	case chatadapter.TurnEnded:
		stopped := errors.Is(e.Err, chatrun.ErrStepLimit) || errors.Is(e.Err, chatrun.ErrBudget)
		if stopped || e.Err == nil && e.Label != e.Text {
			// The run stopped, or the model ended without its answer (a
			// content filter, a refusal, a cut): the line says how to go
			// on. A failed turn says it in its end item (turnFailed).
			t.put(item{"type": "status", "text": e.Label})
		}
	}
}

// pendingItem is what the page shows of a call that waits: the change
// with Approve and Deny, or the tool's question with its choices.
func pendingItem(id string, p *chatadapter.Pending) item {
	if q := p.Question; q != nil {
		return item{"type": "question", "id": id, "name": p.FriendlyName, "prompt": p.Prompt, "choices": choices(q.Schema)}
	}
	it := item{"type": "approval", "id": id, "name": p.FriendlyName, "prompt": p.Prompt, "summary": p.Summary, "preview": p.Preview.String()}
	if cs := p.Preview.Changeset; cs != nil {
		it["rows"] = strings.Split(cs.String(), "\n")
	}
	return it
}

// choices reads a question's form of one property whose values are a
// list (enum, or oneOf of const and title): the buttons the page shows.
func choices(schema json.RawMessage) []item {
	var s struct {
		Properties map[string]struct {
			Enum  []string `json:"enum"`
			OneOf []struct {
				Const string `json:"const"`
				Title string `json:"title"`
			} `json:"oneOf"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	out := []item{}
	for name, p := range s.Properties {
		for _, v := range p.Enum {
			out = append(out, item{"property": name, "value": v, "label": v})
		}
		for _, o := range p.OneOf {
			out = append(out, item{"property": name, "value": o.Const, "label": o.Title})
		}
	}
	return out
}

// countRows says what a change did per table, as a person reads it:
// "notes: 1 inserted; branches: 1 inserted".
// changedLine is what a write changed, in one line: its rows in the
// store's words (notes.Tools' entities), or, where a row has none, the
// rows per table; worded reports the first.
func changedLine(cs *changeset.Set) (line string, worded bool) {
	texts := make([]string, 0, len(cs.Rows))
	for _, r := range cs.Rows {
		if r.Text == "" {
			return countRows(cs), false
		}
		texts = append(texts, r.Text)
	}
	return strings.Join(texts, "; "), true
}

// countRows is what a write changed, as rows per table.
func countRows(cs *changeset.Set) string {
	var tables []string
	counts := map[string]map[changeset.Op]int{}
	for _, r := range cs.Rows {
		if counts[r.Table] == nil {
			counts[r.Table] = map[changeset.Op]int{}
			tables = append(tables, r.Table)
		}
		counts[r.Table][r.Op]++
	}
	var parts []string
	for _, t := range tables {
		var ops []string
		for _, op := range []struct {
			op   changeset.Op
			verb string
		}{{changeset.Insert, "inserted"}, {changeset.Update, "updated"}, {changeset.Delete, "deleted"}} {
			if n := counts[t][op.op]; n > 0 {
				ops = append(ops, fmt.Sprintf("%d %s", n, op.verb))
			}
		}
		parts = append(parts, t+": "+strings.Join(ops, ", "))
	}
	return strings.Join(parts, "; ")
}

func validJSON(b []byte) []byte {
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b)) // malformed arguments: shown as the text they are
	return s
}

// run runs one turn of c in the request, streaming it to the page, and
// saves the conversation when it ends.
func (a *app) run(w http.ResponseWriter, r *http.Request, ws *workspace, c *conversation, first []item,
	start func(ctx context.Context) (*chatrun.Transcript, error)) {
	s, ok := startSSE(w)
	if !ok {
		return
	}
	t := &turn{sse: s, c: c}
	for _, it := range first {
		t.put(it)
	}
	ctx := chatadapter.WithEvents(chatadapter.WithConversation(ws.as(r.Context()), c.conversationID()), t.event)
	tr, err := start(ctx)

	end := item{"type": "end", "answer": tr.Answer}
	if tr.Cut { // stopped while the model wrote: its words stay, marked cut
		end["cut"] = true
	}
	switch {
	case r.Context().Err() != nil:
		end["error"] = "Stopped. What finished before stays; nothing else was saved."
		end["stopped"] = true
	case err != nil:
		a.cfg.logger.ErrorContext(r.Context(), "notes-web: turn failed", "conversation", c.ID, "err", err)
		end["error"] = turnFailed(err)
	}
	c.Messages, c.Paused = tr.Messages, nil
	if tr.Pending != nil {
		end["pending"] = tr.Pending.Call.ID
		if c.Paused, err = json.Marshal(tr); err != nil {
			end["error"] = "The paused turn could not be saved: " + err.Error()
		}
	}
	t.put(end)
	// Saved even when the person left: the conversation is what happened.
	if err := a.store.save(context.WithoutCancel(r.Context()), c); err != nil {
		t.sse.send("item", item{"type": "end", "error": err.Error()})
	}
	if a.turnSaved != nil {
		a.turnSaved(c.ID)
	}
}

// turnFailed says to the person why a turn ended early, in the page's
// words: a model that could not be reached or answered with an error is
// said so, without its URL (the log keeps the detail).
func turnFailed(err error) string {
	const after = " What finished before stays; send your message again"
	var he *chatrun.HTTPError
	var ue *url.Error
	switch {
	case errors.As(err, &he): // the provider's error, by its class: what to do
		return he.Line(nil, "") + " What finished before stays."
	case errors.As(err, &ue):
		return "The model could not be reached." + after + " once it runs (the server's log has the detail)."
	}
	return "The turn failed: " + err.Error()
}

// claimed loads the conversation the path names and runs f with it,
// alone: a turn or an undo of one conversation at a time, each reading
// what the one before saved. Whose the conversation is comes first: another
// user's answers 404 whatever its state, so nothing tells them it exists.
func (a *app) claimed(w http.ResponseWriter, r *http.Request, ws *workspace, f func(c *conversation)) {
	owned := a.conversationOf(w, r, ws)
	if owned == nil {
		return
	}
	id := owned.ID
	a.mu.Lock()
	busy := a.running[id]
	a.running[id] = true
	a.mu.Unlock()
	if busy {
		httpError(w, http.StatusConflict, "A turn is running in this conversation; wait for it to end, or press Stop.")
		return
	}
	defer func() {
		a.mu.Lock()
		delete(a.running, id)
		a.mu.Unlock()
	}()
	if c := a.conversationOf(w, r, ws); c != nil { // again: what the turn before saved
		f(c)
	}
}

// send starts a turn with the person's message.
func (a *app) send(w http.ResponseWriter, r *http.Request, ws *workspace) {
	var in struct {
		Text string `json:"text"`
	}
	const usage = `Send {"text": "..."}, not empty.`
	if !readJSON(w, r, &in, usage) {
		return
	}
	text := strings.TrimSpace(in.Text)
	if text == "" {
		httpError(w, http.StatusBadRequest, usage)
		return
	}
	if msg := messageTooLong(text); msg != "" {
		httpError(w, http.StatusRequestEntityTooLarge, msg)
		return
	}
	a.claimed(w, r, ws, func(c *conversation) { a.sendIn(w, r, ws, c, text) })
}

func (a *app) sendIn(w http.ResponseWriter, r *http.Request, ws *workspace, c *conversation, text string) {
	if c.Paused != nil {
		httpError(w, http.StatusConflict, "A change waits for your approval: approve or deny it first.")
		return
	}
	if c.Title == newTitle {
		c.Title = title(text)
	}
	msgs := c.Messages
	for _, n := range c.Notices { // what the person did meanwhile, so the model knows
		msgs = append(msgs, chatrun.UserMessage(n))
	}
	c.Notices = nil
	msgs = append(msgs, chatrun.UserMessage(text))
	a.run(w, r, ws, c, []item{{"type": "user", "text": text}}, func(ctx context.Context) (*chatrun.Transcript, error) {
		return ws.runner.Run(ctx, msgs)
	})
}

func title(text string) string {
	if r := []rune(text); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return text
}

// answer resumes the paused turn with the person's answer: approve (true
// or false) for an approval; for a question, the chosen value, or none to
// skip it.
func (a *app) answer(w http.ResponseWriter, r *http.Request, ws *workspace) {
	var in struct {
		Approve  *bool           `json:"approve"`
		Property string          `json:"property"`
		Value    json.RawMessage `json:"value"`
	}
	if !readJSON(w, r, &in, `Send {"approve": true} or {"approve": false}, or a question's {"property": ..., "value": ...}.`) {
		return
	}
	answer := ask.ElicitResult{Action: ask.Decline}
	switch {
	case in.Approve != nil && *in.Approve:
		answer = ask.ElicitResult{Action: ask.Accept}
	case in.Property != "" && len(in.Value) > 0:
		content, _ := json.Marshal(map[string]json.RawMessage{in.Property: in.Value})
		answer = ask.ElicitResult{Action: ask.Accept, Content: content}
	}
	a.claimed(w, r, ws, func(c *conversation) {
		if c.Paused == nil {
			httpError(w, http.StatusConflict, "Nothing waits for an answer in this conversation.")
			return
		}
		tr, err := ws.runner.Restore(c.Paused)
		if err != nil {
			httpError(w, http.StatusInternalServerError, err.Error())
			return
		}
		a.run(w, r, ws, c, nil, func(ctx context.Context) (*chatrun.Transcript, error) {
			return ws.runner.Resume(ctx, tr, answer)
		})
	})
}

// undo undoes one change of the conversation, as the person: the tool
// undo_changes through the same registry, with the conversation's id, so
// it is recorded (and could be undone) like any change. The model learns
// of it with the next message.
func (a *app) undo(w http.ResponseWriter, r *http.Request, ws *workspace) {
	var in struct {
		Changeset int64 `json:"changeset"`
	}
	const usage = `Send {"changeset": N}, the id of a change.`
	if !readJSON(w, r, &in, usage) {
		return
	}
	if in.Changeset <= 0 {
		httpError(w, http.StatusBadRequest, usage)
		return
	}
	a.claimed(w, r, ws, func(c *conversation) { a.undoIn(w, r, ws, c, in.Changeset) })
}

func (a *app) undoIn(w http.ResponseWriter, r *http.Request, ws *workspace, c *conversation, id int64) {
	args, _ := json.Marshal(map[string]int64{"id": id})
	call := llmtool.Call{Tool: "undo_changes", Args: args, Conversation: c.conversationID()}
	res := ws.reg.Invoke(ws.as(r.Context()), call)
	if res.Approval != nil {
		// An undo that deletes rows asks, as deleting a note does; the
		// person pressed Undo on the change themselves, which approves it.
		call.Approval = &approval.Answer{Token: res.Approval.Token, Approved: true}
		res = ws.reg.Invoke(ws.as(r.Context()), call)
	}
	if res.IsError {
		writeJSON(w, item{"ok": false, "error": res.Text()})
		return
	}
	it := item{"type": "undone", "changeset": id}
	if res.Changeset != nil {
		it["by"] = res.Changeset.ID
	}
	b, _ := json.Marshal(it)
	c.Log = append(c.Log, b)
	c.Notices = append(c.Notices, fmt.Sprintf("(Meanwhile I undid change %d myself, from the page.)", id))
	if err := a.store.save(context.WithoutCancel(r.Context()), c); err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, item{"ok": true, "item": it})
}
