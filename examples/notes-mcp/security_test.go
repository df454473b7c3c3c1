package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/examples/notes"
	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/llmtool/llmtool/internal/sqlcheck"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/tenant"
)

// The tests of this file send model-written SQL through notes-mcp, as an
// MCP client would: the server as serveCmd builds it (the notes tools,
// tenant settings read on every call, approval of delete_note and
// move_note, signing keys derived from a token), plus the module a
// careless host adds, "run the SQL the model wrote" tools. Two users behind
// bearer tokens: alice, in tenant A, whose writes are on, and bob, in
// tenant B, whose writes are off. Alice's SQL goes for llmtool's own state
// (tenant settings, approval rules, used approvals), the file's raw pages,
// the connection that bob's calls run on next, and the schema. Each
// statement is refused, and afterwards bob's writes are still off, alice's
// delete_note still asks, a used approval stays used, and bob's rename,
// once the user turns his writes on, lands where it should and fires
// nothing.

// sqlIn is the input of the careless tools.
type sqlIn struct {
	SQL string `json:"sql" desc:"The SQL statement to run."`
}

// sqlOut is their result.
type sqlOut struct {
	Rows int64 `json:"rows"`
}

// carelessTools is the module a host writes in a hurry: run_sql runs
// whatever statement the model sends with c.Exec; query_sql runs its query
// and counts the rows.
var carelessTools = llmtool.DefineTools("careless",
	llmtool.Write("run_sql", "Run a SQL statement on the notes database.", func(c *llmtool.WriteCtx, in sqlIn) (sqlOut, error) {
		res, err := c.Exec(in.SQL)
		if err != nil {
			return sqlOut{}, err
		}
		n, err := res.RowsAffected()
		return sqlOut{Rows: n}, err
	}),
	llmtool.Read("query_sql", "Run a SQL query on the notes database.", func(c *llmtool.ReadCtx, in sqlIn) (sqlOut, error) {
		rows, err := c.Query(in.SQL)
		if err != nil {
			return sqlOut{}, err
		}
		defer rows.Close()
		var o sqlOut
		for rows.Next() {
			o.Rows++
		}
		return o, rows.Err()
	}),
)

// refusedLog is the message of the registry's log record of a refused
// statement.
const refusedLog = "llmtool: tool ran a statement that a tool may not run; llmtool refused it"

// internalError is what the model is told of a call whose statement was
// refused: the registry's generic sentence; the log has the detail.
func internalError(tool string) string {
	return "Internal error in " + tool + "; the details were logged. Try again once; if it fails again, tell the user the tool is failing."
}

// logRecord is one record the server logged, its attributes as text.
type logRecord struct {
	msg   string
	attrs map[string]string
}

// logStore keeps the records of every logger made from it.
type logStore struct {
	mu   sync.Mutex
	recs []logRecord
}

// refusals returns the records of refused statements.
func (s *logStore) refusals() []logRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []logRecord
	for _, r := range s.recs {
		if r.msg == refusedLog {
			out = append(out, r)
		}
	}
	return out
}

// logHandler is a slog.Handler that records into a logStore.
type logHandler struct {
	store *logStore
	attrs []slog.Attr
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := make(map[string]string, len(h.attrs)+r.NumAttrs())
	for _, a := range h.attrs {
		attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	h.store.recs = append(h.store.recs, logRecord{msg: r.Message, attrs: attrs})
	return nil
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &logHandler{store: h.store, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h *logHandler) WithGroup(string) slog.Handler { return h }

// The users, their bearer tokens and tenants.
var (
	alice = &llmtool.Principal{ID: "alice", Name: "Alice"}
	bob   = &llmtool.Principal{ID: "bob", Name: "Bob"}
	// writer is a user of tenant A whose token grants notes:write alone.
	writer      = &llmtool.Principal{ID: "writer", Name: "Writer", Scopes: []string{notes.ScopeWrite}}
	secTokens   = map[string]*llmtool.Principal{"alice-token": alice, "bob-token": bob, "writer-token": writer}
	secTenantOf = map[string]string{"alice": "A", "bob": "B", "writer": "A"}
)

// secToken is the server's own token, which its signing keys are derived
// from (serveCmd's bearer token).
const secToken = "security-test-token"

// secServer is notes-mcp with the careless module, served over HTTP: with
// sessions at url, as notes-mcp serves by default, and without them at
// each of replicas, as -stateless replicas do.
type secServer struct {
	path     string  // the -db of the writes command
	db       *sql.DB // the host's handle on the database
	reg      *llmtool.Registry
	logs     *logStore
	url      string
	replicas []string
}

// newSecRegistry opens the registry of one notes-mcp process over db, as
// serveCmd does: the notes tools and the careless module, tenant settings
// read on every listing and call, approval tokens signed with a key
// derived from the token.
func newSecRegistry(t *testing.T, db *sql.DB, logs *logStore) *llmtool.Registry {
	t.Helper()
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		ApprovalKey:    deriveKey(secToken, "notes-mcp approval tokens"),
		Logger:         slog.New(&logHandler{store: logs}),
		TenantCacheTTL: tenant.NoCache,
	}, notes.Tools, carelessTools)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reg.Close()) })
	return reg
}

// serveSec serves reg over HTTP (stateless or with sessions) as serveCmd
// does, but with two users: the bearer token names the user, the user the
// tenant.
func serveSec(t *testing.T, reg *llmtool.Registry, stateless bool) string {
	t.Helper()
	srv := mcpadapter.New(reg, &mcpadapter.Options{
		Name:            "notes-mcp",
		Version:         version,
		Instructions:    instructions,
		Logger:          slog.New(slog.DiscardHandler),
		RequestStateKey: deriveKey(secToken, "notes-mcp request state"),
		Authenticator: mcpadapter.BearerAuth(func(_ context.Context, got string) (*llmtool.Principal, error) {
			if p := secTokens[got]; p != nil {
				return p, nil
			}
			return nil, mcpadapter.ErrUnauthorized
		}),
		TenantFunc: func(_ *http.Request, p *llmtool.Principal) (string, error) {
			return secTenantOf[p.ID], nil
		},
	})
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	h := srv.Handler()
	if stateless {
		h = srv.StatelessHandler()
	}
	mux := http.NewServeMux()
	mux.Handle(endpoint, h)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + endpoint
}

// startSecServer opens the notes database at path (a SQLite file or a
// PostgreSQL URL) and serves it; setup, when not nil, runs first on the
// host's handle. Tenant A's writes are on, B's off, and both need approval
// of delete_note and move_note, as serveCmd sets for its tenant. The first
// replica runs on the registry of the server with sessions; the others on
// a second registry over a second handle on the database, as a second
// process would.
func startSecServer(t *testing.T, path string, replicas int, setup func(db *sql.DB)) *secServer {
	t.Helper()
	ctx := t.Context()
	db, err := notes.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	if setup != nil {
		setup(db)
	}
	s := &secServer{path: path, db: db, logs: &logStore{}}
	s.reg = newSecRegistry(t, db, s.logs)
	for _, ten := range []string{"A", "B"} {
		for _, tool := range approvalTools {
			require.NoError(t, s.reg.Tenants().SetApproval(ctx, ten, tool, true))
		}
	}
	require.NoError(t, s.reg.Tenants().SetWrites(ctx, "A", true))
	s.url = serveSec(t, s.reg, false)
	if replicas > 0 {
		s.replicas = append(s.replicas, serveSec(t, s.reg, true))
	}
	if replicas > 1 {
		db2, err := notes.Open(ctx, path)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db2.Close()) })
		reg2 := newSecRegistry(t, db2, s.logs)
		for range replicas - 1 {
			s.replicas = append(s.replicas, serveSec(t, reg2, true))
		}
	}
	return s
}

// secClient connects a user's MCP client over streamable HTTP with the
// user's token at the protocol revision version; u answers elicitations
// (nil: the client cannot ask its user); rt, when not nil, carries its
// requests.
func secClient(t *testing.T, url, token, version string, u client.ElicitationHandler, rt http.RoundTripper) *client.Client {
	t.Helper()
	if rt == nil {
		rt = http.DefaultTransport.(*http.Transport).Clone()
	}
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)),
		transport.WithHTTPBasicClient(&http.Client{Transport: rt}))
	require.NoError(t, err)
	var opts []client.ClientOption
	if u != nil {
		opts = append(opts, client.WithElicitationHandler(u))
	}
	c := client.NewClient(tr, opts...)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { _ = c.Close() })
	initializeAt(t, c, version)
	return c
}

// toolNames lists c's tools, sorted.
func toolNames(t *testing.T, c *client.Client) []string {
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

// sqlAttack is one statement a model sends through a careless tool.
type sqlAttack struct {
	name string
	tool string // run_sql or query_sql
	sql  string
	// statement and why are the refusal's log attributes: statement
	// defaults to the statement as the log shortens it; why must contain
	// the text given.
	statement *string
	why       string
}

// attack sends each statement as alice through c and requires a refused
// call: an error result with the registry's generic sentence for the
// model, and one record in the server's log that names the tool and the
// statement and says llmtool refused it.
func attack(t *testing.T, c *client.Client, logs *logStore, attacks []sqlAttack) {
	t.Helper()
	for _, at := range attacks {
		before := len(logs.refusals())
		text := callError(t, c, at.tool, map[string]any{"sql": at.sql})
		require.Equal(t, internalError(at.tool), text, "%s: %s", at.name, at.sql)
		refusals := logs.refusals()
		require.Len(t, refusals, before+1, "%s: one refusal logged for %s", at.name, at.sql)
		got := refusals[before].attrs
		require.Equal(t, at.tool, got["tool"], at.name)
		want := sqlcheck.Short(at.sql)
		if at.statement != nil {
			want = *at.statement
		}
		require.Equal(t, want, got["statement"], at.name)
		require.Contains(t, got["why"], at.why, at.name)
		require.NotEmpty(t, got["instead"], at.name)
	}
}

// retryRecorder carries a client's requests and keeps the tools/call
// retries among them: the requests that bring back a requestState with
// the user's answers (protocol revision 2026-07-28).
type retryRecorder struct {
	next    http.RoundTripper
	mu      sync.Mutex
	retries []recordedRequest
}

// recordedRequest is a request as the client sent it.
type recordedRequest struct {
	header http.Header
	body   []byte
}

func (rr *retryRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.Body == nil {
		return rr.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	_ = r.Body.Close()
	var msg struct {
		Method string `json:"method"`
		Params struct {
			RequestState string `json:"requestState"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) == nil && msg.Method == string(mcp.MethodToolsCall) && msg.Params.RequestState != "" {
		rr.mu.Lock()
		rr.retries = append(rr.retries, recordedRequest{header: r.Header.Clone(), body: bytes.Clone(body)})
		rr.mu.Unlock()
	}
	req := r.Clone(r.Context())
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return rr.next.RoundTrip(req)
}

func (rr *retryRecorder) recorded() []recordedRequest {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return slices.Clone(rr.retries)
}

// replay sends req again, as it was, to url, and returns the text of the
// tool result it gets and whether it is an error result.
func replay(t *testing.T, url string, req recordedRequest) (text string, isError bool) {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(req.body))
	require.NoError(t, err)
	r.Header = req.header.Clone()
	r.Header.Del("Mcp-Session-Id")
	res, err := http.DefaultClient.Do(r)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	msg := body
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		msg = nil
		for line := range strings.Lines(string(body)) {
			if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data:"); ok {
				msg = []byte(strings.TrimSpace(data)) // the last event is the response
			}
		}
	}
	var rpc struct {
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(msg, &rpc), "%s", body)
	require.Nil(t, rpc.Error, "%s", body)
	require.NotNil(t, rpc.Result, "%s", body)
	require.Len(t, rpc.Result.Content, 1, "%s", body)
	return rpc.Result.Content[0].Text, rpc.Result.IsError
}

// tableDump returns every row of the tables of the query's names, as
// text, by table.
func tableDump(t *testing.T, db *sql.DB, namesQuery string) map[string][]string {
	t.Helper()
	ctx := t.Context()
	var tables []string
	rows, err := db.QueryContext(ctx, namesQuery)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.NotEmpty(t, tables)
	dump := map[string][]string{}
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM `+table)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			var b strings.Builder
			for i, v := range vals {
				if raw, ok := v.([]byte); ok {
					v = string(raw)
				}
				fmt.Fprintf(&b, "%s=%v ", cols[i], v)
			}
			dump[table] = append(dump[table], b.String())
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		slices.Sort(dump[table])
	}
	return dump
}

// asked returns the questions c was asked.
func asked(c *chooser) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.asked)
}

// writesOffText is the refusal of a write tool in tenant B, whose writes
// are off.
func writesOffText(tool string) string {
	return `Tool "` + tool + `" changes data, and write tools are off in tenant "B". Ask the user to enable write tools for this tenant, then call ` + tool + ` again.`
}

// writesOn turns on the writes of tenant B with the writes command, as
// the user would, in process.
func writesOn(t *testing.T, path string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"writes", "on", "-db", path, "-tenant", "B"}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	require.True(t, strings.HasPrefix(stdout.String(), `Write tools are on for tenant "B" in `), stdout.String())
}

// TestSQLiteAttacksThroughMCP: on SQLite, alice's model sends through
// run_sql and query_sql the statements that would turn on bob's writes,
// turn off approvals, forget a used approval, rewrite the file's pages,
// leave a temp trigger on the write connection for bob's next call, or
// make the schema writable. Each is refused, and nothing it aimed at
// changed.
func TestSQLiteAttacksThroughMCP(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "notes.db")
	s := startSecServer(t, path, 3, nil)
	ctx := t.Context()

	// A used approval: at 2026-07-28, against a stateless replica, alice
	// creates a note and deletes it, which she approves; the client's
	// retry that carried her answer is kept for a replay.
	rec := &retryRecorder{next: http.DefaultTransport.(*http.Transport).Clone()}
	approves := &chooser{answer: true}
	modern := secClient(t, s.replicas[0], "alice-token", mcp.ProtocolVersion20260728, approves, rec)
	id := callOK(t, modern, "create_note", map[string]any{"parentNoteId": "root", "title": "Scratch"})["noteId"].(string)
	require.Equal(t, []any{id}, callOK(t, modern, "delete_note", map[string]any{"noteId": id})["deletedNoteIds"])
	require.Len(t, asked(approves), 1)
	retries := rec.recorded()
	require.Len(t, retries, 1, "one retry brought the answer")

	own := `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'llmtool\_%' ESCAPE '\' ORDER BY name`
	before := tableDump(t, s.db, own)
	require.Len(t, before["llmtool_approvals"], 1, "the used approval is recorded")
	require.Contains(t, before, "llmtool_scope_settings")
	schemaBefore := tableDump(t, s.db, `SELECT 'sqlite_master'`)

	// Alice's attacks, over a session, as notes-mcp serves by default.
	ac := secClient(t, s.url, "alice-token", mcp.ProtocolVersion20251125, nil, nil)
	require.Subset(t, toolNames(t, ac), []string{"delete_note", "query_sql", "rename_note", "run_sql"}, "alice's writes are on")
	noStatement := ""
	attack(t, ac, s.logs, []sqlAttack{
		{name: "writes on for every tenant", tool: "run_sql", sql: `UPDATE 'llmtool_scope_settings' SET enabled=1 WHERE tool=''`,
			why: "llmtool_scope_settings, a table llmtool keeps for itself"},
		{name: "approvals off", tool: "run_sql", sql: `UPDATE llmtool_scope_settings SET enabled=0 WHERE tool LIKE 'approval:%'`,
			why: "llmtool_scope_settings, a table llmtool keeps for itself"},
		{name: "forget used approvals", tool: "run_sql", sql: `DELETE FROM 'llmtool_approvals'`,
			why: "llmtool_approvals, a table llmtool keeps for itself"},
		{name: "forget used approvals, bracketed", tool: "run_sql", sql: `DELETE FROM main.[LLMTOOL_APPROVALS]`,
			why: "llmtool_approvals, a table llmtool keeps for itself"},
		{name: "forge tenant B's settings", tool: "run_sql", sql: `INSERT OR REPLACE INTO "llmtool_scope_settings" (scope, tool, enabled, updated_at) VALUES ('B', '', 1, '')`,
			why: "llmtool_scope_settings, a table llmtool keeps for itself"},
		{name: "read the settings", tool: "query_sql", sql: `SELECT * FROM llmtool_scope_settings`,
			why: "llmtool_scope_settings, a table llmtool keeps for itself"},
		{name: "raw pages", tool: "run_sql", sql: `UPDATE sqlite_dbpage SET data = data`,
			why: "sqlite_dbpage, the database file's raw pages"},
		{name: "raw pages, read", tool: "query_sql", sql: `SELECT data FROM sqlite_dbpage WHERE pgno = 1`,
			why: "sqlite_dbpage, the database file's raw pages"},
		{name: "temp trigger copying bob's renames", tool: "run_sql",
			sql: `CREATE TRIGGER 'temp'.spy AFTER UPDATE ON notes BEGIN INSERT INTO notes(noteId, title) VALUES ('spy-' || new.noteId, new.title); END`,
			why: "in the temp schema"},
		{name: "temp trigger turning writes on", tool: "run_sql",
			sql: `CREATE TEMP TRIGGER spy AFTER UPDATE ON notes BEGIN UPDATE llmtool_scope_settings SET enabled = 1; END`,
			why: "in the temp schema"},
		{name: "temp table to copy into", tool: "run_sql", sql: `CREATE TEMP TABLE spy (noteId TEXT, title TEXT)`,
			why: "in the temp schema"},
		{name: "trigger in the database turning writes on", tool: "run_sql",
			sql:       `CREATE TRIGGER spy AFTER UPDATE ON notes BEGIN UPDATE llmtool_scope_settings SET enabled = 1; END`,
			statement: &noStatement, why: "updates llmtool_scope_settings (through spy, a trigger, view or common table expression)"},
		{name: "writable schema", tool: "run_sql", sql: `PRAGMA writable_schema=1`,
			why: "runs PRAGMA writable_schema with the value"},
		{name: "writable schema, read tool", tool: "query_sql", sql: `PRAGMA writable_schema = ON`,
			why: "runs PRAGMA writable_schema with the value"},
		{name: "attach", tool: "run_sql", sql: `ATTACH DATABASE ':memory:' AS evil`,
			why: "attaches another database"},
		{name: "commit early", tool: "run_sql", sql: `COMMIT`,
			why: "controls the transaction (COMMIT)"},
	})

	// llmtool's tables and the schema are as they were.
	require.Equal(t, before, tableDump(t, s.db, own), "llmtool's tables are as they were")
	require.Equal(t, schemaBefore, tableDump(t, s.db, `SELECT 'sqlite_master'`), "the schema is as it was")

	// Bob's writes are still off: not listed, refused when called.
	bc := secClient(t, s.url, "bob-token", mcp.ProtocolVersion20251125, nil, nil)
	names := toolNames(t, bc)
	require.Contains(t, names, "query_sql")
	for _, w := range append(slices.Clone(writeTools), "run_sql") {
		require.NotContains(t, names, w, "bob's write tools stay off")
	}
	require.Equal(t, writesOffText("rename_note"), callError(t, bc, "rename_note", map[string]any{"noteId": "roadmap", "title": "Bob's roadmap"}))
	require.Equal(t, writesOffText("run_sql"), callError(t, bc, "run_sql", map[string]any{"sql": `UPDATE notes SET title = 'x'`}))
	on, err := s.reg.Tenants().Writes(ctx, "B")
	require.NoError(t, err)
	require.False(t, on)

	// Alice's delete_note still asks her; she refuses, and nothing goes.
	denies := &chooser{answer: false}
	ac2 := secClient(t, s.url, "alice-token", mcp.ProtocolVersion20251125, denies, nil)
	require.Equal(t, "The user denied this change. Nothing was saved. Ask the user what to do instead.",
		callError(t, ac2, "delete_note", map[string]any{"noteId": "pancakes"}))
	questions := asked(denies)
	require.Len(t, questions, 1)
	require.True(t, strings.HasPrefix(questions[0], `Tool delete_note asks to make this change: Delete note "Pancakes".`), questions[0])
	require.Equal(t, "Pancakes", callOK(t, ac2, "get_note", map[string]any{"noteId": "pancakes"})["title"])

	// The used approval stays used. The host brings the note back, so a
	// replay would preview the very change alice approved, and the retry
	// is replayed, as it was, to a replica of another process, which
	// never saw its requestState: the token is refused.
	for _, q := range []string{`UPDATE notes SET isDeleted = 0 WHERE noteId = ?`, `UPDATE branches SET isDeleted = 0 WHERE noteId = ?`} {
		_, err := s.db.ExecContext(ctx, q, id)
		require.NoError(t, err)
	}
	text, isError := replay(t, s.replicas[1], retries[0])
	require.True(t, isError, text)
	require.Equal(t, "This approval was already used. Nothing was saved. Call the tool again to get a new preview for the user to approve.", text)
	require.Equal(t, "Scratch", callOK(t, ac2, "get_note", map[string]any{"noteId": id})["title"], "the replay deleted nothing")
	// The control: had the attack forgotten the used approval, the same
	// replay would have deleted the note again.
	_, err = s.db.ExecContext(ctx, `DELETE FROM llmtool_approvals`)
	require.NoError(t, err)
	text, isError = replay(t, s.replicas[2], retries[0])
	require.False(t, isError, text)
	require.JSONEq(t, `{"deletedNoteIds":["`+id+`"]}`, text)

	// The user turns bob's writes on with the writes command; his rename
	// lands, and no trigger fires: no spy note, and the schema is as it
	// was.
	writesOn(t, path)
	renamed := callOK(t, bc, "rename_note", map[string]any{"noteId": "roadmap", "title": "Bob's roadmap"})
	require.Equal(t, "Bob's roadmap", renamed["title"])
	var title string
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT title FROM notes WHERE noteId = 'roadmap'`).Scan(&title))
	require.Equal(t, "Bob's roadmap", title)
	var spies int
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM notes WHERE noteId LIKE 'spy%' OR title LIKE 'spy%'`).Scan(&spies))
	require.Zero(t, spies, "no trigger copied bob's rename")
	require.Equal(t, schemaBefore, tableDump(t, s.db, `SELECT 'sqlite_master'`), "no spy table, no trigger")
	on, err = s.reg.Tenants().Writes(ctx, "A")
	require.NoError(t, err)
	require.True(t, on)

	// The file is sound.
	check, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer check.Close()
	var integrity string
	require.NoError(t, check.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&integrity))
	require.Equal(t, "ok", integrity)
}

// TestPostgresAttacksThroughMCP: on PostgreSQL, alice's model spells
// llmtool's settings table with a Unicode escape, and points the
// session's search_path, through pg_settings, SET and set_config, at a
// schema with a notes table of its own. Each is refused; bob's writes stay
// off, and once the user turns them on his rename lands in public.notes.
// The pool has one connection, so bob's calls run on the session alice's
// did. Skipped without LLMTOOL_TEST_POSTGRES.
func TestPostgresAttacksThroughMCP(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := t.Context()
	s := startSecServer(t, dsn, 0, func(db *sql.DB) {
		db.SetMaxOpenConns(1)
		for _, q := range []string{
			`CREATE SCHEMA evil`,
			`CREATE TABLE evil.notes (LIKE public.notes INCLUDING DEFAULTS)`,
			`INSERT INTO evil.notes (noteId, title, type, mime, content, isProtected, isDeleted, dateCreated, dateModified)
				SELECT noteId, title, type, mime, content, isProtected, isDeleted, dateCreated, dateModified FROM public.notes`,
		} {
			_, err := db.ExecContext(ctx, q)
			require.NoError(t, err, q)
		}
	})
	var searchPath string
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT current_setting('search_path')`).Scan(&searchPath))
	own := `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'llmtool\_%' ORDER BY tablename`
	before := tableDump(t, s.db, own)
	require.Contains(t, before, "llmtool_scope_settings")

	ac := secClient(t, s.url, "alice-token", mcp.ProtocolVersion20251125, nil, nil)
	attack(t, ac, s.logs, []sqlAttack{
		{name: "writes on for every tenant, U& spelling", tool: "run_sql", sql: `UPDATE U&"llmtool\005Fscope_settings" SET enabled = true`,
			why: "changes a table llmtool keeps for itself (llmtool_*)"},
		{name: "approvals off, U& spelling", tool: "run_sql", sql: `DELETE FROM U&"llmtool\005Fscope_settings" WHERE tool LIKE 'approval:%'`,
			why: "changes a table llmtool keeps for itself (llmtool_*)"},
		{name: "search_path through pg_settings", tool: "run_sql", sql: `UPDATE pg_settings SET setting = 'evil, public' WHERE name = 'search_path'`,
			why: "a write to pg_settings changes the session's settings"},
		{name: "search_path with SET", tool: "run_sql", sql: `SET search_path = evil, public`,
			why: "changes the settings of the session"},
		{name: "search_path with set_config", tool: "query_sql", sql: `SELECT set_config('search_path', 'evil, public', false)`,
			why: "calls set_config, which changes the session's settings"},
	})
	require.Equal(t, before, tableDump(t, s.db, own), "llmtool's tables are as they were")
	var now string
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT current_setting('search_path')`).Scan(&now))
	require.Equal(t, searchPath, now, "the one session's search_path is as it was")

	// Bob's writes are still off.
	bc := secClient(t, s.url, "bob-token", mcp.ProtocolVersion20251125, nil, nil)
	require.NotContains(t, toolNames(t, bc), "rename_note")
	require.Equal(t, writesOffText("rename_note"), callError(t, bc, "rename_note", map[string]any{"noteId": "roadmap", "title": "Bob's roadmap"}))

	// The user turns them on; bob's rename lands in public.notes, and
	// evil.notes is untouched.
	writesOn(t, dsn)
	require.Equal(t, "Bob's roadmap", callOK(t, bc, "rename_note", map[string]any{"noteId": "roadmap", "title": "Bob's roadmap"})["title"])
	var public, evil string
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT title FROM public.notes WHERE noteId = 'roadmap'`).Scan(&public))
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT title FROM evil.notes WHERE noteId = 'roadmap'`).Scan(&evil))
	require.Equal(t, "Bob's roadmap", public)
	require.Equal(t, "Roadmap", evil)
}
