package tenant_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/sqlite"
	"github.com/llmtool/llmtool/tenant"
)

// A handle without a database: every tenant's writes are off, and changes
// fail.
func TestNoDatabase(t *testing.T) {
	ctx := context.Background()
	s := tenant.New(nil, nil)
	on, err := s.Writes(ctx, "wiki")
	require.NoError(t, err)
	require.False(t, on)
	require.Equal(t, &tenant.State{}, s.Get(ctx, "wiki"))
	require.EqualError(t, s.SetWrites(ctx, "wiki", true), "llmtool: the registry has no database")
	_, err = s.List(ctx)
	require.EqualError(t, err, "llmtool: the registry has no database")
}

// A second handle on the same database, as another process has, sees the
// registry's changes once its cache expires (NoCache: at once).
func TestSecondHandle(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, nil) // creates the tables
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })

	other := tenant.New(db, &tenant.Options{CacheTTL: tenant.NoCache})
	require.False(t, other.Get(ctx, "wiki").Writes)
	require.NoError(t, reg.Tenants().SetWrites(ctx, "wiki", true))
	require.NoError(t, reg.Tenants().SetTool(ctx, "wiki", "purge", false))
	require.NoError(t, reg.Tenants().SetApproval(ctx, "wiki", "", true))
	require.Equal(t, &tenant.State{Writes: true, Tools: map[string]bool{"purge": false}, Approval: map[string]bool{"": true}},
		other.Get(ctx, "wiki"))

	var heard []string
	cancel := reg.Tenants().Subscribe(func(tenant string) { heard = append(heard, tenant) })
	defer cancel()
	require.NoError(t, other.SetApproval(ctx, "wiki", "", false))
	on, err := reg.Tenants().Writes(ctx, "wiki") // reads the database: approval is not what subscribers hear of
	require.NoError(t, err)
	require.True(t, on)
	require.Empty(t, heard)
	require.NoError(t, other.ResetTool(ctx, "wiki", "purge"))
	require.NoError(t, other.SetWrites(ctx, "wiki", false))
	on, err = reg.Tenants().Writes(ctx, "wiki") // reads the database: a change, reported
	require.NoError(t, err)
	require.False(t, on)
	require.Equal(t, []string{"wiki"}, heard)

	list, err := other.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, tenant.Setting{Tenant: "wiki", Tool: "", Enabled: false, Updated: list[0].Updated}, list[0])
	require.Equal(t, tenant.Setting{Tenant: "wiki", Tool: "", Enabled: false, Approval: true, Updated: list[1].Updated}, list[1])
	require.False(t, list[0].Updated.IsZero())
}

// Expire makes the next Get read what another process changed within the
// cache's lifetime, and tell subscribers; a tenant never read has nothing
// to expire.
func TestExpire(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{TenantCacheTTL: time.Hour}) // creates the tables
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	s := reg.Tenants()
	var heard []string
	cancel := s.Subscribe(func(tenant string) { heard = append(heard, tenant) })
	defer cancel()

	s.Expire("wiki") // never read: nothing cached, nothing heard
	require.False(t, s.Get(ctx, "wiki").Writes)
	other := tenant.New(db, nil)
	require.NoError(t, other.SetWrites(ctx, "wiki", true))
	require.False(t, s.Get(ctx, "wiki").Writes, "cached for an hour")
	require.Empty(t, heard)

	s.Expire("wiki")
	require.True(t, s.Get(ctx, "wiki").Writes)
	require.Equal(t, []string{"wiki"}, heard)
	require.NoError(t, other.SetWrites(ctx, "wiki", false))
	require.True(t, s.Get(ctx, "wiki").Writes, "cached again")
}
