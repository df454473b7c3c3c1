package llmtool_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/pgtest"
)

// stmtMethods run one statement of a write handler through each of the
// four methods a handler (or a generated data layer) may use. Each
// returns the statement's error, whichever way the method reports it.
var stmtMethods = []struct {
	name string
	run  func(c *llmtool.WriteCtx, query string, args ...any) error
}{
	{"Exec", func(c *llmtool.WriteCtx, q string, args ...any) error {
		_, err := c.Exec(q, args...)
		return err
	}},
	{"Query", func(c *llmtool.WriteCtx, q string, args ...any) error {
		rows, err := c.Query(q+" RETURNING qty", args...)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return rows.Close()
	}},
	{"QueryRow", func(c *llmtool.WriteCtx, q string, args ...any) error {
		var qty int
		return c.QueryRow(q+" RETURNING qty", args...).Scan(&qty)
	}},
	{"PrepareContext", func(c *llmtool.WriteCtx, q string, args ...any) error {
		st, err := c.PrepareContext(c, q)
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = st.Exec(args...)
		return err
	}},
}

// TestStatementPaths: a statement changes the same rows whichever of Exec,
// Query, QueryRow and PrepareContext ran it, so every feature of the
// write path sees it alike: a dry run's preview counts it, the changeset
// captures it, a committed call's history holds it, and (PostgreSQL) a
// statement that lost to another write runs the call again. Each method
// must report what Exec reports.
//
// A handler that swallows the error of a statement that lost is run again
// too, except through a prepared *sql.Stmt, whose Exec llmtool does not
// see: that call fails, saying to return every statement's error.
func TestStatementPaths(t *testing.T) {
	t.Parallel()
	lose := pgtest.FromEnv()
	type seen struct {
		Preview   []approval.TableCount
		Changeset []changeset.Row
		Committed []changeset.Row
		DryRuns   int32
		Runs      int32
		Qty       int
	}
	for _, swallow := range []bool{false, true} {
		if swallow && !lose {
			continue // on SQLite no statement loses: the run holds the write lock
		}
		var want *seen
		for _, m := range stmtMethods {
			name := fmt.Sprintf("%s, swallow %v", m.name, swallow)
			db := openDB(t)
			var runs atomic.Int32
			if lose {
				// lose_once fails its first call with a serialization
				// failure, as a write that lost to another would (a
				// sequence is not rolled back, so the run again passes).
				_, err := db.Exec(`CREATE SEQUENCE lose_seq;
CREATE FUNCTION lose_once() RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
	IF nextval('lose_seq') = 1 THEN
		RAISE EXCEPTION 'could not serialize access' USING ERRCODE = '40001';
	END IF;
	RETURN 1;
END $$`)
				require.NoError(t, err)
			}
			bump := llmtool.Write("bump", "Adds one to item 1's quantity.", func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) {
				runs.Add(1)
				q := "UPDATE items SET qty = qty + 1 WHERE id = 1"
				if lose {
					q = "UPDATE items SET qty = qty + lose_once() WHERE id = 1"
				}
				if err := m.run(c, q); err != nil && !swallow {
					return struct{}{}, err
				}
				return struct{}{}, nil
			})
			reg := newRegistryOpts(t, db, &llmtool.Options{Changesets: changeset.Config{Tables: []string{"items"}}},
				llmtool.DefineTools("paths", bump))
			ctx := context.Background()
			loseAgain := func() {
				if lose {
					_, err := db.Exec(`SELECT setval('lose_seq', 1, false)`)
					require.NoError(t, err)
				}
			}

			var got seen
			loseAgain()
			dry := reg.Invoke(ctx, llmtool.Call{Tool: "bump", DryRun: true})
			if swallow && m.name == "PrepareContext" {
				require.True(t, dry.IsError, name)
				require.ErrorContains(t, dry.Err, "llmtool: tool bump: a statement of its run failed, which ended PostgreSQL's transaction, but its handler returned no error: return every statement's error (a statement that lost to another write then runs the call again): ")
				require.EqualValues(t, 1, runs.Load(), name)
				continue
			}
			require.False(t, dry.IsError, "%s: %s", name, dry.Text())
			require.NotNil(t, dry.Preview, name)
			got.Preview = dry.Preview.Tables
			require.NotNil(t, dry.Preview.Changeset, name)
			got.Changeset = dry.Preview.Changeset.Rows
			got.DryRuns = runs.Swap(0)

			loseAgain()
			res := reg.Invoke(ctx, llmtool.Call{Tool: "bump"})
			require.False(t, res.IsError, "%s: %s", name, res.Text())
			require.NotNil(t, res.Changeset, name)
			got.Committed = res.Changeset.Rows
			got.Runs = runs.Load()
			require.NoError(t, db.QueryRow(`SELECT qty FROM items WHERE id = 1`).Scan(&got.Qty))

			if want != nil {
				require.Equal(t, *want, got, "%s reports what Exec reports", name)
				continue
			}
			want = &got
			require.Equal(t, []approval.TableCount{{Table: "items", Updated: 1}}, got.Preview, name)
			require.Len(t, got.Changeset, 1, name)
			require.Equal(t, changeset.Update, got.Changeset[0].Op, name)
			require.Equal(t, 4, got.Qty, "%s: the dry run saved nothing, the call added one", name)
			wantRuns := int32(1)
			if lose {
				wantRuns = 2 // the statement that lost ran the call again
			}
			require.Equal(t, wantRuns, got.DryRuns, name)
			require.Equal(t, wantRuns, got.Runs, name)
		}
	}
}

// TestPreviewCountsTriggers: a preview counts what the database changed,
// a trigger's rows included, which no statement's RowsAffected shows.
func TestPreviewCountsTriggers(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	ddl := `CREATE TABLE item_log (item BIGINT NOT NULL);
CREATE TRIGGER item_logged AFTER UPDATE ON items BEGIN INSERT INTO item_log (item) VALUES (new.id); END`
	if pgtest.FromEnv() {
		ddl = `CREATE TABLE item_log (item BIGINT NOT NULL);
CREATE FUNCTION log_item() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO item_log (item) VALUES (NEW.id); RETURN NEW; END $$;
CREATE TRIGGER item_logged AFTER UPDATE ON items FOR EACH ROW EXECUTE FUNCTION log_item()`
	}
	_, err := db.Exec(ddl)
	require.NoError(t, err)
	rename := llmtool.Write("rename", "Renames item 1.", func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) {
		_, err := c.Exec("UPDATE items SET name = 'pear' WHERE id = 1")
		return struct{}{}, err
	})
	reg := newRegistry(t, db, llmtool.DefineTools("triggers", rename))
	res := reg.Invoke(context.Background(), llmtool.Call{Tool: "rename", DryRun: true})
	require.False(t, res.IsError, res.Text())
	require.Equal(t, []approval.TableCount{{Table: "item_log", Inserted: 1}, {Table: "items", Updated: 1}}, res.Preview.Tables)
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM item_log`).Scan(&n))
	require.Zero(t, n, "a dry run saves nothing")
}
