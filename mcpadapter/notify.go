package mcpadapter

import (
	"context"
	"maps"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
)

// Notifications the client did not ask for in a request: list_changed and
// resources/updated, each where its client's revision allows it, as the
// package documentation describes. mcp-go never sends them on its own
// (dispatch.go). On a subscriptions/listen stream (SEP-2575) they carry
// the stream's subscription ID.
//
// mcp-go treats a session that opened no listen stream as a legacy one
// (server.subscriptionAllowsNotification) whatever its client speaks, and
// its stdio session records no filter at all, so the adapter keeps the
// revision of each session (a stdio client that sent a request of
// 2026-07-28 speaks it) and the listen streams itself.

// listenInfo is one open subscriptions/listen stream.
type listenInfo struct {
	session server.ClientSession // mcp-go's session of the stream
	id      any                  // the listen request's ID, the subscription ID
	tenant  string
	filter  mcp.SubscriptionFilter
}

// notifyHooks keep the session table and the listen streams.
func (s *Server) notifyHooks(hooks *server.Hooks) {
	hooks.AddOnRegisterSession(s.onRegister)
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { s.remove(cs.SessionID()) })
	hooks.AddBeforeAny(func(ctx context.Context, _ any, _ mcp.MCPMethod, _ any) {
		if server.IsModernRequest(ctx) {
			s.updateSession(ctx, func(info *sessionInfo) { info.modern = true })
		}
	})
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, _ *mcp.InitializeResult) {
		s.updateSession(ctx, func(info *sessionInfo) { info.modern = false })
	})
	hooks.AddAfterSetLevel(func(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		s.updateSession(ctx, func(info *sessionInfo) { info.level = req.Params.Level })
	})
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		s.updateSession(ctx, func(info *sessionInfo) {
			if info.subs == nil {
				info.subs = make(map[string]bool)
			}
			info.subs[req.Params.URI] = true
		})
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		s.updateSession(ctx, func(info *sessionInfo) { delete(info.subs, req.Params.URI) })
	})
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) {
		cs := server.ClientSessionFromContext(ctx)
		if cs == nil || id == nil {
			return // mcp-go refuses it
		}
		l := &listenInfo{session: cs, id: id, tenant: llmtool.TenantFrom(s.callContext(ctx)), filter: req.Params.Notifications}
		t := &s.sessions
		t.mu.Lock()
		if t.listens == nil {
			t.listens = make(map[*listenInfo]bool)
		}
		t.listens[l] = true
		t.mu.Unlock()
	})
	end := func(ctx context.Context, id any) {
		cs := server.ClientSessionFromContext(ctx)
		t := &s.sessions
		t.mu.Lock()
		for l := range t.listens {
			if l.session == cs && l.id == id {
				delete(t.listens, l)
			}
		}
		t.mu.Unlock()
	}
	hooks.AddAfterSubscriptionsListen(func(ctx context.Context, id any, _ *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
		end(ctx, id)
		// A stream that nothing was subscribed on ends at once: over HTTP
		// its acknowledgement, the first event of the request's own
		// session and stream, must be on the wire before its response
		// (outbox). Over stdio the connection flushed before: no wait.
		if ex := exchangeFrom(ctx); ex != nil && ex.box != nil {
			ex.box.wait(ctx, func() bool { return ex.box.flushes > 0 })
		}
	})
	hooks.AddOnError(func(ctx context.Context, id any, method mcp.MCPMethod, _ any, _ error) {
		if method == mcp.MethodSubscriptionsListen {
			end(ctx, id)
		}
	})
}

// sessionOf returns the table's entry of the session of ctx, nil if none.
func (s *Server) sessionOf(ctx context.Context) *sessionInfo {
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil || cs.SessionID() == "" {
		return nil
	}
	return s.sessions.get(cs.SessionID())
}

// updateSession calls update with the table's entry of the session of
// ctx, locked; not at all without one.
func (s *Server) updateSession(ctx context.Context, update func(*sessionInfo)) {
	if info := s.sessionOf(ctx); info != nil {
		info.mu.Lock()
		defer info.mu.Unlock()
		update(info)
	}
}

// tenantChanged tells the sessions of tenant that their tool list changed.
// tenant.Settings.Subscribe says "" for a change of every tenant (a module added,
// a loader resolved, a kill switch), which may change the prompts and the
// resources too, and for a change of the default tenant's write switch,
// which it does not tell apart: for "", every session is told that its
// tool, prompt and resource lists changed.
func (s *Server) tenantChanged(tenant string) {
	s.listings.reset()
	methods := []string{mcp.MethodNotificationToolsListChanged}
	if tenant == "" {
		methods = append(methods, mcp.MethodNotificationPromptsListChanged, mcp.MethodNotificationResourcesListChanged)
	}
	s.sessions.each(func(info *sessionInfo) {
		if tenant == "" || info.tenant == tenant {
			for _, m := range methods {
				s.sendToSession(info, m, nil)
			}
		}
	})
	s.eachListen(func(l *listenInfo) {
		f := l.filter
		if f.ToolsListChanged && (tenant == "" || l.tenant == tenant) {
			s.sendToListen(l, mcp.MethodNotificationToolsListChanged, nil)
		}
		if tenant == "" && f.PromptsListChanged {
			s.sendToListen(l, mcp.MethodNotificationPromptsListChanged, nil)
		}
		if tenant == "" && f.ResourcesListChanged {
			s.sendToListen(l, mcp.MethodNotificationResourcesListChanged, nil)
		}
	})
}

// resourceUpdated sends notifications/resources/updated to the sessions
// and listen streams subscribed to uri: the registry reports the URIs its
// write tools changed (llmtool.Updates).
func (s *Server) resourceUpdated(uri string) {
	params := map[string]any{"uri": uri}
	s.sessions.each(func(info *sessionInfo) {
		info.mu.Lock()
		subscribed := info.subs[uri]
		info.mu.Unlock()
		if subscribed {
			s.sendToSession(info, mcp.MethodNotificationResourceUpdated, params)
		}
	})
	s.eachListen(func(l *listenInfo) {
		if slices.Contains(l.filter.ResourceSubscriptions, uri) {
			s.sendToListen(l, mcp.MethodNotificationResourceUpdated, params)
		}
	})
}

// sendToSession sends a notification to a session of a revision before
// 2026-07-28; a client of 2026-07-28 gets nothing outside a listen stream.
func (s *Server) sendToSession(info *sessionInfo, method string, params map[string]any) {
	info.mu.Lock()
	modern, registered := info.modern, info.session != nil
	info.mu.Unlock()
	if modern || !registered {
		return
	}
	if err := s.mcp.SendNotificationToSpecificClient(info.id, method, params); err != nil {
		s.cfg.Logger.Debug("mcpadapter: notification not delivered", "method", method, "session", info.id, "err", err)
	}
}

// eachListen calls fn with every open listen stream, outside the lock.
func (s *Server) eachListen(fn func(*listenInfo)) {
	t := &s.sessions
	t.mu.Lock()
	all := slices.Collect(maps.Keys(t.listens))
	t.mu.Unlock()
	for _, l := range all {
		fn(l)
	}
}

// sendToListen queues a notification on a listen stream, tagged with its
// subscription ID. Like mcp-go, it drops what does not fit.
func (s *Server) sendToListen(l *listenInfo, method string, params map[string]any) {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method,
		Params: mcp.NotificationParams{Meta: map[string]any{mcp.MetaKeySubscriptionID: l.id}, AdditionalFields: params}}}
	select {
	case l.session.NotificationChannel() <- n:
	default:
		s.cfg.Logger.Debug("mcpadapter: listen stream full", "method", method)
	}
}

// logLevel returns the least severe level of log notifications for the
// request in ctx: under protocol revision 2026-07-28 the one its _meta
// names ("" without one: the request then gets no log notifications),
// otherwise the one the session set with logging/setLevel, or the
// configured default.
func (s *Server) logLevel(ctx context.Context) mcp.LoggingLevel {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.LogLevel
	}
	if info := s.sessionOf(ctx); info != nil {
		info.mu.Lock()
		defer info.mu.Unlock()
		if info.level != "" {
			return info.level
		}
	}
	return mcpLevel(s.cfg.LogLevel)
}
