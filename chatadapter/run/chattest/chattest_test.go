package chattest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
)

// post sends body to srv's endpoint with its headers, and returns the
// status and body.
func post(t *testing.T, srv *chattest.Server, path, body string, header map[string]string) (int, string) {
	t.Helper()
	ep := srv.Endpoint()
	req, err := http.NewRequest(http.MethodPost, ep.BaseURL+path, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// The server refuses what the provider refuses, in the provider's error
// body: a call left without its result, a missing member, a wrong key.
func TestRefusals(t *testing.T) {
	t.Parallel()
	openai := map[string]string{"Authorization": "Bearer " + chattest.Key}
	tests := []struct {
		name   string
		shape  chatadapter.Shape
		path   string
		header map[string]string
		body   string
		status int
		want   string
	}{
		{"openai: a call without its result", chatadapter.OpenAIChat, "/chat/completions", openai,
			`{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"Well?"}]}`,
			400, `{"error":{"code":null,"message":"messages[2]: the tool calls c1 have no result; every call needs one right after its turn","param":null,"type":"invalid_request_error"}}`},
		{"openai: a result for no call", chatadapter.OpenAIChat, "/chat/completions", openai,
			`{"model":"m","messages":[{"role":"tool","tool_call_id":"c9","content":"{}"}]}`,
			400, `{"error":{"code":null,"message":"messages[0]: a tool result for \"c9\" answers no call of the assistant turn before it","param":null,"type":"invalid_request_error"}}`},
		{"openai: a wrong key", chatadapter.OpenAIChat, "/chat/completions", map[string]string{"Authorization": "Bearer nope"}, `{}`,
			401, `{"error":{"code":"invalid_api_key","message":"invalid API key","param":null,"type":"invalid_request_error"}}`},
		{"responses: a call without output", chatadapter.OpenAIResponses, "/responses", openai,
			`{"model":"m","input":[{"role":"user","content":"Hi"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}]}`,
			400, `{"error":{"code":null,"message":"the tool calls c1 have no result; every call needs one right after its turn","param":null,"type":"invalid_request_error"}}`},
		{"anthropic: no max_tokens", chatadapter.Anthropic, "/messages", map[string]string{"X-Api-Key": chattest.Key, "Anthropic-Version": "2023-06-01"},
			`{"model":"m","messages":[]}`,
			400, `{"error":{"message":"max_tokens: field required","type":"invalid_request_error"},"request_id":"req_chattest","type":"error"}`},
		{"anthropic: no version", chatadapter.Anthropic, "/messages", map[string]string{"X-Api-Key": chattest.Key}, `{}`,
			401, `{"error":{"message":"invalid API key","type":"authentication_error"},"request_id":"req_chattest","type":"error"}`},
		{"gemini: a call without its response", chatadapter.Gemini, "/models/" + chattest.Model + ":generateContent", map[string]string{"X-Goog-Api-Key": chattest.Key},
			`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"text":"Well?"}]}]}`,
			400, `{"error":{"code":400,"message":"messages[1]: the tool calls f have no result; every call needs one right after its turn","status":"INVALID_ARGUMENT"}}`},
		{"gemini: another model", chatadapter.Gemini, "/models/other:generateContent", map[string]string{"X-Goog-Api-Key": chattest.Key}, `{}`,
			404, `{"error":{"code":404,"message":"no such endpoint /v1beta/models/other:generateContent; this API answers POST /v1beta/models/scripted-model:generateContent","status":"NOT_FOUND"}}`},
		{"nothing scripted", chatadapter.OpenAIChat, "/chat/completions", openai, `{"model":"m","messages":[]}`,
			400, `{"error":{"code":null,"message":"chattest: request 1 has no scripted reply","param":null,"type":"invalid_request_error"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := chattest.NewServer(tt.shape)
			defer srv.Close()
			status, body := post(t, srv, tt.path, tt.body, tt.header)
			require.Equal(t, tt.status, status)
			require.JSONEq(t, tt.want, body)
			require.Len(t, srv.Requests(), 1)
		})
	}
}

// Replies come in order, Add scripts more, and errors carry Retry-After
// where the provider says it.
func TestScript(t *testing.T) {
	t.Parallel()
	srv := chattest.NewServer(chatadapter.Gemini, chattest.Reply{Status: 429, Text: "Quota exceeded.", RetryAfter: "3"})
	defer srv.Close()
	srv.Add(chattest.Reply{Text: "Hi.", Usage: chatadapter.Usage{PromptTokens: 7, CompletionTokens: 2, CachedTokens: 4}})
	h := map[string]string{"X-Goog-Api-Key": chattest.Key}
	path := "/models/" + chattest.Model + ":generateContent"
	status, body := post(t, srv, path, `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`, h)
	require.Equal(t, 429, status)
	require.JSONEq(t, `{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3s"}]}}`, body)
	status, body = post(t, srv, path, `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`, h)
	require.Equal(t, 200, status)
	require.JSONEq(t, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi."}]},"finishReason":"STOP","index":0}],
		"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"totalTokenCount":9,"cachedContentTokenCount":4},
		"modelVersion":"scripted-model","responseId":"resp-2"}`, body)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, []json.RawMessage{json.RawMessage(`{"role":"user","parts":[{"text":"Hi"}]}`)}, reqs[1].Messages)
}
