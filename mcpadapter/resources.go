package mcpadapter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
)

// Resources, resource templates and prompts are the registry's
// (llmtool.Resource, llmtool.Prompt), registered with mcp-go before the
// first request that concerns them, so lazily loaded modules and stateless
// replicas that never listed them serve them too. Listings are filtered to
// what the caller may use (Registry.List with ListOptions.Resources or
// ListOptions.Prompts); a read or a prompts/get goes through Registry.Invoke, which applies the policy and
// the entity checks, and completion/complete through Registry.Complete.

// extras is what the adapter registered with mcp-go, by name, and the
// resources each session subscribed to.
type extras struct {
	mu   sync.Mutex
	seen map[string]*llmtool.Spec
	subs map[string]map[string]bool // session ID → subscribed URIs
}

// extraOptions returns the mcp-go options that serve resources, prompts and
// completions.
func (s *Server) extraOptions(hooks *server.Hooks) []server.ServerOption {
	hooks.AddBeforeAny(func(ctx context.Context, _ any, method mcp.MCPMethod, _ any) {
		switch method {
		case mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList, mcp.MethodResourcesRead,
			mcp.MethodPromptsList, mcp.MethodPromptsGet, mcp.MethodCompletionComplete:
			s.syncExtras(ctx)
		}
	})
	hooks.AddOnError(func(ctx context.Context, id any, method mcp.MCPMethod, message any, err error) {
		req, ok := message.(*mcp.ReadResourceRequest)
		if method != mcp.MethodResourcesRead || !ok || !errors.Is(err, server.ErrResourceNotFound) {
			return
		}
		if notes := notesFrom(ctx); notes != nil {
			notes.noteNoResource(id, req.Params.URI)
		}
	})
	hooks.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		allowed := s.allowed(ctx, &llmtool.ListOptions{Resources: true})
		res.Resources = keep(res.Resources, func(r mcp.Resource) bool { return allowed[r.Name] })
	})
	hooks.AddAfterListResourceTemplates(func(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
		allowed := s.allowed(ctx, &llmtool.ListOptions{Resources: true})
		res.ResourceTemplates = keep(res.ResourceTemplates, func(r mcp.ResourceTemplate) bool { return allowed[r.Name] })
	})
	hooks.AddAfterListPrompts(func(ctx context.Context, _ any, _ *mcp.ListPromptsRequest, res *mcp.ListPromptsResult) {
		allowed := s.allowed(ctx, &llmtool.ListOptions{Prompts: true})
		res.Prompts = keep(res.Prompts, func(p mcp.Prompt) bool { return allowed[p.Name] })
	})
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		s.subscribe(ctx, req.Params.URI, true)
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		s.subscribe(ctx, req.Params.URI, false)
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		s.extras.mu.Lock()
		delete(s.extras.subs, cs.SessionID())
		s.extras.mu.Unlock()
	})
	return []server.ServerOption{
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(completer{s}),
		server.WithResourceCompletionProvider(completer{s}),
	}
}

// allowed returns the names of the specs List gives ctx's caller with opts.
func (s *Server) allowed(ctx context.Context, opts *llmtool.ListOptions) map[string]bool {
	specs, err := s.reg.List(s.callContext(ctx), opts)
	if err != nil {
		s.cfg.logger.Warn("mcpadapter: listing resources or prompts", "err", err)
	}
	names := make(map[string]bool, len(specs))
	for _, sp := range specs {
		names[sp.Name] = true
	}
	return names
}

func keep[T any](list []T, ok func(T) bool) []T {
	out := list[:0]
	for _, x := range list {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}

// syncExtras registers with mcp-go the resources and prompts it does not
// have yet.
func (s *Server) syncExtras(ctx context.Context) {
	specs, err := s.reg.List(s.callContext(ctx), &llmtool.ListOptions{All: true})
	if err != nil {
		s.cfg.logger.Warn("mcpadapter: loading modules", "err", err)
	}
	s.extras.mu.Lock()
	defer s.extras.mu.Unlock()
	if s.extras.seen == nil {
		s.extras.seen = make(map[string]*llmtool.Spec)
	}
	var (
		fixed     []server.ServerResource
		templates []server.ServerResourceTemplate
		prompts   []server.ServerPrompt
	)
	for _, sp := range specs {
		if (sp.URI == "" && !sp.Prompt) || s.extras.seen[sp.Name] == sp {
			continue
		}
		s.extras.seen[sp.Name] = sp
		switch {
		case sp.Prompt:
			prompts = append(prompts, server.ServerPrompt{Prompt: convertPrompt(sp), Handler: s.getPrompt(sp.Name)})
		case len(sp.Params) == 0 || !isTemplate(sp.URI):
			r := mcp.NewResource(sp.URI, sp.Name, mcp.WithResourceDescription(sp.Description))
			r.Title = sp.FriendlyName
			fixed = append(fixed, server.ServerResource{Resource: r, Handler: s.readResource})
		default:
			t := mcp.NewResourceTemplate(sp.URI, sp.Name, mcp.WithTemplateDescription(sp.Description))
			t.Title = sp.FriendlyName
			templates = append(templates, server.ServerResourceTemplate{Template: t, Handler: server.ResourceTemplateHandlerFunc(s.readResource)})
		}
	}
	if len(fixed) > 0 {
		s.mcp.AddResources(fixed...)
	}
	if len(templates) > 0 {
		s.mcp.AddResourceTemplates(templates...)
	}
	if len(prompts) > 0 {
		s.mcp.AddPrompts(prompts...)
	}
}

func isTemplate(uri string) bool {
	for _, c := range uri {
		if c == '{' {
			return true
		}
	}
	return false
}

func convertPrompt(sp *llmtool.Spec) mcp.Prompt {
	p := mcp.Prompt{Name: sp.Name, Title: sp.FriendlyName, Description: sp.Description}
	for _, a := range sp.Params {
		p.Arguments = append(p.Arguments, mcp.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
	}
	return p
}

// readResource serves resources/read through Registry.Invoke. A refusal
// (a missing, protected or unreadable entity, the policy) is the
// registry's sentence as the request's error.
func (s *Server) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	res := s.reg.Invoke(withMetaTrace(s.callContext(ctx), req.Params.Meta), llmtool.Call{Resource: uri})
	if res.IsError {
		return nil, errors.New(res.Text())
	}
	out := make([]mcp.ResourceContents, 0, len(res.Content))
	for _, c := range res.Content {
		u, mt := c.URI, c.MIMEType
		if u == "" {
			u = uri
		}
		if c.Data != nil {
			out = append(out, mcp.BlobResourceContents{URI: u, MIMEType: mt, Blob: base64.StdEncoding.EncodeToString(c.Data)})
			continue
		}
		if mt == "" {
			mt = "text/plain"
		}
		out = append(out, mcp.TextResourceContents{URI: u, MIMEType: mt, Text: c.Text})
	}
	return out, nil
}

// getPrompt serves prompts/get of one prompt through Registry.Invoke.
func (s *Server) getPrompt(name string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return nil, err
		}
		// A prompt may ask the client too (ask.Elicit): the rendering ends
		// with an input-required result and runs again with the answers,
		// its state bound to the prompt as a tool call's is to the tool.
		target := "prompt:" + name
		ctx = s.callContext(ctx)
		p, err := s.askingPeer(ctx, target, name, args, req.Params.MultiRoundTripParams)
		if err != nil {
			return nil, err
		}
		res := s.reg.Invoke(withMetaTrace(ask.With(ctx, p), req.Params.Meta), llmtool.Call{Prompt: name, Args: args})
		if res.IsError && errors.Is(res.Err, ask.ErrInputRequired) {
			b, err := s.inputRequests(ctx, target, args, p.round)
			if err != nil {
				return nil, err
			}
			return b.PromptResult(), nil
		}
		if res.IsError {
			return nil, errors.New(res.Text())
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
}

// completer answers completion/complete through Registry.Complete.
type completer struct{ s *Server }

func (c completer) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return c.complete(ctx, name, arg)
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	specs, err := c.s.reg.List(c.s.callContext(ctx), &llmtool.ListOptions{Resources: true})
	if err != nil {
		return nil, err
	}
	for _, sp := range specs {
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

// subscribe records (or, with on false, drops) the session's subscription
// to uri.
func (s *Server) subscribe(ctx context.Context, uri string, on bool) {
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil || cs.SessionID() == "" {
		return
	}
	id := cs.SessionID()
	s.extras.mu.Lock()
	defer s.extras.mu.Unlock()
	if s.extras.subs == nil {
		s.extras.subs = make(map[string]map[string]bool)
	}
	if !on {
		delete(s.extras.subs[id], uri)
		return
	}
	if s.extras.subs[id] == nil {
		s.extras.subs[id] = make(map[string]bool)
	}
	s.extras.subs[id][uri] = true
}

// resourceChanged sends notifications/resources/updated to the sessions
// subscribed to uri: the registry reports the URIs its write tools changed
// (llmtool.Changes).
func (s *Server) resourceChanged(uri string) {
	s.extras.mu.Lock()
	var ids []string
	for id, uris := range s.extras.subs {
		if uris[uri] {
			ids = append(ids, id)
		}
	}
	s.extras.mu.Unlock()
	s.listenResourceChanged(uri)
	for _, id := range ids {
		if err := s.mcp.SendNotificationToSpecificClient(id, string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": uri}); err != nil {
			s.cfg.logger.Debug("mcpadapter: resources/updated not delivered", "session", id, "err", err)
		}
	}
}
