package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
)

// OpenAI Responses: POST BaseURL/responses with "Authorization:
// Bearer", the system prompt as "instructions"; a streamed answer is
// response.* events (see responsesStream).
type openAIResponses struct{}

func (openAIResponses) url(ep Endpoint, _ bool) string {
	return strings.TrimRight(ep.BaseURL, "/") + "/responses"
}

func (openAIResponses) header(h http.Header, ep Endpoint, set *chatadapter.ToolSet) {
	openAIChat{}.header(h, ep, set)
}

func (openAIResponses) body(model, system string, messages []json.RawMessage) object {
	body := object{{"model", model}}
	if system != "" {
		body = append(body, member{"instructions", system})
	}
	return append(body, member{"input", ordered.Array(messages)})
}

func (openAIResponses) streamFields() []member { return []member{{"stream", json.RawMessage("true")}} }

func (openAIResponses) retryHint([]byte) (time.Duration, bool) { return 0, false }

func (openAIResponses) stream() streamReader { return new(responsesStream) }

func (openAIResponses) limit() string { return "max_output_tokens" }

func (openAIResponses) read(b []byte) (step, error) {
	var r struct {
		Object            string            `json:"object"`
		Status            string            `json:"status"`
		Output            []json.RawMessage `json:"output"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Usage struct {
			InputTokens        int `json:"input_tokens"`
			OutputTokens       int `json:"output_tokens"`
			InputTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
			OutputTokensDetails struct {
				ReasoningTokens int `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &r); err != nil || (r.Object != "response" && r.Output == nil) {
		return step{}, fmt.Errorf("response is not a Responses API response (%v): %s", err, ordered.Excerpt(b, 512))
	}
	st := step{usage: chatadapter.Usage{PromptTokens: r.Usage.InputTokens, CompletionTokens: r.Usage.OutputTokens, CachedTokens: r.Usage.InputTokensDetails.CachedTokens,
		ReasoningTokens: r.Usage.OutputTokensDetails.ReasoningTokens}}
	switch {
	case r.Status == "failed" && r.Error != nil:
		return st, fmt.Errorf("the response failed: %s: %s", r.Error.Code, r.Error.Message)
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		st.cut = `status "incomplete", reason "max_output_tokens"`
		return st, nil
	}
	var text strings.Builder
	for _, item := range r.Output {
		var it struct {
			Type    string `json:"type"`
			Content []struct {
				Type    string `json:"type"`
				Text    string `json:"text"`
				Refusal string `json:"refusal"`
			} `json:"content"`
		}
		if err := json.Unmarshal(item, &it); err != nil {
			return st, fmt.Errorf("output item: %w", err)
		}
		for _, c := range it.Content {
			if it.Type == "message" {
				text.WriteString(c.Text + c.Refusal)
			}
		}
		st.calls = st.calls || it.Type == "function_call"
	}
	st.messages, st.text = r.Output, text.String()
	return st, nil
}

// responsesStream is a streamed OpenAI Responses response: its text comes
// in response.output_text.delta events, and the response itself, whole,
// in the last event: response.completed, response.incomplete or
// response.failed.
type responsesStream struct {
	pieces
	final json.RawMessage
	calls map[int]formingCall // the function_call items by output_index
}

func (a *responsesStream) add(data []byte) (string, bool, error) {
	var ev struct {
		Type        string          `json:"type"`
		Delta       string          `json:"delta"`
		OutputIndex int             `json:"output_index"`
		Item        *responsesCall  `json:"item"`
		Response    json.RawMessage `json:"response"`
		Code        string          `json:"code"`
		Message     string          `json:"message"`
		Error       *struct {
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
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		a.reason(ev.Delta)
	case "response.output_item.added":
		if ev.Item != nil && ev.Item.Type == "function_call" {
			if a.calls == nil {
				a.calls = map[int]formingCall{}
			}
			c := formingCall{call: len(a.calls), id: ev.Item.CallID, name: ev.Item.Name}
			a.calls[ev.OutputIndex] = c
			a.callPiece(c.call, c.id, c.name, ev.Item.Arguments)
		}
	case "response.function_call_arguments.delta":
		if c, ok := a.calls[ev.OutputIndex]; ok && ev.Delta != "" {
			a.callPiece(c.call, c.id, c.name, ev.Delta)
		}
	case "response.completed", "response.incomplete", "response.failed":
		if r := bytes.TrimSpace(ev.Response); len(r) == 0 || r[0] != '{' {
			return "", false, fmt.Errorf("a %s event without its response: %s", ev.Type, ordered.Excerpt(data, 512))
		}
		a.final = ev.Response
		return "", true, nil
	}
	return "", false, nil
}

// responsesCall is what a stream event's function_call item says of its
// call.
type responsesCall struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func (a *responsesStream) end() ([]byte, error) {
	if a.final == nil {
		return nil, errors.New("the stream ended before the answer did (no response.completed, response.incomplete or response.failed)")
	}
	return a.final, nil
}
