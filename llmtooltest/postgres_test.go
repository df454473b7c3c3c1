package llmtooltest_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to check the server after a test
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/llmtool/llmtool/llmtooltest"
)

// The PostgreSQL mode, asked for explicitly with Options.Postgres (the other
// tests run on the engine the environment selects). These tests need a
// server: LLMTOOL_TEST_POSTGRES names it; without it they are skipped with
// a message, and under CI they fail.

// auditSchema is a table outside the public schema, with PostgreSQL's own
// types, for the dumps RequireUnchanged compares.
var auditSchema = []string{
	`CREATE SCHEMA audit_log`,
	`CREATE TABLE audit_log.entries (id BIGSERIAL PRIMARY KEY, at TIMESTAMPTZ NOT NULL, amount NUMERIC(10, 2), data JSONB, raw BYTEA, ok BOOLEAN NOT NULL)`,
	`INSERT INTO audit_log.entries (at, amount, data, raw, ok) VALUES ('2024-01-02 03:04:05+00', 12.50, '{"b": 1, "a": [true]}', '\x0102', true)`,
}

func TestOptionsPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.AdminDSN(t)
	var dbName string
	f := run(t, func(tb *fakeTB) {
		h := llmtooltest.New(tb, &llmtooltest.Options{Postgres: dsn, Schema: createItems, SQL: append([]string{seed}, auditSchema...)}, inventory)
		require.Equal(t, "postgres", h.Engine())

		// The test's own database, on the server the DSN names, opened
		// with pgx.
		var version string
		require.NoError(t, h.DB().QueryRow(`SELECT current_database(), version()`).Scan(&dbName, &version))
		require.True(t, strings.HasPrefix(dbName, "llmtooltest_"), dbName)
		require.True(t, strings.HasPrefix(version, "PostgreSQL "), version)

		// Handlers' ? placeholders are rewritten; RETURNING gives the ID.
		h.RequireOK(h.Call("get_item", `{"id": 1}`))
		h.RequireUnchanged(func() {
			h.RequireError(h.Call("add_item", `{"name": "apple"}`), `Item "apple" already exists. Call get_item with ID 1 to read it.`)
			h.RequireError(h.Call("get_item", `{"id": 9}`), "Item 9 not found. Call list_items to see the IDs.")
		})
		// A sequence is not rolled back: the refused apple took ID 2.
		var item ItemOut
		h.RequireOK(h.Call("add_item", AddItemIn{Name: "pear", Qty: 2}), &item)
		require.Equal(t, ItemOut{ID: 3, Name: "pear", Qty: 2}, item)
		h.RequireOK(h.Call("count_items", nil))
		require.Equal(t, map[string]any{"principal": "test-user", "tenant": "test"}, h.RequireOK(h.Call("who_am_i", nil)))

		var n int
		require.NoError(t, h.DB().QueryRow(`SELECT count(*) FROM items WHERE qty >= $1`, 2).Scan(&n))
		require.Equal(t, 2, n)
	})
	require.Empty(t, f.fatal)
	require.Empty(t, f.skipped)
	require.Empty(t, f.errors())

	// The database is gone once the test ended.
	admin, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer admin.Close()
	var left int
	require.NoError(t, admin.QueryRow(`SELECT count(*) FROM pg_database WHERE datname = $1`, dbName).Scan(&left))
	require.Zero(t, left, "database %s was not dropped", dbName)
}

// RequireUnchanged sees every schema's tables, names those outside the
// current schema schema.table, and renders PostgreSQL's types.
func TestOptionsPostgresRequireUnchanged(t *testing.T) {
	t.Parallel()
	dsn := pgtest.AdminDSN(t)
	update := func(h *llmtooltest.Harness) func() {
		return func() {
			_, err := h.DB().Exec(`UPDATE audit_log.entries SET ok = $1`, false)
			require.NoError(t, err)
		}
	}
	f := run(t, func(tb *fakeTB) {
		h := llmtooltest.New(tb, &llmtooltest.Options{Postgres: dsn, SQL: auditSchema})
		h.RequireUnchanged(update(h))
	})
	require.Contains(t, f.fatal, "llmtooltest: RequireUnchanged: the database changed:\ntable audit_log.entries: 1 rows removed, 1 added (a changed row is both)\n")
	require.Contains(t, f.fatal, `raw=x'0102', ok=true`)
	require.Contains(t, f.fatal, `raw=x'0102', ok=false`)

	f = run(t, func(tb *fakeTB) {
		h := llmtooltest.New(tb, &llmtooltest.Options{Postgres: dsn, SQL: auditSchema})
		h.RequireUnchanged(func() {
			_, err := h.DB().Exec(`ALTER TABLE audit_log.entries ADD CONSTRAINT positive CHECK (amount > 0)`)
			require.NoError(t, err)
		})
	})
	require.Contains(t, f.fatal, "table audit_log.entries: definition changed\n")
	require.Contains(t, f.fatal, "CONSTRAINT positive CHECK ((amount > (0)::numeric))")

	f = run(t, func(tb *fakeTB) {
		h := llmtooltest.New(tb, &llmtooltest.Options{Postgres: dsn, SQL: auditSchema, IgnoreTables: []string{"audit_log.entries"}})
		h.RequireUnchanged(update(h))
	})
	require.Empty(t, f.fatal)
	require.Empty(t, f.errors())
}

// Options.Postgres wins over the environment.
func TestOptionsPostgresOverridesEnvironment(t *testing.T) {
	dsn := pgtest.AdminDSN(t)
	t.Setenv(pgtest.Engine, "sqlite")
	h := llmtooltest.New(t, &llmtooltest.Options{Postgres: dsn}, inventory)
	require.Equal(t, "postgres", h.Engine())
}

// The environment selects the engine of a harness without Options.Postgres;
// PostgreSQL asked for without a server skips the test with a message, or
// fails it under CI, and is never silently run on SQLite.
func TestEngineFromEnvironment(t *testing.T) {
	tests := []struct {
		name, engine, server, ci string
		wantEngine               string // when the harness opens
		wantSkip, wantFatal      string
	}{
		{name: "unset", wantEngine: "sqlite"},
		{name: "sqlite", engine: "sqlite", server: "postgres://nowhere.invalid/postgres", wantEngine: "sqlite"},
		{
			name: "postgres without a server", engine: "postgres",
			wantSkip: "llmtooltest: PostgreSQL test skipped: LLMTOOL_TEST_ENGINE=postgres asks for PostgreSQL, but LLMTOOL_TEST_POSTGRES is not set; set it to the DSN of a role that may create databases, such as postgres://postgres@127.0.0.1:5432/postgres",
		},
		{
			name: "postgres without a server under CI", engine: "postgres", ci: "true",
			wantFatal: "llmtooltest.New: LLMTOOL_TEST_ENGINE=postgres asks for PostgreSQL, but LLMTOOL_TEST_POSTGRES is not set; under CI (CI is set) that fails rather than skips",
		},
		{
			name: "unknown engine", engine: "mysql",
			wantFatal: `llmtooltest.New: LLMTOOL_TEST_ENGINE="mysql": want "postgres", "sqlite" or unset`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(pgtest.Engine, tt.engine)
			t.Setenv(pgtest.Env, tt.server)
			t.Setenv("CI", tt.ci)
			var engine string
			f := run(t, func(tb *fakeTB) {
				engine = llmtooltest.New(tb, nil, inventory).Engine()
			})
			require.Equal(t, tt.wantEngine, engine)
			require.Equal(t, tt.wantSkip, f.skipped)
			if tt.wantFatal == "" {
				require.Empty(t, f.fatal)
			} else {
				require.Contains(t, f.fatal, tt.wantFatal)
			}
			require.Empty(t, f.errors())
		})
	}
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.AdminDSN(t)
		t.Setenv(pgtest.Engine, "postgres")
		t.Setenv(pgtest.Env, dsn)
		h := llmtooltest.New(t, &llmtooltest.Options{Schema: createItems, SQL: []string{seed}}, inventory)
		require.Equal(t, "postgres", h.Engine())
		h.RequireOK(h.Call("get_item", `{"id": 1}`))
	})
}

// Mistakes in Options.Postgres fail the test, without printing the DSN's
// password; they need no server.
func TestOptionsPostgresErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      llmtooltest.Options
		wantFatal string
	}{
		{
			name:      "not a DSN",
			opts:      llmtooltest.Options{Postgres: "postgres://u:s3cret@127.0.0.1:notaport/postgres"},
			wantFatal: "llmtooltest.New: Options.Postgres is not a PostgreSQL DSN: ",
		},
		{
			name:      "no server",
			opts:      llmtooltest.Options{Postgres: "postgres://u:s3cret@127.0.0.1:1/postgres?connect_timeout=5"},
			wantFatal: "llmtooltest.New: create a database for the test on the PostgreSQL server of Options.Postgres (its role must be allowed to CREATE DATABASE): ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := run(t, func(tb *fakeTB) {
				llmtooltest.New(tb, &tt.opts, inventory)
			})
			require.Contains(t, f.fatal, tt.wantFatal)
			require.NotContains(t, f.fatal, "s3cret")
		})
	}
}

// Options.Postgres may be in key=value form too.
func TestOptionsPostgresKeyValueDSN(t *testing.T) {
	t.Parallel()
	cfg, err := pgx.ParseConfig(pgtest.AdminDSN(t))
	require.NoError(t, err)
	dsn := fmt.Sprintf("host=%s port=%d user=%s dbname=%s", cfg.Host, cfg.Port, cfg.User, cfg.Database)
	if cfg.Password != "" {
		dsn += " password='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(cfg.Password) + "'"
	}
	h := llmtooltest.New(t, &llmtooltest.Options{Postgres: dsn, Schema: createItems, SQL: []string{seed}}, inventory)
	require.Equal(t, "postgres", h.Engine())
	require.Equal(t, "apple", h.RequireOK(h.Call("get_item", `{"id": 1}`))["name"])
}
