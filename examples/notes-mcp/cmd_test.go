package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBearerToken(t *testing.T) {
	db := filepath.Join(t.TempDir(), "notes.db")
	t.Setenv(tokenEnv, "")

	// The first start makes a token and keeps it next to the database.
	tok, source, err := bearerToken("", db)
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{48}$`, tok)
	require.Equal(t, "kept in "+db+".token", source)
	fi, err := os.Stat(db + ".token")
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only the owner may read the token")

	// Later starts reuse it.
	again, _, err := bearerToken("", db)
	require.NoError(t, err)
	require.Equal(t, tok, again)

	// The environment, then the flag, take precedence.
	t.Setenv(tokenEnv, "from-env")
	got, source, err := bearerToken("", db)
	require.NoError(t, err)
	require.Equal(t, "from-env", got)
	require.Equal(t, "from $NOTES_MCP_TOKEN", source)
	got, source, err = bearerToken("from-flag", db)
	require.NoError(t, err)
	require.Equal(t, "from-flag", got)
	require.Equal(t, "from -token", source)

	// An unreadable token file is an error, not a new token.
	t.Setenv(tokenEnv, "")
	dir := filepath.Join(t.TempDir(), "x.db")
	require.NoError(t, os.Mkdir(dir+".token", 0o700))
	_, _, err = bearerToken("", dir)
	require.ErrorContains(t, err, "read the token file")
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"notes.db":           "notes.db",
		"/tmp/a-b_c/x.db":    "/tmp/a-b_c/x.db",
		"my notes.db":        "'my notes.db'",
		"it's.db":            `'it'\''s.db'`,
		"":                   "''",
		"tenant=team,b@c+d:": "tenant=team,b@c+d:",
	} {
		require.Equal(t, want, shellQuote(in), in)
	}
}

func TestBanner(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	printBanner(&b, banner{url: "http://127.0.0.1:8080/mcp", token: "tok123", tokenSource: "kept in notes.db.token",
		db: "notes.db", tenant: "default"})
	out := b.String()
	require.Contains(t, out, "MCP endpoint:  http://127.0.0.1:8080/mcp\n")
	require.Contains(t, out, "Bearer token:  tok123  (kept in notes.db.token)\n")
	require.Contains(t, out, "Write tools are off")
	require.Contains(t, out, `header "Authorization: Bearer tok123"`)

	// The desktop snippet is valid JSON with the stdio flags and an
	// absolute database path.
	m := regexp.MustCompile(`(?s)\n  (\{.*\n  \})\n`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(m[1]), &cfg))
	notes := cfg.MCPServers["notes"]
	require.True(t, filepath.IsAbs(notes.Command), notes.Command)
	abs, err := filepath.Abs("notes.db")
	require.NoError(t, err)
	require.Equal(t, []string{"-stdio", "-db", abs, "-tenant", "default"}, notes.Args)
}

func TestRunUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		code   int
		stdout string // substring
		stderr string // exact
	}{
		{args: []string{"-h"}, code: 0, stdout: "notes-mcp writes [on|off]"},
		{args: []string{"writes", "-h"}, code: 0, stdout: "enable or disable write tools"},
		{args: []string{"-addr"}, code: 2, stderr: "notes-mcp: flag needs an argument: -addr (run notes-mcp -h for help)\n"},
		{args: []string{"-tenant", ""}, code: 2, stderr: "notes-mcp: -tenant must not be empty (run notes-mcp -h for help)\n"},
		{args: []string{"-db", ""}, code: 2, stderr: "notes-mcp: -db must not be empty (run notes-mcp -h for help)\n"},
		{args: []string{"-stdio", "-token", "x"}, code: 2, stderr: "notes-mcp: -addr and -token are for HTTP; leave them out with -stdio (run notes-mcp -h for help)\n"},
		{args: []string{"-stdio", "-stateless"}, code: 2, stderr: "notes-mcp: -stateless is for HTTP; leave it out with -stdio (run notes-mcp -h for help)\n"},
		{args: []string{"-stdio", "-oauth-issuer", "https://auth.example.com"}, code: 2, stderr: "notes-mcp: -oauth-issuer and -oauth-resource are for HTTP; leave them out with -stdio (run notes-mcp -h for help)\n"},
		{args: []string{"-oauth-resource", "https://mcp.example.com/mcp"}, code: 2, stderr: "notes-mcp: -oauth-resource names the audience of the tokens of -oauth-issuer; give -oauth-issuer URL too (run notes-mcp -h for help)\n"},
		{args: []string{"-h"}, code: 0, stdout: "  -oauth-issuer URL\n    \talso accept access tokens of the OAuth authorization server whose issuer is URL"},
		{args: []string{"-h"}, code: 0, stdout: "  -stateless\n    \tserve streamable HTTP without sessions, for replicas behind a load balancer (HTTP only)\n"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), tt.args, strings.NewReader(""), &stdout, &stderr)
		require.Equal(t, tt.code, code, "%v: %s", tt.args, stderr.String())
		if tt.code == 0 {
			require.Contains(t, stdout.String(), tt.stdout, tt.args)
			require.Empty(t, stderr.String())
			continue
		}
		require.Equal(t, tt.stderr, stderr.String(), tt.args)
	}
}
