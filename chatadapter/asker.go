package chatadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/internal/replay"
)

// Asking the person in chat. Dispatch and Run give every call an
// ask.Asker that runs the handler again, as mcpadapter's does (an
// ask.Rerunner): a question it has no answer for fails the run with
// ask.ErrInputRequired, so nothing is held while the person thinks, and
// the turn pauses at the call with its Question. The person's answer
// joins the call's answers, and the call runs again from the start; each
// ask.Elicit gets the answer to its question, matched by key and content
// (internal/replay, as mcpadapter's), so a question whose message or form
// changed since is asked anew. The answers are plain data in the turn,
// which is why a paused turn can be saved and resumed in another process.
//
// Chat asks the person, never a model: ask.Sample and ask.Roots get
// ask.ErrUnsupported.

// answered is the person's answer to a call's question, as a saved turn
// holds it.
type answered struct {
	Key     string          `json:"key"`
	Digest  string          `json:"digest"` // of the question's message and schema
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
}

// elicited is an answer's value in the replay.
type elicited struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
}

// asker is one call's Asker.
type asker struct {
	book *replay.Book[*ask.ElicitRequest]
}

func newAsker(answers []answered) *asker {
	as := make([]replay.Answer, 0, len(answers))
	for _, a := range answers {
		v, _ := json.Marshal(elicited{Action: a.Action, Content: a.Content})
		as = append(as, replay.Answer{Key: a.Key, Digest: a.Digest, Value: v})
	}
	return &asker{book: replay.New[*ask.ElicitRequest](as, "")}
}

// asked returns the first question of the last run without an answer,
// and its digest, or nil.
func (q *asker) asked() (*ask.ElicitRequest, string) {
	if asked, _ := q.book.Asked(); len(asked) > 0 {
		p := *asked[0].Request
		p.Key = asked[0].Key // "elicit-N" for a question without a Key
		return &p, asked[0].Digest
	}
	return nil, ""
}

// Reruns marks the asker as an ask.Rerunner, so write tools may ask.
func (q *asker) Reruns() bool { return true }

// Sample is refused: in chat a tool asks the person, not a model.
func (q *asker) Sample(context.Context, ask.SampleRequest) (ask.SampleResult, error) {
	return ask.SampleResult{}, fmt.Errorf("chat asks the person, never a model: %w", ask.ErrUnsupported)
}

// Elicit answers from the person's answers, or asks them.
func (q *asker) Elicit(ctx context.Context, req ask.ElicitRequest) (ask.ElicitResult, error) {
	var out ask.ElicitResult
	question := &req
	key, answered, err := q.book.Ask(ctx, "elicit", req.Key, question, func(v json.RawMessage) bool {
		var e elicited
		if json.Unmarshal(v, &e) != nil {
			return false
		}
		out = ask.ElicitResult{Action: e.Action, Content: e.Content}
		return true
	}, []byte(req.Message), req.Schema)
	switch {
	case errors.Is(err, replay.ErrDuplicate):
		return ask.ElicitResult{}, fmt.Errorf("two questions of one run under the key %q: give each its own Key", key)
	case answered:
		return out, nil
	}
	return ask.ElicitResult{}, fmt.Errorf("question %q asked: %w", key, ask.ErrInputRequired)
}
