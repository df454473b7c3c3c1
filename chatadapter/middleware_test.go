package chatadapter_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/stretchr/testify/require"
)

// TestRegistryMiddleware: the registry's middleware runs on chat calls as
// on MCP calls, and its refusal is the tool message the model reads.
func TestRegistryMiddleware(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	_, err := db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0);
		INSERT INTO items (id, name, qty) VALUES (1, 'apple', 3)`)
	require.NoError(t, err)
	var seen []string
	noWrites := func(next llmtool.InvokeFunc) llmtool.InvokeFunc {
		return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
			seen = append(seen, req.Spec.Name+" in "+req.Tenant)
			if !req.Spec.ReadOnly {
				return req.Fail(llmtool.Limited("Too many changes today.").Next("Try again tomorrow."))
			}
			return next(ctx, req)
		}
	}
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Middleware: []llmtool.Middleware{noWrites}}, items)
	require.NoError(t, err)
	ctx := llmtool.WithTenant(context.Background(), tenant)
	require.NoError(t, reg.Tenants().SetWrites(ctx, tenant, true))
	a := chatadapter.New(reg, nil)

	reply, err := a.Dispatch(ctx, chatadapter.OpenAIChat, []byte(`{"role":"assistant","content":null,"tool_calls":[`+
		`{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{\"id\":1}"}},`+
		`{"id":"c2","type":"function","function":{"name":"add_item","arguments":"{\"name\":\"pear\"}"}}]}`))
	require.NoError(t, err)
	var got []string
	for _, m := range reply.Messages {
		got = append(got, string(m))
	}
	require.Equal(t, []string{
		`{"role":"tool","tool_call_id":"c1","content":"{\"id\":1,\"name\":\"apple\",\"qty\":3}"}`,
		`{"role":"tool","tool_call_id":"c2","content":"{\"error\":\"Too many changes today. Try again tomorrow.\"}"}`,
	}, got)
	require.Equal(t, []string{"get_item in " + tenant, "add_item in " + tenant}, seen)
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM items`).Scan(&n))
	require.Equal(t, 1, n)
}
