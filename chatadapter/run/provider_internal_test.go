package run

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/chatadapter"
)

// Each API's URL and headers, from its own file: the key as the API
// takes it, Anthropic's version and beta headers, and the endpoint's own
// headers over them.
func TestEndpointOfEachAPI(t *testing.T) {
	t.Parallel()
	ep := Endpoint{BaseURL: "https://api.example/v1/", APIKey: "k", Model: "models/m", Query: url.Values{"api-version": {"1"}}}
	beta := &chatadapter.ToolSet{Beta: "advanced-tool-use-2025-11-20"}
	tests := []struct {
		shape  chatadapter.Shape
		stream bool
		set    *chatadapter.ToolSet
		url    string
		header http.Header
	}{
		{chatadapter.OpenAIChat, false, nil, "https://api.example/v1/chat/completions?api-version=1",
			http.Header{"Authorization": {"Bearer k"}}},
		{chatadapter.OpenAIChatStrict, true, beta, "https://api.example/v1/chat/completions?api-version=1",
			http.Header{"Authorization": {"Bearer k"}}},
		{chatadapter.OpenAIResponses, false, beta, "https://api.example/v1/responses?api-version=1",
			http.Header{"Authorization": {"Bearer k"}}},
		{chatadapter.Anthropic, false, nil, "https://api.example/v1/messages?api-version=1",
			http.Header{"Anthropic-Version": {anthropicVersion}, "X-Api-Key": {"k"}}},
		{chatadapter.Anthropic, true, beta, "https://api.example/v1/messages?api-version=1",
			http.Header{"Anthropic-Version": {anthropicVersion}, "X-Api-Key": {"k"}, "Anthropic-Beta": {"advanced-tool-use-2025-11-20"}}},
		{chatadapter.Gemini, false, nil, "https://api.example/v1/models/m:generateContent?api-version=1",
			http.Header{"X-Goog-Api-Key": {"k"}}},
		{chatadapter.Gemini, true, nil, "https://api.example/v1/models/m:streamGenerateContent?alt=sse&api-version=1",
			http.Header{"X-Goog-Api-Key": {"k"}}},
	}
	for _, tt := range tests {
		p := apiOf(tt.shape)
		require.Equal(t, tt.url, endpointURL(ep, p, tt.stream), tt.shape)
		want := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
		for k, v := range tt.header {
			want[k] = v
		}
		require.Equal(t, want, headers(ep, p, tt.set), tt.shape)
	}
	require.Nil(t, apiOf(99), "an unknown shape has no API")

	own := ep
	own.Header = http.Header{"anthropic-version": {"2025-01-01"}}
	require.Equal(t, "2025-01-01", headers(own, apiOf(chatadapter.Anthropic), nil).Get("Anthropic-Version"), "the endpoint's header wins")
}
