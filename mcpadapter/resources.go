package mcpadapter

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
)

// Resources, resource templates and prompts are the registry's
// (llmtool.Resource, llmtool.Prompt). Listings are what the caller may use
// (Registry.Resources, Registry.Prompts), put in mcp-go's results by its
// After... list hooks; a read or a prompts/get reaches the adapter's
// dispatcher (dispatch.go) and goes through Registry.Invoke, which applies
// the policy and the entity checks, and completion/complete through
// Registry.Complete.

// resourceHooks put the registry's listings in mcp-go's list results.
func (s *Server) resourceHooks(hooks *server.Hooks) {
	hooks.AddAfterListTools(s.afterListTools) // listing.go
	hooks.AddAfterListResources(func(ctx context.Context, _ any, req *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		list := []mcp.Resource{}
		for _, sp := range s.specs(ctx, &llmtool.ListOptions{Resources: true}) {
			if len(sp.Params) == 0 || !strings.Contains(sp.URI, "{") {
				r := mcp.NewResource(sp.URI, sp.Name, mcp.WithResourceDescription(sp.Description))
				r.Title = sp.FriendlyName
				list = append(list, r)
			}
		}
		res.Resources, res.NextCursor = paginateSorted(list, mcp.Resource.GetName, req.Params.Cursor, s.cfg.PageSize)
	})
	hooks.AddAfterListResourceTemplates(func(ctx context.Context, _ any, req *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
		list := []mcp.ResourceTemplate{}
		for _, sp := range s.specs(ctx, &llmtool.ListOptions{Resources: true}) {
			if len(sp.Params) > 0 && strings.Contains(sp.URI, "{") {
				t := mcp.NewResourceTemplate(sp.URI, sp.Name, mcp.WithTemplateDescription(sp.Description))
				t.Title = sp.FriendlyName
				list = append(list, t)
			}
		}
		res.ResourceTemplates, res.NextCursor = paginateSorted(list, mcp.ResourceTemplate.GetName, req.Params.Cursor, s.cfg.PageSize)
	})
	hooks.AddAfterListPrompts(func(ctx context.Context, _ any, req *mcp.ListPromptsRequest, res *mcp.ListPromptsResult) {
		list := []mcp.Prompt{}
		for _, sp := range s.specs(ctx, &llmtool.ListOptions{Prompts: true}) {
			p := mcp.Prompt{Name: sp.Name, Title: sp.FriendlyName, Description: sp.Description}
			for _, a := range sp.Params {
				p.Arguments = append(p.Arguments, mcp.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
			}
			list = append(list, p)
		}
		res.Prompts, res.NextCursor = paginateSorted(list, mcp.Prompt.GetName, req.Params.Cursor, s.cfg.PageSize)
	})
}

// specs returns what Registry.List gives ctx's caller with opts: tools
// (nil), resources or prompts.
func (s *Server) specs(ctx context.Context, opts *llmtool.ListOptions) []*llmtool.Spec {
	specs, err := s.reg.List(s.callContext(ctx), opts)
	if err != nil {
		s.cfg.Logger.Warn("mcpadapter: listing the registry", "err", err)
	}
	return specs
}

// readResource serves resources/read through Registry.Invoke. A refusal is
// the request's error, with the registry's sentence (see refusal).
func (s *Server) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	ctx = s.callContext(ctx)
	res := s.reg.Invoke(withMetaTrace(ctx, req.Params.Meta), llmtool.Call{Resource: uri})
	if res.IsError {
		return nil, refusal(ctx, res, uri)
	}
	out := make([]mcp.ResourceContents, 0, len(res.Content))
	for _, c := range res.Content {
		u := cmp.Or(c.URI, uri)
		if c.Data != nil {
			out = append(out, mcp.BlobResourceContents{URI: u, MIMEType: c.MIMEType, Blob: base64.StdEncoding.EncodeToString(c.Data)})
			continue
		}
		out = append(out, mcp.TextResourceContents{URI: u, MIMEType: cmp.Or(c.MIMEType, "text/plain"), Text: c.Text})
	}
	return out, nil
}

// getPrompt serves prompts/get through Registry.Invoke.
func (s *Server) getPrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name := calledName(req.Params.Meta)
	args, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return nil, invalidParams("The arguments cannot be encoded: %v.", err)
	}
	// A prompt may ask the client too (ask.Elicit): the rendering ends
	// with an input-required result and runs again with the answers, its
	// state bound to the prompt as a tool call's is to the tool.
	target := "prompt:" + name
	ctx = s.callContext(ctx)
	p, err := s.newPeer(ctx, target, name, args, req.Params.MultiRoundTripParams)
	if err != nil {
		return nil, err
	}
	res := s.reg.Invoke(withMetaTrace(ask.With(ctx, p), req.Params.Meta), llmtool.Call{Prompt: name, Args: args})
	if res.IsError && errors.Is(res.Err, ask.ErrInputRequired) {
		b, err := s.inputRequests(ctx, target, args, &p.round)
		if err != nil {
			return nil, err
		}
		return b.PromptResult(), nil
	}
	if res.IsError {
		return nil, refusal(ctx, res, "")
	}
	out := &mcp.GetPromptResult{Messages: make([]mcp.PromptMessage, 0, len(res.Messages))}
	if sp, ok := s.reg.Tool(ctx, name); ok {
		out.Description = sp.Description
	}
	for _, m := range res.Messages {
		out.Messages = append(out.Messages, mcp.PromptMessage{Role: mcp.Role(m.Role), Content: contentBlock(m.Content)})
	}
	return out, nil
}

// refusal is the JSON-RPC error of a failed resources/read (of uri) or
// prompts/get: its message is the registry's sentence, its data.kind the
// registry's kind of error, and its code says what it is:
//
//   - a URI no resource has, or an entity that does not exist: "resource
//     not found" (-32002, or -32602 at 2026-07-28, as mcp-go's own), with
//     the URI in data.uri (SEP-2164); a prompt's: -32602;
//   - malformed arguments, or a prompt the registry does not know: -32602;
//   - a refusal by policy, protection, authorization or the kill switch:
//     -32003;
//   - another failure (a conflict, a limit, a cancellation): -32000; an
//     internal one: -32603 with the registry's generic sentence.
func refusal(ctx context.Context, res llmtool.Result, uri string) *rpcError {
	kind := llmtool.KindOf(res.Err)
	e := &rpcError{message: res.Text(), err: res.Err, data: map[string]any{"kind": kind.String()}}
	notFound := errors.Is(res.Err, llmtool.ErrUnknownTool) || kind == llmtool.KindNotFound
	switch {
	case notFound && uri != "":
		e.code, e.data["uri"] = mcp.RESOURCE_NOT_FOUND, uri
		if mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
			e.code = mcp.INVALID_PARAMS
		}
		if errors.Is(res.Err, llmtool.ErrUnknownTool) {
			e.data["kind"] = llmtool.KindNotFound.String()
		}
	case notFound, kind == llmtool.KindInvalidArgs:
		e.code = mcp.INVALID_PARAMS
	case kind == llmtool.KindDenied, errors.Is(res.Err, llmtool.ErrToolDisabled):
		e.code = codeDenied
		e.data["kind"] = llmtool.KindDenied.String()
	case kind == llmtool.KindInternal:
		e.code = mcp.INTERNAL_ERROR
	default:
		e.code = codeServerError
	}
	return e
}

// completer answers completion/complete through Registry.Complete.
type completer struct{ s *Server }

func (c completer) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return c.complete(ctx, name, arg)
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	for _, sp := range c.s.specs(ctx, &llmtool.ListOptions{Resources: true}) {
		if sp.URI == uri {
			return c.complete(ctx, sp.Name, arg)
		}
	}
	return &mcp.Completion{Values: []string{}}, nil
}

func (c completer) complete(ctx context.Context, name string, arg mcp.CompleteArgument) (*mcp.Completion, error) {
	values, err := c.s.reg.Complete(c.s.callContext(ctx), name, arg.Name, arg.Value)
	if err != nil {
		return nil, err
	}
	return &mcp.Completion{Values: values}, nil
}
