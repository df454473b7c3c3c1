package llmtool

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/dbconn"
	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/migrate"
	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// Changesets: each write call's exact changes to the tables the host
// tracks (Options.Changesets), captured in its transaction (package
// dbconn), bound by approvals (approval.go), stored in the history in the
// same transaction, and undone by the built-in tool undo_changes
// (undo.go), and shown by list_changes and changes://recent (history.go).

// changesetsTable is the history: one row per committed write call that
// changed tracked rows.
const changesetsTable = "llmtool_changes"

// changesetTable creates the history table; integer is the engine's
// 64-bit integer type, serial its auto-increasing key.
func changesetTable(integer, serial string) []string {
	return []string{`CREATE TABLE ` + changesetsTable + ` (
	id ` + serial + ` PRIMARY KEY,
	tool TEXT NOT NULL,
	principal TEXT NOT NULL,
	tenant TEXT NOT NULL,
	conversation TEXT NOT NULL,
	created_at ` + integer + ` NOT NULL,
	rows TEXT NOT NULL,
	not_undoable TEXT NOT NULL,
	undo_of ` + integer + `,
	undone_by ` + integer + `
)`, `CREATE INDEX ` + changesetsTable + `_tenant ON ` + changesetsTable + ` (tenant, id)`}
}

// tenantIndex makes the tenant index partial, for calls with a tenant
// only: a database whose calls carry none (one host, one tenant) writes
// no index entry per tracked call, which on SQLite is a page of the
// commit. changeset.List states the index's condition in a tenant's
// query, so that both engines use it.
var tenantIndex = []string{`DROP INDEX ` + changesetsTable + `_tenant`,
	`CREATE INDEX ` + changesetsTable + `_tenant ON ` + changesetsTable + ` (tenant, id) WHERE tenant <> ''`}

// changesetMigrations create the history table.
var changesetMigrations = []migrate.Step{{
	SQLite:   changesetTable("INTEGER", "INTEGER"),
	Postgres: changesetTable("BIGINT", "BIGSERIAL"),
}, {SQLite: tenantIndex, Postgres: tenantIndex}}

// tracking is a registry's Options.Changesets.
type tracking struct {
	cfg       changeset.Config
	generated map[string]map[string]bool // lower-case table → column
	mu        sync.Mutex
	pruned    time.Time       // when old history was last deleted; mu guards it
	insert    dbconn.Prepared // the history's INSERT

	// exact holds the names of the write tools whose calls changed
	// tracked rows their statements did not name (PostgreSQL): their
	// calls read the capture in every case from then on (see
	// dbconn.WriteTx.Changes), rather than run twice.
	exact sync.Map
}

// exactFor reports whether the calls of tool read PostgreSQL's capture in
// every case.
func (t *tracking) exactFor(tool string) bool {
	if t == nil {
		return false
	}
	_, ok := t.exact.Load(tool)
	return ok
}

// close closes the prepared INSERT, with the registry.
func (t *tracking) close() {
	if t != nil {
		t.insert.Close()
	}
}

// initChangesets applies Options.Changesets: the history table, the
// capture on write connections, the built-in tools.
func (r *Registry) initChangesets(ctx context.Context, cfg changeset.Config) error {
	if len(cfg.Tables) == 0 {
		if cfg.Tools {
			return fmt.Errorf("llmtool: Options.Changesets.Tools needs Tables: name the tables whose changes can be undone")
		}
		return nil
	}
	if r.tx.DB == nil {
		return errNoDB
	}
	if err := migrate.Apply(ctx, r.tx.DB, r.tx.Engine, "llmtool_changes", changesetMigrations); err != nil {
		return err
	}
	if r.tx.Engine == engine.Postgres {
		// Row triggers on the tables (internal/dbconn/capture_pg.go).
		if err := r.tx.TrackPG(ctx, cfg.Tables, cfg.MaxValue); err != nil {
			return err
		}
	} else {
		r.tx.Track, r.tx.MaxValue = cfg.Tables, cfg.MaxValue // the pre-update hook
	}
	tr := &tracking{cfg: cfg, generated: make(map[string]map[string]bool), insert: dbconn.Prepared{Query: `INSERT INTO ` + changesetsTable + ` (tool, principal, tenant, conversation, created_at, rows, not_undoable, undo_of)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`}}
	for t, cols := range cfg.Generated {
		m := make(map[string]bool)
		for _, c := range cols {
			m[c] = true
		}
		tr.generated[strings.ToLower(t)] = m
	}
	r.tracked = tr
	if cfg.Tools {
		r.addBuiltinLocked(r.newUndoTool())
		r.addBuiltinLocked(r.newListChangesTool())
		r.addBuiltinLocked(r.newChangesResource())
	}
	return nil
}

// readScopes are the scopes that reading the history needs
// (changeset.Config.ReadScopes).
func (t *tracking) readScopes() []string {
	if t.cfg.ReadScopes != nil {
		return t.cfg.ReadScopes
	}
	return t.cfg.Scopes
}

// tracks reports whether table is tracked.
func (t *tracking) tracks(table string) bool {
	return slices.ContainsFunc(t.cfg.Tables, func(s string) bool { return strings.EqualFold(s, table) })
}

// isGenerated reports whether the host declared table.column generated
// (changeset.Config.Generated).
func (t *tracking) isGenerated(table, column string) bool {
	return t != nil && t.generated[strings.ToLower(table)][column]
}

// captureHooks plug the capture into the write path (hooks.go) when
// tables are tracked: on PostgreSQL each statement's text is noted (what
// it names decides whether the capture must be read; see
// dbconn.WriteTx.NoteStatement), and before commit the run's changes are
// read into its changeset.
func (r *Registry) captureHooks() writeHooks {
	var h writeHooks
	if r.tracked == nil {
		return h
	}
	if r.tx.Engine == engine.Postgres {
		h.statement = append(h.statement, func(cs *callState, query string, rows int64, err error) {
			if err == nil {
				cs.wtx.NoteStatement(query, rows)
			}
		})
	}
	h.beforeCommit = append(h.beforeCommit, func(ctx context.Context, cs *callState) error { return cs.captureChanges(ctx) })
	return h
}

// historyHooks plug the history into the write path (hooks.go) when
// tables are tracked: before commit, once the preview let the run go on,
// the run's changeset is stored in its transaction.
func (r *Registry) historyHooks() writeHooks {
	if r.tracked == nil {
		return writeHooks{}
	}
	return writeHooks{beforeCommit: []func(context.Context, *callState) error{
		func(ctx context.Context, cs *callState) error { return r.storeChanges(ctx, cs, cs.wtx.Tx) },
	}}
}

// captureChanges ends the capture of a write run, after its handler, in
// llmtool's own mode, as the connecting user.
func (cs *callState) captureChanges(ctx context.Context) error {
	if cs.wtx == nil {
		return nil
	}
	refusal, err := cs.wtx.CheckCapture(ctx) // PostgreSQL: its triggers outlived the call's schema change
	if refusal != nil {
		return cs.refuseStatement(refusal)
	}
	if err != nil {
		return err
	}
	set, err := cs.wtx.Changes(ctx, cs.exact)
	if err != nil {
		return fmt.Errorf("llmtool: the call's changeset: %w", err)
	}
	cs.changes = set
	return nil
}

// untakenRefusal refuses a statement that ran the capture's check before
// llmtool read the call's changes (PostgreSQL: SET CONSTRAINTS ALL
// IMMEDIATE after a tracked table changed; see dbconn's capture).
func untakenRefusal(query string) *sqlcheck.Refusal {
	return &sqlcheck.Refusal{Statement: sqlcheck.Short(query),
		Reason:  "runs llmtool's check of the changes to tracked tables before llmtool has read them",
		Instead: "name the constraints to check at once (SET CONSTRAINTS name, ... IMMEDIATE) rather than ALL."}
}

// storeChanges records a committing call's changeset in the history, in
// its transaction, and gives the set its ID. It marks the changes an
// undo undid.
func (r *Registry) storeChanges(ctx context.Context, cs *callState, tx *sql.Tx) error {
	set := cs.changes
	if set == nil || len(set.Rows) == 0 || r.tracked == nil {
		// Nothing tracked changed: no entry (the Result still says why
		// the call could not be undone, if it changed other tables).
		return nil
	}
	rows, err := json.Marshal(set.Rows)
	if err != nil {
		return err
	}
	var undoOf any
	if len(cs.undid) > 0 {
		undoOf = cs.undid[0]
	}
	now := time.Now()
	insert, err := r.tracked.insert.In(ctx, r.tx.DB, tx)
	if err != nil {
		return fmt.Errorf("llmtool: record the call's changeset: %w", err)
	}
	err = insert.QueryRowContext(ctx,
		cs.tool.spec.Name, principalID(ctx), TenantFrom(ctx), cs.conversation, now.UnixMilli(), string(rows), set.NotUndoable, undoOf).Scan(&set.ID)
	if err != nil {
		return fmt.Errorf("llmtool: record the call's changeset: %w", err)
	}
	for _, id := range cs.undid {
		if _, err := tx.ExecContext(ctx, `UPDATE `+changesetsTable+` SET undone_by = $1 WHERE id = $2`, set.ID, id); err != nil {
			return fmt.Errorf("llmtool: mark change %d undone: %w", id, err)
		}
	}
	return r.pruneChanges(ctx, tx, now)
}

// pruneChanges deletes history older than the retention, at most once a
// minute.
func (r *Registry) pruneChanges(ctx context.Context, tx *sql.Tx, now time.Time) error {
	t := r.tracked
	if t.cfg.Retention <= 0 {
		return nil
	}
	t.mu.Lock()
	due := now.Sub(t.pruned) >= time.Minute
	if due {
		t.pruned = now
	}
	t.mu.Unlock()
	if !due {
		return nil
	}
	// Entries are numbered in time order, so the old ones are those
	// numbered below the first recent one: found by reading the old ones
	// only, with no index on the time.
	_, err := tx.ExecContext(ctx, `DELETE FROM `+changesetsTable+` WHERE id < coalesce((SELECT id FROM `+changesetsTable+` WHERE created_at >= $1 ORDER BY id LIMIT 1), 1 + (SELECT max(id) FROM `+changesetsTable+`))`, now.Add(-t.cfg.Retention).UnixMilli())
	return err
}

// ownList reads the history in the call's write transaction, past the
// authorizer and the statement check that keep handlers from llmtool's
// tables, and, with Options.Role, as the connecting user (the role may
// not read them). Only llmtool's built-in tools use it.
func (cs *callState) ownList(ctx context.Context, f changeset.Filter) ([]changeset.Entry, error) {
	if err := cs.reg.tx.LeaveRole(ctx, cs.wtx.Tx); err != nil {
		return nil, err
	}
	cs.policy.SetMode(dbconn.ModeOwn)
	entries, err := changeset.List(ctx, cs.wtx.Tx, f)
	cs.policy.SetMode(dbconn.ModeWrite)
	if err != nil {
		return nil, err
	}
	return entries, cs.reg.tx.EnterRole(ctx, cs.wtx.Tx)
}

// ownExec runs one of llmtool's own statements in the call's write
// transaction, past the authorizer and the statement check: SQLite's
// PRAGMA defer_foreign_keys, PostgreSQL's savepoints.
func (cs *callState) ownExec(ctx context.Context, query string, args ...any) error {
	cs.policy.SetMode(dbconn.ModeOwn)
	defer cs.policy.SetMode(dbconn.ModeWrite)
	_, err := cs.wtx.Tx.ExecContext(ctx, query, args...)
	return err
}
