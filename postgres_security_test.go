package llmtool_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/llmtool/llmtool/sqlite"
	"github.com/llmtool/llmtool/tenant"
)

// Model-written SQL against llmtool's own state, other calls and other
// tenants, on PostgreSQL: a write tool that runs whatever SQL the model
// sends (run_sql) in tenant A's tenant, whose writes are on, tries to turn
// on tenant B's writes, to forget used approvals and approval rules, and
// to change the settings of the pooled connection that tenant B's next
// call runs on. Each attempt is refused, and what the other tenants see
// stays as it was.

type modelSQL struct {
	SQL string `json:"sql" desc:"The SQL to run."`
}

type rowsOut struct {
	Rows int64 `json:"rows"`
}

// runSQL runs the model's SQL as it comes.
var runSQL = llmtool.Write("run_sql", "Run SQL.", func(c *llmtool.WriteCtx, in modelSQL) (rowsOut, error) {
	res, err := c.Exec(in.SQL)
	if err != nil {
		return rowsOut{}, err
	}
	n, _ := res.RowsAffected()
	return rowsOut{Rows: n}, nil
})

// querySQL reads the first column of the model's query's first row, as
// text.
var querySQL = llmtool.Read("query_sql", "Run a query.", func(c *llmtool.ReadCtx, in modelSQL) (map[string]string, error) {
	var v string
	err := c.QueryRow(in.SQL).Scan(&v)
	return map[string]string{"value": v}, err
})

type idIn struct {
	ID int64 `json:"id" desc:"ID of the item."`
}

// dropItem needs a person's approval; purgeItem needs one where the
// tenant asks for approval of destructive tools.
var (
	dropItem = llmtool.Write("drop_item", "Delete an item.", func(c *llmtool.WriteCtx, in idIn) (rowsOut, error) {
		res, err := c.Exec(`DELETE FROM items WHERE id = $1`, in.ID)
		if err != nil {
			return rowsOut{}, err
		}
		n, _ := res.RowsAffected()
		return rowsOut{Rows: n}, nil
	}, llmtool.NeedsApproval(), llmtool.Destructive())
	purgeItem = llmtool.Write("purge_item", "Delete an item, destructively.", func(c *llmtool.WriteCtx, in idIn) (rowsOut, error) {
		res, err := c.Exec(`DELETE FROM items WHERE id = $1`, in.ID)
		if err != nil {
			return rowsOut{}, err
		}
		n, _ := res.RowsAffected()
		return rowsOut{Rows: n}, nil
	}, llmtool.Destructive())
	securityTools = llmtool.DefineTools("security", runSQL, querySQL, dropItem, purgeItem, addItem, getItem)
)

// mustJSON encodes v as a call's arguments.
func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// refusedSQL is the error of a run_sql call whose statement the check
// refused.
func refusedSQL(stmt, reason, instead string) string {
	if len(stmt) > 80 { // the refusal shortens the statement
		stmt = stmt[:77] + "..."
	}
	return "llmtool: statement refused: tool run_sql ran statement `" + stmt + "` " + reason + "; " + instead
}

const (
	ownRefusal     = "changes a table llmtool keeps for itself (llmtool_*)"
	ownInstead     = "change llmtool's settings through the Registry (Tenants().SetWrites, SetApproval, ...), never in a tool's SQL."
	settingRefusal = "names pg_settings in a statement that changes data or schema, and a write to pg_settings changes the session's settings"
	settingInstead = "configure sessions where the host opens the database (the DSN's options) or with ALTER ROLE/DATABASE ... SET as the administrator; read a setting with SHOW or current_setting()."
	internalError  = "Internal error in run_sql; the details were logged. Try again once; if it fails again, tell the user the tool is failing."
)

// TestPostgresOwnStateUnreachable: the U& attack and its siblings. Tenant
// A's run_sql tries every spelling of llmtool's tables; afterwards tenant
// B's writes are still off, the approval rule still asks, and a used
// approval token is still used, even for a replica that shares the key
// and knows the token only from the table.
func TestPostgresOwnStateUnreachable(t *testing.T) {
	t.Parallel()
	db, dsn := openPG(t)
	_, err := db.Exec(`INSERT INTO items (name) VALUES ('pear'), ('plum')`)
	require.NoError(t, err)
	opts := &llmtool.Options{ApprovalKey: []byte("a key the replicas share, 32 b."), TenantCacheTTL: tenant.NoCache, Logger: quietLogger()}
	reg, a, b := securityRegistry(t, db, opts)
	bg := context.Background()
	require.NoError(t, reg.Tenants().SetApproval(bg, "a", "", true)) // every destructive tool asks in tenant a

	// A used approval token.
	ask := reg.Invoke(a, llmtool.Call{Tool: "drop_item", Args: []byte(`{"id":2}`)})
	require.ErrorIs(t, ask.Err, approval.ErrRequired)
	token := ask.Approval.Token
	done := reg.Invoke(a, llmtool.Call{Tool: "drop_item", Args: []byte(`{"id":2}`), Approval: &approval.Answer{Token: token, Approved: true}})
	require.False(t, done.IsError, done.Text())

	attacks := []string{
		`UPDATE U&"llmtool\005Fscope_settings" SET enabled = 1`,
		`update u&"llmtool\005fscope_settings" set enabled = 1`,
		`UPDATE U&"llmtool!005Fscope_settings" UESCAPE '!' SET enabled = 1`,
		`UPDATE U&"llmtool\+00005Fscope_settings" SET enabled = 1`,
		`INSERT INTO U&"llmtool\005Fscope_settings" (scope, tool, enabled, updated_at) VALUES ('b', '', 1, '')`,
		`INSERT INTO "public".U&"llmtool\005Fscope_settings" (scope, tool, enabled, updated_at) VALUES ('b', '', 1, '')`,
		`INSERT INTO public.llmtool_scope_settings (scope, tool, enabled, updated_at) VALUES ('b', '', 1, '')`,
		`INSERT INTO "public"."llmtool_scope_settings" (scope, tool, enabled, updated_at) VALUES ('b', '', 1, '')`,
		`INSERT INTO PUBLIC.LLMTOOL_SCOPE_SETTINGS (scope, tool, enabled, updated_at) VALUES ('b', '', 1, '')`,
		`DELETE FROM U&"llmtool\005Fscope_settings" WHERE tool LIKE 'approval:%'`,
		`WITH x AS (SELECT 1) DELETE FROM U&"llmtool\005Fapprovals"`,
		`DELETE/**/FROM/* x */U&"\006C\006C\006D\0074\006F\006F\006C\005F\0061pprovals"`,
		`TRUNCATE U&"llmtool\005Fapprovals"`,
		`CREATE RULE r AS ON INSERT TO U&"llmtool\005Fapprovals" DO INSTEAD NOTHING`,
		`SELECT 'b' AS scope, '' AS tool, 1 AS enabled INTO postgres.llmtool_scope_settings`,
	}
	for _, q := range attacks {
		res := reg.Invoke(a, llmtool.Call{Tool: "run_sql", Args: mustJSON(t, modelSQL{SQL: q})})
		require.True(t, res.IsError, q)
		require.Equal(t, internalError, res.Text(), q)
		require.ErrorIs(t, res.Err, llmtool.ErrStatementRefused, q)
		require.EqualError(t, res.Err, refusedSQL(q, ownRefusal, ownInstead), q)
	}

	on, err := reg.Tenants().Writes(bg, "b")
	require.NoError(t, err)
	require.False(t, on, "tenant B's writes are still off")
	res := reg.Invoke(b, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"fig"}`)})
	require.Equal(t, `Tool "add_item" changes data, and write tools are off in tenant "b". Ask the user to enable write tools for this tenant, then call add_item again.`, res.Text())

	res = reg.Invoke(a, llmtool.Call{Tool: "purge_item", Args: []byte(`{"id":3}`)})
	require.ErrorIs(t, res.Err, approval.ErrRequired, "the tenant's approval rule still asks: %s", res.Text())

	// A replica sharing the key knows the token was used from
	// llmtool_approvals alone.
	db2, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db2.Close() })
	replica, err := llmtool.NewRegistry(db2, opts, securityTools)
	require.NoError(t, err)
	t.Cleanup(func() { replica.Close() })
	_, err = db.Exec(`INSERT INTO items (id, name) VALUES (2, 'pear again')`)
	require.NoError(t, err)
	replay := replica.Invoke(a, llmtool.Call{Tool: "drop_item", Args: []byte(`{"id":2}`), Approval: &approval.Answer{Token: token, Approved: true}})
	require.ErrorIs(t, replay.Err, approval.ErrRefused)
	require.Equal(t, `This approval was already used. Nothing was saved. Call the tool again to get a new preview for the user to approve.`, replay.Text())
	require.Equal(t, 3, countItems(t, db), "the replay deleted nothing")
}

// TestPostgresSettingsStayTheSession's: the pg_settings attack. On a pool
// of one connection, tenant A's run_sql tries to point the session's
// search_path at a schema of the attacker's (evil, with a notes table of
// its own) and to change the session's role, through pg_settings in every
// spelling and through a view over it. Each is refused; bob's next calls
// on the same pool see his own search_path and role, and his rename lands
// in public.notes.
func TestPostgresSettingsStayTheSession(t *testing.T) {
	t.Parallel()
	db, _ := openPG(t)
	db.SetMaxOpenConns(1) // every call runs on the one connection the attacker's did
	for _, q := range []string{
		`CREATE TABLE notes (id int PRIMARY KEY, title text NOT NULL)`,
		`INSERT INTO notes VALUES (1, 'Shopping')`,
		`CREATE SCHEMA evil`,
		`CREATE TABLE evil.notes (id int PRIMARY KEY, title text NOT NULL)`,
		`INSERT INTO evil.notes VALUES (1, 'Shopping')`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	type renameIn struct {
		ID    int    `json:"id" desc:"ID of the note."`
		Title string `json:"title" desc:"Its new title."`
	}
	type renameOut struct {
		SearchPath string `json:"searchPath"`
		User       string `json:"user"`
	}
	rename := llmtool.Write("rename", "Rename a note.", func(c *llmtool.WriteCtx, in renameIn) (renameOut, error) {
		var o renameOut
		if err := c.QueryRow(`SELECT current_setting('search_path'), current_user`).Scan(&o.SearchPath, &o.User); err != nil {
			return o, err
		}
		_, err := c.Exec(`UPDATE notes SET title = $1 WHERE id = $2`, in.Title, in.ID)
		return o, err
	})
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger()}, llmtool.DefineTools("notes", rename), securityTools)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	bg := context.Background()
	require.NoError(t, reg.Tenants().SetWrites(bg, "a", true))
	require.NoError(t, reg.Tenants().SetWrites(bg, "bob", true))
	a, bob := llmtool.WithTenant(bg, "a"), llmtool.WithTenant(bg, "bob")

	for _, q := range []string{
		`UPDATE pg_settings SET setting = 'evil, public' WHERE name = 'search_path'`,
		`UPDATE PG_SETTINGS SET setting = 'evil, public' WHERE name = 'search_path'`,
		`UPDATE pg_catalog.pg_settings SET setting = 'evil, public' WHERE name = 'search_path'`,
		`UPDATE "pg_catalog"."pg_settings" SET setting = 'evil, public' WHERE name = 'search_path'`,
		`UPDATE U&"pg\005Fsettings" SET setting = 'evil, public' WHERE name = 'search_path'`,
		`UPDATE U&"pg!005Fsettings" UESCAPE '!' SET setting = 'evil, public' WHERE name = 'search_path'`,
		`UPDATE pg_settings SET setting = 'evil' WHERE name = 'role'`,
		`CREATE VIEW evil.s AS SELECT name, setting FROM pg_settings`,
		`CREATE RULE r AS ON INSERT TO notes DO ALSO UPDATE pg_settings SET setting = 'evil, public' WHERE name = 'search_path'`,
	} {
		res := reg.Invoke(a, llmtool.Call{Tool: "run_sql", Args: mustJSON(t, modelSQL{SQL: q})})
		require.Equal(t, internalError, res.Text(), q)
		require.EqualError(t, res.Err, refusedSQL(q, settingRefusal, settingInstead), q)

		res = reg.Invoke(bob, llmtool.Call{Tool: "rename", Args: []byte(`{"id":1,"title":"Groceries"}`)})
		require.False(t, res.IsError, res.Text())
		require.JSONEq(t, `{"searchPath":"\"$user\", public","user":"postgres"}`, string(res.JSON), "after %s", q)
		var title, evilTitle string
		require.NoError(t, db.QueryRow(`SELECT (SELECT title FROM public.notes WHERE id = 1), (SELECT title FROM evil.notes WHERE id = 1)`).Scan(&title, &evilTitle))
		require.Equal(t, "Groceries", title, "bob's rename is in public.notes")
		require.Equal(t, "Shopping", evilTitle, "and not in the attacker's table")
		_, err := db.Exec(`UPDATE notes SET title = 'Shopping'`)
		require.NoError(t, err)
	}
}

// pgRoles creates roles on the test server, one per attribute list
// ("NOLOGIN", "LOGIN", "SUPERUSER", ...), named uniquely, and drops them
// when the test ends. Call it before creating the test's databases: the
// roles' privileges there must go (with the databases) before the roles
// can.
func pgRoles(t *testing.T, attrs ...string) []string {
	t.Helper()
	admin, err := sql.Open("pgx", pgtest.AdminDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close() })
	names := make([]string, len(attrs))
	for i, a := range attrs {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		names[i] = "tools_" + hex.EncodeToString(b)
		_, err := admin.Exec(`CREATE ROLE ` + names[i] + ` ` + a)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, n := range names {
			if _, err := admin.Exec(`DROP ROLE IF EXISTS ` + n); err != nil {
				t.Errorf("drop role %s: %v", n, err)
			}
		}
	})
	return names
}

// TestPostgresRole: with Options.Role, the server refuses what the role
// has no privilege for, whatever the statement check makes of the text:
// a write to a host table the role has no grant on, and host functions
// that write llmtool's tenant settings or read its audit (the text names
// no llmtool table, so only the role stops them). Reads run as the role too. llmtool's own
// statements (the audit record, a used approval) still run, as the
// connecting user, and no role outlives its call. Without the role, the
// same function call turns on another tenant's writes.
func TestPostgresRole(t *testing.T) {
	t.Parallel()
	role := pgRoles(t, "NOLOGIN")[0]
	db, dsn := openPG(t)
	db.SetMaxOpenConns(1) // the calls and the checks below share one connection
	for _, q := range []string{
		`CREATE TABLE secrets (k text PRIMARY KEY, v text NOT NULL)`,
		`INSERT INTO secrets VALUES ('key', 'hunter2')`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON items TO ` + role,
		`GRANT USAGE ON SEQUENCE items_id_seq TO ` + role,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	table, err := audit.NewTable(context.Background(), db, "")
	require.NoError(t, err)
	opts := &llmtool.Options{Role: role, Audit: []audit.Sink{table}, ApprovalKey: []byte("a key the replicas share, 32 b."),
		TenantCacheTTL: tenant.NoCache, Logger: quietLogger()}
	reg, err := llmtool.NewRegistry(db, opts, securityTools)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	// A host function that writes llmtool's table; it runs with the
	// caller's privileges (SECURITY INVOKER).
	_, err = db.Exec(`CREATE FUNCTION all_writes_on() RETURNS void LANGUAGE sql AS $$ UPDATE llmtool_scope_settings SET enabled = 1 $$`)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE FUNCTION audited() RETURNS text LANGUAGE sql AS $$ SELECT count(*)::text FROM llmtool_audit $$`)
	require.NoError(t, err)
	bg := context.Background()
	a, b := llmtool.WithTenant(bg, "a"), llmtool.WithTenant(bg, "b")
	require.NoError(t, reg.Tenants().SetWrites(bg, "a", true))
	require.NoError(t, reg.Tenants().SetWrites(bg, "b", false))

	tests := []struct {
		name, tool, sql string
		want            string // the JSON, or "" when the call fails
		err             string
	}{
		{name: "a granted write", tool: "run_sql", sql: `INSERT INTO items (name) VALUES ('pear')`, want: `{"rows":1}`},
		{name: "a granted read", tool: "query_sql", sql: `SELECT name FROM items WHERE id = 1`, want: `{"value":"apple"}`},
		{name: "handler SQL runs as the role", tool: "query_sql", sql: `SELECT current_user`, want: `{"value":"` + role + `"}`},
		{name: "a write without a grant", tool: "run_sql", sql: `UPDATE secrets SET v = 'x'`,
			err: "ERROR: permission denied for table secrets (SQLSTATE 42501)"},
		{name: "a read without a grant", tool: "query_sql", sql: `SELECT v FROM secrets`,
			err: "ERROR: permission denied for table secrets (SQLSTATE 42501)"},
		{name: "llmtool's table through a host function", tool: "run_sql", sql: `SELECT all_writes_on()`,
			err: "ERROR: permission denied for table llmtool_scope_settings (SQLSTATE 42501)"},
		{name: "llmtool's audit, read through a host function", tool: "query_sql", sql: `SELECT audited()`,
			err: "ERROR: permission denied for table llmtool_audit (SQLSTATE 42501)"},
		{name: "llmtool's audit, read", tool: "query_sql", sql: `SELECT count(*)::text FROM llmtool_audit`,
			err: "llmtool: statement refused: tool query_sql ran statement `SELECT count(*)::text FROM llmtool_audit` names a table llmtool keeps for itself (llmtool_*), which no tool may read; llmtool's tables hold every tenant's settings, approvals and history: read them through the Registry (Tenants().Writes, changeset.List, the list_changes tool), never in a tool's SQL."},
	}
	for _, tt := range tests {
		res := reg.Invoke(a, llmtool.Call{Tool: tt.tool, Args: mustJSON(t, modelSQL{SQL: tt.sql})})
		if tt.err == "" {
			require.False(t, res.IsError, "%s: %s", tt.name, res.Text())
			require.JSONEq(t, tt.want, string(res.JSON), tt.name)
		} else {
			require.True(t, res.IsError, tt.name)
			require.EqualError(t, res.Err, tt.err, tt.name)
		}
		var user string
		require.NoError(t, db.QueryRow(`SELECT current_user`).Scan(&user))
		require.Equal(t, "postgres", user, "%s: the connection is back to the connecting user", tt.name)
	}
	var secret string
	require.NoError(t, db.QueryRow(`SELECT v FROM secrets`).Scan(&secret))
	require.Equal(t, "hunter2", secret)
	on, err := reg.Tenants().Writes(bg, "b")
	require.NoError(t, err)
	require.False(t, on, "tenant B's writes are still off")

	// llmtool's own statements run as the connecting user: the audit
	// record and the used approval commit with the write. (Recording a
	// used approval prepares its statement on a connection of its own.)
	db.SetMaxOpenConns(4)
	var audited int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM llmtool_audit WHERE tool = 'run_sql'`).Scan(&audited))
	require.Equal(t, 1, audited, "the granted write's audit record")
	ask := reg.Invoke(a, llmtool.Call{Tool: "drop_item", Args: []byte(`{"id":1}`)})
	require.ErrorIs(t, ask.Err, approval.ErrRequired)
	done := reg.Invoke(a, llmtool.Call{Tool: "drop_item", Args: []byte(`{"id":1}`), Approval: &approval.Answer{Token: ask.Approval.Token, Approved: true}})
	require.False(t, done.IsError, done.Text())
	var used int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM llmtool_approvals`).Scan(&used))
	require.Equal(t, 1, used)

	// The built-in man reads the tenant's settings outside the call's
	// transaction, so it still lists the write tools where writes are on.
	man := reg.Invoke(a, llmtool.Call{Tool: "man"})
	require.False(t, man.IsError, man.Text())
	require.Contains(t, man.Text(), "run_sql")
	man = reg.Invoke(b, llmtool.Call{Tool: "man"})
	require.NotContains(t, man.Text(), "run_sql")

	// On a pool large enough for the registry to keep connections for
	// reads, those switch to the role, and go back to the pool as the
	// connecting user when the registry closes.
	big, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { big.Close() })
	big.SetMaxOpenConns(8)
	big.SetMaxIdleConns(8)
	keeper, err := llmtool.NewRegistry(big, opts, securityTools)
	require.NoError(t, err)
	for range 3 {
		res := keeper.Invoke(a, llmtool.Call{Tool: "query_sql", Args: mustJSON(t, modelSQL{SQL: `SELECT current_user`})})
		require.JSONEq(t, `{"value":"`+role+`"}`, string(res.JSON))
	}
	require.NoError(t, keeper.Close())
	st := big.Stats()
	require.Positive(t, st.Idle, "the kept connection went back to the pool, not closed")
	require.Equal(t, st.OpenConnections, st.Idle)
	conns := make([]*sql.Conn, 8) // the idle ones first
	for i := range conns {
		conns[i], err = big.Conn(bg)
		require.NoError(t, err)
		var user string
		require.NoError(t, conns[i].QueryRowContext(bg, `SELECT current_user`).Scan(&user))
		require.Equal(t, "postgres", user, "connection %d", i)
	}
	for _, c := range conns {
		c.Close()
	}

	// Without the role, only the check stands, and the host function's
	// text names no llmtool table.
	plain, err := llmtool.NewRegistry(db, &llmtool.Options{TenantCacheTTL: tenant.NoCache, Logger: quietLogger()}, securityTools)
	require.NoError(t, err)
	t.Cleanup(func() { plain.Close() })
	res := plain.Invoke(a, llmtool.Call{Tool: "run_sql", Args: mustJSON(t, modelSQL{SQL: `SELECT all_writes_on()`})})
	require.False(t, res.IsError, res.Text())
	on, err = plain.Tenants().Writes(bg, "b")
	require.NoError(t, err)
	require.True(t, on, "without the role, the function turned on tenant B's writes")
}

// TestPostgresRoleChecked: NewRegistry refuses a role that would not
// protect llmtool's tables, saying what to run.
func TestPostgresRoleChecked(t *testing.T) {
	t.Parallel()
	roles := pgRoles(t, "LOGIN", "NOLOGIN", "NOLOGIN SUPERUSER", "NOLOGIN", "NOLOGIN", "NOLOGIN", "NOLOGIN", "NOLOGIN")
	app, free, super, member, unswitchable, granted, column, public := roles[0], roles[1], roles[2], roles[3], roles[4], roles[5], roles[6], roles[7]
	dsn := pgtest.DSN(t)
	owner, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { owner.Close() })
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	_, err = owner.Exec(`ALTER DATABASE ` + u.Path[1:] + ` OWNER TO ` + app) // app owns the public schema, and llmtool's tables
	require.NoError(t, err)
	u.User = url.User(app)
	db, err := sql.Open("pgx", u.String())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	first, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger()}) // creates llmtool's tables, owned by app
	require.NoError(t, err)
	first.Close()
	for _, q := range []string{
		`GRANT ` + free + `, ` + granted + `, ` + column + `, ` + public + ` TO ` + app,
		`GRANT ` + app + ` TO ` + member,
		`GRANT SELECT ON llmtool_scope_settings, llmtool_approvals TO ` + granted,
		`GRANT UPDATE (enabled) ON llmtool_scope_settings TO ` + column,
	} {
		_, err := owner.Exec(q)
		require.NoError(t, err, q)
	}

	tests := []struct {
		name, role, err string
		setup           string // run as the owner first
	}{
		{name: "a role that protects", role: free},
		{name: "no such role", role: "tools_missing",
			err: `llmtool: Options.Role "tools_missing": no such role; create it and let the application's user switch to it: CREATE ROLE "tools_missing" NOLOGIN; GRANT "tools_missing" TO <the user llmtool connects as>; then grant it what the tools need on the application's tables (GRANT SELECT, INSERT, UPDATE, DELETE ON ... TO "tools_missing")`},
		{name: "the connecting user", role: app,
			err: `llmtool: Options.Role "` + app + `" is the user llmtool connects as, which owns llmtool's own tables; name a role of its own: CREATE ROLE app_tools NOLOGIN; GRANT app_tools TO "` + app + `"`},
		{name: "a superuser", role: super,
			err: `llmtool: Options.Role "` + super + `" is a superuser, which every privilege check lets through; run ALTER ROLE "` + super + `" NOSUPERUSER, or name another role`},
		{name: "a member of the connecting user", role: member,
			err: `llmtool: Options.Role "` + member + `" is a member of "` + app + `", the user llmtool connects as, so a tool could act as that user and use its privileges on llmtool's own tables; run REVOKE "` + app + `" FROM "` + member + `"`},
		{name: "not granted to the connecting user", role: unswitchable,
			err: `llmtool: Options.Role "` + unswitchable + `": "` + app + `" may not switch to it (ERROR: permission denied to set role "` + unswitchable + `" (SQLSTATE 42501)); run GRANT "` + unswitchable + `" TO "` + app + `"`},
		{name: "privileges on llmtool's tables", role: granted,
			err: `llmtool: Options.Role "` + granted + `" holds privileges on llmtool's own tables (public.llmtool_approvals, public.llmtool_scope_settings), so a tool's SQL could change llmtool's settings or read other tenants' records; run REVOKE ALL ON TABLE public.llmtool_approvals, public.llmtool_scope_settings FROM "` + granted + `" (and the same FROM PUBLIC, or from the role it has them through)`},
		{name: "a column's privilege", role: column,
			err: `llmtool: Options.Role "` + column + `" holds privileges on llmtool's own tables (public.llmtool_scope_settings), so a tool's SQL could change llmtool's settings or read other tenants' records; run REVOKE ALL ON TABLE public.llmtool_scope_settings FROM "` + column + `" (and the same FROM PUBLIC, or from the role it has them through)`},
		{name: "privileges through PUBLIC", role: public, setup: `GRANT SELECT ON llmtool_scope_version TO PUBLIC`,
			err: `llmtool: Options.Role "` + public + `" holds privileges on llmtool's own tables (public.llmtool_scope_version), so a tool's SQL could change llmtool's settings or read other tenants' records; run REVOKE ALL ON TABLE public.llmtool_scope_version FROM "` + public + `" (and the same FROM PUBLIC, or from the role it has them through)`},
	}
	for _, tt := range tests {
		if tt.setup != "" {
			_, err := owner.Exec(tt.setup)
			require.NoError(t, err, tt.name)
		}
		reg, err := llmtool.NewRegistry(db, &llmtool.Options{Role: tt.role, Logger: quietLogger()})
		if tt.err == "" {
			require.NoError(t, err, tt.name)
			reg.Close()
			continue
		}
		require.EqualError(t, err, tt.err, tt.name)
	}

	lite, err := sqlite.Open(filepath.Join(t.TempDir(), "lite.db"))
	require.NoError(t, err)
	t.Cleanup(func() { lite.Close() })
	_, err = llmtool.NewRegistry(lite, &llmtool.Options{Role: free})
	require.EqualError(t, err, `llmtool: Options.Role "`+free+`": roles are PostgreSQL's; on sqlite leave Options.Role empty`)
}

// pgCallState is what a call may leave on its connection or in the
// catalogs, as one line: session-level advisory locks, prepared
// statements, cursors, LISTEN channels, temporary objects, settings (but
// default_transaction_read_only, which llmtool sets on a read call's
// connection, and the transaction's own), the current user, the search path; then per-role and
// per-database settings, rules and non-internal triggers on llmtool's
// tables, and SECURITY DEFINER functions.
const pgCallState = `SELECT concat_ws(' | ',
	(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()),
	(SELECT count(*) FROM pg_prepared_statements WHERE from_sql),
	(SELECT count(*) FROM pg_cursors WHERE name <> '' AND is_holdable),
	(SELECT count(*) FROM pg_listening_channels()),
	(SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()),
	(SELECT coalesce(string_agg(name || '=' || setting, ', ' ORDER BY name), '') FROM pg_settings
		WHERE source = 'session' AND name <> 'default_transaction_read_only' AND name NOT LIKE 'transaction\_%'),
	current_user, session_user, current_setting('search_path'),
	(SELECT count(*) FROM pg_db_role_setting),
	(SELECT count(*) FROM pg_rules WHERE tablename LIKE 'llmtool%'),
	(SELECT count(*) FROM pg_trigger WHERE tgrelid::regclass::text LIKE 'llmtool%' AND NOT tgisinternal),
	(SELECT count(*) FROM pg_proc WHERE prosecdef))`

// TestPostgresNothingOutlivesACall: every kind of statement whose effect
// would outlive its call, and reach the next call on the pooled connection
// or every later session, is refused, from a write tool and from a read
// tool; the next call on the same one-connection pool finds the session
// and the catalogs as they were. Each kind is first run as it would run
// without the check, on a connection of its own in a committed
// transaction, to show that its effect does outlive the transaction.
func TestPostgresNothingOutlivesACall(t *testing.T) {
	t.Parallel()
	role := pgRoles(t, "NOLOGIN")[0]
	db, dsn := openPG(t)
	db.SetMaxOpenConns(1)
	state := llmtool.Read("state", "Describe the session.", func(c *llmtool.ReadCtx, _ struct{}) (map[string]string, error) {
		var s string
		err := c.QueryRow(pgCallState).Scan(&s)
		return map[string]string{"state": s}, err
	})
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger()}, securityTools, llmtool.DefineTools("probe", state))
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	bg := context.Background()
	require.NoError(t, reg.Tenants().SetWrites(bg, "", true))
	probe := func() string {
		t.Helper()
		res := reg.Invoke(bg, llmtool.Call{Tool: "state"})
		require.False(t, res.IsError, res.Text())
		var out map[string]string
		require.NoError(t, json.Unmarshal(res.JSON, &out))
		return out["state"]
	}
	clean := probe()
	raw, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	dbName := u.Path[1:]

	const (
		tempReason    = "creates or changes an object that lives with the connection, not the database"
		tempInstead   = "create temporary objects in the host's setup code, or use a CTE (WITH ...) or an ordinary table."
		setReason     = "changes the settings of the session or of the call's transaction"
		advisoryLock  = "takes a session-level advisory lock, which outlives the call's transaction"
		advisoryNext  = "use pg_advisory_xact_lock or pg_try_advisory_xact_lock, whose locks end with the call's transaction."
		securityWhy   = "changes roles, privileges or security labels"
		securityNext  = "manage roles and privileges in the host's migrations or as the database administrator; a tool changes data and schema."
		prepareReason = "prepares a statement on the session, which outlives the call's transaction"
		prepareNext   = "run the statement itself, with its arguments: the driver prepares and caches statements."
	)
	tests := []struct {
		name, stmt, reason, instead string
		undo                        []string // what undoes the statement's effect in the catalogs (session state goes with the connection)
	}{
		{"temporary table", `CREATE TEMP TABLE t (a int)`, tempReason, tempInstead, nil},
		{"temporary table by SELECT INTO", `SELECT 1 AS a INTO TEMP t`, tempReason, tempInstead, nil},
		{"table in pg_temp", `CREATE TABLE pg_temp.t (a int)`, "names an object in the temp schema, which lives with the connection, not the database", tempInstead, nil},
		{"search_path by SET", `SET search_path = evil, public`, setReason, settingInstead, nil},
		{"a setting by SET SESSION", `SET SESSION lock_timeout = 1`, setReason, settingInstead, nil},
		{"search_path by set_config", `SELECT set_config('search_path', 'evil, public', false)`, "calls set_config, which changes the session's settings", settingInstead, nil},
		{"search_path by pg_settings", `UPDATE pg_settings SET setting = 'evil, public' WHERE name = 'search_path'`, settingRefusal, settingInstead, nil},
		{"the role by SET ROLE", `SET ROLE ` + role, setReason, settingInstead, nil},
		{"the user by SET SESSION AUTHORIZATION", `SET SESSION AUTHORIZATION ` + role, setReason, settingInstead, nil},
		{"a prepared statement", `PREPARE p AS SELECT 1`, prepareReason, prepareNext, nil},
		{"LISTEN", `LISTEN ch`, "changes what the session listens to, which outlives the call", "listen on a connection the host keeps for it, outside the tool's calls.", nil},
		{"a cursor WITH HOLD", `DECLARE c CURSOR WITH HOLD FOR SELECT 1`, "declares or uses a cursor, which can outlive the call's transaction (WITH HOLD)", "run the query with the handler's Query and read its rows; page with LIMIT and a keyset.", nil},
		{"a session-level advisory lock", `SELECT pg_advisory_lock(42)`, "calls pg_advisory_lock, which " + advisoryLock, advisoryNext, nil},
		{"a role's settings", `ALTER ROLE ` + role + ` SET search_path = evil, public`, securityWhy, securityNext, []string{`ALTER ROLE ` + role + ` RESET ALL`}},
		{"the database's settings", `ALTER DATABASE ` + dbName + ` SET search_path = evil, public`, "configures the server or a whole database", "leave the configuration of the server and its databases to the administrator.", []string{`ALTER DATABASE ` + dbName + ` RESET ALL`}},
		{"a rule on llmtool's table", `CREATE RULE r AS ON INSERT TO llmtool_approvals DO INSTEAD NOTHING`, ownRefusal, ownInstead, []string{`DROP RULE r ON llmtool_approvals`}},
		{"a trigger on llmtool's table", `CREATE TRIGGER tr BEFORE UPDATE ON llmtool_scope_settings FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()`, ownRefusal, ownInstead, []string{`DROP TRIGGER tr ON llmtool_scope_settings`}},
		{"a SECURITY DEFINER function", `CREATE FUNCTION f() RETURNS int LANGUAGE sql SECURITY DEFINER AS $$ SELECT 1 $$`, "defines or changes code that llmtool cannot check", "define functions, procedures, operators and extensions in the host's migrations; a tool may call them.", []string{`DROP FUNCTION f()`}},
	}
	for _, tt := range tests {
		// Without the check: the effect outlives a committed transaction.
		conn, err := raw.Conn(bg)
		require.NoError(t, err)
		for _, s := range []string{"BEGIN", tt.stmt, "COMMIT"} {
			_, err := conn.ExecContext(bg, s)
			require.NoError(t, err, "%s: %s", tt.name, s)
		}
		var left string
		require.NoError(t, conn.QueryRowContext(bg, pgCallState).Scan(&left))
		require.NotEqual(t, clean, left, "%s: without the check, the statement's effect outlives its transaction", tt.name)
		for _, s := range tt.undo {
			_, err := conn.ExecContext(bg, s)
			require.NoError(t, err, "%s: %s", tt.name, s)
		}
		_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // the session's state goes with it
		conn.Close()

		// Through llmtool: refused from either kind of tool, and the next
		// call finds the session and the catalogs as they were.
		for _, tool := range []string{"run_sql", "query_sql"} {
			res := reg.Invoke(bg, llmtool.Call{Tool: tool, Args: mustJSON(t, modelSQL{SQL: tt.stmt})})
			require.True(t, res.IsError, "%s: %s", tt.name, tool)
			require.ErrorIs(t, res.Err, llmtool.ErrStatementRefused, "%s: %s", tt.name, tool)
			stmt := tt.stmt
			if len(stmt) > 80 {
				stmt = stmt[:77] + "..."
			}
			require.EqualError(t, res.Err, "llmtool: statement refused: tool "+tool+" ran statement `"+stmt+"` "+tt.reason+"; "+tt.instead, "%s: %s", tt.name, tool)
			require.Equal(t, clean, probe(), "%s: %s", tt.name, tool)
		}
	}
}
