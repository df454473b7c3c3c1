package llmtool

import "fmt"

// Module is a named set of tools: the unit a third party ships. Create one
// with DefineTools in a package-level variable and register it with
// NewRegistry or Registry.Add.
type Module struct {
	name     string
	tools    []*Tool
	entities []*Entity // entity kinds the module declares (WithEntities)
}

// DefineTools groups tools into a module. It panics if the module name is
// empty, a tool is nil or two tools share a name, so a module's own tests
// catch the mistake.
func DefineTools(module string, tools ...*Tool) *Module {
	if module == "" {
		panic("llmtool: DefineTools: the module needs a name")
	}
	seen := make(map[string]bool, len(tools))
	m := &Module{name: module}
	for i, t := range tools {
		if t == nil {
			panic(fmt.Sprintf("llmtool: module %q: tool %d is nil; is it defined in a package-level variable declared after this module?", module, i+1))
		}
		if seen[t.spec.Name] {
			panic(fmt.Sprintf("llmtool: module %q defines tool %q twice", module, t.spec.Name))
		}
		seen[t.spec.Name] = true
		// Each module gets its own copy, stamped with the module's name.
		c := *t
		c.spec.Module = module
		m.tools = append(m.tools, &c)
	}
	return m
}
