package llmtool

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Updates declares the resources (by name, see Resource) a write tool's
// calls update. After a call commits, the registry reports the URI of each:
// the resource's URI template filled from the call's arguments and, for
// variables the arguments lack (such as the ID of a created note), from
// the top-level fields of its result. Functions registered with
// Registry.OnResourceUpdate receive the URIs; the MCP adapter sends
// notifications/resources/updated to the clients subscribed to them.
//
// A resource whose variables neither the arguments nor the result fill is
// not reported. Registering a tool that names a resource no registered
// module defines is an error. Updates on a Read tool panics.
func Updates(resources ...string) Option {
	return func(c *toolConfig) { c.updates = append(c.updates, resources...) }
}

// watchers holds the OnResourceUpdate functions.
type watchers struct {
	mu   sync.Mutex
	next uint64
	fns  map[uint64]func(uri string)
}

// OnResourceUpdate registers fn to receive the URI of every resource a
// committed write updated, as the write tool declared with Updates. fn runs
// synchronously in the goroutine of the call, after the commit; keep it
// short. Updates made by other processes are not reported. cancel
// unregisters fn.
func (r *Registry) OnResourceUpdate(fn func(uri string)) (cancel func()) {
	w := &r.watchers
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = make(map[uint64]func(string))
	}
	id := w.next
	w.next++
	w.fns[id] = fn
	return func() {
		w.mu.Lock()
		delete(w.fns, id)
		w.mu.Unlock()
	}
}

// checkUpdatesLocked reports a tool of m whose Updates names a resource
// neither m nor a registered module defines.
func (r *Registry) checkUpdatesLocked(m *Module) error {
	for _, t := range m.tools {
		for _, name := range t.updates {
			found := slices.ContainsFunc(m.tools, func(x *Tool) bool { return x.kind == kindResource && x.spec.Name == name })
			if e, ok := r.tools[name]; ok && e.tool.kind == kindResource {
				found = true
			}
			if !found {
				return fmt.Errorf("llmtool: tool %q of module %q declares Updates(%q), but no registered module defines a resource of that name; define it with llmtool.Resource, or register its module first", t.spec.Name, m.name, name)
			}
		}
	}
	return nil
}

// updated reports the URIs of the resources t's committed call updated.
func (r *Registry) updated(t *Tool, args, result []byte) {
	w := &r.watchers
	w.mu.Lock()
	if len(w.fns) == 0 {
		w.mu.Unlock()
		return
	}
	ids := make([]uint64, 0, len(w.fns))
	for id := range w.fns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fns := make([]func(string), len(ids))
	for i, id := range ids {
		fns[i] = w.fns[id]
	}
	w.mu.Unlock()

	var in, out map[string]any
	_ = json.Unmarshal(args, &in)
	_ = json.Unmarshal(result, &out)
	r.mu.RLock()
	var uris []string
	for _, name := range t.updates {
		if e, ok := r.tools[name]; ok && e.tool.kind == kindResource {
			if uri, ok := e.tool.tmpl.fill(in, out); ok {
				uris = append(uris, uri)
			}
		}
	}
	r.mu.RUnlock()
	for _, uri := range uris {
		for _, fn := range fns {
			func() {
				defer func() {
					if v := recover(); v != nil {
						r.logger().Error("llmtool: OnResourceUpdate function panicked", "uri", uri, "panic", fmt.Sprint(v))
					}
				}()
				fn(uri)
			}()
		}
	}
}
