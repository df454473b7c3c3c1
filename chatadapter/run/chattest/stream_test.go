package chattest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
)

// A request with "stream": true gets OpenAI's chunks: the role, the text
// a word at a time, each call's name then its arguments in pieces, the
// finish reason, the usage when asked for, and [DONE].
func TestStream(t *testing.T) {
	t.Parallel()
	openai := map[string]string{"Authorization": "Bearer " + chattest.Key}
	srv := chattest.NewServer(chatadapter.OpenAIChat,
		chattest.Reply{Text: "On it.", Calls: []chattest.Call{{Name: "get_note", Args: `{"noteId":"roadmap"}`}},
			Usage: chatadapter.Usage{PromptTokens: 9, CompletionTokens: 4}},
		chattest.Reply{Text: "Cut", Truncated: true})
	defer srv.Close()

	status, body := post(t, srv, "/chat/completions",
		`{"model":"m","messages":[{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"include_usage":true}}`, openai)
	require.Equal(t, 200, status)
	head := `data: {"choices":[{"delta":%s,"finish_reason":%s,"index":0,"logprobs":null}],"created":1700000001,"id":"chatcmpl-1","model":"scripted-model","object":"chat.completion.chunk"}`
	chunk := func(delta, finish string) string {
		return strings.Replace(strings.Replace(head, "%s", delta, 1), "%s", finish, 1) + "\n\n"
	}
	call := func(fn string) string {
		return `{"tool_calls":[{"function":` + fn + `,"index":0}]}`
	}
	require.Equal(t, chunk(`{"content":"","role":"assistant"}`, "null")+
		chunk(`{"content":"On"}`, "null")+
		chunk(`{"content":" it."}`, "null")+
		chunk(`{"tool_calls":[{"function":{"arguments":"","name":"get_note"},"id":"call_1_1","index":0,"type":"function"}]}`, "null")+
		chunk(call(`{"arguments":"{\"noteI"}`), "null")+
		chunk(call(`{"arguments":"d\":\"roa"}`), "null")+
		chunk(call(`{"arguments":"dmap\"}"}`), "null")+
		chunk(`{}`, `"tool_calls"`)+
		`data: {"choices":[],"created":1700000001,"id":"chatcmpl-1","model":"scripted-model","object":"chat.completion.chunk",`+
		`"usage":{"completion_tokens":4,"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":0},"total_tokens":13}}`+"\n\n"+
		"data: [DONE]\n\n", body)

	// Without include_usage, no usage chunk; a cut answer ends with "length".
	status, body = post(t, srv, "/chat/completions",
		`{"model":"m","messages":[{"role":"user","content":"Hi"}],"stream":true}`, openai)
	require.Equal(t, 200, status)
	require.NotContains(t, body, "usage")
	require.Contains(t, body, `"finish_reason":"length"`)
	require.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"), body)
}
