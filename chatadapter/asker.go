package chatadapter

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/internal/callinfo"
)

// Asking the person in chat. Dispatch and Run give every call an
// ask.Asker that runs the handler again, as mcpadapter's does (an
// ask.Rerunner): a question it has no answer for fails the run with
// ask.ErrInputRequired, so nothing is held while the person thinks, and
// the turn pauses at the call with its Question. The person's answer
// joins the call's answers, and the call runs again from the start; each
// ask.Elicit gets the answer to its question, matched by key and content,
// so a question whose message or form changed since is asked anew. The
// answers are plain data in the turn, which is why a paused turn can be
// saved and resumed in another process.
//
// Chat asks the person, never a model: ask.Sample and ask.Roots get
// ask.ErrUnsupported.

// answered is the person's answer to a call's question.
type answered struct {
	Key     string          `json:"key"`
	Digest  string          `json:"digest"` // of the question's message and schema
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
}

// asker is one call's Asker.
type asker struct {
	answers []answered // every round's, in order

	mu     sync.Mutex
	run    any             // callinfo.Info.Run of the current run
	count  int             // questions asked in the current run
	keys   map[string]bool // keys asked under in the current run
	asked  *Question       // the first question of the run without an answer
	digest string
}

// Reruns marks the asker as an ask.Rerunner, so write tools may ask.
func (q *asker) Reruns() bool { return true }

// Sample is refused: in chat a tool asks the person, not a model.
func (q *asker) Sample(context.Context, ask.SampleRequest) (ask.SampleResult, error) {
	return ask.SampleResult{}, fmt.Errorf("chat asks the person, never a model: %w", ask.ErrUnsupported)
}

// Elicit answers from the person's answers, or asks them.
func (q *asker) Elicit(ctx context.Context, req ask.ElicitRequest) (ask.ElicitResult, error) {
	info, _ := ctx.Value(callinfo.Key{}).(callinfo.Info)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.keys == nil || q.run != info.Run {
		q.run, q.count, q.keys, q.asked, q.digest = info.Run, 0, make(map[string]bool), nil, ""
	}
	q.count++
	key := req.Key
	if key == "" {
		key = "elicit-" + strconv.Itoa(q.count)
	}
	if q.keys[key] {
		return ask.ElicitResult{}, fmt.Errorf("two questions of one run under the key %q: give each its own Key", key)
	}
	q.keys[key] = true
	d := digestOf(req.Message, string(req.Schema))
	for i := len(q.answers) - 1; i >= 0; i-- {
		if a := q.answers[i]; a.Key == key && a.Digest == d {
			return ask.ElicitResult{Action: a.Action, Content: a.Content}, nil
		}
	}
	if q.asked == nil {
		q.asked, q.digest = &Question{Key: key, Message: req.Message, Schema: req.Schema}, d
	}
	return ask.ElicitResult{}, fmt.Errorf("question %q asked: %w", key, ask.ErrInputRequired)
}

// digestOf is a short SHA-256 of parts, each length-prefixed.
func digestOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18])
}
