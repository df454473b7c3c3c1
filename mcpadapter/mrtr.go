package mcpadapter

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/internal/callinfo"
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

// stateVersion prefixes the signed content, so a change of format cannot
// be confused with an older state.
const stateVersion = "llmtool-mrtr-1."

// roundState is a requestState's content.
type roundState struct {
	Tool    string     `json:"tool"`
	Args    string     `json:"args"` // digest of the canonical arguments
	Who     string     `json:"who"`  // digest of the principal's ID and the tenant
	Expires int64      `json:"exp"`  // Unix seconds
	Nonce   string     `json:"nonce"`
	Round   int        `json:"round"` // 1 for the state of the first input-required result
	Asked   []question `json:"asked"` // the requests of the latest round
	Answers []answer   `json:"answers,omitempty"`
	// Approval is the token of the approval the latest round asked for
	// (approval.go), sent back in llmtool.Call.Approval with the answer.
	Approval string `json:"approval,omitempty"`
}

// question is a request the client was asked in the latest round.
type question struct {
	Key    string        `json:"key"`
	Method mcp.MCPMethod `json:"method"`
	Digest string        `json:"digest"` // of the request's method and params
}

// answer is an answer of an earlier round, to the request with Digest.
type answer struct {
	Key    string          `json:"key"`
	Method mcp.MCPMethod   `json:"method"`
	Digest string          `json:"digest"`
	Value  json.RawMessage `json:"value"`
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

// spentStates remembers the nonces of the states a server accepted, until
// they expire.
type spentStates struct {
	mu    sync.Mutex
	until map[string]time.Time
	swept time.Time
}

// spend records nonce as used until exp and reports whether it was unused.
func (s *spentStates) spend(nonce string, exp, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.until == nil {
		s.until = make(map[string]time.Time)
	}
	if now.Sub(s.swept) > time.Minute {
		for n, t := range s.until {
			if now.After(t) {
				delete(s.until, n)
			}
		}
		s.swept = now
	}
	if _, used := s.until[nonce]; used {
		return false
	}
	s.until[nonce] = exp
	return true
}

// digest returns a short, URL-safe SHA-256 of parts, each length-prefixed.
func digest(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18])
}

// canonicalArgs returns the arguments in one spelling whatever the
// client's key order and spacing, so a retry that re-encodes them binds to
// the same state.
func canonicalArgs(args json.RawMessage) []byte {
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		return []byte("{}")
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return args
	}
	b, err := json.Marshal(v)
	if err != nil {
		return args
	}
	return b
}

// who binds a state to the principal and the tenant of the call.
func who(ctx context.Context) string {
	return digest([]byte(principalID(llmtool.PrincipalFrom(ctx))), []byte(llmtool.TenantFrom(ctx)))
}

// seal signs st and returns the requestState.
func (s *Server) seal(st *roundState) (string, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	body := base64.RawURLEncoding.EncodeToString(payload)
	return body + "." + base64.RawURLEncoding.EncodeToString(s.mac(body)), nil
}

func (s *Server) mac(body string) []byte {
	m := hmac.New(sha256.New, s.cfg.RequestStateKey)
	m.Write([]byte(stateVersion))
	m.Write([]byte(body))
	return m.Sum(nil)
}

// open verifies a requestState for the call of tool with args in ctx, and
// spends it.
func (s *Server) open(ctx context.Context, state, tool string, args json.RawMessage) (*roundState, error) {
	body, sig, ok := strings.Cut(state, ".")
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(mac, s.mac(body)) {
		return nil, &stateError{stateForged}
	}
	payload, err := base64.RawURLEncoding.DecodeString(body)
	var st roundState
	if err != nil || json.Unmarshal(payload, &st) != nil {
		return nil, &stateError{stateForged}
	}
	now := s.now()
	switch {
	case now.After(time.Unix(st.Expires, 0)):
		return nil, &stateError{fmt.Sprintf(stateExpired, s.cfg.RequestStateTTL)}
	case st.Tool != tool:
		return nil, &stateError{stateOtherTool}
	case st.Who != who(ctx):
		return nil, &stateError{stateOtherUser}
	case st.Args != digest(canonicalArgs(args)):
		return nil, &stateError{stateOtherArgs}
	case !s.spent.spend(st.Nonce, time.Unix(st.Expires, 0), now):
		return nil, &stateError{stateReplayed}
	}
	return &st, nil
}

// pendingRequest is a request a run made that has no answer yet.
type pendingRequest struct {
	question
	req mcp.InputRequest
}

// round is what a call's peer knows of the exchange: the answers it may
// give, and what the current run used and asked.
type round struct {
	mu sync.Mutex
	// book holds the answers the run may use, by key: from the state, or
	// sent by the client. An answer without method and digest (a first
	// round's, sent without a state) answers any request under its key.
	book   map[string]answer
	state  *roundState // the verified state of this retry, nil on a first call
	run    any         // callinfo.Info.Run of the current run
	counts map[mcp.MCPMethod]int
	keys   map[string]bool // keys the current run asked under
	used   []answer        // answers the current run used
	asked  []pendingRequest
	// approval is the token of the approval question in asked, if any.
	approval string
}

// init builds, in r, the answers of a call from its verified state and
// the client's inputResponses. A call that brings none (most calls) gets
// no book.
func (r *round) init(st *roundState, responses mcp.InputResponses) {
	r.state = st
	if st == nil && len(responses) == 0 {
		return
	}
	r.book = make(map[string]answer)
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
				r.book[key] = answer{Key: key, Value: b}
			}
		}
		return
	}
	for _, a := range st.Answers {
		r.book[a.Key] = a
	}
	for _, q := range st.Asked { // keys the state did not ask under are ignored
		if b, ok := raw(q.Key); ok {
			r.book[q.Key] = answer{Key: q.Key, Method: q.Method, Digest: q.Digest, Value: b}
		}
	}
}

// ask answers req, made under key (or the method's next default key),
// from the book, or records it and returns ask.ErrInputRequired. decode
// checks and keeps the answer; an answer it refuses is asked again.
func (r *round) ask(ctx context.Context, key string, req mcp.InputRequest, decode func(json.RawMessage) error) error {
	info, _ := ctx.Value(callinfo.Key{}).(callinfo.Info)
	params, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encoding the request: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.run != info.Run || r.counts == nil {
		r.run, r.counts, r.keys, r.used, r.asked = info.Run, make(map[mcp.MCPMethod]int), make(map[string]bool), nil, nil
	}
	r.counts[req.Method]++
	if key == "" {
		key = fmt.Sprintf("%s-%d", defaultKey(req.Method), r.counts[req.Method])
	}
	if key == approvalAskKey {
		return fmt.Errorf("the key %q is the adapter's, for approvals: give the request another Key", key)
	}
	if r.keys[key] {
		return fmt.Errorf("two requests of one run under the key %q: give each request its own Key", key)
	}
	r.keys[key] = true
	d := digest(params)
	if a, ok := r.book[key]; ok && (a.Method == "" || a.Method == req.Method) && (a.Digest == "" || a.Digest == d) {
		if decode(a.Value) == nil {
			r.used = append(r.used, answer{Key: key, Method: req.Method, Digest: d, Value: a.Value})
			return nil
		}
	}
	r.asked = append(r.asked, pendingRequest{question: question{Key: key, Method: req.Method, Digest: d}, req: req})
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
func (r *round) pending() ([]pendingRequest, []answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked, r.used
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
	st := &roundState{
		Tool: tool, Args: digest(canonicalArgs(args)), Who: who(ctx),
		Expires:  s.now().Add(s.cfg.RequestStateTTL).Unix(),
		Nonce:    rand.Text(),
		Round:    1,
		Answers:  used,
		Approval: r.approval,
	}
	if r.state != nil {
		st.Round = r.state.Round + 1
	}
	b := server.NewInputRequestBuilder("")
	for _, p := range asked {
		st.Asked = append(st.Asked, p.question)
		switch p.req.Method {
		case mcp.MethodElicitationCreate:
			b.Elicit(p.Key, *p.req.Elicitation)
		case mcp.MethodSamplingCreateMessage:
			b.Sample(p.Key, *p.req.Sampling)
		case mcp.MethodListRoots:
			b.Roots(p.Key)
		}
	}
	state, err := s.seal(st)
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
