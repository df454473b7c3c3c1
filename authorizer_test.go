package llmtool_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/audit"
)

// TestAuthorizerRefusal: whatever Authorize returns to refuse, the
// result wraps ErrNotAuthorized and Authorize's error, has KindDenied,
// is audited as refused and writes nothing; the model sees the message and
// next action of an *Error in the chain, else the standard message.
func TestAuthorizerRefusal(t *testing.T) {
	t.Parallel()
	const standard = "You may not use add_item. Use another tool, or ask an administrator for access."
	plain := errors.New("not an editor")
	denied := llmtool.Denied("Guests may only read.").Next("Ask the user to sign in with an editor account.")
	tests := []struct {
		name string
		err  error // what Authorize returns
		msg  string
	}{
		{"plain error", plain, standard},
		{"*Error Denied", denied, "Guests may only read. Ask the user to sign in with an editor account."},
		{"wrapped plain error", fmt.Errorf("rbac: %w", plain), standard},
		{"wrapped *Error", fmt.Errorf("rbac: %w", denied), "Guests may only read. Ask the user to sign in with an editor account."},
		{"*Error of another kind", llmtool.NotFound("No tool add_item for you."), "No tool add_item for you."},
		{"invalid-arguments *Error loses the prefix", llmtool.InvalidArgs("Send a project.").Next("Call list_projects."), "Send a project. Call list_projects."},
		{"already wraps ErrNotAuthorized", fmt.Errorf("%w: quota", llmtool.ErrNotAuthorized), standard},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := openDB(t)
			var mu sync.Mutex
			var outcomes []string
			reg, _ := newRegOpts(t, db, &llmtool.Options{
				ValidateOutput: true,
				Audit: []audit.Sink{audit.Func(func(_ context.Context, rec audit.Record) {
					mu.Lock()
					outcomes = append(outcomes, rec.Outcome)
					mu.Unlock()
				})},
				Authorize: func(context.Context, *llmtool.Principal, *llmtool.Spec) error {
					return tc.err
				},
			}, itemTools)
			ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "bob"})
			require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))

			res := reg.Invoke(ctx, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"pear"}`)})
			require.True(t, res.IsError)
			require.Equal(t, tc.msg, res.Text())
			require.JSONEq(t, fmt.Sprintf(`{"error":%q}`, tc.msg), string(res.JSON))
			require.ErrorIs(t, res.Err, llmtool.ErrNotAuthorized)
			require.ErrorIs(t, res.Err, tc.err, "Authorize's error stays in the chain")
			require.Equal(t, llmtool.KindDenied, llmtool.KindOf(res.Err))
			require.Equal(t, 1, countItems(t, db), "nothing written")
			mu.Lock()
			require.Equal(t, []string{audit.OutcomeRefused}, outcomes)
			mu.Unlock()
		})
	}
}
