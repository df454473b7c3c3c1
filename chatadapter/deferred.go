package chatadapter

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
)

// Tools loaded on demand, through the provider's own tool search
// (Options.ToolSearch).
//
// A registry with on-demand tools (llmtool.Options.OnDemand) lists only
// the tools a tenant loaded, and the built-in find_tools that loads more:
// that works with every provider. Anthropic Messages and OpenAI Responses
// also search tools themselves: a request may carry every definition,
// those marked "defer_loading": true kept out of the model's context
// until the provider's search tool loads them. Options.ToolSearch sends
// those shapes that form instead.

// toolSearchTool returns the definition of the tool search tool of shape's
// provider, which Options.ToolSearch sends in place of find_tools, or nil
// when the provider has none (OpenAI Chat Completions, Gemini).
func toolSearchTool(shape Shape) json.RawMessage {
	def, _, _ := formatOf(shape).searchTool()
	return def
}

// searchTools is Tools for a shape whose provider searches tools: the
// tools listed (find_tools left out), then, when some on-demand tools are
// not loaded, the provider's search tool and those tools, deferred.
func (a *Adapter) searchTools(ctx context.Context, shape Shape) (*ToolSet, error) {
	specs, listErr := a.reg.List(ctx, nil)
	unloaded, _ := a.reg.List(ctx, &llmtool.ListOptions{Unloaded: true}) // its error is List's: the loaders'
	specs = slices.DeleteFunc(slices.Clone(specs), func(s *llmtool.Spec) bool {
		return s.Name == "find_tools" && s.Module == "llmtool"
	})
	a.mu.Lock()
	if c := cachedSetOf(a.deferred[shape], specs, unloaded); c != nil {
		a.mu.Unlock()
		return c.set, joinErrs(listErr, c.errs)
	}
	a.mu.Unlock()

	n := len(specs) + len(unloaded) + 1
	set := &ToolSet{Shape: shape, Tools: make([]json.RawMessage, 0, n), Names: make([]string, 0, n)}
	var errs []error
	add := func(s *llmtool.Spec, deferred bool) {
		d := a.def(s, shape)
		if d.err != nil {
			errs = append(errs, d.err)
			return
		}
		def := d.json
		if deferred {
			// The definition is an object: close it with the flag.
			def = append(append(make(json.RawMessage, 0, len(def)+21), def[:len(def)-1]...), `,"defer_loading":true}`...)
			set.Deferred = append(set.Deferred, s.Name)
		}
		set.Tools = append(set.Tools, def)
		set.Names = append(set.Names, s.Name)
	}
	for _, s := range specs {
		add(s, false)
	}
	if len(unloaded) > 0 {
		def, name, beta := formatOf(shape).searchTool()
		set.Tools, set.Names, set.Beta = append(set.Tools, def), append(set.Names, name), beta
		for _, s := range unloaded {
			add(s, true)
		}
	}
	size := 32
	for _, t := range set.Tools {
		size += len(t) + 1
	}
	set.JSON = ordered.Append(make([]byte, 0, size), ordered.Array(set.Tools))

	a.mu.Lock()
	pushSet(&a.deferred[shape], &cachedSet{specs: specs, unloaded: unloaded, set: set, errs: errs})
	a.mu.Unlock()
	return set, joinErrs(listErr, errs)
}
