package llmtool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

var (
	scopedRead = llmtool.Read("peek_item", "Read an item.",
		func(c *llmtool.ReadCtx, in GetItemIn) (ItemOut, error) {
			return ItemOut{ID: in.ID, Name: "apple"}, nil
		}, llmtool.Scopes("items:read"))
	scopedWrite = llmtool.Write("poke_item", "Change an item.",
		func(c *llmtool.WriteCtx, in GetItemIn) (ItemOut, error) {
			_, err := c.Exec(`UPDATE items SET qty = qty + 1 WHERE id = ?`, in.ID)
			return ItemOut{ID: in.ID}, err
		}, llmtool.Scopes("items:read", "items:write"))
	unscoped = llmtool.Read("count_items", "Count the items.",
		func(c *llmtool.ReadCtx, _ struct{}) (struct{ N int }, error) {
			var out struct{ N int }
			return out, c.QueryRow(`SELECT count(*) FROM items`).Scan(&out.N)
		})
	scopedTools = llmtool.DefineTools("scoped", scopedRead, scopedWrite, unscoped)
)

func TestScopes(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, openDB(t), scopedTools)
	cases := []struct {
		name   string
		scopes []string
		listed []string
		calls  map[string]string // tool → the refusal; "" for success
	}{
		{name: "not limited by scopes", scopes: nil,
			listed: []string{"peek_item", "poke_item", "count_items"},
			calls:  map[string]string{"peek_item": "", "poke_item": "", "count_items": ""}},
		{name: "read scope", scopes: []string{"items:read"},
			listed: []string{"peek_item", "count_items"},
			calls: map[string]string{"peek_item": "", "count_items": "",
				"poke_item": `Tool "poke_item" needs the scope items:write, which this sign-in does not grant. Ask the user to sign in again granting items:write, then call poke_item again.`}},
		{name: "no scopes at all", scopes: []string{},
			listed: []string{"count_items"},
			calls: map[string]string{"count_items": "",
				"peek_item": `Tool "peek_item" needs the scope items:read, which this sign-in does not grant. Ask the user to sign in again granting items:read, then call peek_item again.`,
				"poke_item": `Tool "poke_item" needs the scope items:read items:write, which this sign-in does not grant. Ask the user to sign in again granting items:read items:write, then call poke_item again.`}},
		{name: "both scopes", scopes: []string{"items:write", "items:read"},
			listed: []string{"peek_item", "poke_item", "count_items"},
			calls:  map[string]string{"peek_item": "", "poke_item": "", "count_items": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &llmtool.Principal{ID: "alice", Scopes: tc.scopes}
			ctx := llmtool.WithPrincipal(context.Background(), p)
			specs, err := reg.List(ctx, nil)
			require.NoError(t, err)
			var names []string
			for _, s := range specs {
				if s.Module == "scoped" {
					names = append(names, s.Name)
				}
			}
			require.Equal(t, tc.listed, names)
			for tool, want := range tc.calls {
				res := reg.Invoke(ctx, llmtool.Call{Tool: tool, Args: []byte(`{"id":1}`)})
				if tool == "count_items" {
					res = reg.Invoke(ctx, llmtool.Call{Tool: tool})
				}
				if want == "" {
					require.False(t, res.IsError, res.Text())
					require.NotContains(t, decodeObj(t, res.JSON), "error")
					continue
				}
				require.True(t, res.IsError, tool)
				require.Equal(t, want, res.Text())
				require.True(t, errors.Is(res.Err, llmtool.ErrInsufficientScope))
				require.Equal(t, llmtool.KindDenied, llmtool.KindOf(res.Err))
			}
		})
	}
}

func TestMissingScopes(t *testing.T) {
	t.Parallel()
	spec := scopedWrite.Spec()
	require.Equal(t, []string{"items:read", "items:write"}, spec.Scopes)
	require.Nil(t, spec.MissingScopes(nil))
	require.Nil(t, spec.MissingScopes(&llmtool.Principal{ID: "host user"}))
	require.Equal(t, []string{"items:write"}, spec.MissingScopes(&llmtool.Principal{Scopes: []string{"items:read"}}))
	require.Nil(t, spec.MissingScopes(&llmtool.Principal{Scopes: []string{"items:write", "items:read", "other"}}))

	require.True(t, (&llmtool.Principal{}).HasScope("anything"), "not limited by scopes")
	require.True(t, (*llmtool.Principal)(nil).HasScope("anything"))
	require.False(t, (&llmtool.Principal{Scopes: []string{}}).HasScope("items:read"))
	require.True(t, (&llmtool.Principal{Scopes: []string{"items:read"}}).HasScope("items:read"))
}
