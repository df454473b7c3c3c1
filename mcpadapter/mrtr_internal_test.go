package mcpadapter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/internal/replay"
	"github.com/llmtool/llmtool/internal/token"
)

// newRound builds the answers of a call from its verified state and the
// client's inputResponses, as newPeer does.
func newRound(st *roundState, responses mcp.InputResponses) *round {
	r := &round{}
	r.init(st, responses)
	return r
}

// TestRoundAnswers checks which answers a run gets: by key and by the
// request's content with a state, by key alone on a first round sent
// without one; an answer that does not decode is asked again.
func TestRoundAnswers(t *testing.T) {
	t.Parallel()
	elicit := func(msg string) mcp.InputRequest {
		return mcp.NewElicitationInputRequest(mcp.ElicitationParams{Message: msg})
	}
	digestOf := func(req mcp.InputRequest) string {
		b, err := json.Marshal(req)
		require.NoError(t, err)
		return token.Digest(b)
	}
	responses := func(raw string) mcp.InputResponses {
		var r mcp.InputResponses
		require.NoError(t, json.Unmarshal([]byte(raw), &r))
		return r
	}
	accepted := `{"confirm":{"action":"accept","content":{"ok":true}}}`
	for _, tc := range []struct {
		name      string
		state     *roundState
		responses string
		ask       string // the message the run asks
		answered  bool
	}{
		{name: "answer to the question asked", ask: "Sure?", answered: true, responses: accepted,
			state: &roundState{Asked: []replay.Question{{Key: "confirm", Digest: digestOf(elicit("Sure?"))}}}},
		{name: "the question changed since", ask: "Delete 3 notes?", responses: accepted,
			state: &roundState{Asked: []replay.Question{{Key: "confirm", Digest: digestOf(elicit("Delete 2 notes?"))}}}},
		{name: "a key the state did not ask", ask: "Sure?", responses: accepted,
			state: &roundState{Asked: []replay.Question{{Key: "other", Digest: digestOf(elicit("Sure?"))}}}},
		{name: "an earlier round's answer", ask: "Sure?", answered: true,
			state: &roundState{Answers: []replay.Answer{{Key: "confirm", Digest: digestOf(elicit("Sure?")), Value: json.RawMessage(`{"action":"accept","content":{"ok":true}}`)}}}},
		{name: "first round without a state", ask: "Sure?", responses: accepted, answered: true},
		{name: "an answer that is not one", ask: "Sure?", responses: `{"confirm":12345}`},
		{name: "no answer", ask: "Sure?", responses: `{"wrong_key":{"action":"accept","content":{}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRound(tc.state, responses(cmp.Or(tc.responses, `{}`)))
			var got ask.ElicitResult
			err := r.ask(context.Background(), "confirm", elicit(tc.ask), func(raw json.RawMessage) error {
				var v struct {
					Action  string          `json:"action"`
					Content json.RawMessage `json:"content"`
				}
				if err := json.Unmarshal(raw, &v); err != nil {
					return err
				}
				if v.Action == "" {
					return errors.New("no action")
				}
				got = ask.ElicitResult{Action: v.Action, Content: v.Content}
				return nil
			})
			asked, used := r.pending()
			if tc.answered {
				require.NoError(t, err)
				require.Equal(t, ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage(`{"ok":true}`)}, got)
				require.Empty(t, asked)
				require.Len(t, used, 1)
				require.Equal(t, digestOf(elicit(tc.ask)), used[0].Digest, "the answer is kept for the question asked")
				return
			}
			require.ErrorIs(t, err, ask.ErrInputRequired)
			require.Len(t, asked, 1)
			require.Equal(t, "confirm", asked[0].Key)
			require.Empty(t, used)
		})
	}
}

// TestApprovalKeyReserved: a tool cannot ask under the approval's key, so
// an answer to the approval question never reaches a tool, and a tool's
// answer never approves.
func TestApprovalKeyReserved(t *testing.T) {
	t.Parallel()
	r := newRound(nil, mcp.InputResponses{})
	err := r.ask(context.Background(), approvalAskKey, mcp.NewElicitationInputRequest(mcp.ElicitationParams{Message: "Sure?"}), func(json.RawMessage) error { return nil })
	require.EqualError(t, err, `the key "llmtool-approval" is the adapter's, for approvals: give the request another Key`)
	asked, _ := r.pending()
	require.Empty(t, asked)
}

// TestApprovalAnswer: which answers approve, which deny, and which are no
// answer (the question is asked anew, with a new preview). Only approve
// true approves; an answer the adapter cannot read denies, so the question
// is not asked again (mcp-go's bridge would ask a client before
// 2026-07-28 ten times, then fail the call).
func TestApprovalAnswer(t *testing.T) {
	t.Parallel()
	state := &roundState{Approval: "tok", Asked: []replay.Question{{Key: approvalAskKey, Digest: "d"}}}
	for _, tc := range []struct {
		name      string
		state     *roundState
		responses string
		want      *approval.Answer
	}{
		{name: "approved", state: state, responses: `{"llmtool-approval":{"action":"accept","content":{"approve":true}}}`, want: &approval.Answer{Token: "tok", Approved: true}},
		{name: "unticked", state: state, responses: `{"llmtool-approval":{"action":"accept","content":{"approve":false}}}`, want: &approval.Answer{Token: "tok"}},
		{name: "declined", state: state, responses: `{"llmtool-approval":{"action":"decline"}}`, want: &approval.Answer{Token: "tok"}},
		{name: "cancelled", state: state, responses: `{"llmtool-approval":{"action":"cancel"}}`, want: &approval.Answer{Token: "tok"}},
		{name: "accepted without the field", state: state, responses: `{"llmtool-approval":{"action":"accept","content":{}}}`, want: &approval.Answer{Token: "tok"}},
		{name: "accepted without content", state: state, responses: `{"llmtool-approval":{"action":"accept"}}`, want: &approval.Answer{Token: "tok"}},
		{name: "accepted with null content", state: state, responses: `{"llmtool-approval":{"action":"accept","content":null}}`, want: &approval.Answer{Token: "tok"}},
		{name: "approve as a string", state: state, responses: `{"llmtool-approval":{"action":"accept","content":{"approve":"yes"}}}`, want: &approval.Answer{Token: "tok"}},
		{name: "an unknown action", state: state, responses: `{"llmtool-approval":{"action":"approve"}}`, want: &approval.Answer{Token: "tok"}},
		{name: "no answer", state: state, responses: `{}`},
		{name: "no state: a first call cannot approve", responses: `{"llmtool-approval":{"action":"accept","content":{"approve":true}}}`},
		{name: "a state that asked no approval", state: &roundState{Asked: state.Asked}, responses: `{"llmtool-approval":{"action":"accept","content":{"approve":true}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var responses mcp.InputResponses
			require.NoError(t, json.Unmarshal([]byte(tc.responses), &responses))
			require.Equal(t, tc.want, newRound(tc.state, responses).approvalAnswer())
		})
	}
}
