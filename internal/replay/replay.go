// Package replay answers the questions a handler asks through package ask
// when its Asker runs it again (an ask.Rerunner): mcpadapter's
// input-required rounds and chatadapter's paused turns. The answers of
// earlier rounds are plain data the adapter keeps (in a requestState, in
// a saved turn); each run of the handler asks from the start, and each
// question gets the answer given to it: matched by its key and by the
// Digest of its content, so a question whose message or form changed
// since is asked anew rather than answered with a stale answer.
//
// A Book is one call's. Each adapter keeps its wire shape and its own
// sentences: Ask says whether a question was answered, and refuses a
// second question under one key (ErrDuplicate) or under the adapter's own
// key (ErrReserved); the adapter says so to the handler.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	"github.com/llmtool/llmtool/internal/callinfo"
	"github.com/llmtool/llmtool/internal/token"
)

// Question is a question a run asked: its key, and the Digest of its
// content.
type Question struct {
	Key    string `json:"key"`
	Digest string `json:"digest"`
}

// Answer is the answer to the question Key whose content has Digest. An
// Answer without a Digest answers any question under Key (an MCP client's
// answer to a first round, sent without a state).
type Answer struct {
	Key    string          `json:"key"`
	Digest string          `json:"digest,omitempty"`
	Value  json.RawMessage `json:"value"`
}

// Asked is a question of the current run without an answer, with the
// adapter's request to render.
type Asked[R any] struct {
	Question
	Request R
}

// Errors of Ask, which the adapter puts in its own words.
var (
	ErrDuplicate = errors.New("replay: a second question of one run under one key")
	ErrReserved  = errors.New("replay: a question under the adapter's own key")
)

// Book holds one call's answers, of every earlier round, and what its
// current run asked. It is safe for concurrent use (a handler may ask
// from several goroutines).
type Book[R any] struct {
	answers  []Answer // oldest first: a later answer under a key wins
	reserved string   // the adapter's own key ("" for none)

	mu     sync.Mutex
	run    any            // callinfo.Info.Run of the current run
	counts map[string]int // questions asked per prefix in the current run
	keys   map[string]bool
	used   []Answer
	asked  []Asked[R]
}

// New returns the Book of a call with answers, the earlier rounds', oldest
// first; a handler may not ask under reserved.
func New[R any](answers []Answer, reserved string) *Book[R] {
	return &Book[R]{answers: answers, reserved: reserved}
}

// Ask answers the question the handler asks in ctx's run under key, or
// when key is empty under prefix and its count in the run ("elicit-1",
// "elicit-2"...), whose content is parts: use gets the value of the
// latest answer under that key for the same content, and reports whether
// it takes it (an answer it cannot read is asked again). Ask returns the
// key, and whether the question was answered; one without an answer is
// recorded as asked (Asked).
func (b *Book[R]) Ask(ctx context.Context, prefix, key string, req R, use func(json.RawMessage) bool, parts ...[]byte) (string, bool, error) {
	info, _ := ctx.Value(callinfo.Key{}).(callinfo.Info)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.counts == nil || b.run != info.Run {
		b.run, b.counts, b.keys, b.used, b.asked = info.Run, make(map[string]int), make(map[string]bool), nil, nil
	}
	b.counts[prefix]++
	if key == "" {
		key = prefix + "-" + strconv.Itoa(b.counts[prefix])
	}
	if key == b.reserved && key != "" {
		return key, false, ErrReserved
	}
	if b.keys[key] {
		return key, false, ErrDuplicate
	}
	b.keys[key] = true
	d := token.Digest(parts...)
	for i := len(b.answers) - 1; i >= 0; i-- {
		if a := b.answers[i]; a.Key == key && (a.Digest == "" || a.Digest == d) {
			if use(a.Value) {
				b.used = append(b.used, Answer{Key: key, Digest: d, Value: a.Value})
				return key, true, nil
			}
			break
		}
	}
	b.asked = append(b.asked, Asked[R]{Question: Question{Key: key, Digest: d}, Request: req})
	return key, false, nil
}

// Add records a question the adapter asks itself (under its reserved key)
// beside the run's.
func (b *Book[R]) Add(q Asked[R]) {
	b.mu.Lock()
	b.asked = append(b.asked, q)
	b.mu.Unlock()
}

// Answer returns the latest answer under key that names its question's
// digest (one given to a question a state asked).
func (b *Book[R]) Answer(key string) (Answer, bool) {
	for i := len(b.answers) - 1; i >= 0; i-- {
		if a := b.answers[i]; a.Key == key && a.Digest != "" {
			return a, true
		}
	}
	return Answer{}, false
}

// Asked returns the current run's questions without an answer, in the
// order they were asked, and the answers it used.
func (b *Book[R]) Asked() ([]Asked[R], []Answer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.asked, b.used
}
