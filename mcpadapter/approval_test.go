package mcpadapter_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/mcpadapter"
)

// Approval through MCP: a call that needs a person's approval asks the
// client's user with an elicitation showing the preview, and commits only
// after the answer approves it.

const (
	askDelete = "Tool delete_note asks to make this change: Delete note 1 \"Hello\". (notes: 1 deleted). Approve it?\n\nIts result would be: {\"status\":\"deleted\"}"
	askAgain  = "The data changed since you approved, so nothing was saved. Tool delete_note now asks to make this change: Delete note 1 \"Greetings\". (notes: 1 deleted). Approve it?\n\nIts result would be: {\"status\":\"deleted\"}"
	// ask_in_write inserts with INSERT ... RETURNING through QueryRow and
	// then updates the row with Exec: the preview counts both, as the
	// database saw them.
	askWrite = "Tool ask_in_write asks to make this change: notes: 1 inserted, 1 updated. Approve it?\n\nIts result would be: {\"id\":2,\"title\":\"Ada (asked: Title of the new note?)\",\"body\":\"asked\"}"
	denied   = "The user denied this change. Nothing was saved. Ask the user what to do instead."
)

// revisions are the two ways a client is asked: input-required results
// (2026-07-28) and elicitation/create within the tools/call (2025-11-25).
var revisions = []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125}

// approvalClient connects to url at revision rev with the bearer token,
// through rt. elicit answers elicitation; nil declares no elicitation.
func approvalClient(t *testing.T, rev, url, token string, rt *retries, elicit func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(&http.Client{Transport: rt}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	var opts []client.ClientOption
	if elicit != nil {
		opts = append(opts, client.WithElicitationHandler(elicitFunc(elicit)))
	}
	params := mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}
	if rev != mcp.ProtocolVersion20260728 {
		opts = append(opts, client.WithProtocolVersion(rev))
		params.ProtocolVersion = rev
	}
	c := client.NewClient(tr, opts...)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() { c.Close() })
	_, err = c.Initialize(context.Background(), mcp.InitializeRequest{Params: params})
	require.NoError(t, err)
	require.Equal(t, rev, c.ProtocolVersion())
	return c
}

// approvalAudits starts recording tool, outcome and approval step of each
// audit record; the function it returns stops and returns them.
func (f *fixture) approvalAudits() func() []string {
	var mu sync.Mutex
	var recs []string
	on := true
	f.mu.Lock()
	f.taps = append(f.taps[:len(f.taps):len(f.taps)], func(rec audit.Record) {
		mu.Lock()
		defer mu.Unlock()
		if on {
			recs = append(recs, strings.TrimSpace(rec.Tool+" "+rec.Outcome+" "+rec.Approval))
		}
	})
	f.mu.Unlock()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		on = false
		return recs
	}
}

// titles returns the notes as "id: title", by ID.
func (f *fixture) titles(t *testing.T) []string {
	t.Helper()
	rows, err := f.db.Query("SELECT id, title FROM notes ORDER BY id")
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, title string
		require.NoError(t, rows.Scan(&id, &title))
		out = append(out, id+": "+title)
	}
	require.NoError(t, rows.Err())
	return out
}

// answer is a person's answer to one question; before runs first (to
// change the data while the person looks at the preview).
type answer struct {
	before  func(t *testing.T, f *fixture)
	action  mcp.ElicitationResponseAction
	content map[string]any
}

func approve(yes bool) answer {
	return answer{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"approve": yes}}
}

// bearer authenticates "ada-token" as ada, "bob-token" as bob.
var bearer = mcpadapter.BearerAuth(func(_ context.Context, token string) (*llmtool.Principal, error) {
	id, ok := strings.CutSuffix(token, "-token")
	if !ok {
		return nil, errors.New("unknown token")
	}
	return &llmtool.Principal{ID: id}, nil
})

var stateKey = []byte("0123456789abcdef0123456789abcdef")

// approvalFixture serves a fixture over HTTP (bearer tokens as
// modernFixture's) with writes on and delete_note and ask_in_write
// needing approval in the tenant.
func approvalFixture(t *testing.T, regOpts *llmtool.Options) (*fixture, string) {
	t.Helper()
	f := newFixtureReg(t, regOpts, &mcpadapter.Options{Authenticator: bearer, RequestStateKey: stateKey})
	ctx := context.Background()
	require.NoError(t, f.reg.Tenants().SetWrites(ctx, "", true))
	require.NoError(t, f.reg.Tenants().SetApproval(ctx, "", "delete_note", true))
	require.NoError(t, f.reg.Tenants().SetApproval(ctx, "", "ask_in_write", true))
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	return f, ts.URL
}

// TestApproval calls tools needing approval at both revisions: the person
// sees the preview and answers; the database changes only after an
// approval of the change as it is when it commits.
func TestApproval(t *testing.T) {
	t.Parallel()
	const hello, greetings = "1: Hello", "1: Greetings"
	rename := func(t *testing.T, f *fixture) {
		_, err := f.db.Exec("UPDATE notes SET title = 'Greetings' WHERE id = 1")
		require.NoError(t, err)
	}
	tests := []struct {
		name       string
		modernOnly bool // the case changes what the client sends on the wire
		tool       string
		change     func(params map[string]any, h http.Header) // the client's retry
		first      func(params map[string]any)                // the client's first call
		answers    []answer
		wantAsked  []string
		wantResult string // structuredContent of a success
		wantError  string // text of an isError result
		wantRPC    string // a JSON-RPC error's message contains it
		wantNotes  []string
		wantAudits []string
	}{
		{name: "approve and commit", answers: []answer{approve(true)}, wantAsked: []string{askDelete},
			wantResult: `{"status":"deleted"}`, wantNotes: nil,
			wantAudits: []string{"delete_note denied requested", "delete_note ok approved"}},
		{name: "deny", answers: []answer{approve(false)}, wantAsked: []string{askDelete},
			wantError: denied, wantNotes: []string{hello},
			wantAudits: []string{"delete_note denied requested", "delete_note denied denied"}},
		{name: "decline", answers: []answer{{action: mcp.ElicitationResponseActionDecline}}, wantAsked: []string{askDelete},
			wantError: denied, wantNotes: []string{hello},
			wantAudits: []string{"delete_note denied requested", "delete_note denied denied"}},
		{name: "cancel", answers: []answer{{action: mcp.ElicitationResponseActionCancel}}, wantAsked: []string{askDelete},
			wantError: denied, wantNotes: []string{hello},
			wantAudits: []string{"delete_note denied requested", "delete_note denied denied"}},
		// An accept the adapter cannot read (LangChain's adapters send one
		// with empty or missing content) denies: asked once, nothing saved,
		// and the model reads that the user denied the change.
		{name: "accept with empty content", answers: []answer{{action: mcp.ElicitationResponseActionAccept, content: map[string]any{}}}, wantAsked: []string{askDelete},
			wantError: denied, wantNotes: []string{hello},
			wantAudits: []string{"delete_note denied requested", "delete_note denied denied"}},
		{name: "accept without content", answers: []answer{{action: mcp.ElicitationResponseActionAccept}}, wantAsked: []string{askDelete},
			wantError: denied, wantNotes: []string{hello},
			wantAudits: []string{"delete_note denied requested", "delete_note denied denied"}},
		{name: "data changed, asked again, approved",
			answers:    []answer{{before: rename, action: mcp.ElicitationResponseActionAccept, content: map[string]any{"approve": true}}, approve(true)},
			wantAsked:  []string{askDelete, askAgain},
			wantResult: `{"status":"deleted"}`, wantNotes: nil,
			wantAudits: []string{"delete_note denied requested", "delete_note denied changed", "delete_note ok approved"}},
		{name: "data changed, asked again, denied",
			answers:   []answer{{before: rename, action: mcp.ElicitationResponseActionAccept, content: map[string]any{"approve": true}}, approve(false)},
			wantAsked: []string{askDelete, askAgain},
			wantError: denied, wantNotes: []string{greetings},
			wantAudits: []string{"delete_note denied requested", "delete_note denied changed", "delete_note denied denied"}},
		{name: "the tool's own question, then the approval", tool: "ask_in_write",
			answers:    []answer{{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"name": "Ada (asked: Title of the new note?)"}}, approve(true)},
			wantAsked:  []string{"Title of the new note?", askWrite},
			wantResult: `{"id":2,"title":"Ada (asked: Title of the new note?)","body":"asked"}`,
			wantNotes:  []string{hello, "2: Ada (asked: Title of the new note?)"},
			wantAudits: []string{"ask_in_write input_required", "ask_in_write denied requested", "ask_in_write ok approved"}},
		{name: "a first call that brings an approval is asked all the same", modernOnly: true,
			first: func(p map[string]any) {
				p["inputResponses"] = map[string]any{"llmtool-approval": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}
			},
			answers: []answer{approve(false)}, wantAsked: []string{askDelete},
			wantError: denied, wantNotes: []string{hello},
			wantAudits: []string{"delete_note denied requested", "delete_note denied denied"}},
		{name: "approved by another user", modernOnly: true,
			change:  func(_ map[string]any, h http.Header) { h.Set("Authorization", "Bearer bob-token") },
			answers: []answer{approve(true)}, wantAsked: []string{askDelete},
			wantRPC:    "The requestState belongs to a call of another user or tenant: call the tool again without requestState and inputResponses to start over.",
			wantNotes:  []string{hello},
			wantAudits: []string{"delete_note denied requested"}},
		{name: "the approval's state changed on the way", modernOnly: true,
			change: func(p map[string]any, _ http.Header) {
				body, sig, _ := strings.Cut(p["requestState"].(string), ".")
				p["requestState"] = body[:len(body)-2] + "A." + sig
			},
			answers: []answer{approve(true)}, wantAsked: []string{askDelete},
			wantRPC:    "The requestState is not one this server issued, or it was changed on the way: call the tool again without requestState and inputResponses to start over.",
			wantNotes:  []string{hello},
			wantAudits: []string{"delete_note denied requested"}},
	}
	for _, rev := range revisions {
		for _, tc := range tests {
			if tc.modernOnly && rev != mcp.ProtocolVersion20260728 {
				continue
			}
			t.Run(rev+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f, url := approvalFixture(t, nil)
				var (
					mu     sync.Mutex
					asked  []string
					during []int
				)
				c := approvalClient(t, rev, url, "ada-token", &retries{change: tc.change, first: tc.first},
					func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
						mu.Lock()
						defer mu.Unlock()
						asked = append(asked, req.Params.Message)
						during = append(during, f.noteCount(t))
						if len(asked) > len(tc.answers) {
							return nil, errors.New("asked more than the test answers")
						}
						a := tc.answers[len(asked)-1]
						if a.before != nil {
							a.before(t, f)
						}
						return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: a.action, Content: a.content}}, nil
					})
				audits := f.approvalAudits()
				tool, args := tc.tool, any(nil)
				if tool == "" {
					tool, args = "delete_note", map[string]any{"id": 1}
				}
				res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
				switch {
				case tc.wantRPC != "":
					require.ErrorContains(t, err, tc.wantRPC)
				case tc.wantError != "":
					require.NoError(t, err)
					require.True(t, res.IsError)
					require.Equal(t, tc.wantError, text(t, res))
				default:
					require.NoError(t, err)
					require.False(t, res.IsError, text(t, res))
					require.JSONEq(t, tc.wantResult, structured(t, res))
				}
				mu.Lock()
				require.Equal(t, tc.wantAsked, asked)
				for i, n := range during {
					require.Equal(t, 1, n, "question %d: something was saved before the answer", i+1)
				}
				mu.Unlock()
				require.Equal(t, tc.wantNotes, f.titles(t))
				require.Equal(t, tc.wantAudits, audits())
			})
		}
	}
}

// TestApprovalCannotAsk: a client that cannot ask its user gets the
// preview and what to do, and nothing is saved, however often the model
// calls.
func TestApprovalCannotAsk(t *testing.T) {
	t.Parallel()
	const want = "This change needs the user's approval: Delete note 1 \"Hello\". (notes: 1 deleted). Nothing was saved. " +
		"This client cannot ask the user for approval (it does not support MCP elicitation here), and an approval cannot come from the model: " +
		"tell the user, who can make this change from an MCP client that asks for approval, or have approval of delete_note turned off for this tenant."
	never := func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		return nil, errors.New("asked a client that cannot ask")
	}
	for _, tc := range []struct {
		name      string
		rev       string
		stateless bool
		elicit    func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	}{
		{name: "no elicitation capability", rev: mcp.ProtocolVersion20260728},
		{name: "no elicitation capability", rev: mcp.ProtocolVersion20251125},
		{name: "stateless HTTP", rev: mcp.ProtocolVersion20251125, stateless: true, elicit: never},
	} {
		t.Run(tc.rev+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			f, url := approvalFixture(t, nil)
			if tc.stateless {
				ts := httptest.NewServer(f.srv.StatelessHandler())
				t.Cleanup(ts.Close)
				url = ts.URL
			}
			c := approvalClient(t, tc.rev, url, "ada-token", &retries{}, tc.elicit)
			audits := f.approvalAudits()
			for range 2 {
				res := call(t, c, "delete_note", map[string]any{"id": 1})
				require.True(t, res.IsError)
				require.Equal(t, want, text(t, res))
			}
			require.Equal(t, []string{"1: Hello"}, f.titles(t))
			require.Equal(t, []string{"delete_note denied requested", "delete_note denied requested"}, audits())
		})
	}
}

// TestApprovalQuestionInHostWords: with the notes table tracked and
// described (llmtool.Entity.NameColumn, Columns), the question lists the
// rows a call changes as the host would say them, not as its table's
// key and columns; and the committed change says so too.
func TestApprovalQuestionInHostWords(t *testing.T) {
	t.Parallel()
	const want = "Tool delete_note asks to make this change: Delete note 1 \"Hello\". Approve it?\n\n" +
		"The rows it changes:\nDelete note \"Hello\": body \"World\"\n\nIts result would be: {\"status\":\"deleted\"}"
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			f, url := approvalFixture(t, &llmtool.Options{Changesets: changeset.Config{Tables: []string{"notes"}}})
			require.NoError(t, f.reg.Add(llmtool.DefineTools("note_words").WithEntities(&llmtool.Entity{
				Kind: "note_row", Noun: "note", Exists: func(*llmtool.ReadCtx, string) (bool, error) { return true, nil },
				Table: "notes", Key: "id", NameColumn: "title", Columns: []string{"body"},
			})))
			var (
				mu    sync.Mutex
				asked []string
			)
			c := approvalClient(t, rev, url, "ada-token", &retries{}, func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"approve": true}}}, nil
			})
			res := call(t, c, "delete_note", map[string]any{"id": 1})
			require.False(t, res.IsError, text(t, res))
			mu.Lock()
			require.Equal(t, []string{want}, asked)
			mu.Unlock()
			require.Empty(t, f.titles(t))
		})
	}
}

// TestApprovalExpired: an approval that comes after the request expired
// saves nothing, and says when it expired.
func TestApprovalExpired(t *testing.T) {
	t.Parallel()
	expired := regexp.MustCompile(`^The approval expired at (\S+)\. Nothing was saved\. Call the tool again to get a new preview for the user to approve\.$`)
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			f, url := approvalFixture(t, &llmtool.Options{ApprovalTTL: time.Nanosecond})
			var askedAt time.Time
			c := approvalClient(t, rev, url, "ada-token", &retries{}, func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				askedAt = time.Now()
				time.Sleep(time.Until(askedAt.Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
				a := approve(true)
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: a.action, Content: a.content}}, nil
			})
			audits := f.approvalAudits()
			start := time.Now()
			res := call(t, c, "delete_note", map[string]any{"id": 1})
			require.True(t, res.IsError)
			m := expired.FindStringSubmatch(text(t, res))
			require.NotNil(t, m, text(t, res))
			at, err := time.Parse(time.RFC3339, m[1])
			require.NoError(t, err)
			require.False(t, at.Before(start.Truncate(time.Second)) || at.After(askedAt), "expired at %s, asked at %s", at, askedAt)
			require.Equal(t, []string{"1: Hello"}, f.titles(t))
			require.Equal(t, []string{"delete_note denied requested", "delete_note denied refused"}, audits())
		})
	}
}

// TestApprovalReplayedOnAnotherReplica: replicas sharing the
// requestState key each remember only the states they took, so a retry
// replayed on the other replica passes the requestState check; the
// approval token, recorded as used in the transaction that committed,
// still refuses it.
func TestApprovalReplayedOnAnotherReplica(t *testing.T) {
	t.Parallel()
	f, _ := approvalFixture(t, nil)
	other := mcpadapter.New(f.reg, &mcpadapter.Options{RequestStateKey: stateKey, Authenticator: bearer, Logger: slog.New(slog.DiscardHandler)})
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
	rt := &retries{twice: true, between: func() {
		// The note is back, so the replay previews the same change.
		_, err := f.db.Exec("INSERT INTO notes (id, title, body) VALUES (1, 'Hello', 'World')")
		require.NoError(t, err)
	}}
	c := approvalClient(t, mcp.ProtocolVersion20260728, ts.URL, "ada-token", rt, func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		a := approve(true)
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: a.action, Content: a.content}}, nil
	})
	audits := f.approvalAudits()
	// discover went to one replica, the call to the other; the retry goes
	// to the first and commits, its replay to the second.
	res := call(t, c, "delete_note", map[string]any{"id": 1})
	require.True(t, res.IsError)
	require.Equal(t, "This approval was already used. Nothing was saved. Call the tool again to get a new preview for the user to approve.", text(t, res))
	require.Equal(t, []string{"1: Hello"}, f.titles(t), "the replay deleted nothing")
	require.Equal(t, []string{"delete_note denied requested", "delete_note ok approved", "delete_note denied refused"}, audits())
}
