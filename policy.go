package llmtool

import "context"

// Principal is the authenticated user a call runs as. Adapters put it in
// the call's context with WithPrincipal; handlers and guards read it with
// ReadCtx.Principal.
type Principal struct {
	// ID identifies the user in the host application.
	ID string
	// Name is a display name, for logs and audit records.
	Name string
	// Roles are the host's role names for the user, for Authorizers.
	Roles []string
	// Attrs carries anything else the host wants its guards to see.
	Attrs map[string]string
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
type scopeKey struct{}

// WithPrincipal returns a context whose calls run as p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal in ctx, or nil.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// WithScope returns a context whose calls and listings use scope: the
// tenant, workspace, wiki or chat whose settings decide which tools may run.
func WithScope(ctx context.Context, scope string) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope)
}

// ScopeFrom returns the scope in ctx, or "" (the default scope).
func ScopeFrom(ctx context.Context) string {
	s, _ := ctx.Value(scopeKey{}).(string)
	return s
}
