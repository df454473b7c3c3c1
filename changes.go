package llmtool

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Changes declares the resources (by name, see Resource) a write tool's
// calls change. After a call commits, the registry reports the URI of each:
// the resource's URI template filled from the call's arguments and, for
// variables the arguments lack (such as the ID of a created note), from
// the top-level fields of its result. Functions registered with
// Registry.OnResourceChange receive the URIs; the MCP adapter sends
// notifications/resources/updated to the clients subscribed to them.
//
// A resource whose variables neither the arguments nor the result fill is
// not reported. Registering a tool that names a resource no registered
// module defines is an error. Changes on a Read tool panics.
func Changes(resources ...string) Option {
	return func(c *toolConfig) { c.changes = append(c.changes, resources...) }
}

// watchers holds the OnResourceChange functions.
type watchers struct {
	mu   sync.Mutex
	next uint64
	fns  map[uint64]func(uri string)
}

// OnResourceChange registers fn to receive the URI of every resource a
// committed write changed, as the write tool declared with Changes. fn runs
// synchronously in the goroutine of the call, after the commit; keep it
// short. Changes made by other processes are not reported. cancel
// unregisters fn.
func (r *Registry) OnResourceChange(fn func(uri string)) (cancel func()) {
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

// checkChangesLocked reports a tool of m whose Changes names a resource
// neither m nor a registered module defines.
func (r *Registry) checkChangesLocked(m *Module) error {
	for _, t := range m.tools {
		for _, name := range t.changes {
			found := slices.ContainsFunc(m.tools, func(x *Tool) bool { return x.kind == kindResource && x.spec.Name == name })
			if e, ok := r.tools[name]; ok && e.tool.kind == kindResource {
				found = true
			}
			if !found {
				return fmt.Errorf("llmtool: tool %q of module %q declares Changes(%q), but no registered module defines a resource of that name; define it with llmtool.Resource, or register its module first", t.spec.Name, m.name, name)
			}
		}
	}
	return nil
}

// changed reports the URIs of the resources t's committed call changed.
func (r *Registry) changed(t *Tool, args, result []byte) {
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
	for _, name := range t.changes {
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
						r.logger().Error("llmtool: OnResourceChange function panicked", "uri", uri, "panic", fmt.Sprint(v))
					}
				}()
				fn(uri)
			}()
		}
	}
}
