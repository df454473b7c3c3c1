package mcpadapter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
)

// peer is the client of one call, as the handler sees it: the
// callinfo.Reporter of its progress and log lines and the ask.Asker of its
// sampling, elicitation and roots requests (mrtr.go).
type peer struct {
	s     *Server
	tool  string
	token mcp.ProgressToken // nil when the client asked for no progress
	round round             // the answers the call brought, and what its run asks
	box   *outbox           // the transport's, which holds what the call sends till it is written

	mu    sync.Mutex
	cap   string   // the capability a request of 2026-07-28 lacked when asking failed
	notes []string // the notifications it queued (outbox)
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
	p.send(ctx, string(mcp.MethodNotificationProgress), params)
}

// Log sends notifications/message if the level the client asked for lets
// it through: under 2026-07-28 the request's own (its _meta's
// io.modelcontextprotocol/logLevel; none asked, none sent), before it the
// session's (logging/setLevel, or Options.LogLevel).
func (p *peer) Log(ctx context.Context, level slog.Level, message string) {
	least := p.s.logLevel(ctx)
	if lvl := mcpLevel(level); least != "" && lvl.ShouldSendTo(least) {
		p.send(ctx, string(mcp.MethodNotificationMessage), map[string]any{"level": string(lvl), "logger": p.tool, "data": message})
	}
}

func (p *peer) send(ctx context.Context, method string, params map[string]any) {
	note := p.box.add(method, params)
	if err := p.s.mcp.SendNotificationToClient(ctx, method, params); err != nil {
		p.s.cfg.Logger.Debug("mcpadapter: notification not delivered", "method", method, "tool", p.tool, "err", err)
		p.box.forget(note)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = append(p.notes, note)
}

// await waits until the notifications the call queued are on the wire
// (outbox).
func (p *peer) await(ctx context.Context) {
	p.mu.Lock()
	notes := p.notes
	p.mu.Unlock()
	p.box.await(ctx, notes)
}

// unsupported records that asking for capability failed for want of it,
// in a request of 2026-07-28 (see missingCapability), and returns the
// error the handler gets: ask.ErrUnsupported.
func (p *peer) unsupported(ctx context.Context, capability string) error {
	if server.IsModernRequest(ctx) && capability != "roots" {
		p.mu.Lock()
		p.cap = capability
		p.mu.Unlock()
	}
	return fmt.Errorf("the client did not declare the %s capability: %w", capability, ask.ErrUnsupported)
}

// missing returns the capability a request of 2026-07-28 lacked, "" if
// none.
func (p *peer) missing() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cap
}

// samplingContent converts a part of a sampling message: text, image or
// audio, as in a tool's result (contentBlock); anything else is sent as
// its text.
func samplingContent(c llmtool.Content) any {
	if c.Type == "resource" {
		return mcp.TextContent{Type: "text", Text: c.Text}
	}
	return contentBlock(c)
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
