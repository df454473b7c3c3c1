package main

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// chooser answers approval questions with answer, and remembers them.
type chooser struct {
	answer bool
	mu     sync.Mutex
	asked  []string
}

func (c *chooser) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, timeless(req.Params.Message))
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"approve": c.answer}}}, nil
}

// TestApproval deletes the note "Projects" (and the two notes below it)
// through notes-mcp at both revisions, over HTTP with and without
// sessions: the user is asked with the preview, and the notes go only if
// the user approves; with -approve=false nobody is asked.
func TestApproval(t *testing.T) {
	bin := buildBinary(t)
	const (
		question = "Tool delete_note asks to make this change: Delete note \"Projects\" and the 2 notes below it. Approve it?\n\n" +
			"The rows it changes:\n" +
			`Delete note "Projects": content "<p>Everything we are currently working on.</p>", type "book"` + "\n" +
			`Delete branch: under "root"` + "\n" +
			`Delete branch: under "projects"` + "\n" +
			`Delete branch: under "projects"` + "\n" +
			`Delete note "Roadmap": content "<h2>Q3 roadmap</h2><ul><li>Ship the offline sync engine</li>…", type "text"` + "\n" +
			`Delete attribute "todo"` + "\n" +
			`Delete attribute "priority": value "high"` + "\n" +
			`Delete attribute "relatedTo": value "roadmap"` + "\n" +
			`Delete note "Meeting notes": content "<p>Weekly sync, Monday: we agreed to freeze the plugin API b…", type "text"` + "\n\n" +
			"Its result would be: {\"deletedNoteIds\":[\"projects\",\"roadmap\",\"meetings\"]}"
		deniedText = "The user denied this change. Nothing was saved. Ask the user what to do instead."
	)
	for _, version := range protocolVersions {
		for _, tc := range []struct {
			name      string
			args      []string
			answer    bool
			wantAsked []string
			wantError string // "" for a success
		}{
			{name: "approved", answer: true, wantAsked: []string{question}},
			{name: "denied", answer: false, wantAsked: []string{question}, wantError: deniedText},
			{name: "approved, stateless", args: []string{"-stateless"}, answer: true, wantAsked: []string{question}},
			{name: "approval off", args: []string{"-approve=false"}, answer: false},
		} {
			if version != mcp.ProtocolVersion20260728 && slices.Contains(tc.args, "-stateless") {
				continue // no session to ask on: TestEndToEnd and the mcpadapter tests cover the refusal
			}
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				db := filepath.Join(t.TempDir(), "notes.db")
				stdout, stderr, code := runBinary(t, bin, "writes", "on", "-db", db)
				require.Equal(t, 0, code, stdout+stderr)
				s := pgServeHTTP(t, bin, pgEnv(tokenEnv+"=approval-test-token"), append([]string{"-db", db, "-addr", "127.0.0.1:0"}, tc.args...)...)
				tr, err := transport.NewStreamableHTTP(s.url,
					transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + s.token}),
					transport.WithHTTPLogger(slog.New(slog.DiscardHandler)),
					transport.WithHTTPBasicClient(&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}))
				require.NoError(t, err)
				u := &chooser{answer: tc.answer}
				c := client.NewClient(tr, client.WithElicitationHandler(u))
				require.NoError(t, c.Start(t.Context()))
				t.Cleanup(func() { _ = c.Close() })
				initializeAt(t, c, version)

				if tc.wantError != "" {
					require.Equal(t, tc.wantError, callError(t, c, "delete_note", map[string]any{"noteId": "projects"}))
					require.Equal(t, "Projects", callOK(t, c, "get_note", map[string]any{"noteId": "projects"})["title"], "nothing was deleted")
				} else {
					require.Equal(t, []any{"projects", "roadmap", "meetings"}, callOK(t, c, "delete_note", map[string]any{"noteId": "projects"})["deletedNoteIds"])
					require.Equal(t, `Note "roadmap" (noteId) does not exist. Call search_notes or get_child_notes to find the note's ID.`,
						callError(t, c, "get_note", map[string]any{"noteId": "roadmap"}))
					// Undo: a session undoes its own last change; without
					// sessions (2026-07-28) the client finds the change's
					// id in list_changes. The notes are back.
					undo := map[string]any{}
					if version == mcp.ProtocolVersion20260728 {
						changes := callOK(t, c, "list_changes", map[string]any{"all": true})["changes"].([]any)
						undo["id"] = changes[0].(map[string]any)["id"]
					}
					require.Len(t, callOK(t, c, "undo_changes", undo)["undone"], 1)
					require.Equal(t, "Roadmap", callOK(t, c, "get_note", map[string]any{"noteId": "roadmap"})["title"])
				}
				u.mu.Lock()
				require.Equal(t, tc.wantAsked, u.asked)
				u.mu.Unlock()
				approve := "on"
				if slices.Contains(tc.args, "-approve=false") {
					approve = "off"
				}
				require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), " approve="+approve+"\n") }, 5e9, 1e7, s.stderr.String())
			})
		}
	}
}

// TestApprovalAcrossReplicas: two stateless replicas started with the same
// bearer token, behind a load balancer that alternates between them. At
// 2026-07-28 the approval question goes out from one replica and its
// answer comes back to the other, which honours it: both derive their
// signing keys from the token.
func TestApprovalAcrossReplicas(t *testing.T) {
	bin := buildBinary(t)
	db := filepath.Join(t.TempDir(), "notes.db")
	stdout, stderr, code := runBinary(t, bin, "writes", "on", "-db", db)
	require.Equal(t, 0, code, stdout+stderr)
	env := pgEnv(tokenEnv + "=replicas-approval-token")
	a := pgServeHTTP(t, bin, env, "-db", db, "-addr", "127.0.0.1:0", "-stateless")
	b := pgServeHTTP(t, bin, env, "-db", db, "-addr", "127.0.0.1:0", "-stateless")
	host := func(u string) string { return strings.TrimPrefix(strings.TrimSuffix(u, "/mcp"), "http://") }
	lb := &spreader{base: http.DefaultTransport.(*http.Transport).Clone(), hosts: []string{host(a.url), host(b.url)}, served: make([]atomic.Int64, 2)}
	tr, err := transport.NewStreamableHTTP(a.url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + a.token}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)),
		transport.WithHTTPBasicClient(&http.Client{Transport: lb}))
	require.NoError(t, err)
	u := &chooser{answer: true}
	c := client.NewClient(tr, client.WithElicitationHandler(u))
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { _ = c.Close() })
	initializeAt(t, c, mcp.ProtocolVersion20260728)

	before := [2]int64{lb.served[0].Load(), lb.served[1].Load()}
	require.Equal(t, []any{"projects", "roadmap", "meetings"}, callOK(t, c, "delete_note", map[string]any{"noteId": "projects"})["deletedNoteIds"])
	require.Len(t, u.asked, 1)
	require.Equal(t, int64(1), lb.served[0].Load()-before[0], "the call went to one replica")
	require.Equal(t, int64(1), lb.served[1].Load()-before[1], "and its retry with the answer to the other")
	require.Equal(t, `Note "roadmap" (noteId) does not exist. Call search_notes or get_child_notes to find the note's ID.`,
		callError(t, c, "get_note", map[string]any{"noteId": "roadmap"}))
}

var stamp = regexp.MustCompile(`"\d{4}-\d\d-\d\dT[0-9:.]+Z"`)

// timeless replaces the times in s, which change from run to run.
func timeless(s string) string { return stamp.ReplaceAllString(s, "<time>") }
