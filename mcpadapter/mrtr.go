package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/internal/replay"
	"github.com/llmtool/llmtool/internal/token"
)

// Asking the client by running again (SEP-2322, multi round-trip
// requests). A handler's ask.Elicit, ask.Sample and ask.Roots reach the
// peer, which never waits for the client: it answers from the answers the
// call brought, or records the request and fails the run with
// ask.ErrInputRequired. The tool's call then ends with an input-required
// result carrying the requests and a requestState; the client answers and
// calls again with inputResponses and the state, and the handler runs
// again, from the start, in a new transaction.
//
// Clients of revisions before 2026-07-28 never see such a result: mcp-go
// (resolveMultiRoundTrip) sends them elicitation/create,
// sampling/createMessage and roots/list requests on the call's stream and
// runs the handler again with their answers, within the one tools/call.
//
// The requestState is signed, bound and expiring, as the package
// documentation says, because it carries the answers of the earlier rounds
// (the client sends only the latest round's). A server remembers the
// states it accepted until they expire, and refuses a second retry with
// one (a replay); that memory is per process, so replicas sharing a key
// refuse a replay only when it reaches the replica that took the first
// retry.

// defaultRequestStateTTL is how long a requestState stays valid.
const defaultRequestStateTTL = time.Hour

// statePurpose names requestStates and their format among the tokens
// one key signs (internal/token).
const statePurpose = "llmtool-mrtr-2"

// roundState is a requestState's own content, beside the call its token
// binds (tool, arguments, principal, tenant, expiry, nonce).
type roundState struct {
	Round   int               `json:"round"` // 1 for the state of the first input-required result
	Asked   []replay.Question `json:"asked"` // the requests of the latest round
	Answers []replay.Answer   `json:"answers,omitempty"`
	// Approval is the token of the approval the latest round asked for
	// (approval.go), sent back in llmtool.Call.Approval with the answer.
	Approval string `json:"approval,omitempty"`
}

// Refusals of a requestState: the sentence of the JSON-RPC error.
const (
	stateForged    = "The requestState is not one this server issued, or it was changed on the way: call the tool again without requestState and inputResponses to start over."
	stateExpired   = "The requestState expired (a state is valid for %s after the result that carried it): call the tool again without requestState and inputResponses to start over."
	stateOtherTool = "The requestState belongs to a call of another tool: send it only with a call of the tool whose result carried it."
	stateOtherArgs = "The requestState belongs to a call with other arguments: send the arguments of the call whose result carried it, or call again without requestState and inputResponses to start over."
	stateOtherUser = "The requestState belongs to a call of another user or tenant: call the tool again without requestState and inputResponses to start over."
	stateReplayed  = "The requestState was already used: each one is good for one retry. Send the requestState of the latest input-required result, or call the tool again without requestState and inputResponses to start over."
)

// errState refuses a call whose requestState fails verification.
var errState = errors.New("mcpadapter: requestState refused")

// stateError is a refusal of a requestState. Its text is what the client
// reads.
type stateError struct{ msg string }

func (e *stateError) Error() string { return e.msg }
func (e *stateError) Unwrap() error { return errState }

// call returns the claims binding a state to the call of tool with args
// in ctx.
func call(ctx context.Context, tool string, args json.RawMessage) *token.Claims {
	return &token.Claims{Tool: tool, Args: token.ArgsDigest(args), Principal: principalID(llmtool.PrincipalFrom(ctx)), Tenant: llmtool.TenantFrom(ctx)}
}

// seal signs st for the call of tool with args in ctx and returns the
// requestState.
func (s *Server) seal(ctx context.Context, tool string, args json.RawMessage, st *roundState) (string, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	c := call(ctx, tool, args)
	c.Expires, c.Extra = s.now().Add(s.cfg.RequestStateTTL).Unix(), []string{string(payload)}
	return s.states.Issue(c), nil
}

// open verifies a requestState for the call of tool with args in ctx, and
// spends it.
func (s *Server) open(ctx context.Context, state, tool string, args json.RawMessage) (*roundState, error) {
	now := s.now()
	c, why := s.states.Check(state, call(ctx, tool, args), now.Unix())
	var st roundState
	if why == token.OK && (len(c.Extra) != 1 || json.Unmarshal([]byte(c.Extra[0]), &st) != nil) {
		why = token.Forged
	}
	switch why {
	case token.OK:
		if !s.spent.Spend(c.Nonce, c.Expires, now) {
			return nil, &stateError{stateReplayed}
		}
		return &st, nil
	case token.Expired:
		return nil, &stateError{fmt.Sprintf(stateExpired, s.cfg.RequestStateTTL)}
	case token.OtherTool:
		return nil, &stateError{stateOtherTool}
	case token.OtherUser, token.OtherTenant:
		return nil, &stateError{stateOtherUser}
	case token.OtherArgs:
		return nil, &stateError{stateOtherArgs}
	}
	return nil, &stateError{stateForged}
}

// round is what a call's peer knows of the exchange: the answers it may
// give (internal/replay), and what the current run used and asked.
type round struct {
	// book holds the answers the run may use: the state's, and those the
	// client sent. An answer without a digest (a first round's, sent
	// without a state) answers any request under its key.
	book  *replay.Book[mcp.InputRequest]
	state *roundState // the verified state of this retry, nil on a first call
	// approval is the token of the approval question asked, if any.
	approval string
}

// init builds, in r, the answers of a call from its verified state and
// the client's inputResponses.
func (r *round) init(st *roundState, responses mcp.InputResponses) {
	r.state = st
	var answers []replay.Answer
	raw := func(key string) (json.RawMessage, bool) {
		resp, ok := responses[key]
		if !ok {
			return nil, false
		}
		b, err := json.Marshal(resp)
		if err != nil || bytes.Equal(b, []byte("null")) {
			return nil, false
		}
		return b, true
	}
	if st == nil {
		for key := range responses {
			if b, ok := raw(key); ok {
				answers = append(answers, replay.Answer{Key: key, Value: b})
			}
		}
	} else {
		answers = st.Answers
		for _, q := range st.Asked { // keys the state did not ask under are ignored
			if b, ok := raw(q.Key); ok {
				answers = append(answers, replay.Answer{Key: q.Key, Digest: q.Digest, Value: b})
			}
		}
	}
	r.book = replay.New[mcp.InputRequest](answers, approvalAskKey)
}

// ask answers req, made under key (or the method's next default key),
// from the book, or records it and returns ask.ErrInputRequired. decode
// checks and keeps the answer; an answer it refuses is asked again.
func (r *round) ask(ctx context.Context, key string, req mcp.InputRequest, decode func(json.RawMessage) error) error {
	params, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encoding the request: %w", err)
	}
	key, answered, err := r.book.Ask(ctx, defaultKey(req.Method), key, req, func(v json.RawMessage) bool { return decode(v) == nil }, params)
	switch {
	case errors.Is(err, replay.ErrReserved):
		return fmt.Errorf("the key %q is the adapter's, for approvals: give the request another Key", key)
	case errors.Is(err, replay.ErrDuplicate):
		return fmt.Errorf("two requests of one run under the key %q: give each request its own Key", key)
	case answered:
		return nil
	}
	return fmt.Errorf("%s %q asked: %w", req.Method, key, ask.ErrInputRequired)
}

func defaultKey(m mcp.MCPMethod) string {
	switch m {
	case mcp.MethodSamplingCreateMessage:
		return "sample"
	case mcp.MethodListRoots:
		return "roots"
	}
	return "elicit"
}

// pending returns the last run's requests and the answers it used.
func (r *round) pending() ([]replay.Asked[mcp.InputRequest], []replay.Answer) {
	return r.book.Asked()
}

// inputRequired renders the last run's requests as an input-required
// result with the state of the next round.
func (s *Server) inputRequired(ctx context.Context, tool string, args json.RawMessage, r *round) (*mcp.CallToolResult, error) {
	b, err := s.inputRequests(ctx, tool, args, r)
	if err != nil {
		return nil, err
	}
	return b.ToolResult(), nil
}

// inputRequests builds the requests of r's round and the sealed state of
// the call named target (a tool's name, or a prompt's as "prompt:" name).
func (s *Server) inputRequests(ctx context.Context, tool string, args json.RawMessage, r *round) (*server.InputRequestBuilder, error) {
	asked, used := r.pending()
	st := &roundState{Round: 1, Answers: used, Approval: r.approval}
	if r.state != nil {
		st.Round = r.state.Round + 1
	}
	b := server.NewInputRequestBuilder("")
	for _, p := range asked {
		st.Asked = append(st.Asked, p.Question)
		switch p.Request.Method {
		case mcp.MethodElicitationCreate:
			b.Elicit(p.Key, *p.Request.Elicitation)
		case mcp.MethodSamplingCreateMessage:
			b.Sample(p.Key, *p.Request.Sampling)
		case mcp.MethodListRoots:
			b.Roots(p.Key)
		}
	}
	state, err := s.seal(ctx, tool, args, st)
	if err != nil {
		return nil, err
	}
	return b.RequestState(state), nil
}

// requestCaps returns the capabilities the client declared for this
// request: in its _meta under 2026-07-28, in initialize before; and
// whether they are known (not for a session that has no client info).
func requestCaps(ctx context.Context) (mcp.ClientCapabilities, bool) {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		if info.ClientCapabilities == nil {
			return mcp.ClientCapabilities{}, true
		}
		return *info.ClientCapabilities, true
	}
	if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok && cs != nil {
		return cs.GetClientCapabilities(), true
	}
	return mcp.ClientCapabilities{}, false
}

// reachable reports whether the client can be sent method: under
// 2026-07-28 in an input-required result; before, as a request on the
// session, which a stateless request's session cannot take.
func reachable(ctx context.Context, method mcp.MCPMethod) bool {
	if server.IsModernRequest(ctx) {
		return true
	}
	var ok bool // false without a session
	switch cs := server.ClientSessionFromContext(ctx); method {
	case mcp.MethodSamplingCreateMessage:
		_, ok = cs.(server.SessionWithSampling)
	case mcp.MethodElicitationCreate:
		_, ok = cs.(server.SessionWithElicitation)
	case mcp.MethodListRoots:
		_, ok = cs.(server.SessionWithRoots)
	}
	return ok
}

// Reruns marks the peer as an ask.Rerunner: it never waits for the client
// while a transaction is open, so write tools may ask through it.
func (p *peer) Reruns() bool { return true }

// Sample answers from the call's answers, or asks the client's model.
func (p *peer) Sample(ctx context.Context, req ask.SampleRequest) (ask.SampleResult, error) {
	if caps, known := requestCaps(ctx); (known && caps.Sampling == nil) || !reachable(ctx, mcp.MethodSamplingCreateMessage) {
		return ask.SampleResult{}, p.unsupported(ctx, "sampling")
	}
	msgs := make([]mcp.SamplingMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = mcp.SamplingMessage{Role: mcp.Role(m.Role), Content: samplingContent(m.Content)}
	}
	params := mcp.CreateMessageParams{
		Messages:     msgs,
		SystemPrompt: req.SystemPrompt,
		MaxTokens:    req.MaxTokens,
		Temperature:  req.Temperature,
	}
	if len(req.ModelHints) > 0 {
		params.ModelPreferences = &mcp.ModelPreferences{}
		for _, h := range req.ModelHints {
			params.ModelPreferences.Hints = append(params.ModelPreferences.Hints, mcp.ModelHint{Name: h})
		}
	}
	var out ask.SampleResult
	err := p.round.ask(ctx, req.Key, mcp.NewSamplingInputRequest(params), func(raw json.RawMessage) error {
		var res mcp.CreateMessageResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return err
		}
		if res.Content == nil {
			return errors.New("no content")
		}
		content, err := fromSamplingContent(res.Content)
		if err != nil {
			return err
		}
		out = ask.SampleResult{Role: string(res.Role), Content: content, Model: res.Model, StopReason: res.StopReason}
		return nil
	})
	return out, err
}

// Elicit answers from the call's answers, or asks the client's user.
func (p *peer) Elicit(ctx context.Context, req ask.ElicitRequest) (ask.ElicitResult, error) {
	if caps, known := requestCaps(ctx); (known && caps.Elicitation == nil) || !reachable(ctx, mcp.MethodElicitationCreate) {
		return ask.ElicitResult{}, p.unsupported(ctx, "elicitation")
	}
	var out ask.ElicitResult
	params := mcp.ElicitationParams{Message: req.Message, RequestedSchema: req.Schema}
	err := p.round.ask(ctx, req.Key, mcp.NewElicitationInputRequest(params), func(raw json.RawMessage) error {
		var err error
		out, err = readElicitation(raw)
		return err
	})
	return out, err
}

// readElicitation reads the user's answer to an elicitation; one that is
// not an answer is asked again. An accept without content is an accept of
// an empty form, as clients that send no content for a form without
// fields mean it.
func readElicitation(raw json.RawMessage) (ask.ElicitResult, error) {
	var res struct {
		Action  mcp.ElicitationResponseAction `json:"action"`
		Content json.RawMessage               `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return ask.ElicitResult{}, err
	}
	switch res.Action {
	case mcp.ElicitationResponseActionAccept:
		switch c := bytes.TrimSpace(res.Content); {
		case len(c) == 0, bytes.Equal(c, []byte("null")):
			return ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage("{}")}, nil
		case c[0] == '{':
			return ask.ElicitResult{Action: ask.Accept, Content: res.Content}, nil
		}
		return ask.ElicitResult{}, errors.New("an accepted elicitation whose content is not an object")
	case mcp.ElicitationResponseActionDecline, mcp.ElicitationResponseActionCancel:
		return ask.ElicitResult{Action: string(res.Action)}, nil
	}
	return ask.ElicitResult{}, fmt.Errorf("unknown action %q", res.Action)
}

// Roots answers from the call's answers, or asks the client for its roots.
func (p *peer) Roots(ctx context.Context, req ask.RootsRequest) ([]ask.Root, error) {
	if caps, known := requestCaps(ctx); (known && caps.Roots == nil) || !reachable(ctx, mcp.MethodListRoots) {
		return nil, p.unsupported(ctx, "roots")
	}
	var out []ask.Root
	err := p.round.ask(ctx, req.Key, mcp.NewRootsInputRequest(), func(raw json.RawMessage) error {
		var res struct {
			Roots []mcp.Root `json:"roots"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return err
		}
		if res.Roots == nil {
			return errors.New("no roots array")
		}
		out = make([]ask.Root, len(res.Roots))
		for i, r := range res.Roots {
			out[i] = ask.Root{URI: r.URI, Name: r.Name}
		}
		return nil
	})
	return out, err
}

// newPeer returns the peer of a call of target (a tool's name, or
// "prompt:" and a prompt's) that answers its questions from the client's
// answers in mp, after checking the requestState of a retry. A refused
// state is the request's error (-32602): nothing runs.
func (s *Server) newPeer(ctx context.Context, target, name string, args json.RawMessage, mp mcp.MultiRoundTripParams) (*peer, error) {
	var st *roundState
	if mp.RequestState != "" {
		var err error
		if st, err = s.open(ctx, mp.RequestState, target, args); err != nil {
			s.cfg.Logger.Info("mcpadapter: requestState refused", "target", target, "principal", principalID(llmtool.PrincipalFrom(ctx)), "err", err)
			return nil, &rpcError{code: mcp.INVALID_PARAMS, message: err.Error(), err: err}
		}
	}
	p := &peer{s: s, tool: name}
	p.round.init(st, mp.InputResponses)
	return p, nil
}
