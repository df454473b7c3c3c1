package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
)

// Anthropic Messages: POST BaseURL/messages with "x-api-key" and
// "anthropic-version", the system prompt as "system", max_tokens always
// (the API requires it); a streamed answer is message and content block
// events (see anthropicStream).
type anthropic struct{}

func (anthropic) url(ep Endpoint, _ bool) string {
	return strings.TrimRight(ep.BaseURL, "/") + "/messages"
}

func (anthropic) header(h http.Header, ep Endpoint, set *chatadapter.ToolSet) {
	h.Set("Anthropic-Version", anthropicVersion)
	if ep.APIKey != "" {
		h.Set("X-Api-Key", ep.APIKey)
	}
	if set != nil && set.Beta != "" {
		h.Set("Anthropic-Beta", set.Beta)
	}
}

func (anthropic) body(model, system string, messages []json.RawMessage) object {
	body := object{{"model", model}, {"max_tokens", json.RawMessage(strconv.Itoa(anthropicMaxTokens))}}
	if system != "" {
		body = append(body, member{"system", system})
	}
	return append(body, member{"messages", ordered.Array(messages)})
}

func (anthropic) streamFields() []member { return []member{{"stream", json.RawMessage("true")}} }

func (anthropic) retryHint([]byte) (time.Duration, bool) { return 0, false }

// failure reads Anthropic's {"type":"error","error":{"type","message"}},
// the body of an error response and the data of a stream's error event
// alike. A spend limit or credit used up is a quota, which Anthropic
// says only in its words, as a 400 or a 429.
func (anthropic) failure(status int, body []byte) *HTTPError {
	var b struct {
		Error struct{ Type, Message string } `json:"error"`
	}
	_ = json.Unmarshal(body, &b) // another body says nothing more
	e := b.Error
	class := anthropicClass[e.Type]
	switch {
	case contains(e.Message, "usage limits", "spend limit", "credit balance", "usage credits are required", "extra usage is required"):
		class = classQuota
	case e.Type == "invalid_request_error" && contains(e.Message, "prompt is too long", "context window"):
		class = classContext
	}
	return failure(status, e.Type, "", e.Message, class)
}

// anthropicClass is the class of each of Anthropic's error types.
var anthropicClass = map[string]string{"rate_limit_error": classRateLimit, "billing_error": classQuota, "overloaded_error": classOverloaded,
	"authentication_error": classAuth, "permission_error": classAuth, "request_too_large": classContext, "invalid_request_error": classBadRequest,
	"not_found_error": classBadRequest, "api_error": classServer, "timeout_error": classTimeout}

func (anthropic) stream() streamReader { return new(anthropicStream) }

func (anthropic) limit() string { return "max_tokens" }

// anthropicMaxTokens is the max_tokens Run sends Anthropic, which
// requires one, unless Options.RequestFields has it.
const anthropicMaxTokens = 4096

// anthropicVersion is the anthropic-version header Run sends, unless
// Endpoint.Header has one.
const anthropicVersion = "2023-06-01"

func (anthropic) read(b []byte) (step, error) {
	var r struct {
		Type       string          `json:"type"`
		Content    json.RawMessage `json:"content"`
		StopReason string          `json:"stop_reason"`
		Usage      struct {
			InputTokens              int `json:"input_tokens"`
			OutputTokens             int `json:"output_tokens"`
			CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
			CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &r); err != nil || (r.Type != "message" && r.Content == nil) {
		return step{}, fmt.Errorf("response is not an Anthropic message (%v): %s", err, ordered.Excerpt(b, 512))
	}
	u := r.Usage
	st := step{usage: chatadapter.Usage{PromptTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		CompletionTokens: u.OutputTokens, CachedTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}}
	st.raw = r.StopReason
	if r.StopReason == "max_tokens" || r.StopReason == "model_context_window_exceeded" {
		st.cut, st.finish = fmt.Sprintf("stop_reason %q", r.StopReason), finishLength
		return st, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(r.Content, &blocks); err != nil {
		return st, fmt.Errorf("content: %w", err)
	}
	var text strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			text.WriteString(bl.Text)
		}
		st.calls = st.calls || bl.Type == "tool_use"
	}
	if len(blocks) > 0 { // Anthropic refuses an empty assistant message before the last
		st.messages = []json.RawMessage{ordered.Append(nil, object{{"role", "assistant"}, {"content", r.Content}})}
	}
	st.text = text.String()
	st.finish = finishOf(anthropicFinish, st.raw, st.calls)
	return st, nil
}

// anthropicFinish maps Anthropic's stop_reason to Transcript.Finish.
var anthropicFinish = map[string]string{"end_turn": finishStop, "stop_sequence": finishStop, "tool_use": finishToolCalls,
	"max_tokens": finishLength, "model_context_window_exceeded": finishLength, "refusal": finishRefusal, "pause_turn": finishPause}

// anthropicStream is a streamed Anthropic message: message_start gives
// the message without content, each content block comes as
// content_block_start, its deltas and content_block_stop, then
// message_delta gives the stop_reason and the output's usage, and
// message_stop ends it.
type anthropicStream struct {
	pieces
	calls  int // the tool_use blocks so far
	msg    object
	blocks []*streamBlock
	usage  object // message_delta's, over message_start's
	stop   json.RawMessage
	seq    json.RawMessage
	ended  bool // message_stop came
}

// streamBlock is a content block as content_block_start gave it, and
// what its deltas brought, by the member they go to.
type streamBlock struct {
	call  *formingCall // a tool_use block's call
	block object
	parts map[string]*strings.Builder
	order []string
}

func (b *streamBlock) write(key, s string) {
	if b.parts == nil {
		b.parts = map[string]*strings.Builder{}
	}
	if b.parts[key] == nil {
		b.parts[key] = new(strings.Builder)
		b.order = append(b.order, key)
	}
	b.parts[key].WriteString(s)
}

type anthropicEvent struct {
	Type         string          `json:"type"`
	Index        *int            `json:"index"`
	Message      json.RawMessage `json:"message"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        struct {
		Type         string          `json:"type"`
		Text         string          `json:"text"`
		PartialJSON  string          `json:"partial_json"`
		Thinking     string          `json:"thinking"`
		Signature    string          `json:"signature"`
		StopReason   json.RawMessage `json:"stop_reason"`
		StopSequence json.RawMessage `json:"stop_sequence"`
	} `json:"delta"`
	Usage json.RawMessage `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (a *anthropicStream) add(data []byte) (string, bool, error) {
	var ev anthropicEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return "", false, fmt.Errorf("a stream event is not an Anthropic message event (%v): %s", err, ordered.Excerpt(data, 512))
	}
	switch ev.Type {
	case "error":
		return "", false, streamFailed(anthropic{}.failure(0, data), data, "the endpoint sent an error in the stream: "+ev.Error.Type+": "+ev.Error.Message)
	case "message_start":
		msg, err := orderedObject(ev.Message)
		if err != nil {
			return "", false, fmt.Errorf("message_start's message: %w", err)
		}
		a.msg = msg
		if u, ok := msg.Get("usage"); ok {
			a.usage, _ = u.(object)
		}
	case "content_block_start", "content_block_delta":
		if ev.Index == nil || *ev.Index < 0 || *ev.Index >= maxStreamCalls {
			return "", false, fmt.Errorf("a stream event's content block has no index, or one out of reach (at most %d blocks are read): %s", maxStreamCalls, ordered.Excerpt(data, 512))
		}
		for len(a.blocks) <= *ev.Index {
			a.blocks = append(a.blocks, new(streamBlock))
		}
		b := a.blocks[*ev.Index]
		if ev.Type == "content_block_start" {
			block, err := orderedObject(ev.ContentBlock)
			if err != nil {
				return "", false, fmt.Errorf("content block %d: %w", *ev.Index, err)
			}
			b.block = block
			if t, _ := ordered.String(rawOf(block, "type")); t == "tool_use" {
				id, _ := ordered.String(rawOf(block, "id"))
				name, _ := ordered.String(rawOf(block, "name"))
				b.call = &formingCall{call: a.calls, id: id, name: name}
				a.calls++
				a.callPiece(b.call.call, id, name, "")
			}
			return "", false, nil
		}
		switch ev.Delta.Type {
		case "text_delta":
			b.write("text", ev.Delta.Text)
			return ev.Delta.Text, false, nil
		case "input_json_delta":
			b.write("input", ev.Delta.PartialJSON)
			if c := b.call; c != nil && ev.Delta.PartialJSON != "" {
				a.callPiece(c.call, c.id, c.name, ev.Delta.PartialJSON)
			}
		case "thinking_delta":
			b.write("thinking", ev.Delta.Thinking)
			a.reason(ev.Delta.Thinking)
		case "signature_delta":
			b.write("signature", ev.Delta.Signature)
		}
	case "message_delta":
		if len(ev.Delta.StopReason) > 0 {
			a.stop = ev.Delta.StopReason
		}
		if len(ev.Delta.StopSequence) > 0 {
			a.seq = ev.Delta.StopSequence
		}
		if u, err := orderedObject(ev.Usage); err == nil {
			for _, m := range u {
				if v, ok := m.Val.(json.RawMessage); !ok || string(v) != "null" {
					a.usage = a.usage.Set(m.Key, m.Val)
				}
			}
		}
	case "message_stop":
		a.ended = true
		return "", true, nil
	}
	return "", false, nil // ping, content_block_stop, and what a newer API adds
}

func (a *anthropicStream) end() ([]byte, error) {
	if !a.ended && (len(a.stop) == 0 || string(a.stop) == "null") {
		return nil, errors.New("the stream ended before the answer did (no stop_reason, no message_stop)")
	}
	content := make([]any, 0, len(a.blocks))
	for i, b := range a.blocks {
		if b.block == nil {
			return nil, &streamError{err: fmt.Errorf("content block %d had deltas but no content_block_start", i)}
		}
		block := b.block
		for _, key := range b.order {
			s := b.parts[key].String()
			if key != "input" {
				block = block.Set(key, s)
				continue
			}
			if strings.TrimSpace(s) == "" {
				continue // a call without arguments: content_block_start's input ({}) stands, as in Anthropic's SDK
			}
			if !json.Valid([]byte(s)) {
				return nil, &streamError{err: fmt.Errorf("content block %d: the tool call's input is not JSON: %s", i, ordered.Excerpt([]byte(s), 512))}
			}
			block = block.Set(key, json.RawMessage(s))
		}
		content = append(content, block)
	}
	msg := a.msg
	if msg == nil {
		msg = object{{"type", json.RawMessage(`"message"`)}, {"role", json.RawMessage(`"assistant"`)}}
	}
	msg = msg.Set("content", content)
	if len(a.stop) > 0 {
		msg = msg.Set("stop_reason", a.stop)
	}
	if len(a.seq) > 0 {
		msg = msg.Set("stop_sequence", a.seq)
	}
	if a.usage != nil {
		msg = msg.Set("usage", a.usage)
	}
	return ordered.Append(nil, msg), nil
}
