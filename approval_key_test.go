package llmtool_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
)

// TestApprovalKeyLength: an Options.ApprovalKey too short to resist a
// brute-force search from one token fails NewRegistry, with the minimum and
// how to make a key; 16 bytes and more sign tokens, and no key means a
// random one.
func TestApprovalKeyLength(t *testing.T) {
	t.Parallel()
	short := func(n int) string {
		return fmt.Sprintf("llmtool: Options.ApprovalKey is too short (%d of at least 16 bytes): a short key is found by trying every value against one token it signed; make one of 32 random bytes (crypto/rand.Read), kept secret and the same on every replica", n)
	}
	tests := []struct {
		name string
		key  []byte
		msg  string // "" if accepted
	}{
		{"one byte", []byte("k"), short(1)},
		{"fifteen bytes", []byte("fifteen bytes!!"), short(15)},
		{"sixteen bytes", []byte("sixteen bytes!!!"), ""},
		{"thirty-two bytes", []byte("a key the replicas share, 32 b!!"), ""},
		{"none: a random key", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := openNotes(t)
			reg, err := llmtool.NewRegistry(db, &llmtool.Options{ApprovalKey: tt.key}, llmtool.DefineTools("notes", deleteNote).WithEntities(noteKind))
			if tt.msg != "" {
				require.EqualError(t, err, tt.msg)
				require.Nil(t, reg)
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { reg.Close() })
			ctx := alice(context.Background())
			require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))
			call := llmtool.Call{Tool: "delete_note", Args: []byte(deleteN1)}
			req := reg.Invoke(ctx, call)
			require.ErrorIs(t, req.Err, approval.ErrRequired)
			call.Approval = &approval.Answer{Token: req.Approval.Token, Approved: true}
			ok := reg.Invoke(ctx, call)
			require.False(t, ok.IsError, ok.Text())
		})
	}
}
