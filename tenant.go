package llmtool

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/tenant"
)

// Tenants returns the handle on the registry's tenant settings: which
// tools each tenant (WithTenant) may call, and which writes
// need approval there. Write tools are off in a tenant until
// reg.Tenants().SetWrites turns them on; see package tenant.
func (r *Registry) Tenants() *tenant.Settings { return r.tenants }

// newTenants makes the registry's handle on its tenant settings.
func (r *Registry) newTenants(opts *Options) *tenant.Settings {
	o := &tenant.Options{Write: r.writeSettings}
	if opts != nil {
		o.CacheTTL, o.Logger = opts.TenantCacheTTL, opts.Logger
	}
	return tenant.New(r.tx.DB, o)
}

// writeSettings runs f, a change of the tenant settings, in a write
// transaction queued with the registry's write calls, and runs it again
// as a write call runs again when it loses to other writes (retry.go):
// until it commits or the deadline passes.
func (r *Registry) writeSettings(ctx context.Context, f func(tx *sql.Tx) error) error {
	p := newRetry(ctx, r.retryFor)
	return p.do(ctx, nil, "", func() (bool, error) {
		err := r.writeSettingsOnce(ctx, f)
		return err != nil && engine.Retryable(err), err
	})
}

func (r *Registry) writeSettingsOnce(ctx context.Context, f func(tx *sql.Tx) error) error {
	wt, err := r.tx.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer r.tx.EndWrite(wt, false)
	if err := f(wt.Tx); err != nil {
		_ = wt.Tx.Rollback()
		return err
	}
	return wt.Tx.Commit()
}

func describeTenant(tenant string) string {
	if tenant == "" {
		return "the default tenant"
	}
	return fmt.Sprintf("tenant %q", tenant)
}
