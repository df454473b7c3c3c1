package dbconn

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/migrate"
	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// PostgreSQL's capture: row triggers on the tracked tables.
//
// The migrations (subject llmtool_capture) create an UNLOGGED table,
// llmtool_capture, and a trigger function of the same name; TrackPG
// installs two triggers on each tracked table, llmtool_capture (AFTER
// INSERT OR UPDATE OR DELETE, FOR EACH ROW) and llmtool_capture_truncate
// (AFTER TRUNCATE, FOR EACH STATEMENT). They record a row only in a
// transaction that set llmtool.capture, which a write call does as its
// handler starts (StartCall): the host's own writes record nothing. Each
// row recorded is the table's oid, the operation, to_jsonb of the row
// before and after, the transaction's id and a sequence number; after the
// handler, Changes takes its transaction's rows (reads and deletes them, in
// one statement) and merges them per row as SQLite's capture does. So
// nothing outlives the transaction: a rollback takes the rows with it, a
// commit finds them deleted, or fails (see pgChanges for the call that
// does not take them).
//
// The function is SECURITY DEFINER, owned by the user that ran the
// migrations, with a fixed search_path: a handler that runs as
// Options.Role, which holds no privilege on llmtool's tables, still
// records its changes, and cannot record anything else (a trigger function
// cannot be called directly, and the statement check refuses changes that
// name llmtool_*, so a handler cannot drop or disable the trigger by name;
// ALTER TABLE ... DISABLE TRIGGER USER is caught by CheckCapture).
//
// What the triggers do not see, the text of the handler's statements
// tells, as far as it can (NoteStatement): a data change aimed at a table
// that is not tracked, and a schema change (CREATE, ALTER, DROP,
// TRUNCATE); either makes the call's changeset not undoable. Changes made
// to untracked tables by the host's triggers, cascades or functions are
// not seen on PostgreSQL.
//
// Under SERIALIZABLE a write that reads llmtool_capture takes predicate
// locks on what it reads: its own rows, by the index on tx. A concurrent
// write that records rows on the same index or heap page afterwards makes
// the pair look dependent; on its own that aborts nothing, but it can
// complete a cycle with a real dependency between the two calls' data,
// and then one of them runs again, as any serialization failure does.

// captureTrigger is the version of the triggers TrackPG installs, kept
// as their comment: a trigger with another comment is installed again.
const captureTrigger = "llmtool capture 1"

// captureMigrations create the table the triggers record into and their
// function. The function names the table with its schema, the schema
// the migrations ran in, so its search_path can hold pg_catalog alone.
var captureMigrations = []migrate.Step{{Postgres: []string{
	`CREATE UNLOGGED TABLE llmtool_capture (
	seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	tx BIGINT NOT NULL,
	rel OID NOT NULL,
	op TEXT NOT NULL,
	old JSONB,
	new JSONB
)`,
	`CREATE INDEX llmtool_capture_tx ON llmtool_capture (tx)`,
	`DO $do$ BEGIN EXECUTE format($f$
CREATE FUNCTION llmtool_capture() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $body$
BEGIN
	IF current_setting('llmtool.capture', true) IS DISTINCT FROM 'on' THEN
		RETURN NULL;
	END IF;
	INSERT INTO %I.llmtool_capture (tx, rel, op, old, new) VALUES (txid_current(), TG_RELID, TG_OP,
		CASE WHEN TG_OP IN ('UPDATE', 'DELETE') THEN to_jsonb(OLD) END,
		CASE WHEN TG_OP IN ('INSERT', 'UPDATE') THEN to_jsonb(NEW) END);
	RETURN NULL;
END $body$$f$, current_schema()); END $do$`,
	`REVOKE ALL ON FUNCTION llmtool_capture() FROM PUBLIC`,
}}, {Postgres: []string{
	// The check that lets a call skip reading llmtool_capture (see
	// Changes): at commit, a recorded row still there fails the commit.
	`DO $do$ BEGIN EXECUTE format($f$
CREATE FUNCTION llmtool_capture_untaken() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $body$
BEGIN
	IF EXISTS (SELECT 1 FROM %I.llmtool_capture WHERE seq = NEW.seq) THEN
		RAISE EXCEPTION 'llmtool: the call changed tracked rows that llmtool had not read; it runs again and reads them'
			USING ERRCODE = '` + engine.CaptureUntaken + `',
			HINT = 'SET CONSTRAINTS ALL IMMEDIATE after changing a tracked table also raises this: name the constraints instead.';
	END IF;
	RETURN NULL;
END $body$$f$, current_schema()); END $do$`,
	`REVOKE ALL ON FUNCTION llmtool_capture_untaken() FROM PUBLIC`,
	`CREATE CONSTRAINT TRIGGER llmtool_capture_untaken AFTER INSERT ON llmtool_capture
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION llmtool_capture_untaken()`,
}}}

// pgTracking is what a pool knows of the tables it tracks on PostgreSQL,
// read once by TrackPG.
type pgTracking struct {
	byOID    map[int64]*pgTable
	tables   []*pgTable
	names    map[string]bool // lower-case names, as the host and the tables spell them
	maxValue int
}

// pgTable is one tracked table.
type pgTable struct {
	given string   // as Config.Tables names it
	oid   int64    // its oid when TrackPG ran
	name  string   // its name in pg_class, what changesets call it
	key   []string // its primary key's columns, in order
}

// pgTableState describes the tables a host tracks: each one's oid, kind,
// name and primary key, and how many of llmtool's triggers on it are
// installed, enabled and of the current version.
const pgTableState = `SELECT t.name, COALESCE(c.oid::bigint, 0), COALESCE(c.relkind::text, ''), COALESCE(c.relname::text, ''),
	COALESCE((SELECT json_agg(a.attname ORDER BY k.ord)::text FROM pg_index i, unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord), pg_attribute a
		WHERE i.indrelid = c.oid AND i.indisprimary AND a.attrelid = c.oid AND a.attnum = k.attnum), '[]'),
	(SELECT count(*) FROM pg_trigger g WHERE g.tgrelid = c.oid AND g.tgname IN ('llmtool_capture', 'llmtool_capture_truncate')
		AND g.tgenabled IN ('O', 'A') AND obj_description(g.oid, 'pg_trigger') = $2)
FROM json_array_elements_text($1::json) WITH ORDINALITY AS t(name, ord) LEFT JOIN pg_class c ON c.oid = to_regclass(t.name)
ORDER BY t.ord`

// TrackPG makes the pool's write calls capture the changes to tables
// (PostgreSQL): it brings the capture's table and function to their
// current version, checks that each table exists and has a primary key,
// and installs the triggers where they are missing, all idempotent and
// safe for replicas starting together. Call it before the first call.
func (t *Pool) TrackPG(ctx context.Context, tables []string, maxValue int) error {
	if err := migrate.Apply(ctx, t.DB, engine.Postgres, "llmtool_capture", captureMigrations); err != nil {
		return err
	}
	names, err := json.Marshal(tables)
	if err != nil {
		return err
	}
	tr, missing, err := readTracked(ctx, t.DB, string(names))
	if err != nil {
		return err
	}
	if missing {
		err := migrate.Locked(ctx, t.DB, func(tx *sql.Tx) error {
			tr, missing, err = readTracked(ctx, tx, string(names)) // another replica may have installed them
			if err != nil || !missing {
				return err
			}
			for _, tb := range tr.tables {
				if err := installTriggers(ctx, tx, tb.oid); err != nil {
					return fmt.Errorf("llmtool: install the capture triggers on table %s: %w", tb.name, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	tr.maxValue = maxValue
	if tr.maxValue <= 0 {
		tr.maxValue = 64 << 10
	}
	t.pg = tr
	return nil
}

// readTracked reads the tracked tables (a JSON array of names) and
// reports whether any lacks a current trigger.
func readTracked(ctx context.Context, q Querier, names string) (*pgTracking, bool, error) {
	rows, err := q.QueryContext(ctx, pgTableState, names, captureTrigger)
	if err != nil {
		return nil, false, fmt.Errorf("llmtool: read the tracked tables: %w", err)
	}
	defer rows.Close()
	tr := &pgTracking{byOID: make(map[int64]*pgTable), names: make(map[string]bool)}
	missing := false
	for rows.Next() {
		tb := &pgTable{}
		var kind, key string
		var triggers int
		if err := rows.Scan(&tb.given, &tb.oid, &kind, &tb.name, &key, &triggers); err != nil {
			return nil, false, fmt.Errorf("llmtool: read the tracked tables: %w", err)
		}
		switch {
		case tb.oid == 0:
			return nil, false, fmt.Errorf("llmtool: Options.Changesets: tracked table %s does not exist; create it first, or remove it from Changesets.Tables", tb.given)
		case kind != "r":
			return nil, false, fmt.Errorf("llmtool: Options.Changesets: %s is not an ordinary table (pg_class.relkind %q); track tables, not views or partitioned tables", tb.given, kind)
		}
		if err := json.Unmarshal([]byte(key), &tb.key); err != nil {
			return nil, false, err
		}
		if len(tb.key) == 0 {
			return nil, false, fmt.Errorf("llmtool: Options.Changesets: tracked table %s has no primary key, which its changes are recorded and undone by; add one (ALTER TABLE %s ADD PRIMARY KEY (...))", tb.given, sqlcheck.QuoteIdent(tb.name))
		}
		missing = missing || triggers < 2
		tr.byOID[tb.oid] = tb
		tr.tables = append(tr.tables, tb)
		tr.names[strings.ToLower(tb.given)], tr.names[strings.ToLower(tb.name)] = true, true
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("llmtool: read the tracked tables: %w", err)
	}
	return tr, missing, nil
}

// installTriggers (re)creates llmtool's triggers on the table with oid.
func installTriggers(ctx context.Context, tx *sql.Tx, oid int64) error {
	var table string // quoted, qualified when not on the search path
	if err := tx.QueryRowContext(ctx, `SELECT $1::bigint::oid::regclass::text`, oid).Scan(&table); err != nil {
		return err
	}
	const when = `WHEN (pg_catalog.current_setting('llmtool.capture', true) = 'on') EXECUTE FUNCTION llmtool_capture()`
	for _, q := range []string{
		`DROP TRIGGER IF EXISTS llmtool_capture ON ` + table,
		`DROP TRIGGER IF EXISTS llmtool_capture_truncate ON ` + table,
		`CREATE TRIGGER llmtool_capture AFTER INSERT OR UPDATE OR DELETE ON ` + table + ` FOR EACH ROW ` + when,
		`CREATE TRIGGER llmtool_capture_truncate AFTER TRUNCATE ON ` + table + ` FOR EACH STATEMENT ` + when,
		`COMMENT ON TRIGGER llmtool_capture ON ` + table + ` IS '` + captureTrigger + `'`,
		`COMMENT ON TRIGGER llmtool_capture_truncate ON ` + table + ` IS '` + captureTrigger + `'`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// pgCall is a write call's capture on PostgreSQL: what the text of its
// handler's statements told.
type pgCall struct {
	tr        *pgTracking
	mu        sync.Mutex
	untracked string // the first table not tracked a statement changed
	schema    string // the first statement that changed the schema
	named     bool   // a statement changes a tracked table, by its text
}

// StartCall readies a write call's transaction for its handler, in one
// statement: the capture of the tracked tables on (PostgreSQL's triggers
// record only in a transaction that set llmtool.capture), and the rest of
// the transaction run as the pool's role, if it has one (see EnterRole).
// SET LOCAL ends with the transaction, so neither outlives the call. On a
// reserved write connection the capture is on already (pgsession.go):
// no statement, or the role's alone.
func (t *Pool) StartCall(ctx context.Context, w *WriteTx) error {
	if t.pg == nil {
		return t.EnterRole(ctx, w.Tx)
	}
	if w.pgOn { // a reserved write connection: the capture is on (pgsession.go)
		w.pg = &pgCall{tr: t.pg}
		return t.EnterRole(ctx, w.Tx)
	}
	q := "SET LOCAL llmtool.capture = on"
	if t.Role != "" {
		q += "; SET LOCAL ROLE " + sqlcheck.QuoteIdent(t.Role)
	}
	if _, err := w.Tx.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("llmtool: start the call's capture of tracked tables (Options.Changesets): %w", err)
	}
	w.pg = &pgCall{tr: t.pg}
	return nil
}

// NoteStatement notes what the text of a statement the handler ran tells
// of its changes, on PostgreSQL: a schema change, or a change of rows
// (rows of them; -1 when not known) in a table that is not tracked.
// A nil WriteTx (a read call) notes nothing.
func (w *WriteTx) NoteStatement(query string, rows int64) {
	if !w.Noting() {
		return
	}
	p := w.pg
	schema := sqlcheck.SchemaChange(sqlcheck.Postgres, query)
	kind, table := sqlcheck.Target(sqlcheck.Postgres, query)
	tracked := kind != "" && p.tr.names[strings.ToLower(table)]
	untracked := kind != "" && rows != 0 && !tracked && !own(table)
	if schema == "" && !untracked && !tracked {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.named = p.named || tracked
	if p.schema == "" {
		p.schema = schema
	}
	if untracked && p.untracked == "" {
		p.untracked = table
	}
}

// Noting reports whether NoteStatement records anything: a write call
// with PostgreSQL's capture on.
func (w *WriteTx) Noting() bool { return w != nil && w.pg != nil }

// captureState finds the tracked tables that a call's schema change left
// without llmtool's triggers: disabled, dropped, or the table dropped and
// created again under its name (a table dropped for good is no loss).
const captureState = `SELECT t.given FROM json_to_recordset($1::json) AS t(given text, oid bigint)
WHERE EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = t.oid::oid AND (SELECT count(*) FROM pg_trigger g
		WHERE g.tgrelid = c.oid AND g.tgname IN ('llmtool_capture', 'llmtool_capture_truncate') AND g.tgenabled IN ('O', 'A')) < 2)
	OR to_regclass(t.given)::oid::bigint <> t.oid
ORDER BY 1 LIMIT 1`

// CheckCapture refuses a write call whose schema change left a tracked
// table without llmtool's triggers (ALTER TABLE ... DISABLE TRIGGER,
// DROP and CREATE TABLE): its changes, and every later call's, would go
// unrecorded. It asks the server only after a schema change. Call it
// after the handler, as the connecting user.
func (w *WriteTx) CheckCapture(ctx context.Context) (*sqlcheck.Refusal, error) {
	p := w.pg
	if p == nil || p.schema == "" {
		return nil, nil
	}
	type table struct {
		Given string `json:"given"`
		OID   int64  `json:"oid"`
	}
	tables := make([]table, len(p.tr.tables))
	for i, tb := range p.tr.tables {
		tables[i] = table{tb.given, tb.oid}
	}
	arg, err := json.Marshal(tables)
	if err != nil {
		return nil, err
	}
	var name string
	switch err := w.Tx.QueryRowContext(ctx, captureState, string(arg)).Scan(&name); {
	case err == sql.ErrNoRows:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("llmtool: check the capture triggers after the call's schema change: %w", err)
	}
	return &sqlcheck.Refusal{Statement: p.schema,
		Reason:  "leaves tracked table " + name + " without llmtool's capture triggers, so its changes would no longer be recorded",
		Instead: "change tracked tables' triggers in the host's migrations, and restart the application so that llmtool installs its triggers again."}, nil
}

// pgTake reads and deletes the rows the call's triggers recorded, in the
// order they were recorded.
const pgTake = `WITH taken AS (DELETE FROM llmtool_capture WHERE tx = txid_current() RETURNING seq, rel, op, old, new)
SELECT rel::bigint, rel::regclass::text, op, old::text, new::text FROM taken ORDER BY seq`

// pgChanges is Changes on PostgreSQL. Reading the rows the triggers
// recorded costs a statement, which a call that named no tracked table
// in its statements' text skips unless exact: a tracked row it changed
// anyway (by a foreign key's cascade, a host's trigger, a function, a
// data-changing WITH) stays in llmtool_capture, and the check installed
// with it (llmtool_capture_untaken, a deferred constraint trigger) fails
// the commit with engine.CaptureUntaken, after which the registry runs
// the call again, exact.
func (w *WriteTx) pgChanges(ctx context.Context, exact bool) (*changeset.Set, error) {
	p := w.pg
	set := &changeset.Set{}
	if p.untracked != "" {
		set.NotUndoable = fmt.Sprintf("it changed table %s, which is not tracked", p.untracked)
	}
	if p.schema != "" && set.NotUndoable == "" {
		what := "changed the schema"
		if len(p.schema) >= 8 && strings.EqualFold(p.schema[:8], "TRUNCATE") {
			what = "emptied tables"
		}
		set.NotUndoable = "it " + what + " (" + p.schema + ")"
	}
	if !exact && !p.named {
		if set.NotUndoable == "" {
			return nil, nil
		}
		return set, nil
	}
	rows, err := w.Tx.QueryContext(ctx, pgTake)
	if err != nil {
		return nil, fmt.Errorf("llmtool: read the changes the capture triggers recorded: %w", err)
	}
	defer rows.Close()
	m := merger{set: set, at: make(map[string]int)}
	for rows.Next() {
		var oid int64
		var rel, op string
		var before, after sql.NullString
		if err := rows.Scan(&oid, &rel, &op, &before, &after); err != nil {
			return nil, fmt.Errorf("llmtool: read the changes the capture triggers recorded: %w", err)
		}
		tb := p.tr.byOID[oid]
		switch {
		case op == "TRUNCATE":
			if set.NotUndoable == "" {
				set.NotUndoable = "it truncated table " + rel
			}
			continue
		case tb == nil: // another registry's tracked table
			if set.NotUndoable == "" {
				set.NotUndoable = fmt.Sprintf("it changed table %s, which is not tracked", rel)
			}
			continue
		}
		bv, bk, err := p.tr.values(tb, before, set)
		if err != nil {
			return nil, err
		}
		av, ak, err := p.tr.values(tb, after, set)
		if err != nil {
			return nil, err
		}
		m.add(tb.name, changeset.Op(strings.ToLower(op)), bv, av, bk, ak)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("llmtool: read the changes the capture triggers recorded: %w", err)
	}
	m.finish()
	if len(set.Rows) == 0 && set.NotUndoable == "" {
		return nil, nil
	}
	return set, nil
}

// values decodes a row's to_jsonb text into its values and its key; nil
// for no row. A value longer than the limit, as JSON, is recorded as
// omitted, and the call cannot be undone.
func (tr *pgTracking) values(tb *pgTable, row sql.NullString, set *changeset.Set) (changeset.Values, changeset.Values, error) {
	if !row.Valid {
		return nil, nil, nil
	}
	var v changeset.Values
	if err := json.Unmarshal([]byte(row.String), &v); err != nil {
		return nil, nil, fmt.Errorf("llmtool: a row of table %s as recorded: %w", tb.name, err)
	}
	for c, raw := range v {
		switch {
		case len(raw) > tr.maxValue:
			v[c] = omitted(len(raw))
			if set.NotUndoable == "" {
				set.NotUndoable = fmt.Sprintf("%s.%s: %v", tb.name, c, errTooLarge)
			}
		case raw[0] == '{' || raw[0] == '[':
			// jsonb writes ", " and ": "; the history stores values
			// compact, so the set says the same in both.
			var b bytes.Buffer
			if json.Compact(&b, raw) == nil {
				v[c] = b.Bytes()
			}
		}
	}
	key := make(changeset.Values, len(tb.key))
	for _, c := range tb.key {
		key[c] = v[c]
	}
	return v, key, nil
}
