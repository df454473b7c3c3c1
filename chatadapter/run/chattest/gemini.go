package chattest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Gemini: a GenerateContentResponse, Google's error body with RetryInfo,
// its stream of response chunks from streamGenerateContent (server-sent
// events with alt=sse, else one JSON array).
type gemini struct{}

func (gemini) path() string       { return "/v1beta/models/" + Model + ":generateContent" }
func (gemini) streamPath() string { return "/v1beta/models/" + Model + ":streamGenerateContent" }
func (gemini) required() []string { return []string{"contents"} }
func (gemini) history() string    { return "contents" }

func (gemini) authorized(r *http.Request) bool {
	return r.Header.Get("X-Goog-Api-Key") == Key || r.URL.Query().Get("key") == Key
}

func (gemini) response(n int, rep Reply) map[string]any {
	u := rep.Usage
	var parts []any
	if rep.Text != "" {
		parts = append(parts, map[string]any{"text": rep.Text})
	}
	for _, c := range rep.Calls {
		fc := map[string]any{"name": c.Name, "args": args(c)}
		if c.ID != "" {
			fc["id"] = c.ID
		}
		parts = append(parts, map[string]any{"functionCall": fc})
	}
	finish := "STOP"
	if rep.Truncated {
		finish = "MAX_TOKENS"
	}
	usage := map[string]any{"promptTokenCount": u.PromptTokens, "candidatesTokenCount": u.CompletionTokens, "totalTokenCount": u.PromptTokens + u.CompletionTokens}
	if u.CachedTokens > 0 {
		usage["cachedContentTokenCount"] = u.CachedTokens
	}
	return map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": orEmpty(parts)}, "finishReason": finish, "index": 0}},
		"usageMetadata": usage, "modelVersion": Model, "responseId": fmt.Sprintf("resp-%d", n),
	}
}

// failure is Google's error body; when to retry is its RetryInfo, not a
// header.
func (gemini) failure(_ http.Header, rep Reply) any {
	status := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}[rep.Status]
	if status == "" {
		status = "UNKNOWN"
	}
	e := map[string]any{"code": rep.Status, "message": rep.Text, "status": status}
	if rep.RetryAfter != "" {
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": rep.RetryAfter + "s"}}
	}
	return map[string]any{"error": e}
}

// turnOf pairs calls and results by ID, or by name when there is none.
func (gemini) turnOf(raw json.RawMessage) (calls, results []string, opens bool) {
	var m struct {
		Parts []struct {
			FunctionCall     *struct{ ID, Name string } `json:"functionCall"`
			FunctionResponse *struct{ ID, Name string } `json:"functionResponse"`
		} `json:"parts"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil, nil, true
	}
	key := func(id, name string) string {
		if id != "" {
			return id
		}
		return name
	}
	for _, p := range m.Parts {
		if fc := p.FunctionCall; fc != nil {
			calls = append(calls, key(fc.ID, fc.Name))
		}
		if fr := p.FunctionResponse; fr != nil {
			results = append(results, key(fr.ID, fr.Name))
		}
	}
	return calls, results, len(results) == 0
}

// stream streams as Gemini does: GenerateContentResponse chunks, the text
// a word at a time, the function calls whole, the last chunk with the
// finishReason and the whole usage.
func (g gemini) stream(e *events, n int, rep Reply, _ Request) {
	whole := g.response(n, rep)
	cand := whole["candidates"].([]any)[0].(map[string]any)
	parts := cand["content"].(map[string]any)["parts"].([]any)
	u := rep.Usage
	chunk := func(parts []any, last bool) {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": orEmpty(parts)}, "index": 0}
		usage := map[string]any{"promptTokenCount": u.PromptTokens, "totalTokenCount": u.PromptTokens}
		if last {
			c["finishReason"] = cand["finishReason"]
			usage = whole["usageMetadata"].(map[string]any)
		}
		e.send("", map[string]any{"candidates": []any{c}, "usageMetadata": usage, "modelVersion": Model, "responseId": fmt.Sprintf("resp-%d", n)})
	}
	var calls []any
	for _, p := range parts {
		if _, ok := p.(map[string]any)["text"]; !ok {
			calls = append(calls, p)
		}
	}
	ws := words(rep.Text)
	for i, w := range ws {
		chunk([]any{map[string]any{"text": w}}, i == len(ws)-1 && calls == nil)
	}
	if calls != nil || len(ws) == 0 {
		chunk(calls, true)
	}
}
