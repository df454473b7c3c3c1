package sqlcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query, kind, table string
		d                  Dialect
	}{
		{query: `INSERT INTO notes (id) VALUES (?)`, kind: "insert", table: "notes"},
		{query: `insert or replace into "Notes" values (1)`, kind: "insert", table: "Notes"},
		{query: `REPLACE INTO [attrs] VALUES (1)`, kind: "insert", table: "attrs"},
		{query: `UPDATE OR IGNORE main.notes SET title = ?`, kind: "update", table: "notes"},
		{query: `update only public.notes set x = 1`, kind: "update", table: "notes", d: Postgres},
		{query: `DELETE FROM notes WHERE id = ?`, kind: "delete", table: "notes"},
		{query: ` /* c */ -- x
  DELETE FROM "weird ""name""" WHERE 1`, kind: "delete", table: `weird "name"`},
		{query: `WITH d AS (SELECT id FROM notes WHERE x) DELETE FROM branches WHERE noteId IN d`, kind: "delete", table: "branches"},
		{query: `WITH a AS (SELECT (1)), b AS (SELECT 2) INSERT INTO t SELECT * FROM a`, kind: "insert", table: "t"},
		{query: `WITH a AS (DELETE FROM x RETURNING id) SELECT * FROM a`, kind: "", table: ""},
		{query: `SELECT 1`},
		{query: `CREATE TABLE t (x)`},
		{query: ``},
	}
	for _, tt := range tests {
		kind, table := Target(tt.d, tt.query)
		require.Equal(t, tt.kind, kind, tt.query)
		require.Equal(t, tt.table, table, tt.query)
	}
}

func TestSchemaChange(t *testing.T) {
	t.Parallel()
	tests := []struct{ query, want string }{
		{query: `UPDATE notes SET title = 'create table'`},
		{query: `SELECT 1; /* drop */ create table t2 (v int); DROP TABLE t3`, want: `create table t2 (v int)`},
		{query: `ALTER TABLE notes
   DISABLE TRIGGER USER;`, want: `ALTER TABLE notes DISABLE TRIGGER USER`},
		{query: `truncate notes, children`, want: `truncate notes, children`},
		{query: `INSERT INTO alterations (v) VALUES ('drop')`},
		{query: `SELECT $x$; DROP TABLE t; $x$`},
		{query: ``},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, SchemaChange(Postgres, tt.query), tt.query)
	}
}
