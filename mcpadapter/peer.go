package mcpadapter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
)

// peer is the client of one tool call, as the handler sees it: the
// callinfo.Reporter for its progress and log lines and the ask.Asker for
// its sampling, elicitation and roots requests (see mrtr.go).
type peer struct {
	s     *Server
	tool  string
	token mcp.ProgressToken // nil when the client asked for no progress
	round *round            // the answers the call brought, and what its run asks
}

// Progress sends notifications/progress, if the client sent a progress
// token with the call.
func (p *peer) Progress(ctx context.Context, done, total float64, message string) {
	if p.token == nil {
		return
	}
	params := map[string]any{"progressToken": p.token, "progress": done}
	if total > 0 {
		params["total"] = total
	}
	if message != "" {
		params["message"] = message
	}
	if err := p.s.mcp.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), params); err != nil {
		p.s.cfg.logger.Debug("mcpadapter: progress not delivered", "tool", p.tool, "err", err)
	}
}

// Log sends notifications/message if the level the client asked for lets
// it through: under 2026-07-28 the request's own (its _meta's
// io.modelcontextprotocol/logLevel; none asked, none sent), before it the
// session's (logging/setLevel, or Options.LogLevel).
func (p *peer) Log(ctx context.Context, level slog.Level, message string) {
	lvl := mcpLevel(level)
	least := p.s.logLevel(ctx)
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		if info.LogLevel == "" {
			return
		}
		least = info.LogLevel
	}
	if !lvl.ShouldSendTo(least) {
		return
	}
	params := map[string]any{"level": string(lvl), "logger": p.tool, "data": message}
	if err := p.s.mcp.SendNotificationToClient(ctx, string(mcp.MethodNotificationMessage), params); err != nil {
		p.s.cfg.logger.Debug("mcpadapter: log message not delivered", "tool", p.tool, "err", err)
	}
}

// clientCaps returns the capabilities the session's client declared, and
// whether they are known.
func clientCaps(ctx context.Context) (mcp.ClientCapabilities, bool) {
	if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok && cs != nil {
		return cs.GetClientCapabilities(), true
	}
	return mcp.ClientCapabilities{}, false
}

// samplingContent converts a part of a sampling message.
func samplingContent(c llmtool.Content) any {
	switch c.Type {
	case "image":
		return mcp.ImageContent{Type: "image", Data: base64.StdEncoding.EncodeToString(c.Data), MIMEType: c.MIMEType}
	case "audio":
		return mcp.AudioContent{Type: "audio", Data: base64.StdEncoding.EncodeToString(c.Data), MIMEType: c.MIMEType}
	}
	return mcp.TextContent{Type: "text", Text: c.Text}
}

// fromSamplingContent converts the client's reply, whichever Go shape the
// transport decoded it into.
func fromSamplingContent(v any) (llmtool.Content, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return llmtool.Content{}, fmt.Errorf("decoding the reply: %w", err)
	}
	var part struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MIMEType string `json:"mimeType"`
	}
	if len(b) > 0 && b[0] == '[' { // several blocks: keep the first
		var parts []json.RawMessage
		if err := json.Unmarshal(b, &parts); err != nil || len(parts) == 0 {
			return llmtool.Content{}, fmt.Errorf("the reply has no content")
		}
		b = parts[0]
	}
	if err := json.Unmarshal(b, &part); err != nil {
		return llmtool.Content{}, fmt.Errorf("decoding the reply: %w", err)
	}
	switch part.Type {
	case "image", "audio":
		data, err := base64.StdEncoding.DecodeString(part.Data)
		if err != nil {
			return llmtool.Content{}, fmt.Errorf("decoding the reply's %s: %w", part.Type, err)
		}
		return llmtool.Content{Type: part.Type, Data: data, MIMEType: part.MIMEType}, nil
	}
	return llmtool.TextContent(part.Text), nil
}

// countingReporter counts the notifications a call sends, for
// callNotes.awaitEvents.
type countingReporter struct {
	*peer
	notes *callNotes
}

// Progress sends notifications/progress (see peer.Progress).
func (r *countingReporter) Progress(ctx context.Context, done, total float64, message string) {
	if r.notes != nil && r.token != nil {
		r.notes.sent.Add(1)
	}
	r.peer.Progress(ctx, done, total, message)
}

// Log sends notifications/message (see peer.Log).
func (r *countingReporter) Log(ctx context.Context, level slog.Level, message string) {
	if r.notes != nil && mcpLevel(level).ShouldSendTo(r.s.logLevel(ctx)) {
		r.notes.sent.Add(1)
	}
	r.peer.Log(ctx, level, message)
}

// capWatch notes which capability a modern request (protocol revision
// 2026-07-28) lacked when asking the client failed for want of it.
type capWatch struct {
	*peer
	mu  sync.Mutex
	cap string
}

func (w *capWatch) note(ctx context.Context, capability string, err error) {
	if err == nil || !errors.Is(err, ask.ErrUnsupported) || !server.IsModernRequest(ctx) {
		return
	}
	if caps, known := clientCaps(ctx); known && capabilityMissing(caps, capability) {
		w.mu.Lock()
		w.cap = capability
		w.mu.Unlock()
	}
}

func (w *capWatch) missing() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cap
}

func capabilityMissing(caps mcp.ClientCapabilities, capability string) bool {
	switch capability {
	case "sampling":
		return caps.Sampling == nil
	case "elicitation":
		return caps.Elicitation == nil
	}
	return false
}

// Sample asks the client for a completion.
func (w *capWatch) Sample(ctx context.Context, req ask.SampleRequest) (ask.SampleResult, error) {
	res, err := w.peer.Sample(ctx, req)
	w.note(ctx, "sampling", err)
	return res, err
}

// Elicit asks the client's user for input.
func (w *capWatch) Elicit(ctx context.Context, req ask.ElicitRequest) (ask.ElicitResult, error) {
	res, err := w.peer.Elicit(ctx, req)
	w.note(ctx, "elicitation", err)
	return res, err
}

// mcpLevel maps a slog level to the nearest syslog level MCP uses.
func mcpLevel(l slog.Level) mcp.LoggingLevel {
	switch {
	case l < slog.LevelInfo:
		return mcp.LoggingLevelDebug
	case l < slog.LevelInfo+2:
		return mcp.LoggingLevelInfo
	case l < slog.LevelWarn:
		return mcp.LoggingLevelNotice
	case l < slog.LevelError:
		return mcp.LoggingLevelWarning
	case l < slog.LevelError+4:
		return mcp.LoggingLevelError
	case l < slog.LevelError+8:
		return mcp.LoggingLevelCritical
	case l < slog.LevelError+12:
		return mcp.LoggingLevelAlert
	}
	return mcp.LoggingLevelEmergency
}
