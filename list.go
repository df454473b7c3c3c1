package llmtool

import (
	"context"
	"errors"
)

// ListOptions selects what Registry.List returns. A nil *ListOptions, like
// the zero value, lists the tools ctx's caller may call. Set one field at
// most.
type ListOptions struct {
	// Resources lists the resources (fixed URIs and templates) the caller
	// may read instead; Spec.URI is the URI or template. The policy of
	// read tools applies: switched-off resources and those
	// Options.Authorize refuses are left out.
	Resources bool
	// Prompts lists the prompts the caller may render instead; Spec.Params
	// are the prompt's arguments.
	Prompts bool
	// Unloaded lists the on-demand tools (Options.OnDemand) the caller
	// may call but its tenant has not loaded: what the listing of tools
	// leaves out for now. A chat adapter sends them to providers that
	// search tools themselves, marked to load on demand. Policy filters
	// them as it filters tools.
	Unloaded bool
	// All lists every registered tool, resource and prompt, switched on
	// or off and whatever any tenant allows (Spec.URI marks a resource,
	// Spec.Prompt a prompt). It is for start-up checks (package lint, a
	// chat adapter's provider check) that must see tools no tenant has
	// enabled yet; listings for a model leave it unset.
	All bool
}

// List returns the specs of the tools ctx's caller may call, in
// registration order with the built-in man last, after running pending
// loaders: tools switched on, allowed in the tenant of ctx (write tools only
// once the tenant enabled writes; see Tenants) and for its principal
// (Options.RequirePrincipal, Options.Authorize). opts lists resources,
// prompts, the tools not loaded yet or every spec instead (see
// ListOptions); nil lists tools.
//
// The specs and their schema JSON are computed once; do not modify them.
// Filtering by tenant uses the cached tenant settings (see
// Options.TenantCacheTTL) and allocates nothing unless per-tool settings or
// Options.Authorize apply. Tools loaded on demand (Options.OnDemand) are
// listed only once the tenant loaded them with find_tools. A loader's
// failure is returned along with the specs that did load.
func (r *Registry) List(ctx context.Context, opts *ListOptions) ([]*Spec, error) {
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	set := 0
	for _, b := range []bool{o.Resources, o.Prompts, o.Unloaded, o.All} {
		if b {
			set++
		}
	}
	if set > 1 {
		return nil, errors.New("llmtool: List: ListOptions has more than one field set; list one kind at a time")
	}
	err := r.resolve(ctx)
	switch {
	case o.Resources:
		return r.listKind(ctx, kindResource), err
	case o.Prompts:
		return r.listKind(ctx, kindPrompt), err
	case o.Unloaded:
		return r.unloaded(ctx), err
	case o.All:
		return r.registered(), err
	}
	return r.visible(ctx, nil, r.listed(ctx, r.allSpecs())), err
}

// allSpecs returns the specs of the tools switched on, built-in ones last,
// computed once per change; on-demand tools are left out (see listed).
func (r *Registry) allSpecs() *[]*Spec {
	if p := r.specs.Load(); p != nil {
		return p
	}
	r.mu.RLock()
	specs := make([]*Spec, 0, len(r.order))
	for _, builtin := range []bool{false, true} {
		for _, e := range r.order {
			if e.enabled.Load() && e.builtin == builtin && e.tool.kind == kindTool && !e.onDemand {
				specs = append(specs, &e.tool.spec)
			}
		}
	}
	r.mu.RUnlock()
	r.specs.Store(&specs)
	return &specs
}

// registered returns the specs of every registered tool, resource and
// prompt, in registration order (ListOptions.All).
func (r *Registry) registered() []*Spec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	specs := make([]*Spec, 0, len(r.order))
	for _, e := range r.order {
		specs = append(specs, &e.tool.spec)
	}
	return specs
}

// listKind returns the resources or the prompts ctx's caller may use
// (ListOptions.Resources, ListOptions.Prompts).
func (r *Registry) listKind(ctx context.Context, kind toolKind) []*Spec {
	r.mu.RLock()
	var specs []*Spec
	for _, e := range r.order {
		if e.tool.kind == kind && e.enabled.Load() {
			specs = append(specs, &e.tool.spec)
		}
	}
	r.mu.RUnlock()
	if len(specs) == 0 {
		return []*Spec{}
	}
	return r.visible(ctx, nil, &specs)
}

// unloaded returns the on-demand tools ctx's caller may call that its
// tenant has not loaded (ListOptions.Unloaded).
func (r *Registry) unloaded(ctx context.Context) []*Spec {
	if r.demand.pick == nil {
		return nil
	}
	d := r.demandSpecs()
	loaded := r.loadedNames(TenantFrom(ctx))
	out := make([]*Spec, 0, len(d.specs))
	for _, s := range r.visible(ctx, nil, &d.specs) {
		if !loaded[s.Name] {
			out = append(out, s)
		}
	}
	return out
}
