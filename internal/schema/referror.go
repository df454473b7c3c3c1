package schema

import "fmt"

// RefError is the error (wrapped by Registry.Add, NewRegistry and failed
// loaders) of a tool whose input references an entity kind that no
// registered module declares. Package lint finds it in a loader's error to
// report the tool.
type RefError struct {
	Module string // the module of the tool
	Tool   string // the tool
	Field  string // the referencing field, such as "noteId" or "items[].noteId"
	Kind   string // the undeclared kind
}

// Error says what is wrong and how to fix it.
func (e *RefError) Error() string {
	return fmt.Sprintf("tool %q: field %s references entity kind %q, which no registered module declares; declare it with an llmtool.Entity and attach it with Module.WithEntities (or fix the ref tag)", e.Tool, e.Field, e.Kind)
}
