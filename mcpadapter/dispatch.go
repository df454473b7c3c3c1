package mcpadapter

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Dispatch. mcp-go serves a tools/call or prompts/get only for a tool or
// prompt registered with it, and registering one (AddTools, AddPrompts)
// broadcasts notifications/*/list_changed to every session whenever the
// server advertises listChanged, which it must for subscriptions/listen to
// grant it (SEP-2575). The registry's tools and prompts appear as modules
// load and change per tenant and principal, so the adapter registers one
// dispatcher of each kind, and one resource template that matches every
// URI, when New builds the server, before any session exists, and never
// registers anything after: mcp-go broadcasts nothing, and every
// list_changed a client gets is the adapter's (notify.go).
//
// The BeforeCallTool and BeforeGetPrompt hooks point each request at the
// dispatcher and keep the name the client asked for in the request's
// _meta, under metaName, which mcp-go passes to the handler as the hook
// left it (for the calls of its multi round-trip bridge too). Every
// request goes through the hook, so the name there is always the one the
// client asked for. Listings are the registry's: the After... list hooks
// (listing.go, resources.go) put the caller's page in mcp-go's result.

const (
	// toolDispatcher and promptDispatcher are the names the adapter
	// registers with mcp-go; neither is a valid registry name.
	toolDispatcher   = "llmtool:tools/call"
	promptDispatcher = "llmtool:prompts/get"
	// anyURI is a resource template that matches every URI.
	anyURI = "{+uri}"
	// metaName is the _meta key of the name the client asked for.
	metaName = "llmtool/name"
)

// registerDispatchers registers the dispatchers with mcp-go: New calls it
// before the server can have a session.
func (s *Server) registerDispatchers() {
	s.mcp.AddTools(server.ServerTool{
		Tool:    mcp.Tool{Name: toolDispatcher, InputSchema: mcp.ToolInputSchema{Type: "object"}},
		Handler: s.callTool,
	})
	s.mcp.AddPrompts(server.ServerPrompt{Prompt: mcp.Prompt{Name: promptDispatcher}, Handler: s.getPrompt})
	s.mcp.AddResourceTemplates(server.ServerResourceTemplate{
		Template: mcp.NewResourceTemplate(anyURI, "llmtool"),
		Handler:  server.ResourceTemplateHandlerFunc(s.readResource),
	})
}

// dispatchHooks point tools/call and prompts/get at the dispatchers.
func (s *Server) dispatchHooks(hooks *server.Hooks) {
	hooks.AddBeforeCallTool(func(_ context.Context, _ any, req *mcp.CallToolRequest) {
		req.Params.Meta = withCalledName(req.Params.Meta, req.Params.Name)
		req.Params.Name = toolDispatcher
	})
	hooks.AddBeforeGetPrompt(func(_ context.Context, _ any, req *mcp.GetPromptRequest) {
		req.Params.Meta = withCalledName(req.Params.Meta, req.Params.Name)
		req.Params.Name = promptDispatcher
	})
}

// withCalledName returns meta, or a new one, holding name under metaName.
func withCalledName(meta *mcp.Meta, name string) *mcp.Meta {
	if meta == nil {
		meta = &mcp.Meta{}
	}
	if meta.AdditionalFields == nil {
		meta.AdditionalFields = make(map[string]any, 1)
	}
	meta.AdditionalFields[metaName] = name
	return meta
}

// calledName returns the name the client asked for, as the hook kept it.
func calledName(meta *mcp.Meta) string {
	if meta == nil {
		return ""
	}
	name, _ := meta.AdditionalFields[metaName].(string)
	return name
}
