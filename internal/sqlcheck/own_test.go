package sqlcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOwnTables(t *testing.T) {
	t.Parallel()
	const why = "changes a table llmtool keeps for itself (llmtool_*)"
	tests := []struct {
		query   string
		d       Dialect
		refused bool
	}{
		{query: `DELETE FROM llmtool_approvals`, refused: true},
		{query: `update LLMTOOL_SCOPE_SETTINGS set enabled = 1`, refused: true},
		{query: `INSERT INTO "llmtool_scope_settings" VALUES ('', '', 1, '')`, refused: true},
		{query: `WITH x AS (DELETE FROM llmtool_approvals RETURNING 1) SELECT * FROM x`, d: Postgres, refused: true},
		{query: `CREATE TRIGGER t AFTER INSERT ON notes BEGIN DELETE FROM llmtool_approvals; END`, refused: true},
		{query: `DROP TABLE main.llmtool_audit`, refused: true},
		{query: `SELECT tool, outcome FROM llmtool_audit ORDER BY at DESC LIMIT 10`},
		{query: `SELECT count(*) FROM notes WHERE title = 'llmtool_approvals deleted'`},
		{query: `DELETE FROM notes WHERE id = ?`},

		// Every way PostgreSQL spells the same table.
		{query: `UPDATE U&"llmtool\005Fscope_settings" SET writes = true`, d: Postgres, refused: true},
		{query: `update u&"llmtool\005fscope_settings" set writes = true`, d: Postgres, refused: true},
		{query: `UPDATE U&"llmtool!005Fscope_settings" UESCAPE '!' SET writes = true`, d: Postgres, refused: true},
		{query: `UPDATE U&"llmtool\+00005Fscope_settings" SET writes = true`, d: Postgres, refused: true},
		{query: `DELETE FROM U&"\006C\006C\006D\0074\006F\006F\006C\005F\0061pprovals"`, d: Postgres, refused: true},
		{query: `INSERT INTO public.llmtool_approvals VALUES ('x', 1)`, d: Postgres, refused: true},
		{query: `INSERT INTO "public"."llmtool_approvals" VALUES ('x', 1)`, d: Postgres, refused: true},
		{query: `INSERT INTO "public".U&"llmtool\005Fapprovals" VALUES ('x', 1)`, d: Postgres, refused: true},
		{query: `DELETE FROM Public.LLMTool_Approvals`, d: Postgres, refused: true},
		{query: `DELETE/**/FROM/* x */llmtool_approvals`, d: Postgres, refused: true},
		{query: `WITH x AS (SELECT 1) DELETE FROM U&"llmtool\005Fapprovals"`, d: Postgres, refused: true},
		{query: `CREATE RULE r AS ON INSERT TO notes DO ALSO DELETE FROM U&"llmtool\005Fapprovals"`, d: Postgres, refused: true},
		{query: `CREATE TRIGGER t BEFORE INSERT ON llmtool_approvals FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()`, d: Postgres, refused: true},
		{query: `CREATE RULE r AS ON INSERT TO llmtool_approvals DO INSTEAD NOTHING`, d: Postgres, refused: true},
		{query: `ALTER TABLE llmtool_approvals DISABLE TRIGGER ALL`, d: Postgres, refused: true},
		{query: `CREATE VIEW v AS SELECT * FROM llmtool_scope_settings`, d: Postgres, refused: true},
		// SELECT ... INTO creates a table: one named like llmtool's, in a
		// schema earlier in the search path, would shadow it.
		{query: `SELECT 'team' AS tenant INTO app.llmtool_scope_settings`, d: Postgres, refused: true},
		// A lock held until the call ends stops every other call.
		{query: `LOCK TABLE llmtool_scope_settings IN ACCESS EXCLUSIVE MODE`, d: Postgres, refused: true},
		// Read with standard_conforming_strings off, the DELETE is a
		// statement of its own.
		{query: "SELECT 'x\\'' ; DELETE FROM llmtool_approvals; SELECT ' --'", d: Postgres, refused: true},
		{query: `SELECT scope, writes FROM U&"llmtool\005Fscope_settings"`, d: Postgres},
		{query: `SELECT * FROM notes WHERE title = U&'llmtool\005Fapprovals'`, d: Postgres},
	}
	for _, tt := range tests {
		r := Check(tt.d, tt.query)
		if !tt.refused {
			require.Nil(t, r, tt.query)
			continue
		}
		require.NotNil(t, r, tt.query)
		require.Equal(t, why, r.Reason, tt.query)
		require.Equal(t, "change llmtool's settings through the Registry (Tenants().SetWrites, SetApproval, ...), never in a tool's SQL.", r.Instead)
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
