package dbconn

// PostgreSQL: the role handler SQL runs as (Options.Role).
//
// A call's handler and guards run as Pool.Role, so the server itself
// refuses what the role has no privilege for, whatever the statement
// check (sqlcheck) makes of the text: llmtool's own tables above all.
// A write call's transaction switches to it with SET LOCAL ROLE, and,
// before llmtool runs statements of its own in it (the audit record, the
// used approval), back with SET LOCAL ROLE NONE; SET LOCAL ends with the
// transaction, committed or rolled back, so no role outlives a write call
// on the host's pooled connection. A read call runs on a connection the
// registry keeps for reads, switched to the role for as long as it keeps
// it (pgReadOn), which costs a read call nothing.
//
// A role is a boundary only together with the check: any session may
// RESET ROLE, and the check refuses SET, RESET and set_config in every
// spelling.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// pgReadOn is the statement that readies a connection for read calls on
// PostgreSQL: its transactions read-only by default and, with a role,
// the session switched to it, for as long as the registry keeps the
// connection for reads (one statement, one round trip). pgReadOff undoes
// both before the connection goes back to the host's pool; if it fails,
// the connection is closed instead. A read connection runs nothing but
// read calls' statements (handler, guards), BEGIN and ROLLBACK: llmtool's
// own reads (the tenant settings) take a connection of their own when a
// role is set.
func (t *Pool) pgReadOn() string {
	const on = "SET default_transaction_read_only = on"
	if t.Role == "" {
		return on
	}
	return on + "; SET ROLE " + sqlcheck.QuoteIdent(t.Role)
}

func (t *Pool) pgReadOff() string {
	const off = "RESET default_transaction_read_only"
	if t.Role == "" {
		return off
	}
	return off + "; RESET ROLE"
}

// EnterRole makes the rest of a write call's transaction run as the
// pool's role, if it has one. llmtool's own write transactions (a tenant
// setting's change) do not enter it.
func (t *Pool) EnterRole(ctx context.Context, tx *sql.Tx) error {
	if t.Role == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "SET LOCAL ROLE "+sqlcheck.QuoteIdent(t.Role)); err != nil {
		return fmt.Errorf("llmtool: run the tool as role %s (Options.Role): %w", sqlcheck.QuoteIdent(t.Role), err)
	}
	return nil
}

// LeaveRole gives a write call's transaction back to the connecting user
// before llmtool's own statements run in it, if the pool has a role.
func (t *Pool) LeaveRole(ctx context.Context, tx *sql.Tx) error {
	if t.Role == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "SET LOCAL ROLE NONE"); err != nil {
		return fmt.Errorf("llmtool: leave role %s (Options.Role) for llmtool's own statements: %w", sqlcheck.QuoteIdent(t.Role), err)
	}
	return nil
}

// roleQuery describes a role as the connecting user sees it: whether it
// is a superuser, and whether it is a member of the connecting user (then
// it may SET ROLE back to it, and may inherit its privileges).
const roleQuery = `SELECT r.rolsuper, r.oid <> u.oid AND pg_has_role(r.oid, u.oid, 'MEMBER'), r.oid = u.oid, u.rolname
FROM pg_roles r, pg_roles u WHERE r.rolname = $1 AND u.rolname = current_user`

// ownPrivileges lists, as the current role, llmtool's own relations
// (llmtool_*) on which it holds any privilege, tables and sequences apart.
const ownPrivileges = `SELECT c.relkind = 'S', quote_ident(n.nspname) || '.' || quote_ident(c.relname)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname LIKE 'llmtool\_%' AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
	AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_t%'
	AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege(c.oid, 'USAGE, SELECT, UPDATE')
		ELSE has_table_privilege(c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
			OR has_any_column_privilege(c.oid, 'SELECT, INSERT, UPDATE, REFERENCES') END
ORDER BY 1, 2`

// UseRole checks that role may be what handler SQL runs as, and makes it
// so: it exists, is no superuser and no member of the connecting user,
// the connecting user may SET ROLE to it, and it holds no privilege on
// llmtool's own tables. Each refusal says which statement fixes it. Run it
// after llmtool's tables exist.
func (t *Pool) UseRole(ctx context.Context, role string) error {
	if t.Engine != engine.Postgres {
		return fmt.Errorf("llmtool: Options.Role %q: roles are PostgreSQL's; on %s leave Options.Role empty", role, t.Engine)
	}
	if strings.IndexByte(role, 0) >= 0 {
		return errors.New("llmtool: Options.Role contains a NUL byte")
	}
	q := sqlcheck.QuoteIdent(role)
	var super, member, self bool
	var user string
	err := t.DB.QueryRowContext(ctx, roleQuery, role).Scan(&super, &member, &self, &user)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("llmtool: Options.Role %q: no such role; create it and let the application's user switch to it: CREATE ROLE %s NOLOGIN; GRANT %s TO <the user llmtool connects as>; then grant it what the tools need on the application's tables (GRANT SELECT, INSERT, UPDATE, DELETE ON ... TO %s)", role, q, q, q)
	case err != nil:
		return fmt.Errorf("llmtool: Options.Role %q: look up the role: %w", role, err)
	case self:
		return fmt.Errorf("llmtool: Options.Role %q is the user llmtool connects as, which owns llmtool's own tables; name a role of its own: CREATE ROLE app_tools NOLOGIN; GRANT app_tools TO %s", role, sqlcheck.QuoteIdent(user))
	case super:
		return fmt.Errorf("llmtool: Options.Role %q is a superuser, which every privilege check lets through; run ALTER ROLE %s NOSUPERUSER, or name another role", role, q)
	case member:
		return fmt.Errorf("llmtool: Options.Role %q is a member of %s, the user llmtool connects as, so a tool could act as that user and use its privileges on llmtool's own tables; run REVOKE %s FROM %s", role, sqlcheck.QuoteIdent(user), sqlcheck.QuoteIdent(user), q)
	}
	tx, err := t.DB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("llmtool: Options.Role %q: %w", role, err)
	}
	defer func() { _ = tx.Rollback() }() // read-only: nothing to keep
	if _, err := tx.ExecContext(ctx, "SET LOCAL ROLE "+q); err != nil {
		return fmt.Errorf("llmtool: Options.Role %q: %s may not switch to it (%w); run GRANT %s TO %s", role, sqlcheck.QuoteIdent(user), err, q, sqlcheck.QuoteIdent(user))
	}
	rows, err := tx.QueryContext(ctx, ownPrivileges)
	if err != nil {
		return fmt.Errorf("llmtool: Options.Role %q: list its privileges on llmtool's tables: %w", role, err)
	}
	defer rows.Close()
	var tables, seqs []string
	for rows.Next() {
		var seq bool
		var name string
		if err := rows.Scan(&seq, &name); err != nil {
			return fmt.Errorf("llmtool: Options.Role %q: list its privileges on llmtool's tables: %w", role, err)
		}
		if seq {
			seqs = append(seqs, name)
		} else {
			tables = append(tables, name)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("llmtool: Options.Role %q: list its privileges on llmtool's tables: %w", role, err)
	}
	if len(tables)+len(seqs) > 0 {
		var revoke []string
		if len(tables) > 0 {
			revoke = append(revoke, "REVOKE ALL ON TABLE "+strings.Join(tables, ", ")+" FROM "+q)
		}
		if len(seqs) > 0 {
			revoke = append(revoke, "REVOKE ALL ON SEQUENCE "+strings.Join(seqs, ", ")+" FROM "+q)
		}
		return fmt.Errorf("llmtool: Options.Role %q holds privileges on llmtool's own tables (%s), so a tool's SQL could change llmtool's settings or read other tenants' records; run %s (and the same FROM PUBLIC, or from the role it has them through)",
			role, strings.Join(append(tables, seqs...), ", "), strings.Join(revoke, "; "))
	}
	t.Role = role
	return nil
}

// PostgreSQL's write connections with the capture on. A tracked write
// turns the capture on for its transaction with SET LOCAL, a statement
// on a round trip of its own before the handler's first (database/sql
// sends BEGIN alone). So the pool reserves write connections as it does
// read ones: each with the capture on for the session, set once when
// the pool reserves it, and kept between writes, so a write on it starts
// with no statement of llmtool's. Only write calls' transactions run on
// it, and the check refuses SET, RESET and set_config, so no handler
// turns the capture off for the calls after it. When none is free, a
// write takes a connection from the host's pool and turns the capture on
// for its transaction (StartCall). RESET llmtool.capture undoes it before
// the connection goes back to the host's pool; if it fails, the
// connection is closed instead.

// pgWriter returns a reserved write connection: an idle one, or a newly
// reserved one while fewer than cap(t.pgWriters) exist; nil when tables
// are not tracked on PostgreSQL or all are taken.
func (t *Pool) pgWriter(ctx context.Context) (*sql.Conn, error) {
	if t.pg == nil || t.closed.Load() {
		return nil, nil
	}
	select {
	case conn := <-t.pgWriters:
		return conn, nil
	default:
	}
	if n := t.pgWriterRsvd.Add(1); int(n) > cap(t.pgWriters) {
		t.pgWriterRsvd.Add(-1)
		return nil, nil
	}
	conn, err := t.DB.Conn(ctx)
	if err == nil {
		if _, err = conn.ExecContext(ctx, "SET llmtool.capture = on"); err != nil {
			discard(conn)
		}
	}
	if err != nil {
		t.pgWriterRsvd.Add(-1)
		return nil, err
	}
	return conn, nil
}

// putPGWriter keeps a reserved write connection for the next write, or
// closes it (failed: its write failed in a way that leaves its state
// unknown, or the pool closed).
func (t *Pool) putPGWriter(conn *sql.Conn, failed bool) {
	if !failed && park(t, t.pgWriters, conn) {
		return
	}
	t.pgWriterRsvd.Add(-1)
	t.releasePGWriter(conn, failed)
}

// releasePGWriter hands a reserved write connection back to the host's
// pool with the capture off, or closes it.
func (t *Pool) releasePGWriter(conn *sql.Conn, failed bool) {
	if !failed {
		if _, err := conn.ExecContext(context.Background(), "RESET llmtool.capture"); err == nil {
			conn.Close()
			return
		}
	}
	discard(conn)
}
