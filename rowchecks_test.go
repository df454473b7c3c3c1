package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/pgtest"
)

// TestRowChecks: an entity that names its table has its checks run on
// every row a write changes there, whichever tool or statement changed
// it (no ref tag, a trigger, undo_changes), in the words of a ref tag's
// check, before commit: nothing is saved. The lock and the owner live in
// other tables, so the changed row itself does not tell.
func TestRowChecks(t *testing.T) {
	t.Parallel()
	const (
		protected = `Item "2" (ID) is protected; tools may neither read nor change it.`
		system    = `Item "1" (ID) is a system item; %s must not change it.`
		notYours  = `You may not change item "3" (ID).`
	)
	// Item 1 is a system item, item 2 is locked, item 3 belongs to bob;
	// every call runs as ana.
	// Key and SystemColumns in another case than the columns': names
	// match as SQL's unquoted names do.
	item := &llmtool.Entity{Kind: "item", Table: "items", Key: "ID", SystemColumns: []string{"Name"},
		Exists: func(c *llmtool.ReadCtx, id string) (bool, error) {
			var n int
			err := c.QueryRow(`SELECT count(*) FROM items WHERE id = ?`, id).Scan(&n)
			return n > 0, err
		},
		System: func(_ *llmtool.ReadCtx, id string) (bool, error) { return id == "1", nil },
		Protected: func(c *llmtool.ReadCtx, id string) (bool, error) {
			var n int
			err := c.QueryRow(`SELECT count(*) FROM locks WHERE item = ?`, id).Scan(&n)
			return n > 0, err
		},
		MayChange: func(c *llmtool.ReadCtx, id string) (bool, error) {
			var owner string
			err := c.QueryRow(`SELECT owner FROM owners WHERE item = ?`, id).Scan(&owner)
			if err == sql.ErrNoRows {
				return true, nil
			}
			return err == nil && owner == llmtool.PrincipalFrom(c).ID, err
		},
	}
	type idIn struct {
		ID int64 `json:"id"`
	}
	rename := llmtool.Write("rename_item", "Renames an item (no ref tag).", func(c *llmtool.WriteCtx, in idIn) (struct{}, error) {
		_, err := c.Exec(`UPDATE items SET name = name || '!' WHERE id = ?`, in.ID)
		return struct{}{}, err
	})
	restock := llmtool.Write("restock_item", "Adds to an item's quantity (no ref tag).", func(c *llmtool.WriteCtx, in idIn) (struct{}, error) {
		_, err := c.Exec(`UPDATE items SET qty = qty + 1 WHERE id = ?`, in.ID)
		return struct{}{}, err
	})
	unlink := llmtool.Write("unlink_item", "Deletes an item's link; a trigger deletes the item.", func(c *llmtool.WriteCtx, in idIn) (struct{}, error) {
		_, err := c.Exec(`DELETE FROM links WHERE item = ?`, in.ID)
		return struct{}{}, err
	})
	tests := []struct {
		name, tool string
		id         int64
		want       string // the model's message; "" for a call that commits
	}{
		{"a protected item, renamed", "rename_item", 2, protected},
		{"a protected item, restocked", "restock_item", 2, protected},
		{"another principal's item", "restock_item", 3, notYours},
		{"a system item, renamed (a system column)", "rename_item", 1, `Item "1" (ID) is a system item; rename_item must not change it.`},
		{"a system item, restocked (another column)", "restock_item", 1, ""},
		{"a system item, deleted by a trigger", "unlink_item", 1, `Item "1" (ID) is a system item; unlink_item must not change it.`},
		{"a protected item, deleted by a trigger", "unlink_item", 2, protected},
		{"an item of one's own", "rename_item", 4, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := rowChecksDB(t)
			reg := newRegistryOpts(t, db, &llmtool.Options{Changesets: changeset.Config{Tables: []string{"items"}, Tools: true}},
				llmtool.DefineTools("items", rename, restock, unlink).WithEntities(item))
			ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "ana"})
			before := dumpItems(t, db)
			res := reg.Invoke(ctx, llmtool.Call{Tool: tt.tool, Args: []byte(`{"id":` + strconv.FormatInt(tt.id, 10) + `}`)})
			if tt.want == "" {
				require.False(t, res.IsError, res.Text())
				require.NotEqual(t, before, dumpItems(t, db))
				return
			}
			require.True(t, res.IsError)
			require.Contains(t, res.Text(), tt.want)
			require.Equal(t, before, dumpItems(t, db), "nothing is saved")
		})
	}

	t.Run("undo_changes of a change to an item locked since", func(t *testing.T) {
		t.Parallel()
		db := rowChecksDB(t)
		reg := newRegistryOpts(t, db, &llmtool.Options{Changesets: changeset.Config{Tables: []string{"items"}, Tools: true}},
			llmtool.DefineTools("items", rename, restock, unlink).WithEntities(item))
		ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "ana"})
		res := reg.Invoke(ctx, llmtool.Call{Tool: "rename_item", Args: []byte(`{"id":4}`)})
		require.False(t, res.IsError, res.Text())
		require.NotNil(t, res.Changeset)
		_, err := db.Exec(`INSERT INTO locks (item) VALUES (4)`)
		require.NoError(t, err)
		before := dumpItems(t, db)
		undo := reg.Invoke(ctx, llmtool.Call{Tool: "undo_changes", Args: []byte(`{"id":` + strconv.FormatInt(res.Changeset.ID, 10) + `}`)})
		require.True(t, undo.IsError)
		require.Contains(t, undo.Text(), `Item "4" (ID) is protected; tools may neither read nor change it.`)
		require.Equal(t, before, dumpItems(t, db), "nothing is undone")
	})
}

// TestRowChecksDeclaration: an entity's Table must be tracked where the
// registry tracks tables.
func TestRowChecksDeclaration(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	_, err := db.Exec(`CREATE TABLE other (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	e := &llmtool.Entity{Kind: "item", Table: "items", Key: "id", Exists: func(*llmtool.ReadCtx, string) (bool, error) { return true, nil }}
	_, err = llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger()}, llmtool.DefineTools("items").WithEntities(e))
	require.NoError(t, err, "a registry that tracks no table checks through ref tags only")
	_, err = llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger(), Changesets: changeset.Config{Tables: []string{"other"}}}, llmtool.DefineTools("items").WithEntities(e))
	require.EqualError(t, err, `llmtool: module "items": entity kind "item" names table items, which is not tracked; add it to Options.Changesets.Tables, so that llmtool sees the rows each write changes`)
	require.PanicsWithValue(t, `llmtool: module "items": entity "item" sets only one of Table and Key; set both (the table of its rows and the column of their ID), or neither`, func() {
		llmtool.DefineTools("items").WithEntities(&llmtool.Entity{Kind: "item", Table: "items", Exists: e.Exists})
	})
	require.PanicsWithValue(t, `llmtool: module "items": entity "item" sets SystemColumns without Table and Key; name the table and the ID column its system columns belong to`, func() {
		llmtool.DefineTools("items").WithEntities(&llmtool.Entity{Kind: "item", SystemColumns: []string{"name"}, Exists: e.Exists})
	})
}

// rowChecksDB is openDB with items 1 to 4, a lock on item 2, bob owning
// item 3, and a link per item whose deletion deletes the item.
func rowChecksDB(t *testing.T) *sql.DB {
	t.Helper()
	db := openDB(t)
	ddl := []string{
		`INSERT INTO items (name, qty) VALUES ('pear', 1), ('plum', 1), ('fig', 1)`,
		`CREATE TABLE locks (item BIGINT NOT NULL)`,
		`INSERT INTO locks (item) VALUES (2)`,
		`CREATE TABLE owners (item BIGINT NOT NULL, owner TEXT NOT NULL)`,
		`INSERT INTO owners (item, owner) VALUES (3, 'bob'), (4, 'ana')`,
		`CREATE TABLE links (item BIGINT NOT NULL)`,
		`INSERT INTO links (item) SELECT id FROM items`,
	}
	if pgtest.FromEnv() {
		ddl = append(ddl, `CREATE FUNCTION unlink() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN DELETE FROM items WHERE id = OLD.item; RETURN OLD; END $$`,
			`CREATE TRIGGER unlinked AFTER DELETE ON links FOR EACH ROW EXECUTE FUNCTION unlink()`)
	} else {
		ddl = append(ddl, `CREATE TRIGGER unlinked AFTER DELETE ON links BEGIN DELETE FROM items WHERE id = old.item; END`)
	}
	for _, q := range ddl {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	return db
}

// dumpItems returns the items table, row by row.
func dumpItems(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT id, name, qty FROM items ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, qty int64
		var name string
		require.NoError(t, rows.Scan(&id, &name, &qty))
		out = append(out, strconv.FormatInt(id, 10)+" "+name+" "+strconv.FormatInt(qty, 10))
	}
	require.NoError(t, rows.Err())
	return out
}

// TestHistoryReaders: list_changes and changes://recent need the history's
// read scope, and leave out (counting them in withheld) the rows of
// entities that are protected or that MayRead refuses to the reader, as
// they are now.
func TestHistoryReaders(t *testing.T) {
	t.Parallel()
	db := rowChecksDB(t)
	item := &llmtool.Entity{Kind: "item", Table: "items", Key: "id",
		Exists: func(*llmtool.ReadCtx, string) (bool, error) { return true, nil },
		Protected: func(c *llmtool.ReadCtx, id string) (bool, error) {
			var n int
			err := c.QueryRow(`SELECT count(*) FROM locks WHERE item = ?`, id).Scan(&n)
			return n > 0, err
		},
		MayRead: func(c *llmtool.ReadCtx, id string) (bool, error) {
			var owner string
			err := c.QueryRow(`SELECT owner FROM owners WHERE item = ?`, id).Scan(&owner)
			if err == sql.ErrNoRows {
				return true, nil
			}
			return err == nil && owner == llmtool.PrincipalFrom(c).ID, err
		},
	}
	restock := llmtool.Write("restock_all", "Adds to every item's quantity.", func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) {
		_, err := c.Exec(`UPDATE items SET qty = qty + 1`)
		return struct{}{}, err
	})
	reg := newRegistryOpts(t, db, &llmtool.Options{Changesets: changeset.Config{Tables: []string{"items"}, Tools: true,
		Scopes: []string{"items:write"}, ReadScopes: []string{"items:read"}}},
		llmtool.DefineTools("items", restock).WithEntities(item))
	// Written before item 2 was locked and item 3 given to bob.
	_, err := db.Exec(`DELETE FROM locks; DELETE FROM owners`)
	require.NoError(t, err)
	res := reg.Invoke(context.Background(), llmtool.Call{Tool: "restock_all"})
	require.False(t, res.IsError, res.Text())
	require.Len(t, res.Changeset.Rows, 4)
	_, err = db.Exec(`INSERT INTO locks (item) VALUES (2); INSERT INTO owners (item, owner) VALUES (3, 'bob')`)
	require.NoError(t, err)

	type listed struct {
		Changes []struct {
			Rows []changeset.Row `json:"rows"`
		} `json:"changes"`
		Withheld int `json:"withheld"`
	}
	tests := []struct {
		name   string
		scopes []string
		call   llmtool.Call
		want   string // the refusal; "" to read
	}{
		{"list_changes", []string{"items:read"}, llmtool.Call{Tool: "list_changes", Args: []byte(`{"all":true}`)}, ""},
		{"changes://recent", []string{"items:read"}, llmtool.Call{Resource: "changes://recent"}, ""},
		{"list_changes without the read scope", []string{"items:write"}, llmtool.Call{Tool: "list_changes"}, `Tool "list_changes" needs the scope items:read, which this sign-in does not grant.`},
		{"changes://recent without the read scope", []string{}, llmtool.Call{Resource: "changes://recent"}, `needs the scope items:read, which this sign-in does not grant.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "ana", Scopes: tt.scopes})
			res := reg.Invoke(ctx, tt.call)
			if tt.want != "" {
				require.True(t, res.IsError)
				require.Contains(t, res.Text(), tt.want)
				return
			}
			require.False(t, res.IsError, res.Text())
			body := res.JSON
			if len(res.Content) > 0 {
				body = []byte(res.Content[0].Text)
			}
			var got listed
			require.NoError(t, json.Unmarshal(body, &got), string(body))
			require.Len(t, got.Changes, 1)
			var ids []string
			for _, row := range got.Changes[0].Rows {
				ids = append(ids, string(row.Key["id"]))
			}
			require.Equal(t, []string{"1", "4"}, ids, "item 2 is protected, item 3 is bob's")
			require.Equal(t, 2, got.Withheld)
		})
	}
}
