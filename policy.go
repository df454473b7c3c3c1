package llmtool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/tenant"
)

// Principal is the authenticated user a call runs as. Adapters put it in
// the call's context with WithPrincipal; handlers and guards read it with
// PrincipalFrom(c), since a *ReadCtx is the call's context.
type Principal struct {
	// ID identifies the user in the host application.
	ID string
	// Name is a display name, for logs and audit records.
	Name string
	// Roles are the host's role names for the user, for Options.Authorize.
	Roles []string
	// Attrs carries anything else the host wants its guards to see.
	Attrs map[string]string
	// Scopes are the OAuth scopes the principal's access token grants.
	// Nil means the principal is not limited by scopes (a user of the
	// host's own application); a non-nil slice, even empty, limits the
	// principal to the tools whose Spec.Scopes it holds all of (see
	// Scopes), in listings and calls.
	Scopes []string
}

// HasScope reports whether p's token grants scope. A principal not
// limited by scopes (nil Scopes) has every scope.
func (p *Principal) HasScope(scope string) bool {
	return p == nil || p.Scopes == nil || slices.Contains(p.Scopes, scope)
}

// MissingScopes returns the scopes of s.Scopes that p's token does not
// grant, in s's order; nil if p may call the tool as far as scopes go. A
// transport that authenticates tokens uses it to answer 403 with the
// scopes to step up to.
func (s *Spec) MissingScopes(p *Principal) []string {
	if p == nil || p.Scopes == nil {
		return nil
	}
	var missing []string
	for _, sc := range s.Scopes {
		if !slices.Contains(p.Scopes, sc) {
			missing = append(missing, sc)
		}
	}
	return missing
}

// HasRole reports whether p has the role.
func (p *Principal) HasRole(role string) bool {
	if p == nil {
		return false
	}
	for _, r := range p.Roles {
		if r == role {
			return true
		}
	}
	return false
}

type principalKey struct{}
type tenantKey struct{}

// WithPrincipal returns a context whose calls run as p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal in ctx, or nil.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// WithTenant returns a context whose calls and listings use tenant: the
// workspace, wiki or chat whose settings decide which tools may run.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantFrom returns the tenant in ctx, or "" (the default tenant).
func TenantFrom(ctx context.Context) string {
	s, _ := ctx.Value(tenantKey{}).(string)
	return s
}

// ErrNoPrincipal is wrapped by the result of a call without a principal to a
// registry that requires one (Options.RequirePrincipal).
var ErrNoPrincipal = errors.New("llmtool: no principal")

// ErrInsufficientScope is wrapped by the result of a call whose
// principal's token lacks a scope the tool declares (Scopes).
var ErrInsufficientScope = errors.New("llmtool: insufficient scope")

// ErrNotAuthorized is wrapped by the result of every call that
// Options.Authorize refused, whatever error it returned.
var ErrNotAuthorized = errors.New("llmtool: not authorized")

func (r *Registry) authorize() func(ctx context.Context, p *Principal, tool *Spec) error {
	if p := r.pol.authz.Load(); p != nil {
		return *p
	}
	return nil
}

// admit applies the policy to a call of e's tool; a nil error lets it
// run with the context returned, which, for llmtool's own tools, carries
// the tenant settings admission read (see admitted).
func (r *Registry) admit(ctx context.Context, e *entry) (context.Context, error) {
	s := &e.tool.spec
	if !e.enabled.Load() {
		return ctx, &Error{Kind: KindDenied, Message: fmt.Sprintf("Tool %q is switched off.", s.Name),
			NextAction: "Use another tool, or ask the user to have an administrator enable it.", err: ErrToolDisabled}
	}
	p := PrincipalFrom(ctx)
	if p == nil && r.pol.requirePrincipal.Load() {
		return ctx, &Error{Kind: KindDenied, Message: fmt.Sprintf("Tool %q needs a signed-in user, and this call has none.", s.Name),
			NextAction: "Ask the user to sign in to the application, then call " + s.Name + " again.", err: ErrNoPrincipal}
	}
	if missing := s.MissingScopes(p); missing != nil {
		return ctx, &Error{Kind: KindDenied, Message: fmt.Sprintf("Tool %q needs the scope %s, which this sign-in does not grant.", s.Name, strings.Join(missing, " ")),
			NextAction: "Ask the user to sign in again granting " + strings.Join(missing, " ") + ", then call " + s.Name + " again.", err: ErrInsufficientScope}
	}
	tenant := TenantFrom(ctx)
	st := r.tenants.Get(ctx, tenant)
	if st.Err != nil && !s.ReadOnly && engine.Unavailable(st.Err) {
		// Writes stay off, and the model hears why: the database is
		// down or restarting, not the tenant's switch.
		return ctx, fmt.Errorf("llmtool: tool %s: %w", s.Name, st.Err)
	}
	if on, ok := st.Tools[s.Name]; ok {
		if !on {
			return ctx, &Error{Kind: KindDenied, Message: fmt.Sprintf("Tool %q is switched off in %s.", s.Name, describeTenant(tenant)),
				NextAction: "Use another tool, or ask the user to switch it on for this tenant.", err: ErrToolDisabled}
		}
	} else if !s.ReadOnly && !st.Writes {
		next := "Ask the user to enable write tools for this tenant, then call " + s.Name + " again."
		if a := r.pol.writesOffNext.Load(); a != nil {
			next = *a
		}
		return ctx, &Error{Kind: KindDenied, Message: fmt.Sprintf("Tool %q changes data, and write tools are off in %s.", s.Name, describeTenant(tenant)),
			NextAction: next, err: ErrToolDisabled}
	}
	if authorize := r.authorize(); authorize != nil {
		if err := authorize(ctx, p, s); err != nil {
			refusal := &Error{Kind: KindDenied, Message: fmt.Sprintf("You may not use %s.", s.Name),
				NextAction: "Use another tool, or ask an administrator for access.", err: fmt.Errorf("%w: %w", ErrNotAuthorized, err)}
			// Authorize's own words, as a refusal: no "Error: "
			// prefix, which is for malformed arguments only.
			var te *Error
			if errors.As(err, &te) {
				refusal.Message, refusal.NextAction = te.Message, te.NextAction
			}
			return ctx, refusal
		}
	}
	if e.builtin {
		ctx = context.WithValue(ctx, admittedKey{}, st)
	}
	return ctx, nil
}

// admittedKey is the context key of the tenant settings a call of
// llmtool's own tools was admitted with.
type admittedKey struct{}

// admitted returns the tenant settings that admitted ctx's call of one of
// llmtool's own tools, or nil. The catalog tools (man, find_tools) show
// what the tenant may call by them, and must not read them again: not in
// the tool's transaction, where the statement would be the tool's, which
// SQLite's authorizer (internal/dbconn) refuses on llmtool's own tables
// and a Role may not read; nor on a second connection while the call
// holds one, which a pool with a connection limit may make wait on calls
// like it. Admission has just read them (from the cache, or on llmtool's
// own connection), so handing them over leaves no statement to fail,
// whatever the cache's lifetime, and the catalog shows exactly what
// admission let run.
func admitted(ctx context.Context) *tenant.State {
	st, _ := ctx.Value(admittedKey{}).(*tenant.State)
	return st
}

// policy is a registry's policy state; the tenant settings it applies are
// Registry.tenants'.
type policy struct {
	requirePrincipal atomic.Bool
	authz            atomic.Pointer[func(ctx context.Context, p *Principal, tool *Spec) error]
	writesOffNext    atomic.Pointer[string]

	reads atomic.Pointer[readSpecs] // read-only subset of the listing
}

// readSpecs caches the read-only subset of a listing.
type readSpecs struct {
	src   *[]*Spec
	reads []*Spec
}

// visible filters a listing down to what ctx's principal may call in ctx's
// tenant, by st, the tenant's settings; nil reads them (Settings.Get).
func (r *Registry) visible(ctx context.Context, st *tenant.State, all *[]*Spec) []*Spec {
	p := PrincipalFrom(ctx)
	if p == nil && r.pol.requirePrincipal.Load() {
		return []*Spec{}
	}
	if st == nil {
		st = r.tenants.Get(ctx, TenantFrom(ctx))
	}
	az := r.authorize()
	scoped := p != nil && p.Scopes != nil
	if az == nil && len(st.Tools) == 0 && !scoped {
		if st.Writes {
			return *all
		}
		return r.readOnly(all)
	}
	out := make([]*Spec, 0, len(*all))
	for _, s := range *all {
		if on, ok := st.Tools[s.Name]; ok {
			if !on {
				continue
			}
		} else if !s.ReadOnly && !st.Writes {
			continue
		}
		if scoped && s.MissingScopes(p) != nil {
			continue
		}
		if az != nil && az(ctx, p, s) != nil {
			continue
		}
		out = append(out, s)
	}
	return out
}

// readOnly returns the read tools of a listing, computed once per listing.
func (r *Registry) readOnly(all *[]*Spec) []*Spec {
	if c := r.pol.reads.Load(); c != nil && c.src == all {
		return c.reads
	}
	reads := make([]*Spec, 0, len(*all))
	for _, s := range *all {
		if s.ReadOnly {
			reads = append(reads, s)
		}
	}
	r.pol.reads.Store(&readSpecs{src: all, reads: reads})
	return reads
}
