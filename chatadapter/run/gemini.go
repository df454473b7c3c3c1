package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
	"github.com/llmtool/llmtool/internal/jsonenc"
)

// Gemini: POST BaseURL/models/MODEL:generateContent with
// "x-goog-api-key", the system prompt as "systemInstruction"; it streams
// from streamGenerateContent, in server-sent events of whole responses
// (see geminiStream).
type gemini struct{}

func (gemini) url(ep Endpoint, stream bool) string {
	u := strings.TrimRight(ep.BaseURL, "/") + "/models/" + url.PathEscape(strings.TrimPrefix(ep.Model, "models/"))
	if stream {
		return u + ":streamGenerateContent?alt=sse"
	}
	return u + ":generateContent"
}

func (gemini) header(h http.Header, ep Endpoint, _ *chatadapter.ToolSet) {
	if ep.APIKey != "" {
		h.Set("X-Goog-Api-Key", ep.APIKey)
	}
}

func (gemini) body(_, system string, messages []json.RawMessage) object {
	var body object
	if system != "" {
		body = append(body, member{"systemInstruction", object{{"parts", []any{object{{"text", system}}}}}})
	}
	return append(body, member{"contents", ordered.Array(messages)})
}

func (gemini) streamFields() []member { return nil }

// retryHint reads google.rpc.RetryInfo's retryDelay from an error body.
func (gemini) retryHint(body []byte) (time.Duration, bool) {
	var g struct {
		Error struct {
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &g) == nil {
		for _, d := range g.Error.Details {
			if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
				if w, err := time.ParseDuration(d.RetryDelay); err == nil && w >= 0 {
					return w, true
				}
			}
		}
	}
	return 0, false
}

// failure reads Google's {"error":{"code","message","status","details"}}:
// a RESOURCE_EXHAUSTED whose QuotaFailure names a daily quota (or one of
// 0) is a quota, which waiting for the next minute does not cure; an
// INVALID_ARGUMENT whose ErrorInfo says API_KEY_INVALID is a key refused.
// Code is the QuotaFailure's quotaId, else the ErrorInfo's reason.
func (gemini) failure(status int, body []byte) *HTTPError {
	var b struct {
		Error struct {
			Code            int
			Status, Message string
			Details         []struct {
				Type       string `json:"@type"`
				Reason     string `json:"reason"`
				Violations []struct {
					QuotaID    string `json:"quotaId"`
					QuotaValue string `json:"quotaValue"`
				} `json:"violations"`
			} `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &b) // another body says nothing more
	e := b.Error
	if status == 0 {
		status = e.Code
	}
	code, class := "", ""
	for _, d := range e.Details {
		switch {
		case strings.HasSuffix(d.Type, "google.rpc.ErrorInfo") && code == "":
			code = d.Reason
		case strings.HasSuffix(d.Type, "google.rpc.QuotaFailure"):
			for _, v := range d.Violations {
				code = v.QuotaID
				if contains(v.QuotaID, "perday") || v.QuotaValue == "0" {
					class = classQuota
				}
			}
		}
	}
	switch {
	case class != "":
	case strings.HasPrefix(code, "API_KEY_"):
		class = classAuth
	case e.Status == "INVALID_ARGUMENT" && contains(e.Message, "exceeds the maximum number of tokens", "token count"):
		class = classContext
	default:
		class = geminiClass[e.Status]
	}
	return failure(status, e.Status, code, e.Message, class)
}

// geminiClass is the class of each of Google's error statuses.
var geminiClass = map[string]string{"RESOURCE_EXHAUSTED": classRateLimit, "UNAUTHENTICATED": classAuth, "PERMISSION_DENIED": classAuth,
	"INVALID_ARGUMENT": classBadRequest, "FAILED_PRECONDITION": classBadRequest, "NOT_FOUND": classBadRequest,
	"UNAVAILABLE": classOverloaded, "INTERNAL": classServer, "DEADLINE_EXCEEDED": classTimeout}

func (gemini) stream() streamReader { return new(geminiStream) }

func (gemini) limit() string { return `generationConfig's "maxOutputTokens"` }

func (gemini) read(b []byte) (step, error) {
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
	st := step{usage: chatadapter.Usage{PromptTokens: u.PromptTokenCount, CompletionTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount, CachedTokens: u.CachedContentTokenCount,
		ReasoningTokens: u.ThoughtsTokenCount}}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback.BlockReason != "" { // the prompt was blocked: no answer, and the turn says why
			st.finish, st.raw = finishFilter, r.PromptFeedback.BlockReason
			return st, nil
		}
		return st, fmt.Errorf("response has no candidate: %s", ordered.Excerpt(b, 512))
	}
	c := r.Candidates[0]
	st.raw = c.FinishReason
	if c.FinishReason == "MAX_TOKENS" {
		st.cut, st.finish = `finishReason "MAX_TOKENS"`, finishLength
		return st, nil
	}
	var content struct {
		Parts []struct {
			Text         *string         `json:"text"`
			Thought      bool            `json:"thought"`
			FunctionCall json.RawMessage `json:"functionCall"`
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
		st.calls = st.calls || len(p.FunctionCall) > 0
	}
	if len(content.Parts) > 0 {
		st.messages = []json.RawMessage{c.Content}
	}
	st.text = text.String()
	st.finish = finishOf(geminiFinish, st.raw, st.calls)
	return st, nil
}

// geminiFinish maps Gemini's finishReason to Transcript.Finish; a
// reason it adds later is "other".
var geminiFinish = map[string]string{"STOP": finishStop, "MAX_TOKENS": finishLength,
	"SAFETY": finishFilter, "RECITATION": finishFilter, "BLOCKLIST": finishFilter, "PROHIBITED_CONTENT": finishFilter, "SPII": finishFilter,
	"IMAGE_SAFETY": finishFilter, "IMAGE_PROHIBITED_CONTENT": finishFilter, "IMAGE_RECITATION": finishFilter,
	"MALFORMED_FUNCTION_CALL": finishMalformed, "UNEXPECTED_TOOL_CALL": finishMalformed, "TOO_MANY_TOOL_CALLS": finishMalformed}

// geminiStream is a streamed Gemini response: each event is a
// GenerateContentResponse whose candidate brings more parts (a text part
// continues the text, a functionCall is whole), the last one with the
// finishReason and the usage.
type geminiStream struct {
	pieces
	calls  int // the functionCall parts so far
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
		return "", false, streamFailed(gemini{}.failure(0, data), data, "the endpoint sent an error in the stream: "+c.Error.Status+": "+c.Error.Message)
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
			a.called(p)
			continue
		}
		s, _ := ordered.String(t)
		thought := string(rawOf(p, "thought")) == "true"
		if !thought {
			text.WriteString(s)
		} else {
			a.reason(s)
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

// called reports part's call, if it is one: Gemini sends it whole.
func (a *geminiStream) called(part object) {
	v, ok := part.Get("functionCall")
	call, _ := v.(object)
	if !ok || call == nil {
		return
	}
	id, _ := ordered.String(rawOf(call, "id"))
	name, _ := ordered.String(rawOf(call, "name"))
	args := "{}"
	if v, ok := call.Get("args"); ok {
		args = string(ordered.Append(nil, v))
	}
	a.callPiece(a.calls, id, name, args)
	a.calls++
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
