package chatadapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
	"net/http"
	"net/url"
	"strings"
)

// The four APIs Run speaks: each one's request, its response, its usage
// and its sign of a response cut short. Only the members Run needs are
// read; the assistant's turn goes back into the conversation as the
// provider sent it, so what Run does not know (reasoning items, thought
// signatures) reaches the next request unchanged.

// Usage is what a request cost, in tokens, as the provider reported it,
// in one form for every provider: PromptTokens counts every token of the
// prompt, those read from or written to the provider's cache included.
type Usage struct {
	// PromptTokens is the prompt's size: OpenAI's prompt_tokens or
	// input_tokens; Anthropic's input_tokens plus
	// cache_creation_input_tokens and cache_read_input_tokens; Gemini's
	// promptTokenCount.
	PromptTokens int `json:"promptTokens"`
	// CompletionTokens is what the model generated, its reasoning
	// included: OpenAI's completion_tokens or output_tokens; Anthropic's
	// output_tokens; Gemini's candidatesTokenCount plus
	// thoughtsTokenCount.
	CompletionTokens int `json:"completionTokens"`
	// CachedTokens is the part of PromptTokens read from the cache:
	// OpenAI's cached_tokens, Anthropic's cache_read_input_tokens,
	// Gemini's cachedContentTokenCount.
	CachedTokens int `json:"cachedTokens,omitempty"`
	// CacheWriteTokens is the part of PromptTokens written to the cache,
	// which Anthropic bills apart (cache_creation_input_tokens); 0 for the
	// others.
	CacheWriteTokens int `json:"cacheWriteTokens,omitempty"`
}

// Total is PromptTokens plus CompletionTokens, what RunOptions.TokenBudget
// counts.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

func (u Usage) add(v Usage) Usage {
	return Usage{u.PromptTokens + v.PromptTokens, u.CompletionTokens + v.CompletionTokens,
		u.CachedTokens + v.CachedTokens, u.CacheWriteTokens + v.CacheWriteTokens}
}

// anthropicMaxTokens is the max_tokens Run sends Anthropic, which
// requires one, unless RunOptions.RequestFields has it.
const anthropicMaxTokens = 4096

// anthropicVersion is the anthropic-version header Run sends, unless
// Endpoint.Header has one.
const anthropicVersion = "2023-06-01"

// endpointURL is where requests of shape go; Gemini streams from
// streamGenerateContent, in server-sent events.
func endpointURL(ep Endpoint, shape Shape, stream bool) string {
	base := strings.TrimRight(ep.BaseURL, "/")
	var u string
	switch shape.wire() {
	case OpenAIResponses:
		u = base + "/responses"
	case Anthropic:
		u = base + "/messages"
	case Gemini:
		u = base + "/models/" + url.PathEscape(strings.TrimPrefix(ep.Model, "models/")) + ":generateContent"
		if stream {
			u = strings.TrimSuffix(u, ":generateContent") + ":streamGenerateContent?alt=sse"
		}
	default:
		u = base + "/chat/completions"
	}
	if len(ep.Query) > 0 {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + ep.Query.Encode()
	}
	return u
}

// headers are a request's headers: JSON, the key as the API takes it,
// then the endpoint's own.
func headers(ep Endpoint, shape Shape, set *ToolSet) http.Header {
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	switch shape.wire() {
	case Anthropic:
		h.Set("Anthropic-Version", anthropicVersion)
		if ep.APIKey != "" {
			h.Set("X-Api-Key", ep.APIKey)
		}
		if set != nil && len(set.Deferred) > 0 {
			h.Set("Anthropic-Beta", AnthropicToolSearchBeta)
		}
	case Gemini:
		if ep.APIKey != "" {
			h.Set("X-Goog-Api-Key", ep.APIKey)
		}
	default:
		if ep.APIKey != "" {
			h.Set("Authorization", "Bearer "+ep.APIKey)
		}
	}
	for k, vs := range ep.Header {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	return h
}

// body is a request's body: the conversation in the API's member, the
// system prompt in its own, the tools, then RequestFields, which replace
// a member of the same name.
func (r *Runner) body(messages []json.RawMessage, set *ToolSet) []byte {
	var body object
	switch r.shape.wire() {
	case OpenAIChat:
		if r.system != "" {
			messages = append([]json.RawMessage{systemMessage(r.system)}, messages...)
		}
		body = object{{"model", r.ep.Model}, {"messages", rawList(messages)}}
	case OpenAIResponses:
		body = object{{"model", r.ep.Model}}
		if r.system != "" {
			body = append(body, member{"instructions", r.system})
		}
		body = append(body, member{"input", rawList(messages)})
	case Anthropic:
		body = object{{"model", r.ep.Model}, {"max_tokens", json.RawMessage(fmt.Sprint(anthropicMaxTokens))}}
		if r.system != "" {
			body = append(body, member{"system", r.system})
		}
		body = append(body, member{"messages", rawList(messages)})
	case Gemini:
		if r.system != "" {
			body = append(body, member{"systemInstruction", object{{"parts", []any{object{{"text", r.system}}}}}})
		}
		body = append(body, member{"contents", rawList(messages)})
	}
	if set != nil && len(set.Tools) > 0 {
		body = append(body, member{"tools", set.JSON})
	}
	for _, f := range r.fields {
		body = body.Set(f.Key, f.Val)
	}
	return ordered.Append(nil, body)
}

// step is what one response brought.
type step struct {
	messages []json.RawMessage // to append to the conversation
	text     string            // what the model said
	calls    []ToolCall
	usage    Usage
	cut      string // the provider's sign that the response was cut at its output limit, "" if not
}

// limitField names each API's output limit, for ErrTruncated's advice.
var limitField = [...]string{
	OpenAIChat:      "max_completion_tokens",
	OpenAIResponses: "max_output_tokens",
	Anthropic:       "max_tokens",
	Gemini:          `generationConfig's "maxOutputTokens"`,
}

// ErrTruncated is wrapped by Run's error when the provider cut the
// model's response at its output limit (finish_reason "length",
// stop_reason "max_tokens", finishReason "MAX_TOKENS", status
// "incomplete"): its tool calls may be cut too, so Run neither runs them
// nor keeps the response. The transcript ends before it; raise the limit
// in RunOptions.RequestFields, or ask for less, and send it again.
var ErrTruncated = errors.New("chatadapter: the model's response was cut at its output limit")

// readStep reads a 2xx response of shape's API.
func readStep(shape Shape, b []byte) (step, error) {
	switch shape.wire() {
	case OpenAIResponses:
		return readResponses(b)
	case Anthropic:
		return readAnthropic(b)
	case Gemini:
		return readGemini(b)
	}
	return readChat(b)
}

func readChat(b []byte) (step, error) {
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
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return step{}, fmt.Errorf("response is not a chat completion (%v): %s", err, ordered.Excerpt(b, 512))
	}
	var st step
	st.usage = Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, CachedTokens: r.Usage.PromptTokensDetails.CachedTokens}
	if len(r.Choices) == 0 || len(r.Choices[0].Message) == 0 || r.Choices[0].Message[0] != '{' {
		return st, fmt.Errorf("response has no message: %s", ordered.Excerpt(b, 512))
	}
	if r.Choices[0].FinishReason == "length" {
		st.cut = `finish_reason "length"`
		return st, nil
	}
	msg, text, calls, err := readAssistant(r.Choices[0].Message)
	if err != nil {
		return st, err
	}
	st.messages, st.text, st.calls = []json.RawMessage{msg}, text, calls
	return st, nil
}

func readResponses(b []byte) (step, error) {
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
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &r); err != nil || (r.Object != "response" && r.Output == nil) {
		return step{}, fmt.Errorf("response is not a Responses API response (%v): %s", err, ordered.Excerpt(b, 512))
	}
	st := step{usage: Usage{PromptTokens: r.Usage.InputTokens, CompletionTokens: r.Usage.OutputTokens, CachedTokens: r.Usage.InputTokensDetails.CachedTokens}}
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
	}
	calls, err := parseResponses(ordered.Append(nil, rawList(r.Output)))
	if err != nil {
		return st, fmt.Errorf("output: %w", err)
	}
	st.messages, st.text, st.calls = r.Output, text.String(), calls
	return st, nil
}

func readAnthropic(b []byte) (step, error) {
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
	st := step{usage: Usage{PromptTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		CompletionTokens: u.OutputTokens, CachedTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}}
	if r.StopReason == "max_tokens" || r.StopReason == "model_context_window_exceeded" {
		st.cut = fmt.Sprintf("stop_reason %q", r.StopReason)
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
	}
	calls, err := parseAnthropic(r.Content)
	if err != nil {
		return st, fmt.Errorf("content: %w", err)
	}
	if len(blocks) > 0 { // Anthropic refuses an empty assistant message before the last
		st.messages = []json.RawMessage{ordered.Append(nil, object{{"role", "assistant"}, {"content", r.Content}})}
	}
	st.text, st.calls = text.String(), calls
	return st, nil
}

func readGemini(b []byte) (step, error) {
	var r struct {
		Candidates []struct {
			Content      json.RawMessage `json:"content"`
			FinishReason string          `json:"finishReason"`
		} `json:"candidates"`
		PromptFeedback struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback"`
		UsageMetadata struct {
			PromptTokenCount        int `json:"promptTokenCount"`
			CandidatesTokenCount    int `json:"candidatesTokenCount"`
			ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
			CachedContentTokenCount int `json:"cachedContentTokenCount"`
		} `json:"usageMetadata"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return step{}, fmt.Errorf("response is not a Gemini response (%v): %s", err, ordered.Excerpt(b, 512))
	}
	u := r.UsageMetadata
	st := step{usage: Usage{PromptTokens: u.PromptTokenCount, CompletionTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount, CachedTokens: u.CachedContentTokenCount}}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback.BlockReason != "" {
			return st, fmt.Errorf("the prompt was blocked (blockReason %s): %s", r.PromptFeedback.BlockReason, ordered.Excerpt(b, 512))
		}
		return st, fmt.Errorf("response has no candidate: %s", ordered.Excerpt(b, 512))
	}
	c := r.Candidates[0]
	if c.FinishReason == "MAX_TOKENS" {
		st.cut = `finishReason "MAX_TOKENS"`
		return st, nil
	}
	var content struct {
		Parts []struct {
			Text    *string `json:"text"`
			Thought bool    `json:"thought"`
		} `json:"parts"`
	}
	if len(bytes.TrimSpace(c.Content)) > 0 {
		if err := json.Unmarshal(c.Content, &content); err != nil {
			return st, fmt.Errorf("content: %w", err)
		}
	}
	var text strings.Builder
	for _, p := range content.Parts {
		if p.Text != nil && !p.Thought {
			text.WriteString(*p.Text)
		}
	}
	if len(content.Parts) > 0 {
		calls, err := parseGemini(c.Content)
		if err != nil {
			return st, fmt.Errorf("content: %w", err)
		}
		st.calls = calls
		st.messages = []json.RawMessage{c.Content}
	}
	st.text = text.String()
	return st, nil
}
