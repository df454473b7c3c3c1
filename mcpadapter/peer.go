package mcpadapter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
)

// peer is the client of one tool call, as the handler sees it: the
// callinfo.Reporter for its progress and log lines and the ask.Asker for
// its sampling and elicitation requests.
type peer struct {
	s     *Server
	tool  string
	token mcp.ProgressToken // nil when the client asked for no progress
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

// Log sends notifications/message if the session's level lets it through.
func (p *peer) Log(ctx context.Context, level slog.Level, message string) {
	lvl := mcpLevel(level)
	if !lvl.ShouldSendTo(p.s.logLevel(ctx)) {
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

// Sample sends sampling/createMessage to the client and waits for its
// answer.
func (p *peer) Sample(ctx context.Context, req ask.SampleRequest) (ask.SampleResult, error) {
	if caps, known := clientCaps(ctx); known && caps.Sampling == nil {
		return ask.SampleResult{}, fmt.Errorf("the client did not declare the sampling capability: %w", ask.ErrUnsupported)
	}
	msgs := make([]mcp.SamplingMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = mcp.SamplingMessage{Role: mcp.Role(m.Role), Content: samplingContent(m.Content)}
	}
	params := mcp.CreateMessageParams{
		Messages:     msgs,
		SystemPrompt: req.SystemPrompt,
		MaxTokens:    req.MaxTokens,
		Temperature:  req.Temperature,
	}
	if len(req.ModelHints) > 0 {
		params.ModelPreferences = &mcp.ModelPreferences{}
		for _, h := range req.ModelHints {
			params.ModelPreferences.Hints = append(params.ModelPreferences.Hints, mcp.ModelHint{Name: h})
		}
	}
	//lint:ignore SA1019 sampling is part of every revision served (2024-11-05 to 2025-11-25); ask.Sample is how a read handler uses it
	res, err := p.s.mcp.RequestSampling(ctx, mcp.CreateMessageRequest{
		Request:             mcp.Request{Method: string(mcp.MethodSamplingCreateMessage)},
		CreateMessageParams: params,
	})
	if err != nil {
		return ask.SampleResult{}, err
	}
	content, err := fromSamplingContent(res.Content)
	if err != nil {
		return ask.SampleResult{}, err
	}
	return ask.SampleResult{Role: string(res.Role), Content: content, Model: res.Model, StopReason: res.StopReason}, nil
}

// Elicit sends elicitation/create to the client and waits for the user's
// answer.
func (p *peer) Elicit(ctx context.Context, req ask.ElicitRequest) (ask.ElicitResult, error) {
	if caps, known := clientCaps(ctx); known && caps.Elicitation == nil {
		return ask.ElicitResult{}, fmt.Errorf("the client did not declare the elicitation capability: %w", ask.ErrUnsupported)
	}
	res, err := p.s.mcp.RequestElicitation(ctx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params:  mcp.ElicitationParams{Message: req.Message, RequestedSchema: req.Schema},
	})
	if err != nil {
		return ask.ElicitResult{}, err
	}
	out := ask.ElicitResult{Action: string(res.Action)}
	if res.Action == mcp.ElicitationResponseActionAccept && res.Content != nil {
		b, err := json.Marshal(res.Content)
		if err != nil {
			return ask.ElicitResult{}, fmt.Errorf("decoding the answer: %w", err)
		}
		out.Content = b
	}
	return out, nil
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
