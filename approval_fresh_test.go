package llmtool_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
)

// runValues hands a tool its value for each run: the next of values, the
// last one again once they run out; random instead makes one up, and
// seen is what each run got.
type runValues struct {
	mu     sync.Mutex
	values []string
	random bool
	seen   []string
}

func (v *runValues) next() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := rand.Text()
	if !v.random {
		s = v.values[min(len(v.seen), len(v.values)-1)]
	}
	v.seen = append(v.seen, s)
	return s
}

func (v *runValues) run(i int) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.seen[i]
}

type quoteOut struct {
	Quote string `json:"quote"`
}

// valueTools write what v hands them: into a note's content, as a new
// note's id (a value given by the statement, in a column whose default is
// the engine's), or into an untracked table, returning it.
func valueTools(v *runValues) *llmtool.Module {
	return llmtool.DefineTools("fx_values",
		llmtool.Write("fx_content", "Set note 1's content to the quote.", func(c *llmtool.WriteCtx, _ struct{}) (okOut, error) {
			_, err := c.Exec(`UPDATE notes SET content = ? WHERE id = 1`, v.next())
			return okOut{OK: true}, err
		}),
		llmtool.Write("fx_id", "Add a note whose id is the quote.", func(c *llmtool.WriteCtx, _ struct{}) (okOut, error) {
			id, err := strconv.ParseInt(v.next(), 10, 64)
			if err == nil {
				_, err = c.Exec(`INSERT INTO notes (id, title) VALUES (?, 'Quoted')`, id)
			}
			return okOut{OK: true}, err
		}),
		llmtool.Write("fx_untracked", "Write an untracked table and return the quote.", func(c *llmtool.WriteCtx, _ struct{}) (quoteOut, error) {
			_, err := c.Exec(`INSERT INTO scratch (v) VALUES (1)`)
			return quoteOut{Quote: v.next()}, err
		}),
	)
}

// TestApprovalFreshValueBound: a value that differs between a request's
// runs, which neither the engine made nor the host declared generated, is
// bound as the person was shown it (the second run's): the approved run
// that makes another asks again, showing it, and saves nothing. A quote
// that then stays commits on the next approval; a value the tool makes up
// anew on each run asks each time.
func TestApprovalFreshValueBound(t *testing.T) {
	t.Parallel()
	quotes := []string{"100", "101", "999999"}
	for _, tc := range []struct {
		name, tool string
		random     bool
		// shown is where the person sees the value, in the preview.
		shown func(pv approval.Preview) string
	}{
		{"an outside quote", "fx_content", false, contentOf},
		{"a made-up value", "fx_content", true, contentOf},
		{"an id the statement gives", "fx_id", false, func(pv approval.Preview) string {
			return string(pv.Changeset.Rows[0].Key["id"])
		}},
		{"an output without a changeset that binds the change", "fx_untracked", false, func(pv approval.Preview) string {
			var out quoteOut
			if json.Unmarshal(pv.Result, &out) != nil {
				return ""
			}
			return out.Quote
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newCSFixture(t)
			v := &runValues{values: quotes, random: tc.random}
			reg := newRegistryOpts(t, f.db, &f.opts, changesetTools, valueTools(v))
			ctx := context.Background()
			require.False(t, reg.Invoke(ctx, llmtool.Call{Tool: "cs_add", Args: []byte(`{"title": "First"}`)}).IsError)
			require.NoError(t, reg.Tenants().SetApproval(ctx, "", tc.tool, true))
			before := f.dump(t)

			ask := reg.Invoke(ctx, llmtool.Call{Tool: tc.tool})
			require.ErrorIs(t, ask.Err, approval.ErrRequired)
			require.Equal(t, v.run(1), tc.shown(ask.Approval.Preview), "the second run's preview is shown")
			require.NotEqual(t, v.run(0), v.run(1))

			for run := 2; ; run++ {
				res := reg.Invoke(ctx, llmtool.Call{Tool: tc.tool, Approval: &approval.Answer{Token: ask.Approval.Token, Approved: true}})
				if !tc.random && run == 3 {
					require.False(t, res.IsError, res.Text())
					require.Equal(t, "999999", v.run(run), "the approved value is the committed value")
					break
				}
				require.ErrorIs(t, res.Err, approval.ErrRequired, "run %d", run)
				require.Contains(t, res.Text(), "The data changed since the user approved this change, so nothing was saved.")
				require.Equal(t, v.run(run), tc.shown(res.Approval.Preview), "the person is shown the new value")
				require.NotEqual(t, v.run(run-1), v.run(run))
				require.Equal(t, before, f.dump(t), "nothing saved")
				if run == 4 {
					break // a made-up value asks every time
				}
				ask = res
			}
			switch tc.tool {
			case "fx_content":
				var content string
				require.NoError(t, f.db.QueryRow(`SELECT content FROM notes WHERE id = 1`).Scan(&content))
				if tc.random {
					require.Empty(t, content)
				} else {
					require.Equal(t, "999999", content)
				}
			case "fx_id":
				require.Equal(t, 1, countWhere(t, f, `SELECT count(*) FROM notes WHERE id = 999999`))
			case "fx_untracked":
				require.Equal(t, 1, countWhere(t, f, `SELECT count(*) FROM scratch`))
			}
		})
	}
}

func contentOf(pv approval.Preview) string {
	var s string
	if json.Unmarshal(pv.Changeset.Rows[0].After["content"], &s) != nil {
		return ""
	}
	return s
}

func countWhere(t *testing.T, f *csFixture, query string) int {
	t.Helper()
	var n int
	require.NoError(t, f.db.QueryRow(query).Scan(&n))
	return n
}

type newNoteOut struct {
	ID    int64 `json:"id"`
	Child int64 `json:"child"`
}

// TestApprovalEngineValues: values the engine makes for a new row (a
// PostgreSQL sequence's id, SQLite's rowid, which another insert before
// the approval moves), the child's reference to that id, the output that
// returns it, and a value in a column the host declares generated, do
// not ask again: one approval commits.
func TestApprovalEngineValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, tool string
		between    string // run between the request and the approval; "" for none
	}{
		{"a new row's id and its child", "fx_new", ""},
		{"another row inserted before the approval", "fx_new", `INSERT INTO children (note_id, body) VALUES (1, 'other')`},
		{"a generated column", "fx_stamp", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newCSFixture(t)
			var mu sync.Mutex
			var ids []int64 // the new note's id, per run
			tools := llmtool.DefineTools("fx_engine",
				llmtool.Write("fx_new", "Add a note with a child, and return their ids.", func(c *llmtool.WriteCtx, _ struct{}) (newNoteOut, error) {
					mu.Lock()
					first := len(ids) == 0
					mu.Unlock()
					pad := func(q string) error {
						if !first {
							return nil
						}
						// Rows that come first, and go, so that this run's
						// ids differ from the next's on SQLite too.
						_, err := c.Exec(q)
						return err
					}
					var out newNoteOut
					if err := pad(`INSERT INTO notes (title) VALUES ('pad')`); err != nil {
						return out, err
					}
					if err := c.QueryRow(`INSERT INTO notes (title) VALUES ('Parent') RETURNING id`).Scan(&out.ID); err != nil {
						return out, err
					}
					if err := pad(`INSERT INTO children (note_id, body) VALUES (1, 'pad')`); err != nil {
						return out, err
					}
					if err := c.QueryRow(`INSERT INTO children (note_id, body) VALUES (?, 'kid') RETURNING id`, out.ID).Scan(&out.Child); err != nil {
						return out, err
					}
					if err := pad(`DELETE FROM children WHERE body = 'pad'`); err != nil {
						return out, err
					}
					err := pad(`DELETE FROM notes WHERE title = 'pad'`)
					mu.Lock()
					ids = append(ids, out.ID)
					mu.Unlock()
					return out, err
				}),
				llmtool.Write("fx_stamp", "Stamp note 1 with a new token.", func(c *llmtool.WriteCtx, _ struct{}) (okOut, error) {
					_, err := c.Exec(`UPDATE notes SET updated_at = ? WHERE id = 1`, rand.Text()) // declared generated
					return okOut{OK: true}, err
				}),
			)
			reg := newRegistryOpts(t, f.db, &f.opts, changesetTools, tools)
			ctx := context.Background()
			require.False(t, reg.Invoke(ctx, llmtool.Call{Tool: "cs_add", Args: []byte(`{"title": "First"}`)}).IsError)
			require.NoError(t, reg.Tenants().SetApproval(ctx, "", tc.tool, true))

			ask := reg.Invoke(ctx, llmtool.Call{Tool: tc.tool})
			require.ErrorIs(t, ask.Err, approval.ErrRequired)
			if tc.between != "" {
				_, err := f.db.Exec(tc.between)
				require.NoError(t, err)
			}
			res := reg.Invoke(ctx, llmtool.Call{Tool: tc.tool, Approval: &approval.Answer{Token: ask.Approval.Token, Approved: true}})
			require.False(t, res.IsError, res.Text())
			require.NotNil(t, res.Changeset)
			if tc.tool == "fx_new" {
				require.Len(t, ids, 3)
				require.NotEqual(t, ids[0], ids[1], "the runs' ids differ")
				var out newNoteOut
				require.NoError(t, json.Unmarshal(res.JSON, &out))
				require.Equal(t, 1, countWhere(t, f, `SELECT count(*) FROM children WHERE note_id = `+strconv.FormatInt(out.ID, 10)+` AND id = `+strconv.FormatInt(out.Child, 10)))
			}
		})
	}
}

// TestUndoApproval: where a tenant requires approval of destructive
// tools, an undo that deletes rows (of a note's creation) asks, as the
// tool that deletes a note does, says what it will do, and commits only
// when approved; an undo that sets rows back does not ask, and a setting
// for undo_changes itself decides instead.
func TestUndoApproval(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	purge := llmtool.DefineTools("fx_undo", llmtool.Write("fx_purge", "Delete a note.", func(c *llmtool.WriteCtx, in noteIDIn) (okOut, error) {
		_, err := c.Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
		return okOut{OK: true}, err
	}, llmtool.Destructive()))
	reg := newRegistryOpts(t, f.db, &f.opts, changesetTools, purge)
	ctx := context.Background()
	require.NoError(t, reg.Tenants().SetApproval(ctx, "", "", true))
	call := func(tool, args string, a *approval.Answer) llmtool.Result {
		return reg.Invoke(ctx, llmtool.Call{Tool: tool, Args: []byte(args), Approval: a})
	}
	add := call("cs_add", `{"title": "Plans"}`, nil)
	require.False(t, add.IsError, add.Text())
	addID := strconv.FormatInt(add.Changeset.ID, 10)

	require.ErrorIs(t, call("fx_purge", `{"id": 1}`, nil).Err, approval.ErrRequired, "the tool that deletes a note asks")

	before := f.dump(t)
	ask := call("undo_changes", `{"id": `+addID+`}`, nil)
	require.ErrorIs(t, ask.Err, approval.ErrRequired)
	require.Equal(t, "Undo change "+addID+" of cs_add: delete 1 row of notes; set back 1 row of stats", ask.Approval.Preview.Summary)
	require.Contains(t, ask.Text(), "This change needs the user's approval: Undo change "+addID+" of cs_add: delete 1 row of notes; set back 1 row of stats (")
	require.Contains(t, ask.Text(), "notes: 1 deleted")
	require.Equal(t, before, f.dump(t), "nothing undone yet")

	denied := call("undo_changes", `{"id": `+addID+`}`, &approval.Answer{Token: ask.Approval.Token})
	require.ErrorIs(t, denied.Err, approval.ErrRefused)
	require.Equal(t, before, f.dump(t), "nothing undone when denied")

	ask = call("undo_changes", `{"id": `+addID+`}`, nil)
	require.ErrorIs(t, ask.Err, approval.ErrRequired)
	ok := call("undo_changes", `{"id": `+addID+`}`, &approval.Answer{Token: ask.Approval.Token, Approved: true})
	require.False(t, ok.IsError, ok.Text())
	require.JSONEq(t, `{"undone": [`+addID+`]}`, string(ok.JSON))
	require.Equal(t, 0, f.count(t, "notes"))

	// An undo of an edit sets a row back, as an edit does: no question.
	add = call("cs_add", `{"title": "Diary"}`, nil)
	require.False(t, add.IsError, add.Text())
	var id int64
	require.NoError(t, f.db.QueryRow(`SELECT id FROM notes`).Scan(&id))
	edit := call("cs_edit", `{"id": `+strconv.FormatInt(id, 10)+`, "title": "Journal"}`, nil)
	require.False(t, edit.IsError, edit.Text())
	undo := call("undo_changes", `{"id": `+strconv.FormatInt(edit.Changeset.ID, 10)+`}`, nil)
	require.False(t, undo.IsError, undo.Text())
	require.Nil(t, undo.Approval)

	// The tenant's setting for undo_changes decides over the rule.
	require.NoError(t, reg.Tenants().SetApproval(ctx, "", "undo_changes", false))
	undo = call("undo_changes", `{"id": `+strconv.FormatInt(add.Changeset.ID, 10)+`}`, nil)
	require.False(t, undo.IsError, undo.Text())
	require.Equal(t, 0, f.count(t, "notes"))
}
