package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
)

// Under protocol revision 2026-07-28 notifications reach a client only on
// the subscriptions/listen streams it opened, and only the kinds it asked
// for (SEP-2575). mcp-go serves the request, its filter and its
// acknowledgement; the adapter delivers, on the streams of the scope that
// changed:
//
//   - notifications/tools/list_changed when the registry reports that a
//     scope's callable tools changed (Registry.Tenants().Subscribe), to the streams
//     of that scope, or of every scope for "";
//   - notifications/prompts/list_changed and resources/list_changed when
//     the registry's modules change (Subscribe with ""): a module added, a
//     loader resolved, a kill switch (SetEnabled);
//   - notifications/resources/updated for the URIs a stream subscribed to,
//     when a write tool changed them (llmtool.Changes).
//
// mcp-go would grant toolsListChanged only if its own tools capability had
// listChanged, with which it would broadcast tools/list_changed to every
// session whenever the adapter registers a tool it meets for the first
// time. So the adapter grants it itself: it takes toolsListChanged out of
// the request before mcp-go sees it, adding a placeholder resource
// subscription when nothing else was asked (mcp-go ends a stream with an
// empty filter at once), and writes the acknowledgement as the client's
// filter has it (listenAck). server/discover advertises tools.listChanged.
// Over stdio, listen streams get no notifications from the adapter.

// listenPlaceholder is the resource subscription that keeps open a stream
// that asked only for toolsListChanged; it names no resource.
const listenPlaceholder = "llmtool:tools-list-changed"

// listenInfo is one open subscriptions/listen stream over HTTP.
type listenInfo struct {
	session server.ClientSession // mcp-go's session of the stream
	scope   string
	tools   bool        // the client asked for toolsListChanged
	acked   atomic.Bool // the acknowledgement is on the wire: notifications may follow
}

// listenOptions adds the hooks that track listen streams and advertise
// tools.listChanged in server/discover.
func (s *Server) listenOptions(hooks *server.Hooks) {
	hooks.AddAfterDiscover(func(_ context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		res.Capabilities.Tools = &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true}
	})
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
		n, cs := notesFrom(ctx), server.ClientSessionFromContext(ctx)
		if n == nil || !n.stream || cs == nil {
			return
		}
		f := &req.Params.Notifications
		info := &listenInfo{session: cs, scope: llmtool.ScopeFrom(s.callContext(ctx)), tools: f.ToolsListChanged}
		f.ToolsListChanged = false
		if info.tools && f.IsEmpty() {
			f.ResourceSubscriptions = []string{listenPlaceholder}
		}
		n.listen = info
		s.listens.Store(cs, info)
	})
	end := func(ctx context.Context) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			s.listens.Delete(cs)
		}
	}
	hooks.AddAfterSubscriptionsListen(func(ctx context.Context, _ any, _ *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
		end(ctx)
	})
	hooks.AddOnError(func(ctx context.Context, _ any, method mcp.MCPMethod, _ any, _ error) {
		if method == mcp.MethodSubscriptionsListen {
			end(ctx)
		}
	})
}

// listenAck rewrites the acknowledgement of the listen stream in p (one SSE
// event as mcp-go writes it) as the client's filter has it: with
// toolsListChanged if it asked, without the placeholder. It returns p
// unchanged when p is not the acknowledgement.
func (n *callNotes) listenAck(p []byte) []byte {
	info := n.listen
	if info == nil || info.acked.Load() || !bytes.Contains(p, []byte(mcp.MethodNotificationSubscriptionsAcknowledged)) {
		return p
	}
	const prefix = "event: message\ndata: "
	data, ok := bytes.CutPrefix(p, []byte(prefix))
	if !ok {
		return p
	}
	var msg map[string]any
	if json.Unmarshal(bytes.TrimSpace(data), &msg) != nil {
		return p
	}
	params, _ := msg["params"].(map[string]any)
	granted, _ := params["notifications"].(map[string]any)
	if granted == nil {
		granted = map[string]any{}
	}
	if info.tools {
		granted["toolsListChanged"] = true
	}
	if subs, ok := granted["resourceSubscriptions"].([]any); ok {
		subs = slices.DeleteFunc(subs, func(v any) bool { return v == listenPlaceholder })
		if len(subs) == 0 {
			delete(granted, "resourceSubscriptions")
		} else {
			granted["resourceSubscriptions"] = subs
		}
	}
	if params != nil {
		params["notifications"] = granted
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return p
	}
	info.acked.Store(true)
	return append(append([]byte(prefix), out...), "\n\n"...)
}

// notifyListens sends what a change of scope's tools ("" for every scope
// and the registry's modules) means to the open listen streams.
func (s *Server) notifyListens(scope string) {
	s.eachListen(func(info *listenInfo, f mcp.SubscriptionFilter) {
		if info.tools && (scope == "" || info.scope == scope) {
			s.sendListen(info, mcp.MethodNotificationToolsListChanged, nil)
		}
		if scope == "" && f.PromptsListChanged {
			s.sendListen(info, mcp.MethodNotificationPromptsListChanged, nil)
		}
		if scope == "" && f.ResourcesListChanged {
			s.sendListen(info, mcp.MethodNotificationResourcesListChanged, nil)
		}
	})
}

// listenResourceChanged sends notifications/resources/updated to the
// listen streams subscribed to uri.
func (s *Server) listenResourceChanged(uri string) {
	s.eachListen(func(info *listenInfo, f mcp.SubscriptionFilter) {
		if slices.Contains(f.ResourceSubscriptions, uri) {
			s.sendListen(info, mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
		}
	})
}

// eachListen calls fn with every acknowledged listen stream and the filter
// mcp-go granted it.
func (s *Server) eachListen(fn func(*listenInfo, mcp.SubscriptionFilter)) {
	s.listens.Range(func(_, v any) bool {
		info := v.(*listenInfo)
		if !info.acked.Load() {
			return true // its acknowledgement comes first
		}
		var f mcp.SubscriptionFilter
		if fs, ok := info.session.(server.SessionWithSubscriptionFilter); ok {
			var active bool
			if f, active = fs.SubscriptionFilter(); !active {
				return true
			}
		}
		fn(info, f)
		return true
	})
}

// sendListen queues a notification on a listen stream; mcp-go tags it with
// the subscription's ID. Like mcp-go, it drops what does not fit.
func (s *Server) sendListen(info *listenInfo, method string, params map[string]any) {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}}
	select {
	case info.session.NotificationChannel() <- n:
	default:
		s.cfg.logger.Debug("mcpadapter: listen stream full", "method", method)
	}
}
