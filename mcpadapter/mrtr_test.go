package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
)

// retries is an http.RoundTripper between a client and the server that
// can change the client's retries: the tools/call requests that carry a
// requestState.
type retries struct {
	next   http.RoundTripper // nil: a transport of its own
	mu     sync.Mutex
	change func(params map[string]any, h http.Header) // may be nil
	twice  bool                                       // send each retry twice, and answer with the second response
	// between runs between the two sends of a retry sent twice; may be nil.
	between func()
	// first changes the params of a tools/call that is not a retry; may
	// be nil.
	first  func(params map[string]any)
	states []string // the requestStates the client sent
}

func (rt *retries) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	if rt.next == nil {
		// Not http.DefaultTransport, whose idle connections other tests'
		// clients close when they end.
		rt.next = http.DefaultTransport.(*http.Transport).Clone()
	}
	next := rt.next
	rt.mu.Unlock()
	if r.Body == nil || r.Method != http.MethodPost {
		return next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	var msg map[string]any
	_ = json.Unmarshal(body, &msg)
	params, _ := msg["params"].(map[string]any)
	rt.mu.Lock()
	change, twice, between, onFirst := rt.change, rt.twice, rt.between, rt.first
	state, retry := params["requestState"].(string)
	if retry {
		rt.states = append(rt.states, state)
	}
	rt.mu.Unlock()
	if !retry && onFirst != nil && msg["method"] == "tools/call" {
		onFirst(params)
		if body, err = json.Marshal(msg); err != nil {
			return nil, err
		}
	}
	if retry && change != nil {
		r.Header = r.Header.Clone()
		change(params, r.Header)
		if body, err = json.Marshal(msg); err != nil {
			return nil, err
		}
	}
	send := func() (*http.Response, error) {
		req := r.Clone(r.Context())
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		return next.RoundTrip(req)
	}
	if retry && twice {
		first, err := send()
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, first.Body)
		first.Body.Close()
		if between != nil {
			between()
		}
	}
	return send()
}

// modernClient connects to url at protocol revision 2026-07-28 with the
// bearer token, through rt, and answers elicitation (with elicit, or
// handlers' answer), sampling and roots.
func modernClient(t *testing.T, url, token string, rt *retries, elicit func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(&http.Client{Transport: rt}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	var eh client.ElicitationHandler = handlers{}
	if elicit != nil {
		eh = elicitFunc(elicit)
	}
	c := client.NewClient(tr, client.WithSamplingHandler(handlers{}), client.WithElicitationHandler(eh), client.WithRootsHandler(handlers{}))
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() { c.Close() })
	_, err = c.Initialize(context.Background(), mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}})
	require.NoError(t, err)
	require.Equal(t, mcp.ProtocolVersion20260728, c.ProtocolVersion())
	return c
}

type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, req)
}

func (handlers) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///work", Name: "work"}}}, nil
}

// modernFixture serves a fixture over HTTP with bearer tokens "ada-token"
// (principal ada) and "bob-token" (bob), with writes on.
func modernFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	f := newFixture(t, &mcpadapter.Options{Authenticator: mcpadapter.BearerAuth(func(_ context.Context, token string) (*llmtool.Principal, error) {
		id, ok := strings.CutSuffix(token, "-token")
		if !ok {
			return nil, errors.New("unknown token")
		}
		return &llmtool.Principal{ID: id}, nil
	})})
	require.NoError(t, f.reg.Tenants().SetWrites(context.Background(), "", true))
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	return f, ts.URL
}

// TestInputRequired calls tools that ask, at revision 2026-07-28: the
// call ends with an input-required result, the client answers, and the
// handler runs again with the answers.
func TestInputRequired(t *testing.T) {
	t.Parallel()
	f, url := modernFixture(t)
	rt := &retries{}
	var countWhileAsked int
	c := modernClient(t, url, "ada-token", rt, func(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		countWhileAsked = f.noteCount(t)
		return handlers{}.Elicit(ctx, req)
	})

	t.Run("elicitation", func(t *testing.T) {
		audits := f.audits()
		res := call(t, c, "ask_name", nil)
		require.False(t, res.IsError, text(t, res))
		require.JSONEq(t, `{"action":"accept","answer":{"name":"Ada (asked: Who are you?)"}}`, structured(t, res))
		require.NotContains(t, structured(t, res), `"error"`)
		require.Equal(t, []string{"ask_name input_required", "ask_name ok"}, audits())
	})

	t.Run("sampling", func(t *testing.T) {
		res := call(t, c, "ask_model", nil)
		require.False(t, res.IsError, text(t, res))
		require.JSONEq(t, `{"reply":"haiku for: Write a haiku about SQLite.","model":"test-model"}`, structured(t, res))
	})

	t.Run("a write tool commits only after the answer", func(t *testing.T) {
		before := f.noteCount(t)
		res := call(t, c, "ask_in_write", nil)
		require.False(t, res.IsError, text(t, res))
		require.Equal(t, before, countWhileAsked, "the run that asked committed its insert")
		require.Equal(t, before+1, f.noteCount(t))
		var out noteOut
		require.NoError(t, json.Unmarshal([]byte(structured(t, res)), &out))
		require.Equal(t, noteOut{ID: out.ID, Title: "Ada (asked: Title of the new note?)", Body: "asked"}, out)
		var title string
		require.NoError(t, f.db.QueryRow("SELECT title FROM notes WHERE id = ?", out.ID).Scan(&title))
		require.Equal(t, out.Title, title)
	})

	t.Run("a write tool that swallows the error commits nothing", func(t *testing.T) {
		before := f.noteCount(t)
		res := call(t, c, "swallow_ask", nil)
		require.False(t, res.IsError, text(t, res))
		require.JSONEq(t, `{"status":"done accept"}`, structured(t, res))
		require.Equal(t, before, countWhileAsked, "the run that asked and returned nil committed")
		require.Equal(t, before+1, f.noteCount(t), "only the run with the answer commits")
	})

	t.Run("two rounds", func(t *testing.T) {
		rt.mu.Lock()
		rt.states = nil
		rt.mu.Unlock()
		res := call(t, c, "ask_twice", nil)
		require.False(t, res.IsError, text(t, res))
		require.JSONEq(t, `{"name":"Ada (asked: Who are you?)","colour":"Ada (asked: Favourite colour, Ada (asked: Who are you?)?)"}`, structured(t, res))
		rt.mu.Lock()
		defer rt.mu.Unlock()
		require.Len(t, rt.states, 2, "one retry per round")
		require.NotEqual(t, rt.states[0], rt.states[1])
	})
}

// TestRequestStateRefused changes the client's retry, or the server's
// clock between the rounds: the retry gets a JSON-RPC error that says
// why, and the tool does not run.
func TestRequestStateRefused(t *testing.T) {
	t.Parallel()
	const (
		forged    = "The requestState is not one this server issued, or it was changed on the way: call the tool again without requestState and inputResponses to start over."
		expired   = "The requestState expired (a state is valid for 1h0m0s after the result that carried it): call the tool again without requestState and inputResponses to start over."
		otherTool = "The requestState belongs to a call of another tool: send it only with a call of the tool whose result carried it."
		otherArgs = "The requestState belongs to a call with other arguments: send the arguments of the call whose result carried it, or call again without requestState and inputResponses to start over."
		otherUser = "The requestState belongs to a call of another user or tenant: call the tool again without requestState and inputResponses to start over."
		replayed  = "The requestState was already used: each one is good for one retry. Send the requestState of the latest input-required result, or call the tool again without requestState and inputResponses to start over."
	)
	for _, tc := range []struct {
		name   string
		change func(params map[string]any, h http.Header)
		twice  bool
		later  time.Duration // the clock moves on while the user answers
		want   string
	}{
		{name: "tampered", want: forged, change: func(p map[string]any, _ http.Header) {
			p["requestState"] = p["requestState"].(string) + "-TAMPERED"
		}},
		{name: "content changed, signature kept", want: forged, change: func(p map[string]any, _ http.Header) {
			s := p["requestState"].(string)
			p["requestState"] = "e30" + s[strings.Index(s, "."):] // "{}" with the old signature
		}},
		{name: "expired", later: time.Hour + time.Second, want: expired},
		{name: "other tool", want: otherTool, change: func(p map[string]any, h http.Header) {
			p["name"] = "ask_model"
			h.Set("Mcp-Name", "ask_model")
		}},
		{name: "other arguments", want: otherArgs, change: func(p map[string]any, _ http.Header) { p["arguments"] = map[string]any{"id": 2} }},
		{name: "other principal", want: otherUser, change: func(_ map[string]any, h http.Header) { h.Set("Authorization", "Bearer bob-token") }},
		{name: "replayed", twice: true, want: replayed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, url := modernFixture(t)
			now := time.Now()
			var mu sync.Mutex
			mcpadapter.SetClock(f.srv, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
			rt := &retries{change: tc.change, twice: tc.twice}
			c := modernClient(t, url, "ada-token", rt, func(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				mu.Lock()
				now = now.Add(tc.later)
				mu.Unlock()
				return handlers{}.Elicit(ctx, req)
			})
			audits := f.audits()
			before := f.noteCount(t)
			_, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask_in_write"}})
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			want, count := []string{"ask_in_write input_required"}, before
			if tc.twice { // the first retry ran and committed; its replay did not run
				want, count = append(want, "ask_in_write ok"), before+1
			}
			require.Equal(t, count, f.noteCount(t))
			require.Equal(t, want, audits())
		})
	}
}

// TestInputRequiredReplicas runs the rounds of a call on alternating
// stateless replicas: with a shared Options.RequestStateKey the retry is
// accepted wherever it lands; with keys of their own it is refused.
func TestInputRequiredReplicas(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	for _, tc := range []struct {
		name      string
		keys      [2][]byte
		wantError string
	}{
		{name: "shared key", keys: [2][]byte{key, key}},
		{name: "keys of their own", keys: [2][]byte{key, []byte("fedcba9876543210fedcba9876543210")},
			wantError: "The requestState is not one this server issued, or it was changed on the way"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, &mcpadapter.Options{RequestStateKey: tc.keys[0]})
			require.NoError(t, f.reg.Tenants().SetWrites(context.Background(), "", true))
			other := mcpadapter.New(f.reg, &mcpadapter.Options{RequestStateKey: tc.keys[1], Logger: slog.New(slog.DiscardHandler)})
			t.Cleanup(func() { other.Close() })
			replicas := []http.Handler{f.srv.StatelessHandler(), other.StatelessHandler()}
			var mu sync.Mutex
			next := 0
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				h := replicas[next%2]
				next++
				mu.Unlock()
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(ts.Close)
			c := modernClient(t, ts.URL, "ada-token", &retries{}, nil) // no Authenticator: the token is ignored
			before := f.noteCount(t)
			// discover went to one replica; the call to the other, the
			// retry back to the first.
			res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask_in_write"}})
			if tc.wantError != "" {
				require.ErrorContains(t, err, tc.wantError)
				require.Equal(t, before, f.noteCount(t))
				return
			}
			require.NoError(t, err)
			require.False(t, res.IsError, text(t, res))
			require.Equal(t, before+1, f.noteCount(t))
		})
	}
}

// TestAskStatelessLegacy: a stateless request of a revision before
// 2026-07-28 has no session to send the client requests on, so asking is
// unsupported, as it always was there.
func TestAskStatelessLegacy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ts := httptest.NewServer(f.srv.StatelessHandler())
	t.Cleanup(ts.Close)
	tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithHTTPLogger(slog.New(slog.DiscardHandler)),
		transport.WithHTTPBasicClient(&http.Client{Transport: &retries{}}))
	require.NoError(t, err)
	c := client.NewClient(tr, clientOptions()...)
	start(t, c)
	res := call(t, c, "ask_name", nil)
	require.False(t, res.IsError, text(t, res))
	var out answerOut
	require.NoError(t, json.Unmarshal([]byte(structured(t, res)), &out))
	require.Equal(t, "llmtool: tool ask_name: elicitation: the client did not declare the elicitation capability: ask: the client cannot answer this request", out.Refusal)
}
