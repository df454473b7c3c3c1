package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/internal/pgtest"
)

// user answers find_note's question as the client's user would: with the
// note whose title is pick, found among the options offered. It records
// the requests it got.
type user struct {
	pick string

	mu    sync.Mutex
	asked []mcp.ElicitationParams
}

func (u *user) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.asked = append(u.asked, req.Params)
	raw, err := json.Marshal(req.Params.RequestedSchema)
	if err != nil {
		return nil, err
	}
	var schema struct {
		Properties struct {
			NoteID struct {
				OneOf []struct{ Const, Title string } `json:"oneOf"`
			} `json:"noteId"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, err
	}
	for _, o := range schema.Properties.NoteID.OneOf {
		if strings.HasPrefix(o.Title, u.pick+" (") {
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
				Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"noteId": o.Const},
			}}, nil
		}
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
}

// recorder is an http.RoundTripper that keeps the request bodies a
// client sends.
type recorder struct {
	sent *syncBuffer
	next http.RoundTripper
}

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		_, _ = r.sent.Write(append(body, '\n'))
		req = req.Clone(req.Context())
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	return r.next.RoundTrip(req)
}

// connection is a client of a notes-mcp server, the server's -db argument
// and what the client sent.
type connection struct {
	c    *client.Client
	db   string
	sent *syncBuffer
}

func (u *user) requests() []mcp.ElicitationParams {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.asked)
}

// stdioAsker serves a fresh SQLite store over stdio and connects a client
// that answers elicitation with u, at version.
func stdioAsker(t *testing.T, bin, version string, u *user) connection {
	t.Helper()
	db := filepath.Join(t.TempDir(), "notes.db")
	// Not t.Context(): it is cancelled, and the process killed, before the
	// cleanup below checks that the server exits cleanly.
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-stdio", "-db", db)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	sent := &syncBuffer{}
	c := client.NewClient(transport.NewIO(stdout, teeWriteCloser{stdin, sent}, io.NopCloser(strings.NewReader(""))), client.WithElicitationHandler(u))
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() {
		defer cancel()
		require.NoError(t, c.Close())
		require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
		require.NotContains(t, stderr.String(), "panic")
	})
	initializeAt(t, c, version)
	return connection{c, db, sent}
}

// teeWriteCloser writes to w and to a copy.
type teeWriteCloser struct {
	w    io.WriteCloser
	copy io.Writer
}

func (t teeWriteCloser) Write(p []byte) (int, error) {
	_, _ = t.copy.Write(p)
	return t.w.Write(p)
}

func (t teeWriteCloser) Close() error { return t.w.Close() }

// httpAsker serves db over streamable HTTP (with args added) and connects
// a client that answers elicitation with u, at version.
func httpAsker(t *testing.T, bin, version, db string, u *user, args ...string) connection {
	t.Helper()
	sent := &syncBuffer{}
	s := pgServeHTTP(t, bin, pgEnv(tokenEnv+"=revisions-test-token"), append([]string{"-db", db, "-addr", "127.0.0.1:0"}, args...)...)
	tr, err := transport.NewStreamableHTTP(s.url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + s.token}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)),
		transport.WithHTTPBasicClient(&http.Client{Transport: recorder{sent, http.DefaultTransport.(*http.Transport).Clone()}}))
	require.NoError(t, err)
	c := client.NewClient(tr, client.WithElicitationHandler(u))
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { _ = c.Close() })
	initializeAt(t, c, version)
	return connection{c, db, sent}
}

// TestToolsAtBothRevisions drives notes-mcp with mcp-go's client at
// 2026-07-28 and at 2025-11-25, over stdio and HTTP (with and without
// sessions) on SQLite, and over HTTP on PostgreSQL (skipped without
// LLMTOOL_TEST_POSTGRES): it lists the tools, calls a read tool, enables
// write tools and creates a note, then calls find_note with a title two
// notes have, and the client's user picks the new one. At 2026-07-28 the
// question comes back as an input-required result and the client retries;
// at 2025-11-25 it comes as elicitation/create within the tools/call,
// except over stateless HTTP, which has no session to send it on: there
// find_note lists the two candidates for the model.
func TestToolsAtBothRevisions(t *testing.T) {
	bin := buildBinary(t)
	transports := []struct {
		name     string
		sessions bool // a 2025-11-25 client can be asked (elicitation/create needs a session)
		connect  func(t *testing.T, version string, u *user) connection
	}{
		{name: "stdio", sessions: true, connect: func(t *testing.T, version string, u *user) connection {
			return stdioAsker(t, bin, version, u)
		}},
		{name: "http", sessions: true, connect: func(t *testing.T, version string, u *user) connection {
			return httpAsker(t, bin, version, filepath.Join(t.TempDir(), "notes.db"), u)
		}},
		{name: "stateless http", connect: func(t *testing.T, version string, u *user) connection {
			return httpAsker(t, bin, version, filepath.Join(t.TempDir(), "notes.db"), u, "-stateless")
		}},
		{name: "postgres http", sessions: true, connect: func(t *testing.T, version string, u *user) connection {
			return httpAsker(t, bin, version, pgtest.DSN(t), u) // skips without a server
		}},
	}
	for _, version := range protocolVersions {
		for _, tr := range transports {
			t.Run(version+"/"+tr.name, func(t *testing.T) {
				t.Parallel()
				u := &user{pick: "Roadmap for dinners"}
				conn := tr.connect(t, version, u)
				modern := version == mcp.ProtocolVersion20260728
				revisionScenario(t, conn.c, bin, conn.db, u, modern || tr.sessions)
				// How the question travelled: at 2026-07-28 as an
				// input-required result, which the client answered by
				// calling again with the requestState (and no response
				// to a server request); before, as elicitation/create,
				// which the client answered with a JSON-RPC response.
				sent := conn.sent.String()
				require.Equal(t, modern, strings.Contains(sent, `"inputResponses":{"choose-note":{"action":"accept"`), sent)
				require.Equal(t, modern, strings.Contains(sent, `"requestState":"`), sent)
				require.Equal(t, !modern && tr.sessions, strings.Contains(sent, `"result":{"action":"accept"`), sent)
			})
		}
	}
}

// toolList returns the names of the tools listed, sorted.
func toolList(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// revisionScenario lists, reads, writes and finds a note through c; asks
// says whether the client's user can be asked.
func revisionScenario(t *testing.T, c *client.Client, bin, db string, u *user, asks bool) {
	require.Equal(t, readTools, listTools(t, c), "write tools are off in a fresh database")
	note := callOK(t, c, "get_note", map[string]any{"noteId": "roadmap", "previewChars": 10})
	require.Equal(t, "Roadmap", note["title"])
	require.Equal(t, "Q3 roadmap…", note["contentPreview"])

	// Write tools, once enabled with the command.
	stdout, stderr, code := runBinary(t, bin, "writes", "on", "-db", db)
	require.Equal(t, 0, code, stderr)
	require.True(t, strings.HasPrefix(stdout, "Write tools are on for tenant \"default\" in "), stdout)
	all := slices.Sorted(slices.Values(append(slices.Clone(readTools), writeTools...)))
	require.Eventually(t, func() bool { return slices.Equal(all, toolList(t, c)) }, 10*time.Second, 50*time.Millisecond,
		"the write tools are listed once enabled")
	require.Equal(t, all, listTools(t, c))
	created := callOK(t, c, "create_note", map[string]any{"parentNoteId": "recipes", "title": "Roadmap for dinners", "content": "<p>Soup on Monday.</p>"})
	id := created["noteId"].(string)
	require.Regexp(t, `^[A-Za-z0-9]{12}$`, id)

	// find_note: two notes have "roadmap" in their title (the protected
	// note has not); the user picks the new one.
	found := callOK(t, c, "find_note", map[string]any{"title": "roadmap"})
	candidates := []any{
		map[string]any{"noteId": "roadmap", "title": "Roadmap", "parentTitle": "Projects"},
		map[string]any{"noteId": id, "title": "Roadmap for dinners", "parentTitle": "Recipes"},
	}
	if !asks {
		require.Empty(t, u.requests(), "a stateless 2025-11-25 client has no session to be asked on")
		require.Nil(t, found["note"])
		require.Equal(t, false, found["chosenByUser"])
		require.Equal(t, candidates, found["candidates"])
		require.Equal(t, `2 notes have a title matching "roadmap". Call get_note with the noteId of the one you mean; if you cannot tell which, ask the user.`, found["message"])
		return
	}
	asked := u.requests()
	require.Len(t, asked, 1, "one question, answered once")
	require.Equal(t, `2 notes have a title matching "roadmap". Which one do you mean?`, asked[0].Message)
	schema, err := json.Marshal(asked[0].RequestedSchema)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"object","required":["noteId"],"properties":{"noteId":{"type":"string","title":"Note","description":"The note you mean.","oneOf":[`+
		`{"const":"roadmap","title":"Roadmap (in Projects)"},{"const":"`+id+`","title":"Roadmap for dinners (in Recipes)"}]}}}`, string(schema))
	require.Equal(t, true, found["chosenByUser"])
	require.Equal(t, []any{}, found["candidates"])
	require.NotContains(t, found, "message")
	chosen, ok := found["note"].(map[string]any)
	require.True(t, ok, "%v", found)
	require.Equal(t, id, chosen["noteId"])
	require.Equal(t, "Roadmap for dinners", chosen["title"])
	require.Equal(t, "Soup on Monday.", chosen["contentPreview"])
	require.Equal(t, []any{map[string]any{"noteId": "recipes", "title": "Recipes"}}, chosen["parents"])
}
