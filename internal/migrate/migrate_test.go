package migrate_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/migrate"
	"github.com/llmtool/llmtool/internal/pgtest"
)

var steps = []migrate.Step{
	{SQLite: []string{`CREATE TABLE t (id INTEGER PRIMARY KEY)`}, Postgres: []string{`CREATE TABLE t (id BIGINT PRIMARY KEY)`}},
	{SQLite: []string{`ALTER TABLE t ADD COLUMN name TEXT NOT NULL DEFAULT ''`}, Postgres: []string{`ALTER TABLE t ADD COLUMN name TEXT NOT NULL DEFAULT ''`}},
}

// databases returns a fresh SQLite file and, when a server is named, a
// fresh PostgreSQL database, each with its engine and a way to open
// another handle on the same database.
func databases(t *testing.T) map[string]func() (*sql.DB, engine.Engine) {
	path := filepath.Join(t.TempDir(), "m.db")
	dbs := map[string]func() (*sql.DB, engine.Engine){
		"sqlite": func() (*sql.DB, engine.Engine) {
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
			require.NoError(t, err)
			t.Cleanup(func() { db.Close() })
			return db, engine.SQLite
		},
	}
	if pgtest.Available() {
		dsn := pgtest.DSN(t)
		dbs["postgres"] = func() (*sql.DB, engine.Engine) {
			db, err := sql.Open("pgx", dsn)
			require.NoError(t, err)
			t.Cleanup(func() { db.Close() })
			return db, engine.Postgres
		}
	} else {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: CI runs PostgreSQL (.ci/postgres.sh)", pgtest.Env)
		}
		t.Log("PostgreSQL part skipped: set " + pgtest.Env)
	}
	return dbs
}

func version(t *testing.T, db *sql.DB, subject string) int {
	var v int
	require.NoError(t, db.QueryRow(`SELECT version FROM `+migrate.Table+` WHERE subject = $1`, subject).Scan(&v))
	return v
}

// TestApply: steps run once, in order; running again does nothing; a
// later release's extra step runs alone.
func TestApply(t *testing.T) {
	t.Parallel()
	for name, open := range databases(t) {
		t.Run(name, func(t *testing.T) {
			db, e := open()
			ctx := context.Background()
			require.NoError(t, migrate.Apply(ctx, db, e, "t", steps[:1]))
			require.Equal(t, 1, version(t, db, "t"))
			require.NoError(t, migrate.Apply(ctx, db, e, "t", steps[:1]), "idempotent")
			require.NoError(t, migrate.Apply(ctx, db, e, "t", steps), "the next release adds a step")
			require.Equal(t, 2, version(t, db, "t"))
			_, err := db.Exec(`INSERT INTO t (id, name) VALUES (1, 'x')`)
			require.NoError(t, err, "both steps applied")
			require.NoError(t, migrate.Apply(ctx, db, e, "t", steps))

			err = migrate.Apply(ctx, db, e, "t", steps[:1])
			require.EqualError(t, err, "llmtool: migrate t: the database is at version 2, newer than this llmtool knows (1); upgrade llmtool")
		})
	}
}

// TestApplyConcurrently: replicas starting together apply each step once.
func TestApplyConcurrently(t *testing.T) {
	t.Parallel()
	for name, open := range databases(t) {
		t.Run(name, func(t *testing.T) {
			const replicas = 6
			var wg sync.WaitGroup
			errs := make([]error, replicas)
			for i := range replicas {
				db, e := open()
				wg.Go(func() { errs[i] = migrate.Apply(context.Background(), db, e, "t", steps) })
			}
			wg.Wait()
			for i, err := range errs {
				require.NoError(t, err, fmt.Sprintf("replica %d", i))
			}
			db, _ := open()
			require.Equal(t, 2, version(t, db, "t"))
		})
	}
}

// TestApplyFailedStepLeavesNothing: a step that fails rolls the whole
// migration back, and the error names the subject and the step.
func TestApplyFailedStepLeavesNothing(t *testing.T) {
	t.Parallel()
	bad := append(steps[:1:1], migrate.Step{SQLite: []string{`ALTER TABLE nope ADD COLUMN x INTEGER`}, Postgres: []string{`ALTER TABLE nope ADD COLUMN x INTEGER`}})
	for name, open := range databases(t) {
		t.Run(name, func(t *testing.T) {
			db, e := open()
			err := migrate.Apply(context.Background(), db, e, "t", bad)
			require.ErrorContains(t, err, "llmtool: migrate t: step 2: ")
			var n int
			err = db.QueryRow(`SELECT count(*) FROM ` + migrate.Table).Scan(&n)
			if e == engine.Postgres {
				require.ErrorContains(t, err, `relation "llmtool_migrations" does not exist`, "created in the migration's transaction, rolled back with it")
			} else {
				require.NoError(t, err)
				require.Zero(t, n, "no version recorded")
			}
			_, err = db.Exec(`SELECT id FROM t`)
			require.Error(t, err, "step 1 rolled back with step 2")
		})
	}
}
