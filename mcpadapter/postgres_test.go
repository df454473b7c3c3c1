package mcpadapter_test

import (
	"context"
	"database/sql"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/llmtool/llmtool/mcpadapter"
)

// pgReplica is one replica of a server: its own *sql.DB, registry and MCP
// server, on the database every replica shares.
type pgReplica struct {
	reg *llmtool.Registry
	srv *mcpadapter.Server
}

// pgReplicas starts n replicas on one fresh PostgreSQL database holding
// the fixture's notes table.
func pgReplicas(t *testing.T, n int, ttl time.Duration) ([]pgReplica, *sql.DB) {
	t.Helper()
	dsn := pgtest.DSN(t)
	var first *sql.DB
	replicas := make([]pgReplica, n)
	for i := range replicas {
		db, err := sql.Open("pgx", dsn)
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		if i == 0 {
			first = db
			_, err = db.Exec(`CREATE TABLE notes (id BIGSERIAL PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL DEFAULT '')`)
			require.NoError(t, err)
			_, err = db.Exec(`INSERT INTO notes (title, body) VALUES ('Hello', 'World')`)
			require.NoError(t, err)
		}
		reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.DiscardHandler), TenantCacheTTL: ttl}, testTools)
		require.NoError(t, err)
		t.Cleanup(func() { reg.Close() })
		srv := mcpadapter.New(reg, &mcpadapter.Options{Logger: slog.New(slog.DiscardHandler), Tenant: "team"})
		t.Cleanup(func() { srv.Close() })
		replicas[i] = pgReplica{reg: reg, srv: srv}
	}
	return replicas, first
}

// TestPostgresReplicaNotifiesItsSessions: writes turned on through one
// replica reach a session held by another: its client gets
// tools/list_changed within one TenantCacheTTL and then lists and calls
// the write tools.
func TestPostgresReplicaNotifiesItsSessions(t *testing.T) {
	t.Parallel()
	replicas, db := pgReplicas(t, 2, 300*time.Millisecond)
	ts := httptest.NewServer(replicas[1].srv.Handler())
	t.Cleanup(ts.Close)
	//lint:ignore SA1019 the standalone GET stream is how streamable HTTP clients of the revisions served (2025-03-26 to 2025-11-25) get tools/list_changed; only 2026-07-28 removed it
	tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithContinuousListening(), transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	c := client.NewClient(tr, clientOptions()...)
	notes := collect(c)
	start(t, c)
	require.NotContains(t, toolNames(t, c), "create_note")

	changed := time.Now()
	require.NoError(t, replicas[0].reg.Tenants().SetWrites(context.Background(), "team", true))
	notes.next(t, string(mcp.MethodNotificationToolsListChanged))
	t.Logf("the session on the other replica heard after %v", time.Since(changed).Round(time.Millisecond))
	require.Contains(t, toolNames(t, c), "create_note")
	res := call(t, c, "create_note", map[string]any{"title": "From replica 1"})
	require.False(t, res.IsError)
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM notes`).Scan(&n))
	require.Equal(t, 2, n)
}

// TestPostgresStatelessReplicas: a client whose requests a load balancer
// spreads over three stateless replicas calls read and write tools as if
// there were one server; when writes go off through one replica, every
// replica refuses them within the bound.
func TestPostgresStatelessReplicas(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	replicas, db := pgReplicas(t, 3, ttl)
	require.NoError(t, replicas[0].reg.Tenants().SetWrites(context.Background(), "team", true))
	var next atomic.Int64
	var served [3]atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := next.Add(1) % 3
		served[i].Add(1)
		replicas[i].srv.StatelessHandler().ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	start(t, c)
	for i := range 6 {
		res := call(t, c, "create_note", map[string]any{"title": "note"})
		require.False(t, res.IsError, "call %d", i)
		res = call(t, c, "get_note", map[string]any{"id": 1})
		require.False(t, res.IsError)
	}
	for i := range served {
		require.NotZero(t, served[i].Load(), "replica %d served", i)
	}
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM notes`).Scan(&n))
	require.Equal(t, 7, n, "each acknowledged write saved once")

	require.NoError(t, replicas[2].reg.Tenants().SetWrites(context.Background(), "team", false))
	time.Sleep(ttl + 100*time.Millisecond) // the bound: one TenantCacheTTL
	for range 6 {
		res := call(t, c, "create_note", map[string]any{"title": "late"})
		require.True(t, res.IsError, "every replica refuses writes now")
		require.Equal(t, `Tool "create_note" changes data, and write tools are off in tenant "team". Ask the user to enable write tools for this tenant, then call create_note again.`, text(t, res))
	}
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM notes`).Scan(&n))
	require.Equal(t, 7, n)
}
