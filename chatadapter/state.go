package chatadapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/internal/shapename"
)

// Saving a turn. A paused Reply or Transcript holds everything its turn
// needs in plain data: the calls, the results of those that ran, and for
// the pending call its approval token or the person's answers so far.
// json.Marshal writes it; Adapter.Restore and Runner.Restore read it
// back, in this process or another, over a registry with the same tools,
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

type savedReply struct {
	Version  int               `json:"version"`
	Shape    string            `json:"shape,omitempty"`
	Calls    []savedCall       `json:"calls,omitempty"` // a paused turn
	At       int               `json:"at"`              // its pending call
	Outcomes []savedOutcome    `json:"outcomes,omitempty"`
	Messages []json.RawMessage `json:"messages,omitempty"` // a complete reply
}

// savedCall is one call of a paused turn and where it stands.
type savedCall struct {
	Call    ToolCall      `json:"call"`
	Result  *savedOutcome `json:"result,omitempty"` // once it ran
	Pending *Pending      `json:"pending,omitempty"`
	Token   string        `json:"token,omitempty"`
	Digest  string        `json:"digest,omitempty"`
	Answers []answered    `json:"answers,omitempty"`
}

type savedOutcome struct {
	Call     ToolCall          `json:"call"`
	JSON     json.RawMessage   `json:"json"`
	IsError  bool              `json:"isError,omitempty"`
	Content  []llmtool.Content `json:"content,omitempty"`
	Duration time.Duration     `json:"duration,omitempty"`
}

func saveOutcome(o Outcome) savedOutcome {
	return savedOutcome{Call: o.Call, JSON: o.Result.JSON, IsError: o.Result.IsError, Content: o.Result.Content, Duration: o.Duration}
}

func (s savedOutcome) outcome() Outcome {
	return Outcome{Call: s.Call, Result: llmtool.Result{JSON: s.JSON, IsError: s.IsError, Content: s.Content}, Duration: s.Duration}
}

// errResumed refuses to save a reply whose pause was answered.
var errResumed = errors.New("chatadapter: the reply was resumed already: save the one Resume returned")

// MarshalJSON saves the reply: a paused one with its whole turn, for
// Adapter.Restore to resume, sealed with Options.SealKey when the adapter
// has one; a complete one with its outcomes and messages.
func (r *Reply) MarshalJSON() ([]byte, error) {
	s := savedReply{Version: savedVersion, At: -1, Messages: r.Messages}
	for _, o := range r.Outcomes {
		s.Outcomes = append(s.Outcomes, saveOutcome(o))
	}
	if p := r.paused; p != nil {
		if p.done.Load() {
			return nil, errResumed
		}
		t := p.turn
		s.Shape, s.At, s.Outcomes = shapeIDs[t.shape], p.at, nil
		for k, c := range t.calls {
			st := t.state[k]
			sc := savedCall{Call: c, Pending: st.pending, Token: st.token, Digest: st.digest, Answers: st.answers}
			if st.done {
				o := saveOutcome(t.out[k])
				sc.Result = &o
			}
			s.Calls = append(s.Calls, sc)
		}
	}
	b, err := json.Marshal(s)
	if err != nil || r.paused == nil || r.paused.turn.a.seal == nil {
		return b, err
	}
	return json.Marshal(r.paused.turn.a.seal.Seal(b)) // a JSON string
}

// UnmarshalJSON refuses: a saved reply needs a registry to resume with,
// which Adapter.Restore gives it.
func (r *Reply) UnmarshalJSON([]byte) error {
	return errors.New("chatadapter: read a saved Reply with Adapter.Restore, which binds it to the registry")
}

// Restore reads a Reply saved with json.Marshal, paused or complete, and
// binds it to a's registry: a paused one resumes with Reply.Resume or
// ResumeWith as if it had never left memory, its pause answered once per
// copy restored (an approval's token is single-use, whichever copy spends
// it).
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
func (a *Adapter) Restore(data []byte) (*Reply, error) {
	s, err := a.readTurn(data)
	if err != nil {
		return nil, err
	}
	return a.restore(s)
}

// readTurn reads a saved reply, sealed (a JSON string) or plain.
func (a *Adapter) readTurn(data []byte) (*savedReply, error) {
	var s savedReply
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
	if a.seal != nil && s.Calls != nil {
		return nil, errUnsealed
	}
	return &s, nil
}

func (a *Adapter) restore(s *savedReply) (*Reply, error) {
	if s.Version != savedVersion {
		return nil, fmt.Errorf("chatadapter: restore: a saved turn of version %d; this chatadapter reads version %d", s.Version, savedVersion)
	}
	if s.Calls == nil {
		r := &Reply{Messages: s.Messages}
		for _, o := range s.Outcomes {
			r.Outcomes = append(r.Outcomes, o.outcome())
		}
		return r, nil
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
			t.out[k], t.state[k].done = c.Result.outcome(), true
		}
		if c.Pending != nil && c.Pending.Question == nil && c.Token == "" {
			return nil, fmt.Errorf("chatadapter: restore: call %d waits for approval without a token", k)
		}
	}
	return t.reply(s.At), nil
}

type savedTranscript struct {
	Version   int               `json:"version"`
	Messages  []json.RawMessage `json:"messages"`
	Answer    string            `json:"answer,omitempty"`
	Steps     int               `json:"steps"`
	Outcomes  []savedOutcome    `json:"outcomes,omitempty"`
	Usage     Usage             `json:"usage"`
	StepUsage []Usage           `json:"stepUsage,omitempty"`
	Stopped   *savedStop        `json:"stopped,omitempty"`
	Turn      json.RawMessage   `json:"turn,omitempty"` // the paused turn, a saved Reply
}

type savedStop struct {
	Reason string `json:"reason"` // "steps" or "budget"
	N      int    `json:"n"`
	Budget int    `json:"budget,omitempty"`
}

// MarshalJSON saves the transcript, with its paused turn, if any, for
// Runner.Restore to resume; the turn is sealed as Reply.MarshalJSON seals
// it, the conversation before it is not.
func (t *Transcript) MarshalJSON() ([]byte, error) {
	s := savedTranscript{Version: savedVersion, Messages: t.Messages, Answer: t.Answer, Steps: t.Steps, Usage: t.Usage, StepUsage: t.StepUsage}
	if s.Messages == nil {
		s.Messages = []json.RawMessage{}
	}
	for _, o := range t.Outcomes {
		s.Outcomes = append(s.Outcomes, saveOutcome(o))
	}
	var stop *stopError
	if errors.As(t.Stopped, &stop) {
		s.Stopped = &savedStop{Reason: "steps", N: stop.n, Budget: stop.budget}
		if stop.reason == ErrBudget {
			s.Stopped.Reason = "budget"
		}
	}
	if t.reply != nil {
		var err error
		if s.Turn, err = t.reply.MarshalJSON(); err != nil {
			return nil, err
		}
	}
	return json.Marshal(s)
}

// UnmarshalJSON refuses: a saved transcript needs a Runner to go on
// with, which Runner.Restore gives it.
func (t *Transcript) UnmarshalJSON([]byte) error {
	return errors.New("chatadapter: read a saved Transcript with Runner.Restore, which binds it to the registry and the endpoint")
}

// Restore reads a Transcript saved with json.Marshal and binds it to r:
// a paused one goes on with Transcript.Resume or ResumeWith, with r's
// adapter, endpoint and options (another process's Runner, built as the
// first was), its steps and usage counted on.
func (r *Runner) Restore(data []byte) (*Transcript, error) {
	var s savedTranscript
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("chatadapter: restore: %w", err)
	}
	if s.Version != savedVersion {
		return nil, fmt.Errorf("chatadapter: restore: a saved transcript of version %d; this chatadapter reads version %d", s.Version, savedVersion)
	}
	t := &Transcript{Messages: s.Messages, Answer: s.Answer, Steps: s.Steps, Usage: s.Usage, StepUsage: s.StepUsage}
	for _, o := range s.Outcomes {
		t.Outcomes = append(t.Outcomes, o.outcome())
	}
	if st := s.Stopped; st != nil {
		t.Stopped = &stopError{reason: ErrStepLimit, n: st.N, budget: st.Budget}
		if st.Reason == "budget" {
			t.Stopped = &stopError{reason: ErrBudget, n: st.N, budget: st.Budget}
		}
	}
	if len(s.Turn) > 0 && string(s.Turn) != "null" {
		turn, err := r.a.readTurn(s.Turn)
		if err != nil {
			return nil, err
		}
		reply, err := r.a.restore(turn)
		if err != nil {
			return nil, err
		}
		t.Pending, t.run, t.reply = reply.Pending, r, reply
	}
	return t, nil
}
