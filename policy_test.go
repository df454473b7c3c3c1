package llmtool_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/tenant"
)

func inTenant(tenant string) context.Context {
	return llmtool.WithTenant(context.Background(), tenant)
}

func listNames(t testing.TB, reg *llmtool.Registry, ctx context.Context) []string {
	t.Helper()
	specs, err := reg.List(ctx, nil)
	require.NoError(t, err)
	return names(specs)
}

func TestWritesOffUntilEnabled(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	reg, _ := newReg(t, db, itemTools)
	a, b := inTenant("team-a"), inTenant("team-b")

	require.Equal(t, []string{"get_item", "man"}, listNames(t, reg, a))
	res := reg.Invoke(a, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"pear"}`)})
	require.True(t, res.IsError)
	require.Equal(t, `Tool "add_item" changes data, and write tools are off in tenant "team-a". Ask the user to enable write tools for this tenant, then call add_item again.`, res.Text())
	require.ErrorIs(t, res.Err, llmtool.ErrToolDisabled)
	require.Equal(t, llmtool.KindDenied, llmtool.KindOf(res.Err))
	require.Equal(t, 1, countItems(t, db))
	res = invoke(reg, "add_item", `{"name":"pear"}`)
	require.Equal(t, `Tool "add_item" changes data, and write tools are off in the default tenant. Ask the user to enable write tools for this tenant, then call add_item again.`, res.Text())
	res = reg.Invoke(a, llmtool.Call{Tool: "get_item", Args: []byte(`{"id":1}`)})
	require.False(t, res.IsError, "read tools are on: %s", res.Text())

	on, err := reg.Tenants().Writes(a, "team-a")
	require.NoError(t, err)
	require.False(t, on)
	require.NoError(t, reg.Tenants().SetWrites(a, "team-a", true))
	on, err = reg.Tenants().Writes(a, "team-a")
	require.NoError(t, err)
	require.True(t, on)
	require.Equal(t, []string{"get_item", "add_item", "man"}, listNames(t, reg, a))
	require.Equal(t, []string{"get_item", "man"}, listNames(t, reg, b), "other tenants unaffected")
	res = reg.Invoke(a, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"pear"}`)})
	require.False(t, res.IsError, res.Text())
	require.NotContains(t, decodeObj(t, res.JSON), "error")
	require.Equal(t, 2, countItems(t, db))
	require.ErrorIs(t, reg.Invoke(b, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"fig"}`)}).Err, llmtool.ErrToolDisabled)

	require.NoError(t, reg.Tenants().SetWrites(a, "team-a", false))
	require.ErrorIs(t, reg.Invoke(a, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"fig"}`)}).Err, llmtool.ErrToolDisabled)
	require.Equal(t, []string{"get_item", "man"}, listNames(t, reg, a))

	settings, err := reg.Tenants().List(a)
	require.NoError(t, err)
	require.Len(t, settings, 1)
	require.Equal(t, "team-a", settings[0].Tenant)
	require.Equal(t, "", settings[0].Tool)
	require.False(t, settings[0].Enabled)
	require.False(t, settings[0].Updated.IsZero())
}

func TestWritesOffAction(t *testing.T) {
	t.Parallel()
	reg, _ := newRegOpts(t, openDB(t), &llmtool.Options{
		ValidateOutput:  true,
		WritesOffAction: `Ask the user to turn on "Allow changes" in the chat settings, then try again.`,
	}, itemTools)
	res := invoke(reg, "add_item", `{"name":"pear"}`)
	require.Equal(t, `Tool "add_item" changes data, and write tools are off in the default tenant. Ask the user to turn on "Allow changes" in the chat settings, then try again.`, res.Text())
}

func TestTenantSettingSurvivesReopen(t *testing.T) {
	t.Parallel()
	ctx := inTenant("wiki")
	db, where := openDBAt(t)
	reg, err := llmtool.NewRegistry(db, nil, itemTools)
	require.NoError(t, err)
	require.NoError(t, reg.Tenants().SetWrites(ctx, "wiki", true))
	require.NoError(t, reg.Close())
	require.NoError(t, db.Close())

	db = openAgain(t, where)
	reg, _ = newReg(t, db, itemTools)
	on, err := reg.Tenants().Writes(ctx, "wiki")
	require.NoError(t, err)
	require.True(t, on)
	res := reg.Invoke(ctx, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"pear"}`)})
	require.False(t, res.IsError, res.Text())
	require.Equal(t, []string{"get_item", "add_item", "man"}, listNames(t, reg, ctx))
}

func TestBrokenPolicyTableLeavesWritesOff(t *testing.T) {
	t.Parallel()
	t.Run("unreadable from the start", func(t *testing.T) {
		t.Parallel()
		db := openDB(t)
		_, err := db.Exec(`CREATE TABLE llmtool_scope_settings (x TEXT)`)
		require.NoError(t, err)
		reg, logs := newReg(t, db, itemTools)
		ctx := inTenant("s")

		res := reg.Invoke(ctx, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"pear"}`)})
		require.Equal(t, `Tool "add_item" changes data, and write tools are off in tenant "s". Ask the user to enable write tools for this tenant, then call add_item again.`, res.Text())
		// The database's own words for the missing column, as the log
		// quotes them.
		noColumn := map[string]string{
			"sqlite":   `SQL logic error: no such column: tool (1)`,
			"postgres": `ERROR: column "tool" does not exist (SQLSTATE 42703)`,
		}[testEngine()]
		require.Contains(t, logs.String(), `level=ERROR msg="llmtool: cannot read the tenant's tool settings; write tools stay off" tenant=s err=`+strconv.Quote(`llmtool: read settings of tenant "s": `+noColumn))
		require.Equal(t, []string{"get_item", "man"}, listNames(t, reg, ctx))
		require.False(t, reg.Invoke(ctx, llmtool.Call{Tool: "get_item", Args: []byte(`{"id":1}`)}).IsError, "reads still work")

		require.ErrorContains(t, reg.Tenants().SetWrites(ctx, "s", true), `llmtool: set writes in tenant "s": llmtool: read settings of tenant "s": `+noColumn)
		on, err := reg.Tenants().Writes(ctx, "s")
		require.Error(t, err)
		require.False(t, on)
		require.Equal(t, 1, countItems(t, db))
	})
	t.Run("broken after enabling", func(t *testing.T) {
		t.Parallel()
		db := openDB(t)
		reg, logs := newRegOpts(t, db, &llmtool.Options{ValidateOutput: true, TenantCacheTTL: tenant.NoCache}, itemTools) // read on every call
		ctx := inTenant("s")
		require.NoError(t, reg.Tenants().SetWrites(ctx, "s", true))
		require.False(t, reg.Invoke(ctx, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"pear"}`)}).IsError)

		_, err := db.Exec(`ALTER TABLE llmtool_scope_settings RENAME COLUMN enabled TO on_off`)
		require.NoError(t, err)
		res := reg.Invoke(ctx, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"fig"}`)})
		require.ErrorIs(t, res.Err, llmtool.ErrToolDisabled)
		require.Contains(t, logs.String(), map[string]string{
			"sqlite":   `no such column: enabled`,
			"postgres": `ERROR: column \"enabled\" does not exist (SQLSTATE 42703)`,
		}[testEngine()])
		require.Equal(t, 2, countItems(t, db))
	})
}

func TestPerToolTenantSettings(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	reg, _ := newReg(t, db, itemTools)
	ctx := inTenant("s")

	require.NoError(t, reg.Tenants().SetTool(ctx, "s", "add_item", true))
	require.NoError(t, reg.Tenants().SetTool(ctx, "s", "get_item", false))
	require.Equal(t, []string{"add_item", "man"}, listNames(t, reg, ctx))
	require.False(t, reg.Invoke(ctx, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"pear"}`)}).IsError, "on while the tenant's writes are off")
	res := reg.Invoke(ctx, llmtool.Call{Tool: "get_item", Args: []byte(`{"id":1}`)})
	require.Equal(t, `Tool "get_item" is switched off in tenant "s". Use another tool, or ask the user to switch it on for this tenant.`, res.Text())
	require.ErrorIs(t, res.Err, llmtool.ErrToolDisabled)
	require.Equal(t, []string{"get_item", "man"}, listNames(t, reg, inTenant("other")))

	require.NoError(t, reg.SetEnabled("add_item", false))
	require.ErrorIs(t, reg.Invoke(ctx, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"x"}`)}).Err, llmtool.ErrToolDisabled, "the kill switch wins")
	require.NoError(t, reg.SetEnabled("add_item", true))

	settings, err := reg.Tenants().List(ctx)
	require.NoError(t, err)
	var got []string
	for _, s := range settings {
		got = append(got, s.Tenant+"/"+s.Tool)
	}
	require.Equal(t, []string{"s/add_item", "s/get_item"}, got)

	require.NoError(t, reg.Tenants().ResetTool(ctx, "s", "add_item"))
	require.NoError(t, reg.Tenants().ResetTool(ctx, "s", "get_item"))
	require.Equal(t, []string{"get_item", "man"}, listNames(t, reg, ctx))
	require.EqualError(t, reg.Tenants().SetTool(ctx, "s", "bad name", true), `llmtool: SetTool: tool name "bad name" is invalid for MCP (1 to 128 of A-Z a-z 0-9 _ - .); use lower_snake_case such as "get_note"`)
}

type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) add(s string) { e.mu.Lock(); e.got = append(e.got, s); e.mu.Unlock() }
func (e *events) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.got
	e.got = nil
	return g
}

func TestSubscribe(t *testing.T) {
	t.Parallel()
	db, where := openDBAt(t)
	reg, _ := newReg(t, db, itemTools)
	ctx := context.Background()
	ev := &events{}
	cancel := reg.Tenants().Subscribe(ev.add)

	require.NoError(t, reg.Tenants().SetWrites(ctx, "a", true))
	require.Equal(t, []string{"a"}, ev.take())
	require.NoError(t, reg.Tenants().SetWrites(ctx, "a", true))
	require.NoError(t, reg.Tenants().SetWrites(ctx, "b", false))
	require.Empty(t, ev.take(), "no change, no notification")
	require.NoError(t, reg.Tenants().SetTool(ctx, "b", "add_item", true))
	require.Equal(t, []string{"b"}, ev.take())
	require.NoError(t, reg.SetEnabled("add_item", false))
	require.Equal(t, []string{""}, ev.take())

	extra := llmtool.Read("extra", "Extra.", func(*llmtool.ReadCtx, struct{}) (struct{}, error) { return struct{}{}, nil })
	reg.AddLoader("extra", func(context.Context) (*llmtool.Module, error) { return llmtool.DefineTools("extra", extra), nil })
	require.Empty(t, ev.take())
	require.Contains(t, listNames(t, reg, ctx), "extra")
	require.Equal(t, []string{""}, ev.take(), "a loader resolved")

	// A change made by another process is seen when the cache is refreshed.
	db2 := openAgain(t, where)
	reg2, _ := newRegOpts(t, db2, &llmtool.Options{ValidateOutput: true, TenantCacheTTL: tenant.NoCache}, itemTools)
	ev2 := &events{}
	reg2.Tenants().Subscribe(ev2.add)
	a := inTenant("a")
	require.Equal(t, []string{"get_item", "add_item", "man"}, listNames(t, reg2, a))
	require.NoError(t, reg.Tenants().SetWrites(ctx, "a", false))
	require.Equal(t, []string{"get_item", "man"}, listNames(t, reg2, a))
	require.Equal(t, []string{"a"}, ev2.take())
	require.Equal(t, []string{"a"}, ev.take())

	cancel()
	require.NoError(t, reg.Tenants().SetWrites(ctx, "a", true))
	require.Empty(t, ev.take())
}

func TestPolicyCacheAcrossProcesses(t *testing.T) {
	t.Parallel()
	db, where := openDBAt(t)
	reg, _ := newReg(t, db, itemTools)
	fresh, _ := newRegOpts(t, openAgain(t, where), &llmtool.Options{ValidateOutput: true, TenantCacheTTL: tenant.NoCache}, itemTools)
	pinned, _ := newRegOpts(t, openAgain(t, where), &llmtool.Options{ValidateOutput: true, TenantCacheTTL: time.Hour}, itemTools)
	ctx := inTenant("s")
	call := llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"pear"}`)}

	require.True(t, fresh.Invoke(ctx, call).IsError)
	require.True(t, pinned.Invoke(ctx, call).IsError)
	require.NoError(t, reg.Tenants().SetWrites(ctx, "s", true))
	require.False(t, fresh.Invoke(ctx, call).IsError, "tenant.NoCache reads the table every time")
	require.True(t, pinned.Invoke(ctx, call).IsError, "a long TTL keeps its copy")
	on, err := pinned.Tenants().Writes(ctx, "s")
	require.NoError(t, err)
	require.True(t, on)
	require.False(t, pinned.Invoke(ctx, call).IsError, "WritesEnabled refreshed the copy")
}

func TestRequirePrincipal(t *testing.T) {
	t.Parallel()
	reg, _ := newRegOpts(t, openDB(t), &llmtool.Options{ValidateOutput: true, RequirePrincipal: true}, itemTools)
	ctx := context.Background()

	res := invoke(reg, "get_item", `{"id":1}`)
	require.Equal(t, `Tool "get_item" needs a signed-in user, and this call has none. Ask the user to sign in to the application, then call get_item again.`, res.Text())
	require.ErrorIs(t, res.Err, llmtool.ErrNoPrincipal)
	require.Equal(t, llmtool.KindDenied, llmtool.KindOf(res.Err))
	require.Empty(t, listNames(t, reg, ctx))

	res = reg.Invoke(alice(ctx), llmtool.Call{Tool: "get_item", Args: []byte(`{"id":1}`)})
	require.False(t, res.IsError, res.Text())
	require.Equal(t, []string{"get_item", "man"}, listNames(t, reg, alice(ctx)))
}

func TestAuthorizer(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	reg, _ := newRegOpts(t, db, &llmtool.Options{
		ValidateOutput: true,
		Authorize: func(ctx context.Context, p *llmtool.Principal, tool *llmtool.Spec) error {
			switch {
			case tool.ReadOnly || p.HasRole("editor"):
				return nil
			case p.HasRole("guest"):
				return llmtool.Denied("Guests may only read.").Next("Ask the user to sign in with an editor account.")
			}
			return errors.New("not an editor")
		},
	}, itemTools)
	ctx := context.Background()
	require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))
	as := func(id string, roles ...string) context.Context {
		return llmtool.WithPrincipal(ctx, &llmtool.Principal{ID: id, Roles: roles})
	}
	call := llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"pear"}`)}

	res := reg.Invoke(as("bob", "reader"), call)
	require.Equal(t, `You may not use add_item. Use another tool, or ask an administrator for access.`, res.Text())
	require.ErrorIs(t, res.Err, llmtool.ErrNotAuthorized)
	require.EqualError(t, errors.Unwrap(res.Err), "llmtool: not authorized: not an editor")
	res = reg.Invoke(as("gus", "guest"), call)
	require.Equal(t, `Guests may only read. Ask the user to sign in with an editor account.`, res.Text())
	require.Equal(t, llmtool.KindDenied, llmtool.KindOf(res.Err))
	res = reg.Invoke(as("alice", "editor"), call)
	require.False(t, res.IsError, res.Text())

	require.Equal(t, []string{"get_item", "man"}, listNames(t, reg, as("bob")))
	require.Equal(t, []string{"get_item", "add_item", "man"}, listNames(t, reg, as("alice", "editor")))
	// Without Authorize, over the same database, bob sees what the tenant allows.
	open, _ := newReg(t, db, itemTools)
	require.Equal(t, []string{"get_item", "add_item", "man"}, listNames(t, open, as("bob")))
}

func TestPrincipalAndTenantReachGuardsAndHandlers(t *testing.T) {
	t.Parallel()
	type out struct {
		Guard, Handler, Tenant string
	}
	var guardSaw string
	whoami := llmtool.Write("whoami", "Say who calls.",
		func(c *llmtool.WriteCtx, _ struct{}) (out, error) {
			return out{Guard: guardSaw, Handler: llmtool.PrincipalFrom(c).ID, Tenant: llmtool.TenantFrom(c)}, nil
		},
		llmtool.Guards(func(c *llmtool.ReadCtx, _ struct{}) error {
			guardSaw = llmtool.PrincipalFrom(c).ID
			return nil
		}))
	reg, _ := newReg(t, openDB(t), llmtool.DefineTools("who", whoami))
	ctx := alice(inTenant("wiki"))
	require.NoError(t, reg.Tenants().SetWrites(ctx, "wiki", true))
	res := reg.Invoke(ctx, llmtool.Call{Tool: "whoami"})
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"Guard":"alice","Handler":"alice","Tenant":"wiki"}`, string(res.JSON))
}

func TestListAllocatesNothing(t *testing.T) {
	db := openDB(t)
	reg, _ := newRegOpts(t, db, &llmtool.Options{ValidateOutput: true, TenantCacheTTL: time.Hour}, itemTools) // no refresh during the measurement
	on, off := inTenant("on"), inTenant("off")
	require.NoError(t, reg.Tenants().SetWrites(on, "on", true))
	for _, ctx := range []context.Context{on, off} {
		_, err := reg.List(ctx, nil) // warm the caches
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(100, func() { _, _ = reg.List(ctx, nil) })
		require.Zero(t, allocs)
	}
	require.True(t, slices.Equal([]string{"get_item", "man"}, listNames(t, reg, off)))
}

// BenchmarkList compares a listing filtered for a tenant whose writes are
// off, and one with a per-tool setting, against the unfiltered baseline of
// a tenant with writes on.
func BenchmarkList(b *testing.B) {
	db := openDB(b)
	reg, err := llmtool.NewRegistry(db, nil, itemTools)
	require.NoError(b, err)
	defer reg.Close()
	ctx := context.Background()
	require.NoError(b, reg.Tenants().SetWrites(ctx, "on", true))
	require.NoError(b, reg.Tenants().SetTool(ctx, "tool", "add_item", true))
	for _, tenant := range []string{"on", "off", "tool"} {
		sctx := inTenant(tenant)
		b.Run("tenant="+tenant, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reg.List(sctx, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
