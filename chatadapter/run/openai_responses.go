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

// failure reads the error body OpenAI's APIs share.
func (openAIResponses) failure(status int, body []byte) *HTTPError {
	return openAIChat{}.failure(status, body)
}

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
		he := failedResponse(r.Error.Code, r.Error.Message)
		he.Body = ordered.Excerpt(b, 512)
		return st, he
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		st.cut, st.finish, st.raw = `status "incomplete", reason "max_output_tokens"`, finishLength, "max_output_tokens"
		return st, nil
	}
	st.raw = r.Status
	if r.Status == "incomplete" && r.IncompleteDetails != nil {
		st.raw = r.IncompleteDetails.Reason // such as "content_filter"
	}
	refused := false
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
				refused = refused || c.Type == "refusal"
			}
		}
		st.calls = st.calls || it.Type == "function_call"
	}
	st.messages, st.text = r.Output, text.String()
	st.finish = finishOf(openAIFinish, st.raw, st.calls)
	if refused && !st.calls {
		st.finish, st.raw = finishRefusal, "refusal"
	}
	return st, nil
}

// failedResponse is the *HTTPError of a response whose status is
// "failed", by its error's code ("server_error", "rate_limit_exceeded",
// "invalid_prompt", ...).
func failedResponse(code, message string) *HTTPError {
	he := failure(0, "", code, message, openAIClass(0, "", code, message))
	he.what = "the response failed: " + code + ": " + message
	return he
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
		typ, code, msg := "", ev.Code, ev.Message
		if e := ev.Error; e != nil {
			typ, code, msg = e.Type, e.Code, e.Message
		}
		what := "the endpoint sent an error in the stream: " + ordered.Excerpt(data, 512)
		if typ+code != "" || msg != "" {
			what = "the endpoint sent an error in the stream: " + typ + code + ": " + msg
		}
		return "", false, streamFailed(failure(0, typ, code, msg, openAIClass(0, typ, code, msg)), data, what)
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
		var failed struct {
			Error *struct{ Code, Message string } `json:"error"`
		}
		if ev.Type == "response.failed" && json.Unmarshal(ev.Response, &failed) == nil && failed.Error != nil {
			he := failedResponse(failed.Error.Code, failed.Error.Message) // retried as its code unstreamed would be
			he.Stream, he.Body = true, ordered.Excerpt(data, 512)
			return "", false, he
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
