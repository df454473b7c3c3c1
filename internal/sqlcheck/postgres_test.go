package sqlcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// pgAccepted are ordinary statements a tool runs on PostgreSQL: none may be
// refused.
var pgAccepted = []string{
	"SELECT * FROM notes WHERE id = $1",
	"select n.id, n.title from notes n join tags t on t.note = n.id where t.name = any($1) order by 1 limit 10",
	"INSERT INTO notes (title) VALUES ($1) RETURNING id",
	"INSERT INTO temp VALUES (1)", // a table named temp
	"INSERT INTO notes (title) SELECT title FROM drafts ON CONFLICT (title) DO UPDATE SET n = notes.n + 1",
	"UPDATE notes SET title = $1 WHERE id = $2 RETURNING *",
	"DELETE FROM notes WHERE id = $1",
	"MERGE INTO notes n USING src s ON n.id = s.id WHEN MATCHED THEN UPDATE SET title = s.title WHEN NOT MATCHED THEN INSERT (id, title) VALUES (s.id, s.title)",
	"MERGE INTO temp t USING src s ON t.id = s.id WHEN MATCHED THEN DELETE",
	"WITH moved AS (DELETE FROM notes WHERE id = $1 RETURNING *) INSERT INTO archive SELECT * FROM moved RETURNING id",
	"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
	"(SELECT 1) UNION (SELECT 2)",
	"TABLE notes",
	"VALUES (1, 'a'), (2, 'b')",
	"CREATE TABLE notes (id bigserial PRIMARY KEY, title text NOT NULL, temp numeric, body jsonb)",
	"CREATE TABLE IF NOT EXISTS public.notes (id int)",
	"CREATE UNLOGGED TABLE cache (k text PRIMARY KEY, v jsonb)",
	"CREATE TABLE t AS SELECT * FROM notes WITH NO DATA",
	"CREATE UNIQUE INDEX notes_title ON notes (lower(title))",
	"CREATE INDEX IF NOT EXISTS notes_body ON notes USING gin (body jsonb_path_ops)",
	"CREATE OR REPLACE VIEW v AS SELECT id FROM notes",
	"CREATE MATERIALIZED VIEW mv AS SELECT count(*) FROM notes",
	"CREATE SEQUENCE app.s START 10",
	"CREATE TYPE mood AS ENUM ('sad', 'ok')",
	"CREATE TRIGGER tr BEFORE UPDATE ON notes FOR EACH ROW EXECUTE FUNCTION app.touch()",
	"CREATE POLICY own ON notes USING (owner = current_user)",
	"ALTER TABLE notes ADD COLUMN temp numeric",
	"ALTER TABLE notes ALTER COLUMN title SET DEFAULT ''",
	"ALTER TABLE notes RENAME TO notes_old",
	"ALTER TABLE notes SET UNLOGGED",
	"DROP TABLE IF EXISTS notes CASCADE",
	"DROP FUNCTION IF EXISTS app.touch()",
	"TRUNCATE notes RESTART IDENTITY",
	"LOCK TABLE notes IN SHARE ROW EXCLUSIVE MODE",
	"SHOW search_path",
	"ANALYZE notes",
	"REINDEX TABLE notes",
	"SET CONSTRAINTS ALL DEFERRED",
	"CALL app.archive($1)",
	"COMMENT ON TABLE notes IS 'notes; DROP TABLE notes'",
	"REFRESH MATERIALIZED VIEW CONCURRENTLY mv",
	"EXPLAIN SELECT 1",
	"EXPLAIN ANALYZE VERBOSE SELECT * FROM notes",
	"EXPLAIN (ANALYZE, FORMAT JSON) UPDATE notes SET n = 1",
	"EXPLAIN (SELECT 1)",
	"SELECT * INTO notes_copy FROM notes",
	"SELECT * INTO UNLOGGED TABLE notes_copy FROM notes",
	"SELECT pg_advisory_xact_lock(1), pg_try_advisory_xact_lock(1, 2), pg_advisory_xact_lock_shared(3)",
	"SELECT pg_sleep(0), current_setting('search_path'), nextval('app.s'), lo_create(0)",
	"SELECT set_config_value, dblink_url FROM settings",
	`SELECT "set_config" FROM t`,
	"SELECT body ? 'k', body ?| array['a'], body ?& array['b'], body @? '$.a' FROM notes",
	"SELECT E'it\\'s ; COMMIT' FROM notes",
	"SELECT $x$ ; SELECT set_config('a', 'b', false) $x$",
	"SELECT 1 /* SELECT pg_advisory_lock(1) /* nested */ ; COMMIT */",
	"SELECT 'C:\\', E'\\\\', ts_rewrite('a'::tsquery, 'a'::tsquery, 'b'::tsquery)",
	"CREATE RULE r AS ON INSERT TO notes DO ALSO INSERT INTO log VALUES (new.id)",
}

func TestCheckPostgresAccepts(t *testing.T) {
	t.Parallel()
	for _, q := range pgAccepted {
		r := Check(Postgres, q)
		require.Nil(t, r, "%q: %v", q, r)
	}
}

func TestCheckPostgresRefuses(t *testing.T) {
	t.Parallel()
	const (
		txR      = "controls the transaction"
		cursorR  = "declares or uses a cursor, which can outlive the call's transaction (WITH HOLD)"
		listenR  = "changes what the session listens to, which outlives the call"
		prepareR = "prepares a statement on the session, which outlives the call's transaction"
		execR    = "runs a statement prepared on the session, which llmtool cannot check"
		copyR    = "copies between a table and a file, a program or the client's stream, outside the queries llmtool checks"
		notifyR  = "notifies other sessions on the server"
		settingR = "changes the session's settings"
		lockR    = "takes a session-level advisory lock, which outlives the call's transaction"
		unlockR  = "releases session-level advisory locks, which belong to the host"
		fileR    = "reads or writes files on the database server"
		adminR   = "acts on the server or on other sessions, outside the call's transaction"
		linkR    = "runs SQL on another connection, outside the call's transaction"
	)
	cases := []struct {
		q, stmt, reason, instead string // stmt "" is q, shortened
	}{
		// Settings, the session's and the transaction's.
		{"SET search_path = x", "", setReason, pgSetInstead},
		{"set/**/search_path to x", "", setReason, pgSetInstead},
		{"SET SESSION statement_timeout = 0", "", setReason, pgSetInstead},
		{"SET LOCAL statement_timeout = 0", "", setReason, pgSetInstead},
		{"SET TRANSACTION READ WRITE", "", setReason, pgSetInstead},
		{"SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE", "", setReason, pgSetInstead},
		{"SET ROLE admin", "", setReason, pgSetInstead},
		{"SET SESSION AUTHORIZATION bob", "", setReason, pgSetInstead},
		{"SELECT 1; SET search_path = x", "SET search_path = x", setReason, pgSetInstead},
		{"RESET ALL", "", settingR, pgSetInstead},
		{"RESET search_path", "", settingR, pgSetInstead},
		{"DISCARD ALL", "", "discards the session's state (prepared statements, temporary tables, plans), which belongs to the host", discardInstead},
		{"DISCARD TEMP", "", "discards the session's state (prepared statements, temporary tables, plans), which belongs to the host", discardInstead},
		{"SELECT set_config('search_path', 'x', false)", "", "calls set_config, which " + settingR, pgSetInstead},
		{"SELECT SET_CONFIG('a.b', 'c', false)", "", "calls SET_CONFIG, which " + settingR, pgSetInstead},
		{"SELECT pg_catalog.set_config('a.b', 'c', false)", "", "calls set_config, which " + settingR, pgSetInstead},
		{`SELECT "set_config"('a.b', 'c', false)`, "", `calls "set_config", which ` + settingR, pgSetInstead},
		{`SELECT "pg_catalog"."set_config"('a.b', 'c', false)`, "", `calls "set_config", which ` + settingR, pgSetInstead},
		{`SELECT U&"\0073et_config"('a.b', 'c', false)`, "", `calls "set_config", which ` + settingR, pgSetInstead},
		{`SELECT U&"!0073et_config" UESCAPE '!' ('a.b', 'c', false)`, "", `calls "set_config", which ` + settingR, pgSetInstead},
		{"SELECT set_config /* x */ ('a.b', 'c', false)", "", "calls set_config, which " + settingR, pgSetInstead},
		{"UPDATE t SET a = set_config('a.b', 'c', false)", "", "calls set_config, which " + settingR, pgSetInstead},
		{"WITH x AS (SELECT set_config('a.b', 'c', false)) SELECT * FROM x", "", "calls set_config, which " + settingR, pgSetInstead},
		{"CREATE VIEW v AS SELECT set_config('a.b', 'c', false)", "", "calls set_config, which " + settingR, pgSetInstead},

		// Prepared statements and cursors.
		{"PREPARE p AS SELECT 1", "", prepareR, prepareInstead},
		{"PREPARE p (int) AS SELECT $1", "", prepareR, prepareInstead},
		{"PREPARE TRANSACTION 'x'", "", txR, txInstead},
		{"EXECUTE p", "", execR, prepareInstead},
		{"EXECUTE p(1)", "", execR, prepareInstead},
		{"EXPLAIN ANALYZE EXECUTE p", "", execR, prepareInstead},
		{"CREATE TABLE t AS EXECUTE p", "", execR, prepareInstead},
		{"DEALLOCATE ALL", "", "removes a statement prepared on the session, which belongs to the host's driver", prepareInstead},
		{"DECLARE c CURSOR WITH HOLD FOR SELECT 1", "", cursorR, cursorInstead},
		{"DECLARE c CURSOR FOR SELECT 1", "", cursorR, cursorInstead},
		{"FETCH 10 FROM c", "", cursorR, cursorInstead},
		{"MOVE c", "", cursorR, cursorInstead},
		{"CLOSE ALL", "", cursorR, cursorInstead},

		// Notifications.
		{"LISTEN ch", "", listenR, listenInstead},
		{"UNLISTEN *", "", listenR, listenInstead},
		{"NOTIFY ch, 'x'", "", notifyR, notifyInstead},
		{"SELECT pg_notify('ch', 'x')", "", "calls pg_notify, which " + notifyR, notifyInstead},

		// Files, programs, other connections, the server.
		{"COPY notes TO '/tmp/x'", "", copyR, copyInstead},
		{"COPY notes FROM PROGRAM 'id'", "", copyR, copyInstead},
		{"COPY (SELECT 1) TO STDOUT", "", copyR, copyInstead},
		{"SELECT lo_import('/etc/passwd')", "", "calls lo_import, which " + fileR, fileInstead},
		{"SELECT lo_export(1, '/tmp/x')", "", "calls lo_export, which " + fileR, fileInstead},
		{"SELECT pg_read_file('/etc/passwd')", "", "calls pg_read_file, which " + fileR, fileInstead},
		{"SELECT pg_read_binary_file('x')", "", "calls pg_read_binary_file, which " + fileR, fileInstead},
		{"SELECT * FROM pg_ls_dir('.')", "", "calls pg_ls_dir, which " + fileR, fileInstead},
		{"SELECT pg_file_write('x', 'y', false)", "", "calls pg_file_write, which " + fileR, fileInstead},
		{"SELECT dblink_exec('dbname=x', 'COMMIT')", "", "calls dblink_exec, which " + linkR, linkInstead},
		{"SELECT * FROM dblink('dbname=x', 'SELECT 1') AS t(a int)", "", "calls dblink, which " + linkR, linkInstead},
		{"SELECT pg_terminate_backend(1)", "", "calls pg_terminate_backend, which " + adminR, serverInstead},
		{"SELECT pg_cancel_backend(1)", "", "calls pg_cancel_backend, which " + adminR, serverInstead},
		{"SELECT pg_reload_conf()", "", "calls pg_reload_conf, which " + adminR, serverInstead},
		{"SELECT pg_stat_reset()", "", "calls pg_stat_reset, which " + adminR, serverInstead},
		{"SELECT pg_create_physical_replication_slot('s')", "", "calls pg_create_physical_replication_slot, which " + adminR, serverInstead},
		{"SELECT * FROM pg_ls_waldir()", "", "calls pg_ls_waldir, which " + fileR, fileInstead},
		{"SELECT pg_read_file_old('x', 0, 1)", "", "calls pg_read_file_old, which " + fileR, fileInstead},
		{"SELECT * FROM pg_logical_slot_get_changes('s', NULL, NULL)", "", "calls pg_logical_slot_get_changes, which " + adminR, serverInstead},
		{"SELECT pg_replication_slot_advance('s', '0/0')", "", "calls pg_replication_slot_advance, which " + adminR, serverInstead},
		{"SELECT pg_wal_replay_pause()", "", "calls pg_wal_replay_pause, which " + adminR, serverInstead},
		{"SELECT binary_upgrade_set_next_pg_type_oid(1)", "", "calls binary_upgrade_set_next_pg_type_oid, which " + adminR, serverInstead},
		{"SELECT pg_import_system_collations('public')", "", "calls pg_import_system_collations, which " + adminR, serverInstead},
		{"SELECT setseed(0.5)", "", "calls setseed, which seeds the session's random numbers, which outlives the call", "call random() unseeded; for repeatable values, derive them from the arguments (md5, hashtext)."},
		{`SELECT U&"set\0073eed"(0.5)`, "", `calls "setseed", which seeds the session's random numbers, which outlives the call`, "call random() unseeded; for repeatable values, derive them from the arguments (md5, hashtext)."},
		{"SELECT query_to_xml('SELECT pg_advisory_lock(1)', true, false, '')", "", "calls query_to_xml, which runs SQL given as text, which llmtool cannot check", sqlTextInstead},
		{"SELECT * FROM ts_stat('SELECT to_tsvector(pg_try_advisory_lock(1)::text)')", "", "calls ts_stat, which runs SQL given as text, which llmtool cannot check", sqlTextInstead},
		{"SELECT ts_rewrite('a'::tsquery, 'SELECT t, s FROM aliases')", "", "calls ts_rewrite, which runs SQL given as text, which llmtool cannot check", "use ts_rewrite(query, target, substitute), which takes tsquery values instead of a query."},
		{"CREATE RULE r AS ON INSERT TO notes DO ALSO NOTIFY ch", "", notifyR, notifyInstead},
		{"LOAD 'auto_explain'", "", "loads a shared library into the session", "load libraries in the server's configuration (shared_preload_libraries or session_preload_libraries)."},
		{"CHECKPOINT", "", "forces a checkpoint of the whole server", "leave checkpoints to the server, or run CHECKPOINT from the host's maintenance code."},
		{"VACUUM FULL notes", "", "rewrites the database outside the call's transaction", "run VACUUM from the host's maintenance code."},
		{"CLUSTER notes USING notes_pkey", "", "rewrites a table for maintenance, holding an exclusive lock", "run CLUSTER from the host's maintenance code."},

		// Advisory locks at session level.
		{"SELECT pg_advisory_lock(1)", "", "calls pg_advisory_lock, which " + lockR, advisoryInstead},
		{"SELECT pg_advisory_lock_shared(1)", "", "calls pg_advisory_lock_shared, which " + lockR, advisoryInstead},
		{"SELECT pg_try_advisory_lock(1, 2)", "", "calls pg_try_advisory_lock, which " + lockR, advisoryInstead},
		{"SELECT pg_try_advisory_lock_shared(1)", "", "calls pg_try_advisory_lock_shared, which " + lockR, advisoryInstead},
		{"SELECT pg_advisory_unlock(1)", "", "calls pg_advisory_unlock, which " + unlockR, advisoryInstead},
		{"SELECT pg_advisory_unlock_all()", "", "calls pg_advisory_unlock_all, which " + unlockR, advisoryInstead},
		{"EXPLAIN ANALYZE SELECT pg_advisory_lock(1)", "", "calls pg_advisory_lock, which " + lockR, advisoryInstead},
		{"CREATE TRIGGER tr BEFORE UPDATE ON t FOR EACH ROW WHEN (pg_try_advisory_lock(1)) EXECUTE FUNCTION suppress_redundant_updates_trigger()", "", "calls pg_try_advisory_lock, which " + lockR, advisoryInstead},

		// Code llmtool cannot see into.
		{"DO $$ BEGIN PERFORM set_config('a.b', 'c', false); END $$", "", "runs an anonymous code block, whose statements llmtool cannot check", doInstead},
		{"CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$ SELECT set_config('a.b', 'c', false) $$", "", codeReason, codeInstead},
		{"CREATE OR REPLACE PROCEDURE p() LANGUAGE plpgsql AS $$ BEGIN COMMIT; END $$", "", codeReason, codeInstead},
		{"CREATE OPERATOR === (LEFTARG = int, RIGHTARG = int, FUNCTION = pg_try_advisory_lock)", "", codeReason, codeInstead},
		{"CREATE AGGREGATE a (int) (SFUNC = int4pl, STYPE = int)", "", codeReason, codeInstead},
		{"CREATE EXTENSION dblink", "", codeReason, codeInstead},
		{"ALTER EXTENSION x UPDATE", "", codeReason, codeInstead},
		{"CREATE TRUSTED PROCEDURAL LANGUAGE plx", "", codeReason, codeInstead},
		{"CREATE EVENT TRIGGER e ON ddl_command_start EXECUTE FUNCTION f()", "", codeReason, codeInstead},
		{"ALTER FUNCTION f() SECURITY DEFINER", "", codeReason, codeInstead},

		// Objects that live with the session.
		{"CREATE TEMP TABLE x (a int)", "", tempReason, tempInstead},
		{"CREATE TEMPORARY VIEW v AS SELECT 1", "", tempReason, tempInstead},
		{"CREATE GLOBAL TEMPORARY TABLE x (a int)", "", tempReason, tempInstead},
		{"CREATE LOCAL TEMP SEQUENCE s", "", tempReason, tempInstead},
		{"create or replace temp view v as select 1", "", tempReason, tempInstead},
		{"CREATE TABLE pg_temp.x (a int)", "", tempSchemaReason, tempInstead},
		{`CREATE VIEW "pg_temp".v AS SELECT 1`, "", tempSchemaReason, tempInstead},
		{"CREATE INDEX i ON pg_temp_3.x (a)", "", tempSchemaReason, tempInstead},
		{"ALTER TABLE pg_temp.x ADD b int", "", tempSchemaReason, tempInstead},
		{"SELECT * INTO TEMP t FROM notes", "", tempReason, tempInstead},
		{"SELECT 1 AS a INTO TEMPORARY TABLE t", "", tempReason, tempInstead},
		{"SELECT 1 INTO LOCAL TEMP t", "", tempReason, tempInstead},
		{"WITH x AS (SELECT 1) SELECT * INTO TEMP t FROM x", "", tempReason, tempInstead},
		{"SELECT 1 INTO pg_temp.t", "", tempSchemaReason, tempInstead},
		{"EXPLAIN (ANALYZE) CREATE TEMP TABLE x AS SELECT 1", "", tempReason, tempInstead},

		// Roles, privileges and the server's configuration.
		{"GRANT SELECT ON notes TO public", "", securityReason, securityInstead},
		{"REVOKE ALL ON notes FROM bob", "", securityReason, securityInstead},
		{"SECURITY LABEL ON TABLE notes IS 'secret'", "", securityReason, securityInstead},
		{"CREATE ROLE admin SUPERUSER", "", securityReason, securityInstead},
		{"CREATE USER bob", "", securityReason, securityInstead},
		{"CREATE USER MAPPING FOR bob SERVER s", "", securityReason, securityInstead},
		{"ALTER ROLE bob SET search_path = x", "", securityReason, securityInstead},
		{"ALTER USER bob WITH PASSWORD 'x'", "", securityReason, securityInstead},
		{"DROP ROLE bob", "", securityReason, securityInstead},
		{"REASSIGN OWNED BY a TO b", "", securityReason, securityInstead},
		{"DROP OWNED BY bob", "", securityReason, securityInstead},
		{"ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO public", "", securityReason, securityInstead},
		{"CREATE SCHEMA s CREATE TABLE t (a int)", "", schemaReason, schemaInstead},
		{"CREATE SCHEMA IF NOT EXISTS app", "", schemaReason, schemaInstead},
		{"create schema postgres", "", schemaReason, schemaInstead},
		{"ALTER SCHEMA app RENAME TO postgres", "", schemaReason, schemaInstead},
		{"ALTER SYSTEM SET work_mem = '1GB'", "", serverReason, serverConfInstead},
		{"ALTER DATABASE d SET search_path = x", "", serverReason, serverConfInstead},
		{"CREATE DATABASE d", "", serverReason, serverConfInstead},
		{"DROP DATABASE d", "", serverReason, serverConfInstead},
		{"CREATE TABLESPACE t LOCATION '/x'", "", serverReason, serverConfInstead},
		{"CREATE SUBSCRIPTION s CONNECTION 'x' PUBLICATION p", "", serverReason, serverConfInstead},
		{"CREATE PUBLICATION p FOR ALL TABLES", "", serverReason, serverConfInstead},
		{"CREATE SERVER s FOREIGN DATA WRAPPER postgres_fdw", "", serverReason, serverConfInstead},
		{"CREATE FOREIGN DATA WRAPPER w", "", serverReason, serverConfInstead},

		// The transaction itself, and statements hidden by lexing.
		{"START TRANSACTION", "", txR, txInstead},
		{"COMMIT PREPARED 'x'", "", txR, txInstead},
		{"SELECT E'\\\\'; COMMIT", "COMMIT", txR, txInstead},
		// PostgreSQL reads ? as an operator and E'\'' as one string:
		// the COMMIT is a statement of its own.
		{"SELECT '{}'::jsonb ?E'\\'' ; COMMIT; SELECT 'x' --'", "COMMIT", txR, txInstead},
		{"SELECT 1 @E'\\'' ; COMMIT; SELECT 'x' --'", "COMMIT", txR, txInstead},
		// PostgreSQL 14 reads 0A as 0 and an identifier (an alias) that
		// ends in $a$: no string starts there.
		{"SELECT 0A$a$; COMMIT; SELECT $a$ $a$", "COMMIT", txR, txInstead},
		// With standard_conforming_strings off, 'x\'' is a whole string.
		{"SELECT 'x\\'' ; COMMIT; SELECT ' --'", "COMMIT", txR, txInstead},
		{"SELECT ?set_config('a.b', 'c', false)", "", "calls set_config, which " + settingR, pgSetInstead},
		{"IMPORT FOREIGN SCHEMA s FROM SERVER f INTO public", "", "is not a statement a tool may run", pgOtherInstead},
		{"PRAGMA query_only", "", "is not a statement a tool may run", pgOtherInstead},
	}
	for _, c := range cases {
		r := Check(Postgres, c.q)
		require.NotNil(t, r, "%q", c.q)
		stmt := c.stmt
		if stmt == "" {
			stmt = short(c.q)
		}
		require.Equal(t, "statement `"+stmt+"` "+c.reason+"; "+c.instead, r.Error(), "%q", c.q)
		require.Equal(t, c.reason, r.Reason, "%q", c.q)
	}
}

// The SQLite rules gained the same function check in quoted names and in
// trigger bodies.
func TestCheckSQLiteFunctionsSpelledOtherwise(t *testing.T) {
	t.Parallel()
	want := "changes the connection's state; " + setInstead
	for q, stmt := range map[string]string{
		`SELECT "load_extension"('x')`: `SELECT "load_extension"('x')`,
		"SELECT [load_extension]('x')": "SELECT [load_extension]('x')",
		"SELECT `load_extension`('x')": "SELECT `load_extension`('x')",
		"SELECT ?load_extension('x')":  "SELECT ?load_extension('x')",
		"CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT load_extension('x'); END": "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT load_extension('x')",
	} {
		r := Check(SQLite, q)
		require.NotNil(t, r, "%q", q)
		require.Contains(t, r.Error(), "statement `"+stmt+"` calls ", "%q", q)
		require.True(t, len(r.Error()) > len(want) && r.Error()[len(r.Error())-len(want):] == want, "%q: %s", q, r.Error())
	}
}
