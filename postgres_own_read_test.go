package llmtool_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/tenant"
)

// TestPostgresOwnTablesUnread: issue 37. Without Options.Role, tenant A's
// tools try to read tenant B's history (llmtool_changes, whose rows hold
// what B's writes changed) in every spelling: quoted, qualified, in any
// case, with comments and Unicode escapes, through a CTE, a subquery or
// TABLE, through functions that read a table by a name given as a value
// or every table at once, through the column statistics, and through the
// statements that run dynamic SQL, copy or change the search path, and
// through a trigger function that takes a table's name as a string. Each
// spelling first runs as the host, to show that it does read B's secret;
// through Invoke, from a read tool and from a write tool, each is refused
// before it reaches the server, and nothing of B's comes back. llmtool's
// own statements still read and write the table: B's list_changes lists
// B's changes.
func TestPostgresOwnTablesUnread(t *testing.T) {
	t.Parallel()
	db, _ := openPG(t)
	opts := &llmtool.Options{TenantCacheTTL: tenant.NoCache, Logger: quietLogger(),
		Changesets: changeset.Config{Tables: []string{"items"}, Tools: true}}
	reg, a, b := securityRegistry(t, db, opts)
	require.NoError(t, reg.Tenants().SetWrites(context.Background(), "b", true))
	const secret = "secret-of-b"
	for i := range 3 {
		res := reg.Invoke(b, llmtool.Call{Tool: "add_item", Args: mustJSON(t, map[string]any{"name": fmt.Sprintf("%s-%d", secret, i), "qty": i})})
		require.False(t, res.IsError, res.Text())
	}
	// The statistics autovacuum would gather; the XML functions' target.
	for _, q := range []string{`ANALYZE llmtool_changes`, `CREATE SCHEMA hist`, `CREATE VIEW hist.v AS SELECT rows FROM llmtool_changes`} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}

	const (
		named   = "names a table llmtool keeps for itself (llmtool_*), which no tool may read"
		readIns = "llmtool's tables hold every tenant's settings, approvals and history: read them through the Registry (Tenants().Writes, changeset.List, the list_changes tool), never in a tool's SQL."
		byValue = "reads a table or a cursor named by a value (a string or an OID), which llmtool cannot check"
		every   = "reads every table of the database or of a schema, llmtool's own among them"
		xmlIns  = "name the tables in the query (SELECT ... FROM t), where llmtool checks them; build XML with xmlelement, xmlforest and xmlagg."
		stats   = "reads the planner's column statistics, which hold sample values of every table, llmtool's own among them"
		statIns = "read the host's tables themselves; leave column statistics to the planner."
		sqlText = "runs SQL given as text, which llmtool cannot check"
		textIns = "run the query as a statement of its own, which llmtool checks."
		ownSeq  = "names its sequence by a value that may be one of llmtool's (llmtool_*): setting it would make llmtool's next history entries collide, reading it counts every tenant's"
		seqIns  = "name the host's sequence as a plain string: setval('notes_id_seq', n)."
	)
	tests := []struct {
		sql, reason, instead string
		reads                bool // run as the host, the statement's first column holds B's secret
	}{
		{`SELECT rows FROM llmtool_changes WHERE tenant = 'b'`, named, readIns, true},
		{`select ROWS from LLMTOOL_CHANGES`, named, readIns, true},
		{`SELECT rows FROM "llmtool_changes"`, named, readIns, true},
		{`SELECT rows FROM public.llmtool_changes`, named, readIns, true},
		{`SELECT rows FROM "public"."llmtool_changes"`, named, readIns, true},
		{`SELECT rows FROM public . /* x */ llmtool_changes`, named, readIns, true},
		{`SELECT rows FROM/* a /* nested */ one */llmtool_changes`, named, readIns, true},
		{`SELECT rows FROM U&"llmtool\005Fchanges"`, named, readIns, true},
		{`SELECT rows FROM u&"\006c\006cmtool\005fchanges"`, named, readIns, true},
		{`SELECT rows FROM U&"!006C!006Cmtool_changes" UESCAPE '!'`, named, readIns, true},
		{`SELECT rows FROM U&"\+00006Clmtool_changes"`, named, readIns, true},
		{`SELECT rows FROM (TABLE llmtool_changes) AS c`, named, readIns, true},
		{`WITH c AS (SELECT rows FROM llmtool_changes) SELECT rows FROM c`, named, readIns, true},
		{`SELECT (SELECT string_agg(rows, ',') FROM llmtool_changes)`, named, readIns, true},
		{`SELECT row_to_json(c)::text FROM llmtool_changes AS c`, named, readIns, true},
		{`SELECT table_to_xml('llmtool_changes', true, false, '')::text`, "calls table_to_xml, which " + byValue, xmlIns, true},
		{`SELECT table_to_xml(('llmtool' || '_changes')::regclass, true, false, '')::text`, "calls table_to_xml, which " + byValue, xmlIns, true},
		{`SELECT pg_catalog.table_to_xml_and_xmlschema('hist.v', true, false, '')::text`, "calls table_to_xml_and_xmlschema, which " + byValue, xmlIns, true},
		{`SELECT U&"table\005Fto\005Fxml"('hist.v', true, false, '')::text`, `calls "table_to_xml", which ` + byValue, xmlIns, true},
		{`SELECT schema_to_xml('hist', true, false, '')::text`, "calls schema_to_xml, which " + every, xmlIns, true},
		{`SELECT database_to_xml(true, false, '')::text`, "calls database_to_xml, which " + every, xmlIns, true},
		{`SELECT query_to_xml('TABLE llmtool' || '_changes', true, false, '')::text`, "calls query_to_xml, which " + sqlText, textIns, true},
		{`SELECT string_agg(histogram_bounds::text, ',') FROM pg_stats`, stats, statIns, true},
		{`SELECT string_agg(stavalues1::text, ',') FROM pg_statistic`, stats, statIns, true},
		{`SELECT setval('llmtool_changes_id_seq', 1)::text`, "calls setval, which " + ownSeq, seqIns, false},
		{`SELECT pg_sequence_last_value('llmtool_changes_id_seq')::text`, "calls pg_sequence_last_value, which " + ownSeq, seqIns, false},
		{`COPY llmtool_changes TO STDOUT`, "copies between a table and a file, a program or the client's stream, outside the queries llmtool checks",
			"insert rows with INSERT (many at once with several VALUES rows or unnest) and read them with SELECT; files, programs and bulk loads are the host's business.", false},
		{`EXPLAIN ANALYZE EXECUTE history`, "runs a statement prepared on the session, which llmtool cannot check",
			"run the statement itself, with its arguments: the driver prepares and caches statements.", false},
		{`SET search_path = hist, public`, "changes the settings of the session or of the call's transaction", settingInstead, false},
		{`SELECT set_config('search_path', 'hist, public', true)`, "calls set_config, which changes the session's settings", settingInstead, false},
	}
	for _, tt := range tests {
		require.LessOrEqual(t, len(tt.sql), 80, "the refusal quotes the statement whole: %s", tt.sql)
		if tt.reads {
			// Without the check: the host's own connection reads B's
			// secret this way.
			var got string
			require.NoError(t, db.QueryRow(tt.sql).Scan(&got), tt.sql)
			require.Contains(t, got, secret, tt.sql)
		}
		for _, tool := range []string{"query_sql", "run_sql"} {
			res := reg.Invoke(a, llmtool.Call{Tool: tool, Args: mustJSON(t, modelSQL{SQL: tt.sql})})
			require.True(t, res.IsError, "%s: %s", tool, tt.sql)
			require.ErrorIs(t, res.Err, llmtool.ErrStatementRefused, "%s: %s", tool, tt.sql)
			require.EqualError(t, res.Err, refusedBy(tool, tt.sql, tt.reason, tt.instead), "%s: %s", tool, tt.sql)
			require.Equal(t, "Internal error in "+tool+"; the details were logged. Try again once; if it fails again, tell the user the tool is failing.", res.Text())
			require.NotContains(t, string(res.JSON), secret, "%s: %s", tool, tt.sql)
		}
	}

	// Set back, llmtool's sequence would make B's next tracked write
	// collide with its own history.
	tx, err := db.Begin()
	require.NoError(t, err)
	_, err = tx.Exec(`SELECT setval('llmtool_changes_id_seq', 1)`)
	require.NoError(t, err)
	_, err = tx.Exec(`INSERT INTO llmtool_changes (tool, principal, tenant, conversation, created_at, rows, not_undoable) VALUES ('', '', 'b', '', 0, '', '')`)
	require.ErrorContains(t, err, "duplicate key value violates unique constraint")
	require.NoError(t, tx.Rollback())

	// A view the write creates over the history is refused with it.
	res := reg.Invoke(a, llmtool.Call{Tool: "run_sql", Args: mustJSON(t, modelSQL{SQL: `CREATE VIEW spy AS SELECT rows FROM llmtool_changes`})})
	require.EqualError(t, res.Err, refusedBy("run_sql", `CREATE VIEW spy AS SELECT rows FROM llmtool_changes`, ownRefusal, ownInstead))
	var views int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM pg_views WHERE viewname = 'spy'`).Scan(&views))
	require.Zero(t, views)

	// A trigger function that takes a table's name as a string argument
	// (contrib's refint deletes from it) is refused that name.
	trigger := `CREATE TRIGGER spy BEFORE DELETE ON items FOR EACH ROW EXECUTE FUNCTION check_foreign_key(1, 'cascade', 'id', 'llmtool_changes', 'id')`
	if _, err := db.Exec(`CREATE EXTENSION IF NOT EXISTS refint`); err == nil {
		// As the host, in a transaction rolled back: deleting item 1
		// deletes B's history entry 1.
		tx, err := db.Begin()
		require.NoError(t, err)
		for _, q := range []string{trigger, `DELETE FROM items WHERE id = 1`} {
			_, err := tx.Exec(q)
			require.NoError(t, err, q)
		}
		var left int
		require.NoError(t, tx.QueryRow(`SELECT count(*) FROM llmtool_changes`).Scan(&left))
		require.Equal(t, 2, left, "the trigger deleted a history entry")
		require.NoError(t, tx.Rollback())
	} else {
		t.Logf("contrib's refint is not installed (%v): its trigger is not run", err)
	}
	res = reg.Invoke(a, llmtool.Call{Tool: "run_sql", Args: mustJSON(t, modelSQL{SQL: trigger})})
	require.EqualError(t, res.Err, refusedBy("run_sql", trigger[:77]+"...", "gives its trigger function a string that names, or may name, a table llmtool keeps for itself (llmtool_*)",
		"pass trigger functions plain names of the host's tables ('notes'), without escapes."))

	// llmtool's own statements are not the tools': B's history is listed,
	// and A's refused calls recorded nothing in it.
	res = reg.Invoke(b, llmtool.Call{Tool: "list_changes", Args: []byte(`{"all": true}`)})
	require.False(t, res.IsError, res.Text())
	require.Contains(t, string(res.JSON), secret)
	var entries int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM llmtool_changes`).Scan(&entries))
	require.Equal(t, 3, entries)
}

// securityRegistry returns a registry over db with the security tools,
// closed when t ends, and the contexts of tenants a, whose writes are on,
// and b.
func securityRegistry(t *testing.T, db *sql.DB, opts *llmtool.Options) (reg *llmtool.Registry, a, b context.Context) {
	t.Helper()
	reg, err := llmtool.NewRegistry(db, opts, securityTools)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	bg := context.Background()
	require.NoError(t, reg.Tenants().SetWrites(bg, "a", true))
	return reg, llmtool.WithTenant(bg, "a"), llmtool.WithTenant(bg, "b")
}
