package dbconn

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"sync/atomic"

	"github.com/llmtool/llmtool/internal/engine"
)

// CommitGuard keeps a handler that took the *sql.Tx (WriteCtx.Tx) from
// committing it: on SQLite the driver's commit hook turns its COMMIT into
// a ROLLBACK; on PostgreSQL a deferred constraint trigger (created by the
// registry's migrations, see GuardMigration) fails any COMMIT of the
// transaction that the registry did not allow first.
type CommitGuard struct {
	allow    atomic.Bool
	postgres bool // installed as PostgreSQL's trigger row
}

// Allow lets the registry's own COMMIT through.
func (g *CommitGuard) Allow(ctx context.Context, tx *sql.Tx) error {
	g.allow.Store(true)
	if !g.postgres {
		return nil
	}
	var mine int
	var allowed string
	err := tx.QueryRowContext(ctx, `WITH d AS (DELETE FROM `+GuardTable+` WHERE txid = txid_current() RETURNING 1)
SELECT set_config('llmtool.commit', 'allowed', true), (SELECT count(*) FROM d)`).Scan(&allowed, &mine)
	if err == nil && mine == 0 {
		// The row went with the transaction the handler ended: whatever
		// ran on the *sql.Tx since ran outside it.
		err = ErrTxEnded
	}
	return err
}

// ErrTxEnded reports that the handler ended the registry's transaction
// itself (a COMMIT or ROLLBACK run on the *sql.Tx it took).
var ErrTxEnded = errors.New("the transaction the registry began is no longer open")

// GuardTable holds a row per PostgreSQL transaction whose *sql.Tx a
// handler took; its trigger fails their COMMIT unless the registry allowed
// it. The rows go with the registry's own COMMIT, or with the rollback.
const GuardTable = "llmtool_commit_guard"

// GuardMigration creates GuardTable and its deferred trigger.
var GuardMigration = []string{
	`CREATE UNLOGGED TABLE ` + GuardTable + ` (txid BIGINT PRIMARY KEY)`,
	`CREATE FUNCTION llmtool_commit_guard_check() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF current_setting('llmtool.commit', true) IS DISTINCT FROM 'allowed' THEN
		RAISE EXCEPTION 'llmtool: a tool handler committed its own transaction; llmtool rolled it back'
			USING ERRCODE = '2D000', HINT = 'return an error to roll back, and let llmtool commit';
	END IF;
	RETURN NULL;
END $$`,
	`CREATE CONSTRAINT TRIGGER llmtool_commit_guard AFTER INSERT ON ` + GuardTable + `
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION llmtool_commit_guard_check()`,
}

// InstallTx installs the guard on a write transaction: the SQLite commit
// hook on its connection, or PostgreSQL's trigger row in the transaction.
func (g *CommitGuard) InstallTx(ctx context.Context, w *WriteTx, e engine.Engine) bool {
	if e == engine.Postgres {
		g.postgres = true
		_, err := w.Tx.ExecContext(ctx, `INSERT INTO `+GuardTable+` (txid) VALUES (txid_current())`)
		return err == nil
	}
	return g.Install(w.Conn)
}

// install registers the guard as conn's commit hook. It reports false if
// the driver has no commit hook. It finds the hook by reflection, so the
// core does not import a driver: modernc.org/sqlite's
// RegisterCommitHook(func() int32) and mattn/go-sqlite3's
// RegisterCommitHook(func() int) both fit.
func (g *CommitGuard) Install(conn *sql.Conn) bool {
	ok := false
	_ = conn.Raw(func(dc any) error {
		m := reflect.ValueOf(dc).MethodByName("RegisterCommitHook")
		if !m.IsValid() || m.Type().NumIn() != 1 {
			return nil
		}
		ft := m.Type().In(0)
		if ft.Kind() != reflect.Func || ft.NumIn() != 0 || ft.NumOut() != 1 {
			return nil
		}
		switch ft.Out(0).Kind() {
		case reflect.Int, reflect.Int32, reflect.Int64:
		default:
			return nil
		}
		deny, allow := reflect.ValueOf(1).Convert(ft.Out(0)), reflect.ValueOf(0).Convert(ft.Out(0))
		hook := reflect.MakeFunc(ft, func([]reflect.Value) []reflect.Value {
			if g.allow.Load() {
				return []reflect.Value{allow}
			}
			return []reflect.Value{deny} // non-zero: SQLite rolls back instead
		})
		m.Call([]reflect.Value{hook})
		ok = true
		return nil
	})
	return ok
}
