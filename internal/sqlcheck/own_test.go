package sqlcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOwnTables(t *testing.T) {
	t.Parallel()
	const (
		w = "changes a table llmtool keeps for itself (llmtool_*)"
		r = "names a table llmtool keeps for itself (llmtool_*), which no tool may read"
	)
	tests := []struct {
		query string
		d     Dialect
		why   string // "": accepted
	}{
		{query: `DELETE FROM llmtool_approvals`, why: w},
		{query: `update LLMTOOL_SCOPE_SETTINGS set enabled = 1`, why: w},
		{query: `INSERT INTO "llmtool_scope_settings" VALUES ('', '', 1, '')`, why: w},
		{query: `WITH x AS (DELETE FROM llmtool_approvals RETURNING 1) SELECT * FROM x`, d: Postgres, why: w},
		{query: `CREATE TRIGGER t AFTER INSERT ON notes BEGIN DELETE FROM llmtool_approvals; END`, why: w},
		{query: `DROP TABLE main.llmtool_audit`, why: w},
		{query: `SELECT tool, outcome FROM llmtool_audit ORDER BY at DESC LIMIT 10`, why: r},
		{query: `SELECT count(*) FROM notes WHERE title = 'llmtool_approvals deleted'`},
		{query: `DELETE FROM notes WHERE id = ?`},

		// Every way PostgreSQL spells the same table.
		{query: `UPDATE U&"llmtool\005Fscope_settings" SET writes = true`, d: Postgres, why: w},
		{query: `update u&"llmtool\005fscope_settings" set writes = true`, d: Postgres, why: w},
		{query: `UPDATE U&"llmtool!005Fscope_settings" UESCAPE '!' SET writes = true`, d: Postgres, why: w},
		{query: `UPDATE U&"llmtool\+00005Fscope_settings" SET writes = true`, d: Postgres, why: w},
		{query: `DELETE FROM U&"\006C\006C\006D\0074\006F\006F\006C\005F\0061pprovals"`, d: Postgres, why: w},
		{query: `INSERT INTO public.llmtool_approvals VALUES ('x', 1)`, d: Postgres, why: w},
		{query: `INSERT INTO "public"."llmtool_approvals" VALUES ('x', 1)`, d: Postgres, why: w},
		{query: `INSERT INTO "public".U&"llmtool\005Fapprovals" VALUES ('x', 1)`, d: Postgres, why: w},
		{query: `DELETE FROM Public.LLMTool_Approvals`, d: Postgres, why: w},
		{query: `DELETE/**/FROM/* x */llmtool_approvals`, d: Postgres, why: w},
		{query: `WITH x AS (SELECT 1) DELETE FROM U&"llmtool\005Fapprovals"`, d: Postgres, why: w},
		{query: `CREATE RULE r AS ON INSERT TO notes DO ALSO DELETE FROM U&"llmtool\005Fapprovals"`, d: Postgres, why: w},
		{query: `CREATE TRIGGER t BEFORE INSERT ON llmtool_approvals FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()`, d: Postgres, why: w},
		{query: `CREATE RULE r AS ON INSERT TO llmtool_approvals DO INSTEAD NOTHING`, d: Postgres, why: w},
		{query: `ALTER TABLE llmtool_approvals DISABLE TRIGGER ALL`, d: Postgres, why: w},
		{query: `CREATE VIEW v AS SELECT * FROM llmtool_scope_settings`, d: Postgres, why: w},
		// SELECT ... INTO creates a table: one named like llmtool's, in a
		// schema earlier in the search path, would shadow it.
		{query: `SELECT 'team' AS tenant INTO app.llmtool_scope_settings`, d: Postgres, why: w},
		// A lock held until the call ends stops every other call.
		{query: `LOCK TABLE llmtool_scope_settings IN ACCESS EXCLUSIVE MODE`, d: Postgres, why: w},
		// Read with standard_conforming_strings off, the DELETE is a
		// statement of its own.
		{query: "SELECT 'x\\'' ; DELETE FROM llmtool_approvals; SELECT ' --'", d: Postgres, why: w},
		{query: `SELECT scope, writes FROM U&"llmtool\005Fscope_settings"`, d: Postgres, why: r},
		{query: `SELECT * FROM notes WHERE title = U&'llmtool\005Fapprovals'`, d: Postgres},

		// Reads, in every spelling (issue 37): the history, settings and
		// approvals are every tenant's.
		{query: `SELECT rows FROM llmtool_changes`, d: Postgres, why: r},
		{query: `SELECT rows FROM llmtool_changes`, why: r},
		{query: "SELECT rows FROM `llmtool_changes`", why: r},
		{query: `SELECT rows FROM main.[LLMTOOL_CHANGES]`, why: r},
		{query: `select ROWS from LLMTOOL_CHANGES`, d: Postgres, why: r},
		{query: `SELECT rows FROM "llmtool_changes"`, d: Postgres, why: r},
		{query: `SELECT rows FROM public.llmtool_changes`, d: Postgres, why: r},
		{query: `SELECT rows FROM "public"."llmtool_changes"`, d: Postgres, why: r},
		{query: `SELECT rows FROM public . /* x */ llmtool_changes`, d: Postgres, why: r},
		{query: `SELECT rows FROM/* a /* nested */ comment */llmtool_changes`, d: Postgres, why: r},
		{query: "SELECT rows FROM -- a comment\nllmtool_changes", d: Postgres, why: r},
		{query: `SELECT rows FROM U&"llmtool\005Fchanges"`, d: Postgres, why: r},
		{query: `SELECT rows FROM U&"!006C!006Cmtool_changes" UESCAPE '!'`, d: Postgres, why: r},
		{query: `SELECT rows FROM U&"\+00006Clmtool_changes"`, d: Postgres, why: r},
		{query: `TABLE llmtool_changes`, d: Postgres, why: r},
		{query: `WITH c AS (SELECT rows FROM llmtool_changes) SELECT * FROM c`, d: Postgres, why: r},
		{query: `SELECT (SELECT rows FROM llmtool_changes LIMIT 1)`, d: Postgres, why: r},
		{query: `SELECT * FROM notes WHERE EXISTS (SELECT 1 FROM llmtool_approvals)`, d: Postgres, why: r},
		{query: `VALUES ((SELECT count(*) FROM llmtool_scope_settings))`, d: Postgres, why: r},
		{query: `EXPLAIN ANALYZE SELECT * FROM llmtool_changes`, d: Postgres, why: r},
		{query: `SELECT row_to_json(c) FROM llmtool_changes AS c`, d: Postgres, why: r},
		{query: `COMMENT ON TABLE llmtool_changes IS 'x'`, d: Postgres, why: r},
		{query: "SELECT 'x\\'' ; SELECT rows FROM llmtool_changes; SELECT ' --'", d: Postgres, why: r},
		{query: `SELECT count(*) FROM notes WHERE title = $$llmtool_changes$$`, d: Postgres},
		{query: `SELECT count(*) FROM notes WHERE title = E'llmtool\137changes'`, d: Postgres},
	}
	for _, tt := range tests {
		got := Check(tt.d, tt.query)
		if tt.why == "" {
			require.Nil(t, got, tt.query)
			continue
		}
		require.NotNil(t, got, tt.query)
		require.Equal(t, tt.why, got.Reason, tt.query)
		if tt.why == w {
			require.Equal(t, "change llmtool's settings through the Registry (Tenants().SetWrites, SetApproval, ...), never in a tool's SQL.", got.Instead)
		} else {
			require.Equal(t, "llmtool's tables hold every tenant's settings, approvals and history: read them through the Registry (Tenants().Writes, changeset.List, the list_changes tool), never in a tool's SQL.", got.Instead)
		}
		require.Equal(t, "statement `"+short(tt.query)+"` "+tt.why+"; "+got.Instead, got.Error(), tt.query)
	}
}

// TestSystemTables: a write to pg_settings changes the session's settings
// (its update rule calls set_config at session level), so no statement
// that changes anything may name it; and no statement may write to a
// system catalog. Reading both stays allowed.
func TestSystemTables(t *testing.T) {
	t.Parallel()
	const (
		settings = "names pg_settings in a statement that changes data or schema, and a write to pg_settings changes the session's settings"
		catalog  = "writes to the system catalog "
	)
	tests := []struct {
		query  string
		reason string // "": accepted
	}{
		{query: `UPDATE pg_settings SET setting = 'evil, public' WHERE name = 'search_path'`, reason: settings},
		{query: `update PG_SETTINGS set setting = 'x' where name = 'role'`, reason: settings},
		{query: `UPDATE pg_catalog.pg_settings SET setting = 'x' WHERE name = 'search_path'`, reason: settings},
		{query: `UPDATE "pg_catalog"."pg_settings" SET setting = 'x' WHERE name = 'search_path'`, reason: settings},
		{query: `UPDATE U&"pg\005Fsettings" SET setting = 'x' WHERE name = 'search_path'`, reason: settings},
		{query: `UPDATE U&"pg!005Fsettings" UESCAPE '!' SET setting = 'x' WHERE name = 'search_path'`, reason: settings},
		{query: `WITH s AS (UPDATE pg_settings SET setting = 'x' WHERE name = 'work_mem' RETURNING 1) SELECT * FROM s`, reason: settings},
		{query: `INSERT INTO notes (title) SELECT setting FROM pg_settings WHERE name = 'search_path'`, reason: settings},
		// A view over pg_settings is updatable through its rule.
		{query: `CREATE VIEW s AS SELECT name, setting FROM pg_settings`, reason: settings},
		{query: `CREATE RULE r AS ON INSERT TO notes DO ALSO UPDATE pg_settings SET setting = 'x' WHERE name = 'search_path'`, reason: settings},
		{query: `EXPLAIN ANALYZE UPDATE pg_settings SET setting = 'x' WHERE name = 'search_path'`, reason: settings},
		{query: "SELECT 'x\\'' ; UPDATE pg_settings SET setting = 'x' WHERE name = 'search_path'; SELECT ' --'", reason: settings},

		{query: `UPDATE pg_authid SET rolsuper = true`, reason: catalog + "pg_authid"},
		{query: `DELETE FROM pg_catalog.pg_proc WHERE proname = 'f'`, reason: catalog + "pg_catalog.pg_proc"},
		{query: `delete from ONLY "pg_catalog"."pg_class" where false`, reason: catalog + "pg_catalog.pg_class"},
		{query: `INSERT INTO information_schema.sql_features VALUES ('x')`, reason: catalog + "information_schema.sql_features"},
		{query: `MERGE INTO pg_catalog.pg_description d USING notes n ON false WHEN NOT MATCHED THEN DO NOTHING`, reason: catalog + "pg_catalog.pg_description"},
		{query: `TRUNCATE notes, ONLY pg_catalog.pg_statistic`, reason: catalog + "pg_catalog.pg_statistic"},
		{query: `TRUNCATE TABLE notes *, tags, pg_largeobject`, reason: catalog + "pg_largeobject"},
		{query: `UPDATE mydb.pg_toast.pg_toast_1 SET chunk_seq = 0`, reason: catalog + "mydb.pg_toast.pg_toast_1"},
		{query: `WITH d AS (DELETE FROM U&"pg\005Fdescription" RETURNING 1) SELECT count(*) FROM d`, reason: catalog + "pg_description"},

		// What a superuser may do to information_schema, and PostgreSQL
		// lets it.
		{query: `DROP VIEW information_schema.tables`, reason: catalog + "information_schema.tables"},
		{query: `CREATE OR REPLACE VIEW "information_schema"."tables" AS SELECT 1 AS a`, reason: catalog + "information_schema.tables"},
		{query: `CREATE TABLE IF NOT EXISTS information_schema.x (a int)`, reason: catalog + "information_schema.x"},
		{query: `ALTER TABLE information_schema.sql_features ADD COLUMN x int`, reason: catalog + "information_schema.sql_features"},
		{query: `CREATE INDEX i ON information_schema.sql_features (feature_id)`, reason: catalog + "information_schema.sql_features"},
		{query: `CREATE RULE r AS ON INSERT TO information_schema.sql_features DO INSTEAD NOTHING`, reason: catalog + "information_schema.sql_features"},
		{query: `CREATE TRIGGER tr BEFORE INSERT ON information_schema.sql_parts FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()`, reason: catalog + "information_schema.sql_parts"},
		{query: `SELECT 1; DROP TABLE notes, information_schema.sql_sizing`, reason: catalog + "information_schema.sql_sizing"},
		{query: `DROP TABLE pg_toast.pg_toast_1259`, reason: catalog + "pg_toast.pg_toast_1259"},

		{query: `CREATE VIEW v AS SELECT table_name FROM information_schema.tables`},
		{query: `CREATE TABLE t (a pg_catalog.int4, b information_schema.cardinal_number)`},
		{query: `ALTER TABLE t ALTER COLUMN a TYPE pg_catalog.int8`},
		{query: `CREATE RULE r AS ON INSERT TO notes WHERE new.id > 0 DO ALSO INSERT INTO log SELECT table_name FROM information_schema.tables`},
		{query: `SELECT table_name FROM information_schema.tables; DROP TABLE t`},
		{query: `SELECT name, setting FROM pg_settings WHERE name = 'search_path'`},
		{query: `SELECT setting FROM pg_catalog.pg_settings WHERE name = $1`},
		{query: `SELECT relname FROM pg_class WHERE relkind = 'r'`},
		{query: `INSERT INTO notes (title) SELECT relname FROM pg_catalog.pg_class`},
		{query: `UPDATE notes SET owner = pg_backend_pid(), at = pg_catalog.now() WHERE id = $1`},
		{query: `DELETE FROM notes WHERE pg_try_advisory_xact_lock(id)`},
		{query: `INSERT INTO notes (title) VALUES ('UPDATE pg_settings SET setting = 1')`},
		{query: `CREATE TABLE t (a int REFERENCES notes ON DELETE CASCADE ON UPDATE SET NULL)`},
		{query: `SELECT * FROM pg_class FOR UPDATE OF pg_class`},
		{query: `INSERT INTO notes (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET id = excluded.id`},
	}
	for _, tt := range tests {
		r := Check(Postgres, tt.query)
		if tt.reason == "" {
			require.Nil(t, r, tt.query)
			continue
		}
		require.NotNil(t, r, tt.query)
		require.Equal(t, tt.reason, r.Reason, tt.query)
		if tt.reason == settings {
			require.Equal(t, pgSetInstead, r.Instead, tt.query)
		} else {
			require.Equal(t, "leave the system catalogs to PostgreSQL: change the schema with CREATE, ALTER and DROP, and configure sessions where the host opens the database.", r.Instead, tt.query)
		}
		require.Equal(t, "statement `"+short(tt.query)+"` "+tt.reason+"; "+r.Instead, r.Error(), tt.query)
	}
	// On SQLite, pg_settings is an ordinary name.
	require.Nil(t, Check(SQLite, `UPDATE pg_settings SET setting = 1`))
}

// TestOwnTablesByValue: on PostgreSQL a table can be read by a name that
// is a value rather than a word of the text (table_to_xml('t', ...),
// 'llmtool' || '_changes', an OID), or with every table of a schema or
// the database; the column statistics show sample values of every table.
// The check cannot follow a value, so it refuses the functions, wherever
// and however they are called, and the statistics.
func TestOwnTablesByValue(t *testing.T) {
	t.Parallel()
	const (
		byValue = "reads a table or a cursor named by a value (a string or an OID), which llmtool cannot check"
		every   = "reads every table of the database or of a schema, llmtool's own among them"
		sqlText = "runs SQL given as text, which llmtool cannot check"
		pages   = "reads or changes the raw pages of a table or of the write-ahead log, which hold the rows of every table"
		named   = "name the tables in the query (SELECT ... FROM t), where llmtool checks them; build XML with xmlelement, xmlforest and xmlagg."
	)
	tests := []struct {
		query, reason, instead string
	}{
		{`SELECT table_to_xml('llmtool_changes', true, false, '')`, "calls table_to_xml, which " + byValue, named},
		{`SELECT table_to_xml(('llmtool' || '_changes')::regclass, true, false, '')`, "calls table_to_xml, which " + byValue, named},
		{`SELECT pg_catalog.table_to_xml(16384, true, false, '')`, "calls table_to_xml, which " + byValue, named},
		{`SELECT "table_to_xml"('notes', true, false, '')`, `calls "table_to_xml", which ` + byValue, named},
		{`SELECT U&"table\005Fto_xml"('notes', true, false, '')`, `calls "table_to_xml", which ` + byValue, named},
		{`SELECT TABLE_TO_XML /* a */ ('notes', true, false, '')`, "calls TABLE_TO_XML, which " + byValue, named},
		{`SELECT table_to_xmlschema('notes', true, false, '')`, "calls table_to_xmlschema, which " + byValue, named},
		{`SELECT table_to_xml_and_xmlschema('notes', true, false, '')`, "calls table_to_xml_and_xmlschema, which " + byValue, named},
		{`SELECT cursor_to_xml('c', 10, true, false, '')`, "calls cursor_to_xml, which " + byValue, named},
		{`SELECT schema_to_xml('public', true, false, '')`, "calls schema_to_xml, which " + every, named},
		{`SELECT database_to_xml(true, false, '')`, "calls database_to_xml, which " + every, named},
		{`SELECT database_to_xml_and_xmlschema(true, false, '')`, "calls database_to_xml_and_xmlschema, which " + every, named},
		{`CREATE TABLE t AS SELECT database_to_xml(true, false, '') AS x`, "calls database_to_xml, which " + every, named},
		{`CREATE VIEW v AS SELECT schema_to_xml('public', true, false, '') AS x`, "calls schema_to_xml, which " + every, named},
		{`INSERT INTO notes (title) SELECT table_to_xml('llmtool_changes', true, false, '')::text`, "calls table_to_xml, which " + byValue, named},
		{`SELECT query_to_xml('SELECT * FROM llm' || 'tool_changes', true, false, '')`, "calls query_to_xml, which " + sqlText, sqlTextInstead},
		{`SELECT * FROM crosstab('SELECT tenant, tool, rows FROM llmtool_changes') AS t(a text, b text)`, "calls crosstab, which " + sqlText, sqlTextInstead},
		{`SELECT * FROM connectby('llmtool_changes', 'id', 'undo_of', '1', 0) AS t(id int)`, "calls connectby, which " + byValue, named},
		{`SELECT * FROM xpath_table('id', 'rows', 'llmtool_changes', '/a', 'true') AS t(id int, a text)`, "calls xpath_table, which " + byValue, named},
		{`SELECT get_raw_page('llmtool_changes', 0)`, "calls get_raw_page, which " + pages, "read and change data through its tables."},
		{`SELECT * FROM bt_page_items('llmtool_changes_tenant', 1)`, "calls bt_page_items, which " + pages, "read and change data through its tables."},
		{`SELECT heap_force_kill('notes', ARRAY['(0,1)']::tid[])`, "calls heap_force_kill, which " + pages, "read and change data through its tables."},
		{`SELECT * FROM pg_get_wal_records_info('0/0', '0/FFFFFFFF')`, "calls pg_get_wal_records_info, which " + pages, "read and change data through its tables."},

		{`SELECT most_common_vals FROM pg_stats WHERE tablename = 'llmtool_changes'`, statsReason, statsInstead},
		{`SELECT histogram_bounds::text FROM pg_catalog.pg_stats`, statsReason, statsInstead},
		{`SELECT stavalues1 FROM "pg_statistic"`, statsReason, statsInstead},
		{`SELECT * FROM U&"pg\005Fstats\005Fext"`, statsReason, statsInstead},
		{`SELECT most_common_vals FROM PG_STATS_EXT_EXPRS`, statsReason, statsInstead},
		{`SELECT * FROM pg_statistic_ext_data`, statsReason, statsInstead},

		// Dynamic SQL, as statements: refused as the session's.
		{`EXECUTE p`, executeRefusal[0], executeRefusal[1]},
		{`EXPLAIN ANALYZE EXECUTE p`, executeRefusal[0], executeRefusal[1]},
		{`CREATE TABLE t AS EXECUTE p`, executeRefusal[0], executeRefusal[1]},
		{`COPY llmtool_changes TO STDOUT`, "copies between a table and a file, a program or the client's stream, outside the queries llmtool checks", copyInstead},
		{`COPY (SELECT rows FROM llmtool_changes) TO STDOUT`, "copies between a table and a file, a program or the client's stream, outside the queries llmtool checks", copyInstead},
		{`DO $$ BEGIN EXECUTE 'SELECT 1'; END $$`, "runs an anonymous code block, whose statements llmtool cannot check", doInstead},
		{`CREATE FOREIGN TABLE spy (rows text) SERVER loopback OPTIONS (table_name 'llmtool_changes')`, foreignReason, foreignInstead},
		{`ALTER FOREIGN TABLE remote_notes OPTIONS (SET table_name 'llmtool_changes')`, foreignReason, foreignInstead},
		{`CREATE TRIGGER t BEFORE DELETE ON notes FOR EACH ROW EXECUTE FUNCTION check_foreign_key(1, 'cascade', 'id', 'llmtool_changes', 'id')`, triggerArgReason, triggerArgInstead},
		{`CREATE TRIGGER t BEFORE DELETE ON notes FOR EACH ROW EXECUTE PROCEDURE check_foreign_key(1, 'cascade', 'id', 'public.LLMTOOL_CHANGES', 'id')`, triggerArgReason, triggerArgInstead},
		{`CREATE TRIGGER t BEFORE DELETE ON notes FOR EACH ROW EXECUTE FUNCTION check_foreign_key(1, 'cascade', 'id', E'llmtool\137changes', 'id')`, triggerArgReason, triggerArgInstead},
		{`CREATE TRIGGER t BEFORE DELETE ON notes FOR EACH ROW EXECUTE FUNCTION check_foreign_key(1, 'cascade', 'id', U&'llmtool\005Fchanges', 'id')`, triggerArgReason, triggerArgInstead},
		{`CREATE CONSTRAINT TRIGGER t AFTER DELETE ON notes FOR EACH ROW EXECUTE FUNCTION f($$llmtool_changes$$)`, triggerArgReason, triggerArgInstead},
		{`SELECT setval('llmtool_changes_id_seq', 1)`, "calls setval, which " + ownSequence.reason, ownSequence.instead},
		{`SELECT setval('public.LLMTOOL_changes_id_seq'::regclass, 1)`, "calls setval, which " + ownSequence.reason, ownSequence.instead},
		{`SELECT setval('llmtool' || '_changes_id_seq', 1)`, "calls setval, which " + ownSequence.reason, ownSequence.instead},
		{`SELECT pg_catalog.setval(16390, 1, false)`, "calls setval, which " + ownSequence.reason, ownSequence.instead},
		{`SELECT setval(E'llmtool\137changes_id_seq', 1)`, "calls setval, which " + ownSequence.reason, ownSequence.instead},
		{`SELECT pg_sequence_last_value('llmtool_changes_id_seq')`, "calls pg_sequence_last_value, which " + ownSequence.reason, ownSequence.instead},
		{`SET search_path = evil, public`, setReason, pgSetInstead},
		{`SELECT set_config('search_path', 'evil, public', true)`, "calls set_config, which changes the session's settings", pgSetInstead},
	}
	for _, tt := range tests {
		r := Check(Postgres, tt.query)
		require.NotNil(t, r, tt.query)
		require.Equal(t, tt.reason, r.Reason, tt.query)
		require.Equal(t, tt.instead, r.Instead, tt.query)
	}

	// Reading the statistics of the host's own tables by their columns'
	// names, and the functions' names as words, are still allowed.
	for _, q := range []string{
		`SELECT relname, n_live_tup FROM pg_stat_user_tables`,
		`SELECT * FROM pg_stat_activity WHERE pid = pg_backend_pid()`,
		`SELECT table_to_xml FROM notes`,
		`DROP FOREIGN TABLE remote_notes`,
		`SELECT setval('notes_id_seq', (SELECT max(id) FROM notes))`,
		`SELECT nextval('notes_id_seq'), pg_sequence_last_value('public.notes_id_seq')`,
		`CREATE TRIGGER t BEFORE UPDATE ON notes FOR EACH ROW EXECUTE FUNCTION tsvector_update_trigger(tsv, 'pg_catalog.english', title, body)`,
		`CREATE TRIGGER t BEFORE DELETE ON notes FOR EACH ROW EXECUTE FUNCTION check_foreign_key(1, 'cascade', 'id', 'tags', 'note_id')`,
		`SELECT xmlelement(name note, xmlforest(id, title)) FROM notes`,
	} {
		require.Nil(t, Check(Postgres, q), q)
	}
}
