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

// OpenAI Chat Completions, and every compatible server (llama.cpp,
// Ollama, vLLM): POST BaseURL/chat/completions with "Authorization:
// Bearer", the system prompt as a first system message; a streamed
// answer is chat.completion.chunk events (see assembly).
type openAIChat struct{}

func (openAIChat) url(ep Endpoint, _ bool) string {
	return strings.TrimRight(ep.BaseURL, "/") + "/chat/completions"
}

func (openAIChat) header(h http.Header, ep Endpoint, _ *chatadapter.ToolSet) {
	if ep.APIKey != "" {
		h.Set("Authorization", "Bearer "+ep.APIKey)
	}
}

func (openAIChat) body(model, system string, messages []json.RawMessage) object {
	if system != "" {
		messages = append([]json.RawMessage{systemMessage(system)}, messages...)
	}
	return object{{"model", model}, {"messages", ordered.Array(messages)}}
}

// streamFields ask for the usage too, in a last chunk.
func (openAIChat) streamFields() []member {
	return []member{{"stream", json.RawMessage("true")}, {"stream_options", json.RawMessage(`{"include_usage":true}`)}}
}

func (openAIChat) retryHint([]byte) (time.Duration, bool) { return 0, false }

// failure reads OpenAI's {"error":{"message","type","param","code"}},
// which compatible servers send too (some with a numeric code, Ollama's
// with the message alone).
func (openAIChat) failure(status int, body []byte) *HTTPError {
	var b struct {
		Error json.RawMessage `json:"error"`
	}
	var e struct {
		Type, Message string
		Code          json.RawMessage
	}
	if json.Unmarshal(body, &b) == nil {
		if len(b.Error) == 0 {
			b.Error = body // vLLM's {"object":"error","message","type","code"}
		}
		if s, ok := ordered.String(b.Error); ok {
			e.Message = s
		} else {
			_ = json.Unmarshal(b.Error, &e) // another form says nothing more
		}
	}
	code, ok := ordered.String(e.Code)
	if c := bytes.TrimSpace(e.Code); !ok && len(c) > 0 && string(c) != "null" {
		code = string(c)
	}
	return failure(status, e.Type, code, e.Message, openAIClass(status, e.Type, code, e.Message))
}

// openAIClass is the class of an OpenAI error: by its code and type
// (OpenAI's, a Responses stream's, llama.cpp's, vLLM's words), else by
// its status.
func openAIClass(status int, typ, code, message string) string {
	switch {
	case code == "insufficient_quota" || typ == "insufficient_quota" || code == "billing_hard_limit_reached" || code == "billing_not_active":
		return classQuota
	case code == "rate_limit_exceeded" || typ == "requests" || typ == "tokens":
		return classRateLimit
	case code == "context_length_exceeded" || typ == "exceed_context_size_error" || contains(message, "maximum context length"):
		return classContext
	case code == "invalid_api_key" || typ == "authentication_error" || status == http.StatusUnauthorized || status == http.StatusForbidden:
		return classAuth
	case typ == "invalid_request_error" || code == "invalid_prompt" || strings.HasPrefix(code, "invalid_image"):
		return classBadRequest
	case code == "vector_store_timeout":
		return classTimeout
	case typ == "server_error" || code == "server_error":
		return classServer
	}
	return ""
}

func (openAIChat) stream() streamReader { return new(assembly) }

func (openAIChat) limit() string { return "max_completion_tokens" }

func (openAIChat) read(b []byte) (step, error) {
	var r struct {
		Choices []struct {
			Message      json.RawMessage `json:"message"`
			FinishReason string          `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			CompletionTokens    int `json:"completion_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
			CompletionTokensDetails struct {
				ReasoningTokens int `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return step{}, fmt.Errorf("response is not a chat completion (%v): %s", err, ordered.Excerpt(b, 512))
	}
	var st step
	st.usage = chatadapter.Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, CachedTokens: r.Usage.PromptTokensDetails.CachedTokens,
		ReasoningTokens: r.Usage.CompletionTokensDetails.ReasoningTokens}
	if len(r.Choices) == 0 || len(r.Choices[0].Message) == 0 || r.Choices[0].Message[0] != '{' {
		return st, fmt.Errorf("response has no message: %s", ordered.Excerpt(b, 512))
	}
	st.raw = r.Choices[0].FinishReason
	if st.raw == "length" {
		st.cut, st.finish = `finish_reason "length"`, finishLength
		return st, nil
	}
	msg, text, calls, err := readAssistant(r.Choices[0].Message)
	if err != nil {
		return st, err
	}
	st.messages, st.text, st.calls = []json.RawMessage{msg}, text, calls
	st.finish = finishOf(openAIFinish, st.raw, calls)
	var refusal struct {
		Refusal string `json:"refusal"`
	}
	_ = json.Unmarshal(r.Choices[0].Message, &refusal) // readAssistant read it
	if refusal.Refusal != "" && !calls {               // the model declined: its words are the answer
		st.finish, st.raw = finishRefusal, "refusal"
		if st.text == "" {
			st.text = refusal.Refusal
		}
	}
	return st, nil
}

// openAIFinish maps OpenAI's finish_reason (and the incomplete reason of
// a Responses response) to Transcript.Finish.
var openAIFinish = map[string]string{"stop": finishStop, "length": finishLength, "tool_calls": finishToolCalls,
	"function_call": finishToolCalls, "content_filter": finishFilter, "max_output_tokens": finishLength, "completed": finishStop}

// systemMessage returns {"role":"system","content":text}, OpenAI Chat
// Completions' system message: how Options.System, the one way to send
// a system prompt, reaches that API.
func systemMessage(text string) json.RawMessage { return textMessage("system", text) }

// readAssistant rebuilds an OpenAI Chat Completions assistant message
// with the members a request takes back, and returns its text and
// whether it asks for tool calls.
func readAssistant(raw json.RawMessage) (json.RawMessage, string, bool, error) {
	var m struct {
		Content   json.RawMessage `json:"content"`
		ToolCalls json.RawMessage `json:"tool_calls"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", false, fmt.Errorf("assistant message: %w", err)
	}
	text := contentText(m.Content)
	msg := object{{"role", json.RawMessage(`"assistant"`)}}
	tc := bytes.TrimSpace(m.ToolCalls)
	hasCalls := len(tc) > 2 && tc[0] == '['
	switch {
	case len(bytes.TrimSpace(m.Content)) > 0:
		msg = append(msg, member{"content", m.Content})
	case hasCalls:
		msg = append(msg, member{"content", json.RawMessage("null")})
	default:
		msg = append(msg, member{"content", ""})
	}
	if !hasCalls {
		return ordered.Append(nil, msg), text, false, nil
	}
	msg = append(msg, member{"tool_calls", json.RawMessage(tc)})
	return ordered.Append(nil, msg), text, true, nil
}

// contentText is a message content's text: the string, or the text parts
// of a parts array joined.
func contentText(c json.RawMessage) string {
	c = bytes.TrimSpace(c)
	if len(c) == 0 {
		return ""
	}
	if s, ok := ordered.String(c); ok {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if c[0] == '[' && json.Unmarshal(c, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" {
				b.WriteString(p.Text)
			}
		}
		return b.String()
	}
	return ""
}

// assembly is a streamed answer put together chunk by chunk.
type assembly struct {
	pieces
	text   strings.Builder
	calls  []*streamCall
	finish string          // the last finish_reason
	usage  json.RawMessage // the usage chunk's, if any
	ended  bool            // [DONE] came

	refusal strings.Builder // the message's refusal, if the model declined
}

type streamCall struct {
	id, name string
	args     strings.Builder
}

// chunk is what Run reads of a chat.completion.chunk.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content *string `json:"content"`
			// the reasoning of compatible servers: reasoning_content
			// (DeepSeek, llama.cpp, vLLM), or reasoning (newer vLLM)
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
			Refusal *string `json:"refusal"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// add takes one chunk, or [DONE], into the answer.
func (a *assembly) add(data []byte) (string, bool, error) {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		a.ended = true
		return "", true, nil
	}
	text, err := a.chunk(data)
	return text, false, err
}

// chunk takes one chunk into the answer and returns its text.
func (a *assembly) chunk(data []byte) (string, error) {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return "", fmt.Errorf("a stream chunk is not a chat completion chunk (%v): %s", err, ordered.Excerpt(data, 512))
	}
	if e := bytes.TrimSpace(c.Error); len(e) > 0 && string(e) != "null" {
		return "", streamFailed(openAIChat{}.failure(0, data), data, "the endpoint sent an error in the stream: "+ordered.Excerpt(e, 512))
	}
	if u := bytes.TrimSpace(c.Usage); len(u) > 0 && u[0] == '{' {
		a.usage = append(json.RawMessage(nil), u...)
	}
	if len(c.Choices) == 0 {
		return "", nil
	}
	ch := c.Choices[0]
	refusal := ""
	if ch.Delta.Refusal != nil { // the model declines, in words the person reads
		refusal = *ch.Delta.Refusal
		a.refusal.WriteString(refusal)
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		a.finish = *ch.FinishReason
	}
	a.reason(ch.Delta.ReasoningContent + ch.Delta.Reasoning)
	for _, tc := range ch.Delta.ToolCalls {
		k := len(a.calls) - 1 // a piece without an index continues the last call...
		switch {
		case tc.Index != nil:
			k = *tc.Index
		case tc.ID != "" && (k < 0 || a.calls[k].id != tc.ID):
			k++ // ...unless it starts a call of its own
		}
		if k < 0 || k >= maxStreamCalls {
			return "", fmt.Errorf("a stream chunk's tool call has index %d; at most %d calls are read", k, maxStreamCalls)
		}
		for len(a.calls) <= k {
			a.calls = append(a.calls, new(streamCall))
		}
		sc := a.calls[k]
		if tc.ID != "" {
			sc.id = tc.ID
		}
		named := sc.name != ""
		sc.name += tc.Function.Name
		args, ok := ordered.String(tc.Function.Arguments)
		if raw := bytes.TrimSpace(tc.Function.Arguments); !ok && len(raw) > 0 && string(raw) != "null" {
			args = string(raw) // a server that sends the arguments as an object
		}
		sc.args.WriteString(args)
		switch {
		case !named && sc.name != "": // the name is known: the call shows, with its arguments so far
			a.callPiece(k, sc.id, sc.name, sc.args.String())
		case named && args != "":
			a.callPiece(k, sc.id, sc.name, args)
		}
	}
	if ch.Delta.Content == nil {
		return refusal, nil
	}
	a.text.WriteString(*ch.Delta.Content)
	return *ch.Delta.Content, nil
}

// end returns the answer as the chat completion a request without
// streaming gets, once the stream said it is complete: a finish_reason,
// or [DONE].
func (a *assembly) end() ([]byte, error) {
	if a.finish == "" && !a.ended {
		return nil, errors.New("the stream ended before the answer did (no finish_reason, no [DONE])")
	}
	msg := object{{"role", "assistant"}}
	switch {
	case a.text.Len() > 0:
		msg = append(msg, member{"content", a.text.String()})
	case len(a.calls) > 0:
		msg = append(msg, member{"content", nil})
	default:
		msg = append(msg, member{"content", ""})
	}
	if a.refusal.Len() > 0 {
		msg = append(msg, member{"refusal", a.refusal.String()})
	}
	if len(a.calls) > 0 {
		calls := make([]any, len(a.calls))
		for i, c := range a.calls {
			calls[i] = object{{"id", c.id}, {"type", "function"}, {"function", object{{"name", c.name}, {"arguments", c.args.String()}}}}
		}
		msg = append(msg, member{"tool_calls", calls})
	}
	out := object{{"object", "chat.completion"}, {"choices", []any{object{{"index", json.RawMessage("0")}, {"message", msg}, {"finish_reason", a.finish}}}}}
	if a.usage != nil {
		out = append(out, member{"usage", a.usage})
	}
	return ordered.Append(nil, out), nil
}
