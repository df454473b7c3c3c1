package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/examples/notes"
)

// TestInvalidIDRefused sends notes-mcp, over stdio and over stateless
// HTTP, a create_note whose id is an object: it is refused with Invalid
// Request and creates nothing, and the same call with an integer id, sent
// next, creates the note.
func TestInvalidIDRefused(t *testing.T) {
	bin := buildBinary(t)
	create := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"create_note","arguments":{"parentNoteId":"root","title":"Sent once"}}}`
	}
	const refusal = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the \"id\" is an object; send the request again with an \"id\" that is a string or an integer."}}`
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	// created counts the notes the calls created.
	created := func(t *testing.T, path string) int {
		t.Helper()
		db, err := notes.Open(t.Context(), path)
		require.NoError(t, err)
		defer db.Close()
		var n int
		require.NoError(t, db.QueryRowContext(t.Context(), "SELECT count(*) FROM notes WHERE title = 'Sent once'").Scan(&n))
		return n
	}
	writesOn := func(t *testing.T, db string) {
		t.Helper()
		_, stderr, code := runBinary(t, bin, "writes", "on", "-db", db)
		require.Equal(t, 0, code, stderr)
	}

	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		db := filepath.Join(t.TempDir(), "notes.db")
		cmd, stdin, stdout, stderr := serveStdio(t, bin, "-db", db)
		lines := bufio.NewScanner(stdout)
		lines.Buffer(nil, 1<<20)
		// response sends msg and returns the next line that is not a
		// notification (write tools turned on send list_changed).
		response := func(msg string) string {
			t.Helper()
			_, err := io.WriteString(stdin, msg+"\n")
			require.NoError(t, err)
			for lines.Scan() {
				if !strings.Contains(lines.Text(), `"method"`) {
					return lines.Text()
				}
			}
			t.Fatalf("the server closed its output; stderr:\n%s", stderr.String())
			return ""
		}
		require.Contains(t, response(initialize), `"serverInfo"`)
		_, err := io.WriteString(stdin, initialized+"\n")
		require.NoError(t, err)
		writesOn(t, db)

		require.JSONEq(t, refusal, response(create(`{"x":1}`)))
		require.Equal(t, 0, created(t, db), "the refused call created nothing")
		answered(t, response(create(`2`)))
		require.Equal(t, 1, created(t, db))

		require.NoError(t, stdin.Close())
		require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
	})

	t.Run("http", func(t *testing.T) {
		t.Parallel()
		db := filepath.Join(t.TempDir(), "notes.db")
		_, _, url, token := serveHTTP(t, bin, db, "-stateless")
		writesOn(t, db)

		status, _, body := rawPost(t, url, token, create(`{"x":1}`))
		require.Equal(t, http.StatusBadRequest, status, body)
		require.JSONEq(t, refusal, body)
		require.Equal(t, 0, created(t, db), "the refused call created nothing")
		status, _, body = rawPost(t, url, token, create(`2`))
		require.Equal(t, http.StatusOK, status, body)
		answered(t, body)
		require.Equal(t, 1, created(t, db))
	})
}

// answered checks that body (a JSON-RPC message, or SSE events whose last
// is one) is the successful result of the request with id 2.
func answered(t *testing.T, body string) {
	t.Helper()
	if i := strings.LastIndex(body, "data: "); i >= 0 {
		body = body[i+len("data: "):]
	}
	var res struct {
		ID     json.RawMessage `json:"id"`
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &res), body)
	require.Equal(t, "2", string(res.ID), body)
	require.NotNil(t, res.Result, body)
	require.False(t, res.Result.IsError, body)
}
