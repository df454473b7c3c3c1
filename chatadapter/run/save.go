package run

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/internal/saved"
)

// Saving a transcript: its conversation, counts and outcomes, and its
// paused call, saved as chatadapter.Pending saves itself (with its turn,
// sealed when the adapter has Options.SealKey), so that a web host can
// keep a paused run with the conversation and go on with it from the
// request that brings the person's answer, in this process or another.

// savedVersion tells a saved transcript's format.
const savedVersion = 1

type savedTranscript struct {
	Version   int                 `json:"version"`
	Messages  []json.RawMessage   `json:"messages"`
	Answer    string              `json:"answer,omitempty"`
	Cut       bool                `json:"cut,omitempty"`
	Steps     int                 `json:"steps"`
	Outcomes  []saved.Outcome     `json:"outcomes,omitempty"`
	Usage     chatadapter.Usage   `json:"usage"`
	StepUsage []chatadapter.Usage `json:"stepUsage,omitempty"`
	Stopped   *savedStop          `json:"stopped,omitempty"`
	Turn      json.RawMessage     `json:"turn,omitempty"` // the paused call, a saved chatadapter.Pending

	// why the model stopped: Transcript.Finish, FinishRaw, StepFinish
	Finish     string   `json:"finish,omitempty"`
	FinishRaw  string   `json:"finishRaw,omitempty"`
	StepFinish []string `json:"stepFinish,omitempty"`
}

type savedStop struct {
	Reason string `json:"reason"` // "steps" or "budget"
	N      int    `json:"n"`
	Budget int    `json:"budget,omitempty"`
}

// MarshalJSON saves the transcript, with its paused call, if any, for
// Runner.Restore to go on with; the call is saved (and sealed) as
// chatadapter.Pending saves itself, the conversation before it is not
// sealed.
func (t *Transcript) MarshalJSON() ([]byte, error) {
	s := savedTranscript{Version: savedVersion, Messages: t.Messages, Answer: t.Answer, Cut: t.Cut, Steps: t.Steps, Usage: t.Usage, StepUsage: t.StepUsage}
	if s.Messages == nil {
		s.Messages = []json.RawMessage{}
	}
	s.Finish, s.FinishRaw, s.StepFinish = t.Finish, t.FinishRaw, t.StepFinish
	for _, o := range t.Outcomes {
		s.Outcomes = append(s.Outcomes, saved.New(saved.Call(o.Call), o.Result, o.Duration))
	}
	var stop *stopError
	if errors.As(t.Stopped, &stop) {
		s.Stopped = &savedStop{Reason: "steps", N: stop.n, Budget: stop.budget}
		if stop.reason == ErrBudget {
			s.Stopped.Reason = "budget"
		}
	}
	if t.Pending != nil {
		var err error
		if s.Turn, err = t.Pending.MarshalJSON(); err != nil {
			return nil, err
		}
	}
	return json.Marshal(s)
}

// Restore reads a Transcript saved with json.Marshal: a paused one goes
// on with Runner.Resume, with r's adapter, endpoint and options (another
// process's Runner, built as the first was), its steps and usage counted
// on. Its paused call is restored as chatadapter's Adapter.Restore does
// it, with the same refusals (a sealed call changed in any byte, a plain
// one where the adapter seals).
func (r *Runner) Restore(data []byte) (*Transcript, error) {
	var s savedTranscript
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("chatadapter: restore: %w", err)
	}
	if s.Version != savedVersion {
		return nil, fmt.Errorf("chatadapter: restore: a saved transcript of version %d; this chatadapter reads version %d", s.Version, savedVersion)
	}
	t := &Transcript{Messages: s.Messages, Answer: s.Answer, Cut: s.Cut, Steps: s.Steps, Usage: s.Usage, StepUsage: s.StepUsage}
	for _, o := range s.Outcomes {
		t.Outcomes = append(t.Outcomes, chatadapter.Outcome{Call: chatadapter.ToolCall(o.Call), Result: o.Result(), Duration: o.Duration})
	}
	t.Finish, t.FinishRaw, t.StepFinish = s.Finish, s.FinishRaw, s.StepFinish
	if st := s.Stopped; st != nil {
		t.Stopped = &stopError{reason: ErrStepLimit, n: st.N, budget: st.Budget}
		if st.Reason == "budget" {
			t.Stopped = &stopError{reason: ErrBudget, n: st.N, budget: st.Budget}
		}
	}
	if len(s.Turn) > 0 && string(s.Turn) != "null" {
		p, err := r.a.Restore(s.Turn)
		if err != nil {
			return nil, err
		}
		t.Pending = p
	}
	return t, nil
}
