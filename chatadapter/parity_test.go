package chatadapter_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/examples/notes"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// parityCall is one call of the parity sequence. Args may name values
// captured from earlier results as $name; capture saves the result's
// field (noteId or attributeId) under a name.
type parityCall struct {
	tool, args string
	capture    [2]string // variable name, result field
}

// The sequence: reads, a note created and changed by every write tool,
// refusals of each kind, the man pages. Each inner slice is one model turn.
var paritySequence = [][]parityCall{
	{{tool: "search_notes", args: `{"query":"roadmap"}`}, {tool: "get_note", args: `{"noteId":"roadmap"}`}, {tool: "get_child_notes", args: `{"noteId":"root"}`}},
	{{tool: "create_note", args: `{"parentNoteId":"projects","title":"Parity","content":"<p>one</p>"}`, capture: [2]string{"A", "noteId"}}},
	{{tool: "rename_note", args: `{"noteId":"$A","title":"Parity check"}`},
		{tool: "set_note_content", args: `{"noteId":"$A","content":"<p>two</p>"}`},
		{tool: "append_to_note", args: `{"noteId":"$A","content":"<p>three</p>"}`},
		{tool: "edit_note_content", args: `{"noteId":"$A","oldText":"two","newText":"2"}`},
		{tool: "get_note_content", args: `{"noteId":"$A"}`}},
	{{tool: "set_attribute", args: `{"noteId":"$A","name":"status","value":"draft"}`, capture: [2]string{"S", "attributeId"}},
		{tool: "set_attribute", args: `{"noteId":"$A","type":"relation","name":"seeAlso","targetNoteId":"roadmap"}`},
		{tool: "get_attributes", args: `{"noteId":"$A"}`},
		{tool: "get_attribute", args: `{"noteId":"$A","name":"status"}`}},
	{{tool: "delete_attribute", args: `{"noteId":"$A","attributeId":"$S"}`},
		{tool: "clone_note", args: `{"noteId":"$A","parentNoteId":"recipes"}`},
		{tool: "move_note", args: `{"noteId":"$A","parentNoteId":"meetings","fromParentNoteId":"projects"}`},
		{tool: "get_subtree", args: `{"noteId":"root","depth":3}`}},
	{{tool: "create_note", args: `{"parentNoteId":"projects"}`},
		{tool: "delete_note", args: `{"noteId":"root"}`},
		{tool: "get_note", args: `{"noteId":"secret"}`},
		{tool: "get_note", args: `{"noteId":"nope"}`},
		{tool: "edit_note_content", args: `{"noteId":"$A","oldText":"absent","newText":"x"}`},
		{tool: "set_attribute", args: `{"noteId":"$A","name":"bad name"}`},
		{tool: "move_note", args: `{"noteId":"projects","parentNoteId":"$A"}`}},
	{{tool: "delete_note", args: `{"noteId":"$A"}`},
		{tool: "search_notes", args: `{"query":"parity"}`},
		{tool: "man", args: `{}`},
		{tool: "man", args: `{"name":"create_note"}`}},
}

// paritySide runs the sequence through one adapter and returns each call's
// result JSON, as the model would see it in chat.
type paritySide interface {
	turn(t *testing.T, calls []parityCall, args []string) []string
}

type chatSide struct {
	a   *chatadapter.Adapter
	ctx context.Context
}

func (s *chatSide) turn(t *testing.T, calls []parityCall, args []string) []string {
	var tcs []string
	for i, c := range calls {
		a, _ := json.Marshal(args[i])
		tcs = append(tcs, fmt.Sprintf(`{"id":"call_%d","type":"function","function":{"name":%q,"arguments":%s}}`, i, c.tool, a))
	}
	turn := `{"role":"assistant","content":null,"tool_calls":[` + strings.Join(tcs, ",") + `]}`
	reply, err := s.a.Dispatch(s.ctx, chatadapter.OpenAIChat, []byte(turn))
	require.NoError(t, err)
	out := make([]string, len(reply.Messages))
	for i, m := range reply.Messages {
		var msg struct {
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}
		require.NoError(t, json.Unmarshal(m, &msg))
		require.Equal(t, fmt.Sprintf("call_%d", i), msg.ToolCallID)
		out[i] = msg.Content
	}
	return out
}

type mcpSide struct {
	c   *client.Client
	ctx context.Context
}

func (s *mcpSide) turn(t *testing.T, calls []parityCall, args []string) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		res, err := s.c.CallTool(s.ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(args[i])}})
		require.NoError(t, err, c.tool)
		var texts []string
		for _, part := range res.Content {
			texts = append(texts, part.(mcp.TextContent).Text)
		}
		text := strings.Join(texts, "\n\n")
		if res.IsError {
			// The chat form of a failure: {"error": text}, as llmtool
			// encodes it (no HTML escaping).
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			require.NoError(t, enc.Encode(map[string]string{"error": text}))
			out[i] = strings.TrimSuffix(b.String(), "\n")
			continue
		}
		if res.StructuredContent == nil { // a rich result, such as man's: its text parts
			out[i] = text
			continue
		}
		require.Len(t, res.Content, 1)
		sc, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.JSONEq(t, text, string(sc), "structuredContent is the text")
		out[i] = text
	}
	return out
}

// runParity runs the sequence on one side, substituting captured values.
func runParity(t *testing.T, side paritySide) []string {
	vars := map[string]string{}
	var all []string
	for _, turn := range paritySequence {
		args := make([]string, len(turn))
		for i, c := range turn {
			a := c.args
			for k, v := range vars {
				a = strings.ReplaceAll(a, "$"+k, v)
			}
			args[i] = a
		}
		res := side.turn(t, turn, args)
		for i, c := range turn {
			if c.capture[0] != "" {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(res[i]), &m), res[i])
				v, ok := m[c.capture[1]].(string)
				require.True(t, ok, "%s has no %s: %s", c.tool, c.capture[1], res[i])
				vars[c.capture[0]] = v
			}
		}
		all = append(all, res...)
	}
	return all
}

// newNotesRegistry opens a fresh, seeded note store with writes enabled in
// tenant.
func newNotesRegistry(t testing.TB) *llmtool.Registry {
	reg, _ := newNotesRegistryDB(t)
	return reg
}

// newNotesRegistryDB is newNotesRegistry with its database.
func newNotesRegistryDB(t testing.TB) (*llmtool.Registry, *sql.DB) {
	t.Helper()
	ctx := llmtool.WithTenant(context.Background(), tenant)
	db, err := notes.Open(ctx, filepath.Join(t.TempDir(), "notes.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ValidateOutput: true}, notes.Tools)
	require.NoError(t, err)
	require.NoError(t, reg.Tenants().SetWrites(ctx, tenant, true))
	return reg, db
}

var idTables = [][2]string{{"notes", "noteId"}, {"branches", "branchId"}, {"attributes", "attributeId"}, {"revisions", "revisionId"}}

var dumpTables = []string{
	"SELECT * FROM notes ORDER BY rowid",
	"SELECT * FROM branches ORDER BY rowid",
	"SELECT * FROM attributes ORDER BY rowid",
	"SELECT * FROM revisions ORDER BY rowid",
	"SELECT noteId, title, content FROM notes_fts ORDER BY rowid",
	"SELECT * FROM llmtool_scope_settings ORDER BY rowid",
}

// ids lists each table's IDs in insertion order.
func ids(t *testing.T, db *sql.DB) [][]string {
	var out [][]string
	for _, tc := range idTables {
		rows, err := db.Query(`SELECT ` + tc[1] + ` FROM ` + tc[0] + ` ORDER BY rowid`)
		require.NoError(t, err)
		var list []string
		for rows.Next() {
			var id string
			require.NoError(t, rows.Scan(&id))
			list = append(list, id)
		}
		require.NoError(t, rows.Err())
		rows.Close()
		out = append(out, list)
	}
	return out
}

// dump renders every table, row by row, in insertion order.
func dump(t *testing.T, db *sql.DB) string {
	var b strings.Builder
	for _, q := range dumpTables {
		rows, err := db.Query(q)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		fmt.Fprintf(&b, "%s\n", q)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			row, err := json.Marshal(vals)
			require.NoError(t, err)
			fmt.Fprintf(&b, "  %s\n", row)
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return b.String()
}

var timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// normalizer replaces the IDs each store drew at random by their table and
// position, and timestamps by a mark: the only values two stores given the
// same calls are expected to differ in.
func normalizer(mine, other [][]string) *strings.Replacer {
	var pairs []string
	for i, list := range mine {
		for j, id := range list {
			if j < len(other[i]) && other[i][j] == id {
				continue // the same in both stores, such as a seeded ID
			}
			pairs = append(pairs, id, fmt.Sprintf("<%s#%d>", idTables[i][0], j))
		}
	}
	return strings.NewReplacer(pairs...)
}

func normalize(r *strings.Replacer, s string) string {
	return timestamp.ReplaceAllString(r.Replace(s), "<time>")
}

// The same sequence of calls through chatadapter and through mcpadapter
// (an mcp-go client over streamable HTTP), on two fresh stores, gives the same
// result JSON and the same table contents.
func TestParityWithMCP(t *testing.T) {
	t.Parallel()
	chatReg, chatDB := newNotesRegistryDB(t)
	mcpReg, mcpDB := newNotesRegistryDB(t)
	ctx := llmtool.WithTenant(context.Background(), tenant)
	chat := &chatSide{a: chatadapter.New(chatReg, nil), ctx: ctx}

	srv := mcpadapter.New(mcpReg, &mcpadapter.Options{Tenant: tenant, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	c := client.NewClient(tr)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.Start(ctx))
	_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "parity", Version: "1"}}})
	require.NoError(t, err)

	// Both list the same tools.
	set, err := chat.a.Tools(ctx, chatadapter.OpenAIChat)
	require.NoError(t, err)
	listed, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	for _, tl := range listed.Tools {
		names = append(names, tl.Name)
	}
	require.ElementsMatch(t, set.Names, names) // mcp-go lists by name

	chatResults := runParity(t, chat)
	mcpResults := runParity(t, &mcpSide{c: c, ctx: ctx})

	chatIDs, mcpIDs := ids(t, chatDB), ids(t, mcpDB)
	for i := range chatIDs {
		require.Len(t, mcpIDs[i], len(chatIDs[i]), idTables[i][0])
	}
	rc, rm := normalizer(chatIDs, mcpIDs), normalizer(mcpIDs, chatIDs)
	require.Len(t, mcpResults, len(chatResults))
	errorsSeen := 0
	for i := range chatResults {
		require.Equal(t, normalize(rc, chatResults[i]), normalize(rm, mcpResults[i]), "call %d", i)
		if strings.HasPrefix(chatResults[i], `{"error":`) {
			errorsSeen++
		}
	}
	require.Equal(t, 7, errorsSeen, "the refusals turn fails every call, nothing else fails")
	require.Equal(t, normalize(rc, dump(t, chatDB)), normalize(rm, dump(t, mcpDB)))
}
