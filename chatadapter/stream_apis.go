package chatadapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
	"net/http"
	"strings"

	"github.com/llmtool/llmtool/internal/jsonenc"
)

// Streaming for OpenAI Responses, Anthropic Messages and Gemini, as for
// OpenAI Chat Completions (stream.go): each reader reports the text as it
// comes and rebuilds the response the API sends without streaming.

// streamFailed is an error the endpoint sent in the stream, with the
// status the API answers it with unstreamed: status if not 0, else the
// one its kind stands for (errorStatus).
func streamFailed(kind, message string, raw []byte, status int) error {
	if status == 0 {
		status = errorStatus(kind, "")
	}
	if kind == "" && message == "" {
		return &streamError{fmt.Errorf("the endpoint sent an error in the stream: %s", ordered.Excerpt(raw, 512)), status}
	}
	return &streamError{fmt.Errorf("the endpoint sent an error in the stream: %s: %s", kind, message), status}
}

// statusOf is the HTTP status each API documents for an error kind it
// may also send inside a stream: Anthropic's error types, OpenAI's
// types and codes, Gemini's statuses.
var statusOf = map[string]int{
	"invalid_request_error": http.StatusBadRequest, "INVALID_ARGUMENT": http.StatusBadRequest, "FAILED_PRECONDITION": http.StatusBadRequest,
	"authentication_error": http.StatusUnauthorized, "UNAUTHENTICATED": http.StatusUnauthorized,
	"billing_error": http.StatusPaymentRequired, "insufficient_quota": http.StatusTooManyRequests,
	"permission_error": http.StatusForbidden, "PERMISSION_DENIED": http.StatusForbidden,
	"not_found_error": http.StatusNotFound, "NOT_FOUND": http.StatusNotFound,
	"request_too_large": http.StatusRequestEntityTooLarge,
	"rate_limit_error":  http.StatusTooManyRequests, "rate_limit_exceeded": http.StatusTooManyRequests, "RESOURCE_EXHAUSTED": http.StatusTooManyRequests,
	"api_error": http.StatusInternalServerError, "server_error": http.StatusInternalServerError, "INTERNAL": http.StatusInternalServerError,
	"UNAVAILABLE": http.StatusServiceUnavailable, "timeout_error": http.StatusGatewayTimeout, "DEADLINE_EXCEEDED": http.StatusGatewayTimeout,
	"overloaded_error": 529, // Anthropic's "overloaded", which its unstreamed answers carry as status 529
}

// errorStatus is the status of an error of type kind or code, 0 if
// neither is known.
func errorStatus(kind, code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return statusOf[kind]
}

// anthropicStream is a streamed Anthropic message: message_start gives
// the message without content, each content block comes as
// content_block_start, its deltas and content_block_stop, then
// message_delta gives the stop_reason and the output's usage, and
// message_stop ends it.
type anthropicStream struct {
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
		return "", false, streamFailed(ev.Error.Type, ev.Error.Message, data, 0)
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
			return "", false, nil
		}
		switch ev.Delta.Type {
		case "text_delta":
			b.write("text", ev.Delta.Text)
			return ev.Delta.Text, false, nil
		case "input_json_delta":
			b.write("input", ev.Delta.PartialJSON)
		case "thinking_delta":
			b.write("thinking", ev.Delta.Thinking)
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

// orderedObject decodes a JSON object, keeping its members' order.
func orderedObject(b []byte) (object, error) {
	v, err := ordered.Parse(b)
	if err != nil {
		return nil, err
	}
	o, ok := v.(object)
	if !ok {
		return nil, fmt.Errorf("not a JSON object: %s", ordered.Excerpt(b, 512))
	}
	return o, nil
}

// responsesStream is a streamed OpenAI Responses response: its text comes
// in response.output_text.delta events, and the response itself, whole,
// in the last event: response.completed, response.incomplete or
// response.failed.
type responsesStream struct{ final json.RawMessage }

func (a *responsesStream) add(data []byte) (string, bool, error) {
	var ev struct {
		Type     string          `json:"type"`
		Delta    string          `json:"delta"`
		Response json.RawMessage `json:"response"`
		Code     string          `json:"code"`
		Message  string          `json:"message"`
		Error    *struct {
			Code    string `json:"code"`
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return "", false, fmt.Errorf("a stream event is not a Responses API event (%v): %s", err, ordered.Excerpt(data, 512))
	}
	switch ev.Type {
	case "error":
		if e := ev.Error; e != nil {
			return "", false, streamFailed(e.Code+e.Type, e.Message, data, errorStatus(e.Type, e.Code))
		}
		return "", false, streamFailed(ev.Code, ev.Message, data, 0)
	case "response.output_text.delta", "response.refusal.delta":
		return ev.Delta, false, nil
	case "response.completed", "response.incomplete", "response.failed":
		if r := bytes.TrimSpace(ev.Response); len(r) == 0 || r[0] != '{' {
			return "", false, fmt.Errorf("a %s event without its response: %s", ev.Type, ordered.Excerpt(data, 512))
		}
		a.final = ev.Response
		return "", true, nil
	}
	return "", false, nil
}

func (a *responsesStream) end() ([]byte, error) {
	if a.final == nil {
		return nil, errors.New("the stream ended before the answer did (no response.completed, response.incomplete or response.failed)")
	}
	return a.final, nil
}

// geminiStream is a streamed Gemini response: each event is a
// GenerateContentResponse whose candidate brings more parts (a text part
// continues the text, a functionCall is whole), the last one with the
// finishReason and the usage.
type geminiStream struct {
	role   any
	parts  []object
	finish any
	rest   object // the other members of the response, the last chunk's
}

func (a *geminiStream) add(data []byte) (string, bool, error) {
	chunk, err := orderedObject(data)
	var c struct {
		Candidates []struct {
			Content struct {
				Role  json.RawMessage   `json:"role"`
				Parts []json.RawMessage `json:"parts"`
			} `json:"content"`
			FinishReason json.RawMessage `json:"finishReason"`
		} `json:"candidates"`
		Error *struct {
			Code    int    `json:"code"`
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err == nil {
		err = json.Unmarshal(data, &c)
	}
	if err != nil {
		return "", false, fmt.Errorf("a stream chunk is not a Gemini response (%v): %s", err, ordered.Excerpt(data, 512))
	}
	if c.Error != nil {
		return "", false, streamFailed(c.Error.Status, c.Error.Message, data, c.Error.Code)
	}
	for _, m := range chunk {
		if m.Key != "candidates" {
			a.rest = a.rest.Set(m.Key, m.Val)
		}
	}
	if len(c.Candidates) == 0 {
		return "", false, nil
	}
	cand := c.Candidates[0]
	if len(cand.FinishReason) > 0 {
		a.finish = cand.FinishReason
	}
	if len(cand.Content.Role) > 0 {
		a.role = cand.Content.Role
	}
	var text strings.Builder
	for _, raw := range cand.Content.Parts {
		p, err := orderedObject(raw)
		if err != nil {
			return "", false, fmt.Errorf("a stream chunk's part: %w", err)
		}
		t, isText := p.Get("text")
		if !isText {
			a.parts = append(a.parts, p)
			continue
		}
		s, _ := ordered.String(t)
		thought := string(rawOf(p, "thought")) == "true"
		if !thought {
			text.WriteString(s)
		}
		if last := len(a.parts) - 1; last >= 0 && continues(a.parts[last], thought) {
			prev, _ := ordered.String(rawOf(a.parts[last], "text"))
			a.parts[last] = a.parts[last].Set("text", json.RawMessage(jsonenc.AppendString(nil, prev+s)))
			if sig, ok := p.Get("thoughtSignature"); ok {
				a.parts[last] = a.parts[last].Set("thoughtSignature", sig)
			}
			continue
		}
		a.parts = append(a.parts, p)
	}
	return text.String(), false, nil
}

// continues reports whether a text part (a thought or not) goes on in
// part: a text part of the same kind not closed by a thought signature.
func continues(part object, thought bool) bool {
	_, isText := part.Get("text")
	_, signed := part.Get("thoughtSignature")
	return isText && !signed && (string(rawOf(part, "thought")) == "true") == thought
}

// rawOf is key's value if it is a JSON scalar.
func rawOf(o object, key string) json.RawMessage {
	v, _ := o.Get(key)
	r, _ := v.(json.RawMessage)
	return bytes.TrimSpace(r)
}

func (a *geminiStream) end() ([]byte, error) {
	if _, blocked := a.rest.Get("promptFeedback"); a.finish == nil && !blocked {
		return nil, errors.New("the stream ended before the answer did (no finishReason)")
	}
	out := object{}
	if a.finish != nil || len(a.parts) > 0 {
		role := a.role
		if role == nil {
			role = json.RawMessage(`"model"`)
		}
		parts := make([]any, len(a.parts))
		for i, p := range a.parts {
			parts[i] = p
		}
		cand := object{{"content", object{{"role", role}, {"parts", parts}}}}
		if a.finish != nil {
			cand = append(cand, member{"finishReason", a.finish})
		}
		out = append(out, member{"candidates", []any{append(cand, member{"index", json.RawMessage("0")})}})
	}
	return ordered.Append(nil, append(out, a.rest...)), nil
}
