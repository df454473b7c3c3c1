package llmtool

import (
	"context"
	"database/sql"
	"time"

	"github.com/llmtool/llmtool/internal/dbconn"
	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/migrate"
)

// openEngine declares or detects db's engine and migrates llmtool's tables.
func openEngine(db *sql.DB, opts *Options) (engine.Engine, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		e   engine.Engine
		err error
	)
	if opts != nil && opts.Engine != "" {
		e, err = engine.Parse(opts.Engine)
	} else {
		e, err = engine.Detect(ctx, db)
	}
	if err != nil {
		return 0, err
	}
	if e == engine.SQLite {
		if err := dbconn.CheckAuthorizer(ctx, db); err != nil {
			return 0, err
		}
	}
	return e, migrate.Apply(ctx, db, e, "llmtool", coreMigrations)
}

// The tenant settings' tables, which package tenant reads and writes:
// one row per setting, and a version every change bumps.
const (
	tenantTable   = "llmtool_scope_settings"
	tenantVersion = "llmtool_scope_version"
)

const createTenantTable = `CREATE TABLE IF NOT EXISTS ` + tenantTable + ` (
	scope TEXT NOT NULL,
	tool TEXT NOT NULL DEFAULT '',
	enabled INTEGER NOT NULL,
	updated_at TEXT NOT NULL,
	PRIMARY KEY (scope, tool)
)`

// coreMigrations are the versions of llmtool's own tables: the tenant
// settings (1), their version counter (2), PostgreSQL's commit guard (3,
// dropped by 5), the used approval tokens' nonces and when they were
// used, in Unix seconds (4; approval.go).
// Append a step to change them; never edit a released one.
var coreMigrations = []migrate.Step{{
	// Created on first use before versions existed, hence IF NOT EXISTS.
	SQLite:   []string{createTenantTable},
	Postgres: []string{createTenantTable},
}, {
	SQLite: []string{`CREATE TABLE ` + tenantVersion + ` (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)`,
		`INSERT INTO ` + tenantVersion + ` (id, version) VALUES (1, 0)`},
	Postgres: []string{`CREATE TABLE ` + tenantVersion + ` (id INTEGER PRIMARY KEY, version BIGINT NOT NULL)`,
		`INSERT INTO ` + tenantVersion + ` (id, version) VALUES (1, 0)`},
}, {
	// The commit guard that kept a handler from committing the *sql.Tx
	// that WriteCtx.Tx gave out; step 5 drops it.
	Postgres: []string{
		`CREATE UNLOGGED TABLE llmtool_commit_guard (txid BIGINT PRIMARY KEY)`,
		`CREATE FUNCTION llmtool_commit_guard_check() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF current_setting('llmtool.commit', true) IS DISTINCT FROM 'allowed' THEN
		RAISE EXCEPTION 'llmtool: a tool handler committed its own transaction; llmtool rolled it back'
			USING ERRCODE = '2D000', HINT = 'return an error to roll back, and let llmtool commit';
	END IF;
	RETURN NULL;
END $$`,
		`CREATE CONSTRAINT TRIGGER llmtool_commit_guard AFTER INSERT ON llmtool_commit_guard
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION llmtool_commit_guard_check()`,
	},
}, {
	// An approved commit writes a row here: on SQLite the integer key is
	// the rowid, so the row is one B-tree entry.
	SQLite:   []string{`CREATE TABLE ` + approvalsTable + ` (nonce INTEGER PRIMARY KEY, used_at INTEGER NOT NULL)`},
	Postgres: []string{`CREATE TABLE ` + approvalsTable + ` (nonce BIGINT PRIMARY KEY, used_at BIGINT NOT NULL)`},
}, {
	// WriteCtx.Tx is gone, and with it the commit guard of step 3.
	Postgres: []string{
		`DROP TABLE IF EXISTS llmtool_commit_guard`, // its trigger with it
		`DROP FUNCTION IF EXISTS llmtool_commit_guard_check()`,
	},
}}
