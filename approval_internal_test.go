package llmtool

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/approval"
)

func TestApprovalExpiry(t *testing.T) {
	t.Parallel()
	var a approvals
	a.init(&Options{ApprovalTTL: time.Minute})
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return now }
	ctx := WithPrincipal(context.Background(), &Principal{ID: "alice"})
	pv := &approval.Preview{Result: []byte(`{}`)}
	tok, exp := a.seal(ctx, "delete_note", argsDigest([]byte(`{"noteId":"n1"}`)), (&Registry{}).previewDigest(pv, &fresh{}), "")
	require.Equal(t, now.Add(time.Minute), exp)

	now = now.Add(59 * time.Second)
	_, err := a.open(ctx, "delete_note", argsDigest([]byte(` { "noteId" : "n1" } `)), tok)
	require.NoError(t, err, "arguments compare by value, not spelling")

	now = now.Add(2 * time.Second)
	_, err = a.open(ctx, "delete_note", argsDigest([]byte(`{"noteId":"n1"}`)), tok)
	require.EqualError(t, err, "The approval expired at 2026-12-01T12:01:00Z. Nothing was saved. Call the tool again to get a new preview for the user to approve.")
	require.ErrorIs(t, err, approval.ErrRefused)

	var b approvals
	b.init(nil) // another process, another random key
	_, err = b.open(ctx, "delete_note", argsDigest([]byte(`{"noteId":"n1"}`)), tok)
	require.ErrorIs(t, err, approval.ErrRefused)

	var c approvals
	c.init(&Options{ApprovalKey: a.key}) // replicas sharing the key
	c.now = a.now
	now = now.Add(-30 * time.Second)
	_, err = c.open(ctx, "delete_note", argsDigest([]byte(`{"noteId":"n1"}`)), tok)
	require.NoError(t, err)
}

// TestFreshInToken: what a request's second run found fresh comes back
// from its token as it went in.
func TestFreshInToken(t *testing.T) {
	t.Parallel()
	var a approvals
	a.init(nil)
	ctx := context.Background()
	for _, f := range []fresh{
		{},
		{result: true},
		{columns: map[string]bool{freshKey("notes", "id"): true, freshKey("notes", "updated_at"): true, freshKey("a.b", "c"): true}},
		{result: true, columns: map[string]bool{freshKey("items", "token"): true}},
	} {
		tok, _ := a.seal(ctx, "add_note", "args", "digest", f.encode())
		c, err := a.open(ctx, "add_note", "args", tok)
		require.NoError(t, err)
		require.Equal(t, f, decodeFresh(c.Fresh))
	}
}

// TestFreshValuesInToken: the values the shown run gave its made and
// generated columns, and the columns that repeated them, come back from
// the token as they went in, whatever bytes the values hold.
func TestFreshValuesInToken(t *testing.T) {
	t.Parallel()
	var a approvals
	a.init(nil)
	ctx := context.Background()
	f := fresh{
		result:  true,
		columns: map[string]bool{freshKey("notes", "id"): true},
		shown: map[string][]string{
			freshKey("notes", "id"):         {"7", "8"},
			freshKey("notes", "updated_at"): {`"2026-12-07 23:00:00"`, "null", `"line\nbreak \u0000"`},
		},
		refs: map[string][]string{freshKey("children", "note_id"): {freshKey("notes", "id")}},
	}
	tok, _ := a.seal(ctx, "add_note", "args", "digest", f.encode())
	c, err := a.open(ctx, "add_note", "args", tok)
	require.NoError(t, err)
	require.Equal(t, f, decodeFresh(c.Fresh))
}
