package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
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

// The tests of this file run notes-mcp on PostgreSQL: a fresh database per
// test (internal/pgtest), skipped with a message unless
// LLMTOOL_TEST_POSTGRES names a server (failed under CI).

// pgServer is a notes-mcp process serving HTTP, started by pgServeHTTP.
type pgServer struct {
	cmd    *exec.Cmd
	url    string // the MCP endpoint, from the banner
	token  string // the bearer token, from the banner
	banner string // the banner up to the token line
	stderr *syncBuffer
	// stop stops the process with Ctrl+C and requires a clean exit; the
	// test's end calls it unless the test did.
	stop func()
}

// pgEnv is the environment of the processes these tests start: this one's
// without NOTES_MCP_TOKEN, plus extra.
func pgEnv(extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, tokenEnv+"=") })
	return append(env, extra...)
}

// pgServeHTTP starts bin with args and env, reads the whole banner (up to
// "Press Ctrl+C to stop."), with the endpoint and the token in it, and
// stops the process (Ctrl+C, then a clean exit is required) when the test
// ends, or when the test calls its stop.
func pgServeHTTP(t *testing.T, bin string, env []string, args ...string) *pgServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	s := &pgServer{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = s.stderr
	require.NoError(t, cmd.Start())
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		defer cancel()
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		require.NoError(t, cmd.Wait(), "stderr:\n%s", s.stderr.String())
		require.NotContains(t, s.stderr.String(), "panic")
	}
	s.stop = stop
	t.Cleanup(stop)

	var banner strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		banner.WriteString(sc.Text() + "\n")
		if m := regexp.MustCompile(`MCP endpoint:\s+(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			s.url = m[1]
		}
		if m := regexp.MustCompile(`Bearer token:\s+(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			s.token = m[1]
		}
		if sc.Text() == "Press Ctrl+C to stop." {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	s.banner = banner.String()
	require.NotEmpty(t, s.url, "banner:\n%s\nstderr:\n%s", s.banner, s.stderr.String())
	require.NotEmpty(t, s.token, "banner:\n%s", s.banner)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+/mcp$`, s.url)
	return s
}

// pgClient connects an MCP client with the server's token and initializes
// it.
func pgClient(t *testing.T, s *pgServer) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(s.url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + s.token}))
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { _ = c.Close() })
	initialize(t, c)
	return c
}

// pgRunBinary runs bin to completion with env, as runBinary does.
func pgRunBinary(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = env
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

// pgCountNotes counts the rows of the notes table, deleted ones included.
func pgCountNotes(t *testing.T, dsn string) int {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM notes`).Scan(&n))
	return n
}

// pgWithPassword returns dsn with a password, and the password: the DSN's
// own, or a made-up one when the server lets the user in without one
// (trust), so that the tests can look for it in the output.
func pgWithPassword(t *testing.T, dsn string) (string, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	if pw, ok := u.User.Password(); ok {
		return dsn, pw
	}
	const made = "s3cretPw"
	u.User = url.UserPassword(u.User.Username(), made)
	db, err := sql.Open("pgx", u.String())
	require.NoError(t, err)
	defer db.Close()
	if err := db.PingContext(t.Context()); err != nil {
		t.Skipf("the server checks passwords and LLMTOOL_TEST_POSTGRES has none: %v", err)
	}
	return u.String(), made
}

// pgRedacted returns dsn with xxxxx for its password, as the output must
// show it.
func pgRedacted(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), "xxxxx")
	return u.String()
}

// TestPostgresEndToEnd: notes-mcp on a PostgreSQL URL opens, migrates and
// seeds the database, and a real MCP client over real HTTP lists the tools,
// reads, sees writes refused, has them turned on with the writes command
// and writes; with sessions and with -stateless.
func TestPostgresEndToEnd(t *testing.T) {
	pgtest.AdminDSN(t) // skip (or fail under CI) before building without a server
	bin := buildBinary(t)

	t.Run("sessions", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.DSN(t)
		s := pgServeHTTP(t, bin, pgEnv(), "-db", dsn, "-addr", "127.0.0.1:0", "-token", "pg-secret-token")
		require.Equal(t, "pg-secret-token", s.token)
		require.Contains(t, s.banner, "notes-mcp serves the notes in "+dsn+` (tenant "default").`)
		require.Contains(t, s.banner, "Bearer token:  pg-secret-token  (from -token)\n")
		seeded := pgCountNotes(t, dsn)
		require.Equal(t, 11, seeded, "the empty database was seeded")

		c := pgClient(t, s)
		scenario(t, c, bin, dsn, nil, nil)
		require.Equal(t, seeded+1, pgCountNotes(t, dsn), "the note created (and soft-deleted) by the scenario")
		require.Contains(t, s.stderr.String(), `msg="notes-mcp: serving streamable HTTP" url=`+s.url+` db=`+dsn+` tenant=default writes=off stateless=false`)

		// A second server on the same database neither seeds it again nor
		// loses anything; the token may come from the environment.
		s2 := pgServeHTTP(t, bin, pgEnv(tokenEnv+"=from-env-token"), "-db", strings.Replace(dsn, "postgres://", "postgresql://", 1), "-addr", "127.0.0.1:0")
		require.Equal(t, "from-env-token", s2.token)
		require.Contains(t, s2.banner, "Bearer token:  from-env-token  (from $NOTES_MCP_TOKEN)\n")
		require.Contains(t, s2.banner, "Write tools are on. Turn them off with: "+bin+" writes off -db postgresql://")
		c2 := pgClient(t, s2)
		require.Equal(t, slices.Sorted(slices.Values(append(slices.Clone(readTools), writeTools...))), listTools(t, c2))
		require.Equal(t, "Pancakes", callOK(t, c2, "get_note", map[string]any{"noteId": "pancakes"})["title"])
		require.Equal(t, seeded+1, pgCountNotes(t, dsn))
	})

	t.Run("stateless", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.DSN(t)
		s := pgServeHTTP(t, bin, pgEnv(), "-db", dsn, "-addr", "127.0.0.1:0", "-stateless", "-token", "SECRET")
		// The log line may follow the banner the start waited for.
		require.Eventually(t, func() bool {
			return strings.Contains(s.stderr.String(), `db=`+dsn+` tenant=default writes=off stateless=true`)
		}, 5*time.Second, 10*time.Millisecond, s.stderr.String())

		// No session: the server hands out no session ID, and a request
		// that never initialized is served.
		code, session, body := rawPost(t, s.url, s.token,
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Empty(t, session, "a stateless server hands out no session ID")
		code, _, body = rawPost(t, s.url, s.token, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_note","arguments":{"noteId":"roadmap"}}}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `\"title\":\"Roadmap\"`)
		// The session-bound GET stream does not exist.
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+s.token)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		require.NotEqual(t, http.StatusOK, res.StatusCode, "no GET stream without sessions")

		// Without the token: 401, as with sessions.
		code, _, _ = rawPost(t, s.url, "wrong", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
		require.Equal(t, http.StatusUnauthorized, code)

		c := pgClient(t, s)
		scenario(t, c, bin, dsn, nil, nil)

		// Writes off again: the very next call is refused (no tenant cache).
		stdout, stderr, code := pgRunBinary(t, bin, pgEnv(), "writes", "off", "-db", dsn)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, "Write tools are off for tenant \"default\" in "+dsn+".\nRunning servers apply the change on their next listing or call.\n", stdout)
		req2 := mcp.CallToolRequest{}
		req2.Params.Name = "create_note"
		req2.Params.Arguments = map[string]any{"parentNoteId": "root", "title": "Refused"}
		refused, err := c.CallTool(t.Context(), req2)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(refusedText(t, refused), writesOffRefusal("create_note")), refusedText(t, refused))
		require.Equal(t, readTools, listTools(t, c))
	})

	t.Run("password not shown", func(t *testing.T) {
		t.Parallel()
		dsn, password := pgWithPassword(t, pgtest.DSN(t))
		shown := pgRedacted(t, dsn)
		require.NotContains(t, shown, password)
		s := pgServeHTTP(t, bin, pgEnv(), "-db", dsn, "-addr", "127.0.0.1:0", "-stateless", "-token", "T")
		require.Contains(t, s.banner, "notes-mcp serves the notes in "+shown+` (tenant "default").`)
		stdout, stderr, code := pgRunBinary(t, bin, pgEnv(), "writes", "on", "-db", dsn, "-tenant", "team")
		require.Equal(t, 0, code, stderr)
		require.Equal(t, "Write tools are on for tenant \"team\" in "+shown+".\nRunning servers apply the change on their next listing or call.\n", stdout)
		stdout, _, code = pgRunBinary(t, bin, pgEnv(), "writes", "-db", dsn)
		require.Equal(t, 0, code)
		require.Equal(t, "Write tools are off for tenant \"default\" in "+shown+".\nTurn them on with: "+bin+" writes on -db "+shown+" -tenant default\n", stdout)

		// A refused write tells the model nothing of the URL either.
		c := pgClient(t, s)
		require.Equal(t, readTools, listTools(t, c))
		req := mcp.CallToolRequest{}
		req.Params.Name = "create_note"
		req.Params.Arguments = map[string]any{"parentNoteId": "root", "title": "Refused"}
		res, err := c.CallTool(t.Context(), req)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(refusedText(t, res), writesOffRefusal("create_note")), refusedText(t, res))
		require.NotContains(t, refusedText(t, res), password)

		// A database that does not exist: the error names it without the
		// password.
		missing, err := url.Parse(dsn)
		require.NoError(t, err)
		missing.Path = "/notes_mcp_missing_db"
		stdout, stderr, code = pgRunBinary(t, bin, pgEnv(), "writes", "-db", missing.String())
		require.Equal(t, 1, code, stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, `notes-mcp: open note store "`+pgRedacted(t, missing.String())+`": `)
		require.Contains(t, stderr, `database "notes_mcp_missing_db" does not exist`)
		require.True(t, strings.HasSuffix(stderr, " (is the PostgreSQL server up, does the database exist, and may the user create tables in it?)\n"), stderr)

		// The whole banner and the logs.
		require.NotContains(t, s.banner, password)
		require.Contains(t, s.banner, `"-db",`+"\n"+`          "`+shown+`",`, "the desktop snippet names the URL, not a file")
		require.NotContains(t, s.stderr.String(), password)
		// The log line may follow the banner the start waited for.
		require.Eventually(t, func() bool {
			return strings.Contains(s.stderr.String(), `db=`+shown+` tenant=default writes=off stateless=true`)
		}, 5*time.Second, 10*time.Millisecond, s.stderr.String())
	})

	t.Run("writes", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.DSN(t)
		shows := func(tenant, state, next string) string {
			return "Write tools are " + state + " for tenant \"" + tenant + "\" in " + dsn + ".\n" + next
		}
		applied := "Running servers apply the change on their next listing or call.\n"
		for _, tt := range []struct {
			args   []string
			stdout string
		}{
			{[]string{"writes", "-db", dsn}, shows("default", "off", "Turn them on with: "+bin+" writes on -db "+dsn+" -tenant default\n")},
			{[]string{"writes", "on", "-db", dsn, "-tenant", "S"}, shows("S", "on", applied)},
			{[]string{"writes", "-db", dsn, "-tenant", "S"}, shows("S", "on", "")},
			{[]string{"writes", "-db", dsn}, shows("default", "off", "Turn them on with: "+bin+" writes on -db "+dsn+" -tenant default\n")},
			{[]string{"writes", "off", "-db", dsn, "-tenant", "S"}, shows("S", "off", applied)},
			{[]string{"writes", "-tenant", "S", "-db", dsn, "on"}, shows("S", "on", applied)},
		} {
			stdout, stderr, code := pgRunBinary(t, bin, pgEnv(), tt.args...)
			require.Equal(t, 0, code, "%v: %s", tt.args, stderr)
			require.Empty(t, stderr, tt.args)
			require.Equal(t, tt.stdout, stdout, tt.args)
		}
		require.Equal(t, 11, pgCountNotes(t, dsn), "the writes command seeded the empty database once")

		// Processes starting together on an empty database (replicas, say)
		// set it up and seed it once.
		fresh := pgtest.DSN(t)
		var wg sync.WaitGroup
		errs := make([]error, 3)
		outs := make([][]byte, 3)
		for i := range errs {
			wg.Go(func() {
				cmd := exec.CommandContext(t.Context(), bin, "writes", "-db", fresh)
				cmd.Env = pgEnv()
				outs[i], errs[i] = cmd.CombinedOutput()
			})
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "%s", outs[i])
			require.Equal(t, "Write tools are off for tenant \"default\" in "+fresh+".\nTurn them on with: "+bin+" writes on -db "+fresh+" -tenant default\n", string(outs[i]))
		}
		require.Equal(t, 11, pgCountNotes(t, fresh))
	})

	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		// stdio needs no token, on PostgreSQL as on SQLite.
		dsn := pgtest.DSN(t)
		cmd := exec.CommandContext(t.Context(), bin, "-stdio", "-db", dsn)
		cmd.Env = pgEnv()
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		c := client.NewClient(transport.NewIO(stdout, stdin, io.NopCloser(strings.NewReader(""))))
		require.NoError(t, c.Start(t.Context()))
		initialize(t, c)
		found := callOK(t, c, "search_notes", map[string]any{"query": "flour"})
		require.Equal(t, "pancakes", found["results"].([]any)[0].(map[string]any)["noteId"])
		require.NoError(t, c.Close())
		require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
		require.Contains(t, stderr.String(), `msg="notes-mcp: serving over stdio" db=`+dsn+` tenant=default writes=off`)
	})
}

// TestPostgresUsage: the command-line rules of a PostgreSQL -db, checked
// before anything connects (nothing listens on port 1), so no server is
// needed.
func TestPostgresUsage(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	const db = "postgres://alice:pw@127.0.0.1:1/notes"
	hint := " (run notes-mcp -h for help)\n"
	tokenRequired := "notes-mcp: a PostgreSQL -db needs the bearer token from -token or $NOTES_MCP_TOKEN; only a SQLite database has a file next to it to keep one in" + hint
	for _, tt := range []struct {
		name   string
		env    []string
		args   []string
		stderr string
	}{
		{name: "no token", args: []string{"-db", db}, stderr: tokenRequired},
		{name: "no token, postgresql://", args: []string{"-db", "postgresql://h/notes", "-stateless"}, stderr: tokenRequired},
		{name: "blank token in the environment", env: []string{tokenEnv + "=  "}, args: []string{"-db", db}, stderr: tokenRequired},
		{name: "stateless with stdio", args: []string{"-stdio", "-stateless", "-db", db},
			stderr: "notes-mcp: -stateless is for HTTP; leave it out with -stdio" + hint},
		{name: "stateless with stdio, on SQLite", args: []string{"-stdio", "-stateless"},
			stderr: "notes-mcp: -stateless is for HTTP; leave it out with -stdio" + hint},
		{name: "token with stdio", args: []string{"-stdio", "-token", "x", "-db", db},
			stderr: "notes-mcp: -addr and -token are for HTTP; leave them out with -stdio" + hint},
	} {
		stdout, stderr, code := pgRunBinary(t, bin, pgEnv(tt.env...), tt.args...)
		require.Equal(t, 2, code, "%s: %s", tt.name, stderr)
		require.Empty(t, stdout, tt.name)
		require.Equal(t, tt.stderr, stderr, tt.name)
	}

	// -h explains both forms of -db, the token rule and -stateless.
	stdout, stderr, code := pgRunBinary(t, bin, pgEnv(), "-h")
	require.Equal(t, 0, code, stderr)
	require.True(t, strings.HasPrefix(stdout, serveUsage), stdout)
	for _, want := range []string{
		"  -db file|URL\n    \tthe note database file|URL: a SQLite file, created and seeded if missing, or postgres://user:password@host:port/dbname (default \"notes.db\")\n",
		"  -stateless\n    \tserve streamable HTTP without sessions, for replicas behind a load balancer (HTTP only)\n",
		"  -token token\n    \tthe bearer token HTTP clients must send (default: $NOTES_MCP_TOKEN, else one kept in FILE.token; required with a PostgreSQL -db)\n",
	} {
		require.Contains(t, stdout, want)
	}
	for _, want := range []string{
		"a PostgreSQL URL, postgres://user:password@host:port/dbname (or\n    postgresql://)",
		"HTTP then needs -token or $NOTES_MCP_TOKEN",
		"Several replicas behind a load balancer: start each with the same PostgreSQL\n-db and token, and -stateless.",
		"so \"notes-mcp writes on|off\" takes effect on all\nreplicas at once, and each derives its signing keys from the token",
	} {
		require.Contains(t, serveUsage, want)
	}
	stdout, _, code = pgRunBinary(t, bin, pgEnv(), "writes", "-h")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(stdout, writesUsage), stdout)
	require.Contains(t, stdout, "  -db file|URL\n    \tthe note database file|URL: a SQLite file or postgres://user:password@host:port/dbname (default \"notes.db\")\n")
}

// TestDisplayDB: output and logs show a PostgreSQL URL without its
// password, a file as given.
func TestDisplayDB(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"notes.db":                             "notes.db",
		"/tmp/my notes.db":                     "/tmp/my notes.db",
		"postgres://u@h:5432/db":               "postgres://u@h:5432/db",
		"postgres://u:pw@h:5432/db":            "postgres://u:xxxxx@h:5432/db",
		"postgresql://u:p%40ss@h/db":           "postgresql://u:xxxxx@h/db",
		"postgres://h/db?sslmode=disable":      "postgres://h/db?sslmode=disable",
		"postgres://u@h/db?password=pw&x=1":    "postgres://u@h/db?password=xxxxx&x=1",
		"postgres://u:pw@[::1/db":              "postgres://(malformed URL)",
		"postgresql://u:pw@h/db?sslmode=ve%zz": "postgresql://u:xxxxx@h/db?sslmode=ve%zz",
	} {
		require.Equal(t, want, displayDB(in), in)
	}
}

// TestBannerPostgres: the banner of a PostgreSQL database names the URL
// without its password, and so does the desktop snippet, where a file
// would be made absolute.
func TestBannerPostgres(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	printBanner(&b, banner{url: "http://127.0.0.1:8080/mcp", token: "tok", tokenSource: "from -token",
		db: "postgres://notes:hunter2@db.internal:5432/notes?sslmode=require", tenant: "team", writes: true})
	out := b.String()
	require.NotContains(t, out, "hunter2")
	require.True(t, strings.HasPrefix(out, "notes-mcp serves the notes in postgres://notes:xxxxx@db.internal:5432/notes?sslmode=require (tenant \"team\").\n\n"+
		"  MCP endpoint:  http://127.0.0.1:8080/mcp\n"+
		"  Bearer token:  tok  (from -token)\n\n"+
		"Write tools are on. Turn them off with: "), out)
	require.Contains(t, out, " writes off -db 'postgres://notes:xxxxx@db.internal:5432/notes?sslmode=require' -tenant team\n")
	m := regexp.MustCompile(`(?s)\n  (\{.*\n  \})\n`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	var cfg struct {
		MCPServers map[string]struct {
			Args []string `json:"args"`
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(m[1]), &cfg))
	require.Equal(t, []string{"-stdio", "-db", "postgres://notes:xxxxx@db.internal:5432/notes?sslmode=require", "-tenant", "team"}, cfg.MCPServers["notes"].Args)
}
