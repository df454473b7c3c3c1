package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// readTools are the tools listed while write tools are off: the notes read
// tools and the built-in man.
var readTools = []string{
	"find_note", "get_attribute", "get_attributes", "get_child_notes", "get_note",
	"get_note_content", "get_subtree", "list_changes", "man", "search_notes",
}

// writeTools are listed once write tools are on.
var writeTools = []string{
	"append_to_note", "clone_note", "create_note", "delete_attribute", "delete_note",
	"edit_note_content", "move_note", "rename_note", "set_attribute", "set_note_content",
	"undo_changes",
}

// destructive are the tools with destructiveHint true.
var destructive = []string{"delete_attribute", "delete_note"}

// syncBuffer is a bytes.Buffer safe for a process's writes and the test's
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// buildBinary builds notes-mcp into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "notes-mcp")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// runBinary runs the binary to completion and returns its stdout, stderr
// and exit status.
func runBinary(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return o.String(), e.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return o.String(), e.String(), 0
}

// listChanged counts notifications/tools/list_changed.
func listChanged(c *client.Client) chan struct{} {
	ch := make(chan struct{}, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			ch <- struct{}{}
		}
	})
	return ch
}

func initialize(t *testing.T, c *client.Client) {
	t.Helper()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	req.Params.ClientInfo = mcp.Implementation{Name: "notes-mcp-test", Version: "1"}
	res, err := c.Initialize(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, "notes-mcp", res.ServerInfo.Name)
	require.NotNil(t, res.Capabilities.Tools)
	require.True(t, res.Capabilities.Tools.ListChanged)
}

// listTools lists the tools and checks their annotations: readOnlyHint
// exactly for read tools, destructiveHint exactly for the destructive ones.
func listTools(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		require.NotNil(t, tool.Annotations.ReadOnlyHint, tool.Name)
		require.Equal(t, slices.Contains(readTools, tool.Name), *tool.Annotations.ReadOnlyHint, "readOnlyHint of %s", tool.Name)
		require.NotNil(t, tool.Annotations.DestructiveHint, tool.Name)
		require.Equal(t, slices.Contains(destructive, tool.Name), *tool.Annotations.DestructiveHint, "destructiveHint of %s", tool.Name)
		require.NotEmpty(t, tool.Title, tool.Name)
	}
	slices.Sort(names)
	return names
}

// callOK calls a tool that must succeed and returns its structured result.
func callOK(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(t.Context(), req)
	require.NoError(t, err, name)
	require.False(t, res.IsError, "%s: %v", name, res.Content)
	require.Len(t, res.Content, 1)
	text := res.Content[0].(mcp.TextContent).Text
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(text), &out), text)
	require.NotContains(t, out, "error")
	structured, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.JSONEq(t, text, string(structured), "structuredContent and text agree")
	return out
}

// callError calls a tool that must fail with isError and returns the
// message.
func callError(t *testing.T, c *client.Client, name string, args map[string]any) string {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(t.Context(), req)
	require.NoError(t, err, name)
	require.True(t, res.IsError, "%s succeeded: %v", name, res.Content)
	require.Len(t, res.Content, 1)
	return res.Content[0].(mcp.TextContent).Text
}

// waitListChanged waits for a tools/list_changed notification.
func waitListChanged(t *testing.T, ch chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-t.Context().Done():
		t.Fatal("no notifications/tools/list_changed before the test's deadline")
	}
}

// approver is a client's user who approves every change they are asked
// about, and remembers the questions.
type approver struct {
	mu    sync.Mutex
	asked []string
}

func (a *approver) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req.Params.Message)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"approve": true}}}, nil
}

func (a *approver) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.asked)
}

// cannotAsk is the refusal of a change needing approval from a client that
// cannot ask its user.
func cannotAsk(preview, tool string) string {
	return "This change needs the user's approval: " + preview + ". Nothing was saved. " +
		"This client cannot ask the user for approval (it does not support MCP elicitation here), and an approval cannot come from the model: " +
		"tell the user, who can make this change from an MCP client that asks for approval, or have approval of " + tool + " turned off for this tenant."
}

// scenario is what a client does over either transport: list, read, see a
// write refused, have write tools enabled with the writes command, then
// create, edit, move and delete a note. Moving and deleting need the
// user's approval: u approves them; with u nil the client cannot ask, and
// both are refused with the preview.
func scenario(t *testing.T, c *client.Client, bin, db string, changed chan struct{}, u *approver) {
	require.Equal(t, readTools, listTools(t, c), "write tools are off in a fresh database")

	// Read tools work.
	note := callOK(t, c, "get_note", map[string]any{"noteId": "roadmap"})
	require.Equal(t, "Roadmap", note["title"])
	found := callOK(t, c, "search_notes", map[string]any{"query": "flour"})
	require.Equal(t, "pancakes", found["results"].([]any)[0].(map[string]any)["noteId"])
	require.Equal(t, `Note "secret" (noteId) is protected; tools may neither read nor change it. Work with another note, or ask the user to remove the protection.`,
		callError(t, c, "get_note_content", map[string]any{"noteId": "secret"}))

	// A write tool is not listed, and its call is refused with the
	// registry's sentence, which says how to enable writes.
	refusal := callError(t, c, "create_note", map[string]any{"parentNoteId": "root", "title": "Refused"})
	require.True(t, strings.HasPrefix(refusal, writesOffRefusal("create_note")), refusal)

	// Enable write tools with the command, as a user would.
	stdout, stderr, code := runBinary(t, bin, "writes", "on", "-db", db)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "Write tools are on for tenant \"default\" in "+db+".\nRunning servers apply the change on their next listing or call.\n", stdout)

	require.Equal(t, slices.Sorted(slices.Values(append(slices.Clone(readTools), writeTools...))), listTools(t, c))
	if changed != nil {
		waitListChanged(t, changed)
	}

	// Create, edit, move and delete a note.
	created := callOK(t, c, "create_note", map[string]any{
		"parentNoteId": "root", "title": "Shopping", "content": "<p>eggs, milk</p>",
	})
	id := created["noteId"].(string)
	require.Regexp(t, `^[A-Za-z0-9]{12}$`, id)
	require.Equal(t, "text", created["type"])

	edited := callOK(t, c, "edit_note_content", map[string]any{"noteId": id, "oldText": "milk", "newText": "flour"})
	require.EqualValues(t, len("<p>eggs, flour</p>"), edited["contentLength"])
	content := callOK(t, c, "get_note_content", map[string]any{"noteId": id})
	require.Equal(t, "<p>eggs, flour</p>", content["content"])
	require.Equal(t, `oldText does not occur in the content of note "`+id+`"; nothing was changed. Call get_note_content and copy oldText from it exactly, HTML tags and spaces included.`,
		callError(t, c, "edit_note_content", map[string]any{"noteId": id, "oldText": "milk", "newText": "x"}))

	move := `Move note "Shopping" from under "root" to under "Recipes". (branches: 1 updated)`
	del := `Delete note "Shopping". (notes: 1 updated; branches: 1 updated)`
	if u == nil {
		require.Equal(t, cannotAsk(move, "move_note"), callError(t, c, "move_note", map[string]any{"noteId": id, "parentNoteId": "recipes"}))
		require.Equal(t, cannotAsk(del, "delete_note"), callError(t, c, "delete_note", map[string]any{"noteId": id}))
		note := callOK(t, c, "get_note", map[string]any{"noteId": id})
		require.Equal(t, []any{map[string]any{"noteId": "root", "title": "root"}}, note["parents"], "nothing moved")
		return
	}
	moved := callOK(t, c, "move_note", map[string]any{"noteId": id, "parentNoteId": "recipes"})
	require.Equal(t, []any{map[string]any{"noteId": "recipes", "title": "Recipes"}}, moved["parents"])

	require.Equal(t, `Note "root" (noteId) is a system note; delete_note must not change it. Leave system notes as they are and choose another note.`,
		callError(t, c, "delete_note", map[string]any{"noteId": "root"}))
	deleted := callOK(t, c, "delete_note", map[string]any{"noteId": id})
	require.Equal(t, []any{id}, deleted["deletedNoteIds"])
	require.Equal(t, `Note "`+id+`" (noteId) does not exist. Call search_notes or get_child_notes to find the note's ID.`,
		callError(t, c, "get_note", map[string]any{"noteId": id}))
	children := callOK(t, c, "get_child_notes", map[string]any{"noteId": "recipes"})
	require.Len(t, children["children"], 1, "only pancakes is left under recipes")
	// The rows name the note's new branch, whose id the test does not know.
	branch := regexp.MustCompile(`branchId="[A-Za-z0-9_-]+"`)
	asked := trimResults(u.questions())
	for i, q := range asked {
		asked[i] = timeless(branch.ReplaceAllString(q, `branchId="b"`))
	}
	require.Equal(t, []string{
		// The person reads the rows in the notes' words, not the tables' counts.
		"Tool move_note asks to make this change: " + `Move note "Shopping" from under "root" to under "Recipes". Approve it?` + "\n\nThe rows it changes:\nChange branch: under \"root\" → \"recipes\"\n\nIts result would be: ",
		"Tool delete_note asks to make this change: " + `Delete note "Shopping". Approve it?` + "\n\nThe rows it changes:\n" +
			"Delete note \"Shopping\": content \"<p>eggs, flour</p>\", type \"text\"\n" +
			"Delete branch: under \"recipes\"\n\nIts result would be: {\"deletedNoteIds\":[\"" + id + "\"]}",
	}, asked)
}

// trimResults cuts the result of move_note's question, which holds the
// note's dates.
func trimResults(qs []string) []string {
	for i, q := range qs {
		if strings.HasPrefix(q, "Tool move_note") {
			qs[i] = q[:strings.Index(q, "Its result would be: ")+len("Its result would be: ")]
		}
	}
	return qs
}

// serveStdio runs the binary over stdio, with args after -stdio, and
// returns the process, its stdin and stdout, and its stderr.
func serveStdio(t *testing.T, bin string, args ...string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout io.ReadCloser, stderr *syncBuffer) {
	t.Helper()
	cmd = exec.CommandContext(t.Context(), bin, append([]string{"-stdio"}, args...)...)
	var err error
	stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err = cmd.StdoutPipe()
	require.NoError(t, err)
	stderr = &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	return cmd, stdin, stdout, stderr
}

// serveHTTP runs the binary over HTTP on a free port of the loopback
// interface, with args after -db, and returns the process, its stderr, and
// the MCP endpoint's URL and the bearer token its banner gives.
func serveHTTP(t *testing.T, bin, db string, args ...string) (cmd *exec.Cmd, stderr *syncBuffer, url, token string) {
	t.Helper()
	cmd = exec.CommandContext(t.Context(), bin, append([]string{"-addr", "127.0.0.1:0", "-db", db}, args...)...)
	stdoutPipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr = &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())

	// The banner gives the URL and the token.
	var banner strings.Builder
	sc := bufio.NewScanner(stdoutPipe)
	for sc.Scan() && (url == "" || token == "") {
		banner.WriteString(sc.Text() + "\n")
		if m := regexp.MustCompile(`MCP endpoint:\s+(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
		if m := regexp.MustCompile(`Bearer token:\s+(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			token = m[1]
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stdoutPipe) }()
	require.NotEmpty(t, url, "banner:\n%s\nstderr:\n%s", banner.String(), stderr.String())
	require.Regexp(t, `^http://127\.0\.0\.1:\d+/mcp$`, url)
	return cmd, stderr, url, token
}

// rawPost posts one JSON-RPC message to url with the token, without a
// session, and returns the status, the Mcp-Session-Id header and the body.
func rawPost(t *testing.T, url, token, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get("Mcp-Session-Id"), string(b)
}

func TestEndToEnd(t *testing.T) {
	bin := buildBinary(t)

	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		db := filepath.Join(t.TempDir(), "notes.db")
		cmd, stdin, stdoutPipe, stderr := serveStdio(t, bin, "-db", db)
		var stdout syncBuffer

		// Everything the server writes to stdout goes to the client and to
		// stdout, to check afterwards that it was protocol only.
		// Its user approves the changes that need it.
		u := &approver{}
		c := client.NewClient(transport.NewIO(io.TeeReader(stdoutPipe, &stdout), stdin, io.NopCloser(strings.NewReader(""))), client.WithElicitationHandler(u))
		require.NoError(t, c.Start(t.Context()))
		changed := listChanged(c)
		initialize(t, c)

		scenario(t, c, bin, db, changed, u)

		require.NoError(t, c.Close())
		require.NoError(t, cmd.Wait(), "the server exits cleanly when stdin closes; stderr:\n%s", stderr.String())

		sc := bufio.NewScanner(strings.NewReader(stdout.String()))
		sc.Buffer(nil, 1<<20)
		lines := 0
		for sc.Scan() {
			var msg struct {
				JSONRPC string `json:"jsonrpc"`
			}
			require.NoError(t, json.Unmarshal(sc.Bytes(), &msg), "stdout line is not JSON-RPC: %s", sc.Text())
			require.Equal(t, "2.0", msg.JSONRPC, sc.Text())
			lines++
		}
		require.Greater(t, lines, 10)
		require.Contains(t, stderr.String(), "serving over stdio")
		require.NotContains(t, stderr.String(), "panic")
	})

	t.Run("http", func(t *testing.T) {
		t.Parallel()
		db := filepath.Join(t.TempDir(), "notes.db")
		cmd, stderr, url, token := serveHTTP(t, bin, db)
		file, err := os.ReadFile(db + ".token")
		require.NoError(t, err)
		require.Equal(t, token, strings.TrimSpace(string(file)), "the token is kept next to the database")

		// Without the token, or with a wrong one: 401 before anything runs.
		for _, auth := range []string{"", "Bearer wrong"} {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url,
				strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			require.NoError(t, res.Body.Close())
			require.Equal(t, http.StatusUnauthorized, res.StatusCode, auth)
			require.True(t, strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer "), auth)
		}
		anon, err := client.NewStreamableHttpClient(url)
		require.NoError(t, err)
		req := mcp.InitializeRequest{}
		req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
		_, err = anon.Initialize(t.Context(), req)
		require.Error(t, err, "an MCP client without the token cannot initialize")
		require.NoError(t, anon.Close())

		// With the token, the whole scenario.
		// (No list_changed check here: the notification travels on the GET
		// stream, which the client opens in the background at a time the
		// test cannot observe. The stdio test checks it; here the fresh
		// listing shows the change.)
		c, err := client.NewStreamableHttpClient(url,
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		require.NoError(t, err)
		require.NoError(t, c.Start(t.Context()))
		initialize(t, c)
		scenario(t, c, bin, db, nil, nil) // a client that cannot ask
		require.NoError(t, c.Close())

		// Ctrl+C stops the server cleanly.
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
		require.NotContains(t, stderr.String(), "panic")
	})

	t.Run("cli", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		db := filepath.Join(dir, "notes.db")
		notADB := filepath.Join(dir, "text.db")
		require.NoError(t, os.WriteFile(notADB, []byte("not a database\n"), 0o600))
		missingDir := filepath.Join(dir, "missing", "notes.db")
		tests := []struct {
			name   string
			args   []string
			code   int
			stderr string // exact, without the final newline
			stdout string // exact
		}{
			{name: "unknown flag", args: []string{"-bogus"}, code: 2,
				stderr: "notes-mcp: flag provided but not defined: -bogus (run notes-mcp -h for help)"},
			{name: "bad flag value", args: []string{"-stdio=maybe"}, code: 2,
				stderr: `notes-mcp: invalid boolean value "maybe" for -stdio: parse error (run notes-mcp -h for help)`},
			{name: "unknown command", args: []string{"serve"}, code: 2,
				stderr: `notes-mcp: unknown command "serve"; the only command is "writes" (run notes-mcp -h for help)`},
			{name: "addr with stdio", args: []string{"-stdio", "-addr", ":9"}, code: 2,
				stderr: "notes-mcp: -addr and -token are for HTTP; leave them out with -stdio (run notes-mcp -h for help)"},
			{name: "not a database", args: []string{"-stdio", "-db", notADB}, code: 1,
				stderr: `notes-mcp: open note store "` + notADB + `": begin transaction: file is not a database (26) (is ` + notADB + ` a notes database you can read and write?)`},
			{name: "directory", args: []string{"-db", dir}, code: 1,
				stderr: "notes-mcp: open " + dir + ": it is a directory; give -db the path of a database file"},
			{name: "missing directory", args: []string{"writes", "-db", missingDir}, code: 1,
				stderr: "notes-mcp: open " + missingDir + ": the directory " + filepath.Dir(missingDir) + " does not exist; create it or give -db another path"},
			{name: "writes bad action", args: []string{"writes", "maybe", "-db", db}, code: 2,
				stderr: `notes-mcp: unknown writes action "maybe"; use "on", "off" or nothing to show the setting (run notes-mcp -h for help)`},
			{name: "writes extra argument", args: []string{"writes", "on", "now"}, code: 2,
				stderr: `notes-mcp: unexpected argument "now" after "on" (run notes-mcp -h for help)`},
			{name: "writes empty tenant", args: []string{"writes", "-tenant", "", "-db", db}, code: 2,
				stderr: `notes-mcp: -tenant must not be empty (run notes-mcp -h for help)`},
			{name: "writes show", args: []string{"writes", "-db", db, "-tenant", "team"},
				stdout: "Write tools are off for tenant \"team\" in " + db + ".\nTurn them on with: " + bin + " writes on -db " + db + " -tenant team\n"},
			{name: "writes on", args: []string{"writes", "on", "-db", db, "-tenant", "team"},
				stdout: "Write tools are on for tenant \"team\" in " + db + ".\nRunning servers apply the change on their next listing or call.\n"},
			{name: "writes shown on", args: []string{"writes", "-tenant", "team", "-db", db},
				stdout: "Write tools are on for tenant \"team\" in " + db + ".\n"},
			{name: "other tenant unaffected", args: []string{"writes", "-db", db},
				stdout: "Write tools are off for tenant \"default\" in " + db + ".\nTurn them on with: " + bin + " writes on -db " + db + " -tenant default\n"},
			{name: "writes off, flags first", args: []string{"writes", "-db", db, "-tenant", "team", "off"},
				stdout: "Write tools are off for tenant \"team\" in " + db + ".\nRunning servers apply the change on their next listing or call.\n"},
		}
		// Sequential: the writes cases build on each other.
		for _, tt := range tests {
			stdout, stderr, code := runBinary(t, bin, tt.args...)
			require.Equal(t, tt.code, code, "%s: stderr %q", tt.name, stderr)
			if tt.code != 0 {
				require.Equal(t, tt.stderr+"\n", stderr, tt.name)
				require.Empty(t, stdout, tt.name)
				continue
			}
			require.Equal(t, tt.stdout, stdout, tt.name)
			require.Empty(t, stderr, tt.name)
		}
		_, err := os.Stat(filepath.Dir(missingDir))
		require.ErrorIs(t, err, os.ErrNotExist, "nothing was created for the missing directory")

		// -h prints the usage and succeeds.
		stdout, _, code := runBinary(t, bin, "-h")
		require.Equal(t, 0, code)
		require.Contains(t, stdout, "-stdio")
		require.Contains(t, stdout, "notes-mcp writes")
	})
}
