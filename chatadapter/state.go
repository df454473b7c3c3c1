package chatadapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmtool/llmtool/chatadapter/internal/saved"
	"github.com/llmtool/llmtool/internal/shapename"
)

// Saving a pause. A Pending call that Dispatch or Resume returned holds
// everything its turn needs in plain data: the calls, the results of
// those that ran, and for the pending call its approval token or the
// person's answers so far. json.Marshal writes it; Adapter.Restore reads
// it back (and package run's Runner.Restore, for a run's transcript), in
// this process or another, over a registry with the same tools,
// so a web host can keep a paused turn with the conversation and resume
// it from the request that brings the person's answer. Restore's
// documentation says what a host must know of it.

// savedVersion tells a saved turn's format.
const savedVersion = 1

// turnPurpose names sealed paused turns, and their format, among the
// tokens one key signs (internal/token).
const turnPurpose = "llmtool-chat-turn-1"

// Refusals of a sealed form (Options.SealKey).
var (
	errSealBroken = errors.New("chatadapter: restore: the saved turn was changed since it was sealed, or sealed with another Options.SealKey: start the turn again, sending the person's last message to the model anew")
	errUnsealed   = errors.New("chatadapter: restore: the saved turn is not sealed, and this adapter restores only sealed turns (Options.SealKey): start the turn again, sending the person's last message to the model anew")
	errNoSealKey  = errors.New("chatadapter: restore: the saved turn is sealed: restore it with an adapter that has the Options.SealKey that sealed it")
)

var shapeIDs = [...]string{
	OpenAIChat:            shapename.OpenAIChat,
	OpenAIChatStrict:      shapename.OpenAIChatStrict,
	OpenAIResponses:       shapename.OpenAIResponses,
	OpenAIResponsesStrict: shapename.OpenAIResponsesStrict,
	Anthropic:             shapename.Anthropic,
	Gemini:                shapename.Gemini,
}

func shapeByID(id string) (Shape, bool) {
	for s, name := range shapeIDs {
		if name == id && id != "" {
			return Shape(s), true
		}
	}
	return 0, false
}

type savedTurn struct {
	Version int         `json:"version"`
	Shape   string      `json:"shape,omitempty"`
	Calls   []savedCall `json:"calls,omitempty"`
	At      int         `json:"at"` // its pending call
}

// savedCall is one call of a paused turn and where it stands.
type savedCall struct {
	Call    ToolCall       `json:"call"`
	Result  *saved.Outcome `json:"result,omitempty"`  // once it ran
	Pending *Pending       `json:"pending,omitempty"` // without its turn: plain
	Token   string         `json:"token,omitempty"`
	Digest  string         `json:"digest,omitempty"`
	Answers []answered     `json:"answers,omitempty"`
}

func saveOutcome(o Outcome) saved.Outcome { return saved.New(saved.Call(o.Call), o.Result, o.Duration) }

func restoreOutcome(s saved.Outcome) Outcome {
	return Outcome{Call: ToolCall(s.Call), Result: s.Result(), Duration: s.Duration}
}

// errResumed refuses to save a pause that was answered.
var errResumed = errors.New("chatadapter: the pending call was resumed already: save the Pending of the Reply that Resume returned")

// MarshalJSON saves the pending call. One that Dispatch, Resume or
// Restore returned is saved with its whole turn, for Adapter.Restore to
// resume, sealed with Options.SealKey when the adapter has one (then a
// JSON string); a copy (Event.Pending) is saved as its fields only.
func (p *Pending) MarshalJSON() ([]byte, error) {
	h := p.hold
	if h == nil {
		type plain Pending // without this method
		return json.Marshal((*plain)(p))
	}
	if h.done.Load() {
		return nil, errResumed
	}
	t := h.turn
	s := savedTurn{Version: savedVersion, Shape: shapeIDs[t.shape], At: h.at}
	for k, c := range t.calls {
		st := t.state[k]
		sc := savedCall{Call: c, Pending: st.pending, Token: st.token, Digest: st.digest, Answers: st.answers}
		if st.done {
			o := saveOutcome(t.out[k])
			sc.Result = &o
		}
		s.Calls = append(s.Calls, sc)
	}
	b, err := json.Marshal(s)
	if err != nil || t.a.seal == nil {
		return b, err
	}
	return json.Marshal(t.a.seal.Seal(b)) // a JSON string
}

// Restore reads a Pending call saved with json.Marshal and binds it to
// a's registry: it resumes with Pending.Resume as if it had never left
// memory, answered once per copy restored (an approval's token is
// single-use, whichever copy spends it).
//
// A saved turn holds its calls, the results of those that ran, the
// preview the person is shown, and for the pending call its approval
// token or the person's answers so far. It is the host's, as the
// conversation is. Saved plain (the default), it is not signed: whoever
// can change it can change what the model reads of the calls that ran
// and what the person is shown (an approval's token still binds the
// call), so keep it where the server keeps its own data, with the
// conversation. With Options.SealKey it is saved sealed, a JSON string,
// and Restore refuses it if it was changed in any byte, and refuses a
// paused turn saved plain: keep that form in a store the server does not
// trust as itself. Either way it holds what the tools answered, in
// plain text.
//
// An approval's token is signed by the registry and bound to the
// principal and tenant: to resume one in another process, give its
// registry the same llmtool.Options.ApprovalKey (and a sealed turn's
// adapter the same SealKey). A restored Outcome's Result has the JSON,
// IsError and Content it had; its Err is nil, and its Text is empty for a
// failed call (the message is in its JSON).
func (a *Adapter) Restore(data []byte) (*Pending, error) {
	s, err := a.readTurn(data)
	if err != nil {
		return nil, err
	}
	return a.restore(s)
}

// readTurn reads a saved turn, sealed (a JSON string) or plain.
func (a *Adapter) readTurn(data []byte) (*savedTurn, error) {
	var s savedTurn
	if b := bytes.TrimSpace(data); len(b) > 0 && b[0] == '"' {
		var sealed string
		if err := json.Unmarshal(b, &sealed); err != nil {
			return nil, fmt.Errorf("chatadapter: restore: %w", err)
		}
		if a.seal == nil {
			return nil, errNoSealKey
		}
		payload, ok := a.seal.Open(sealed)
		if !ok || json.Unmarshal(payload, &s) != nil {
			return nil, errSealBroken
		}
		return &s, nil
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("chatadapter: restore: %w", err)
	}
	if a.seal != nil {
		return nil, errUnsealed
	}
	return &s, nil
}

func (a *Adapter) restore(s *savedTurn) (*Pending, error) {
	if s.Version != savedVersion {
		return nil, fmt.Errorf("chatadapter: restore: a saved turn of version %d; this chatadapter reads version %d", s.Version, savedVersion)
	}
	shape, ok := shapeByID(s.Shape)
	if !ok {
		return nil, fmt.Errorf("chatadapter: restore: unknown shape %q", s.Shape)
	}
	if s.At < 0 || s.At >= len(s.Calls) || s.Calls[s.At].Pending == nil {
		return nil, fmt.Errorf("chatadapter: restore: the saved turn has no pending call at %d", s.At)
	}
	t := &turn{a: a, shape: shape, out: make([]Outcome, len(s.Calls)), state: make([]callState, len(s.Calls))}
	for k, c := range s.Calls {
		t.calls = append(t.calls, c.Call)
		t.state[k] = callState{pending: c.Pending, token: c.Token, digest: c.Digest, answers: c.Answers}
		if c.Result != nil {
			t.out[k], t.state[k].done = restoreOutcome(*c.Result), true
		}
		if c.Pending != nil && c.Pending.Question == nil && c.Token == "" {
			return nil, fmt.Errorf("chatadapter: restore: call %d waits for approval without a token", k)
		}
	}
	return t.reply(s.At).Pending, nil
}
