package interop_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
)

// The official SDKs call chattest's scripted models and read their
// answers: the responses, usage blocks, stop signals and error bodies are
// each provider's own wire format, and the SDKs' requests pass the
// models' checks.

var (
	scriptedCall  = chattest.Reply{Text: "Looking.", Calls: []chattest.Call{{Name: "get_note", Args: `{"noteId":"roadmap"}`}}, Usage: chatadapter.Usage{PromptTokens: 120, CompletionTokens: 8, CachedTokens: 100}}
	scriptedCut   = chattest.Reply{Text: "The roadm", Truncated: true, Usage: chatadapter.Usage{PromptTokens: 130, CompletionTokens: 16}}
	scriptedBusy  = chattest.Reply{Status: http.StatusTooManyRequests, Text: "Slow down.", RetryAfter: "0"}
	scriptedFinal = chattest.Reply{Text: "Done."}
)

func TestChattestOpenAIChatSDK(t *testing.T) {
	t.Parallel()
	srv := chattest.NewServer(chatadapter.OpenAIChat, scriptedCall, scriptedCut, scriptedBusy, scriptedFinal)
	defer srv.Close()
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(srv.Endpoint().BaseURL+"/"), option.WithAPIKey(chattest.Key), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: chattest.Model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Roadmap?")}}

	resp, err := client.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, "tool_calls", resp.Choices[0].FinishReason)
	require.Equal(t, "Looking.", resp.Choices[0].Message.Content)
	require.Equal(t, "get_note", resp.Choices[0].Message.ToolCalls[0].Function.Name)
	require.JSONEq(t, `{"noteId":"roadmap"}`, resp.Choices[0].Message.ToolCalls[0].Function.Arguments)
	require.Equal(t, int64(120), resp.Usage.PromptTokens)
	require.Equal(t, int64(100), resp.Usage.PromptTokensDetails.CachedTokens)

	resp, err = client.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, "length", resp.Choices[0].FinishReason)

	_, err = client.Chat.Completions.New(ctx, params)
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, 429, apiErr.StatusCode)
	require.Equal(t, "Slow down.", apiErr.Message)
	require.Equal(t, "rate_limit_exceeded", apiErr.Code)
}

func TestChattestOpenAIResponsesSDK(t *testing.T) {
	t.Parallel()
	srv := chattest.NewServer(chatadapter.OpenAIResponses, scriptedCall, scriptedCut, scriptedBusy)
	defer srv.Close()
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(srv.Endpoint().BaseURL+"/"), option.WithAPIKey(chattest.Key), option.WithMaxRetries(0))
	params := responses.ResponseNewParams{Model: chattest.Model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Roadmap?")}}

	resp, err := client.Responses.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatusCompleted, resp.Status)
	require.Equal(t, "Looking.", resp.OutputText())
	require.Equal(t, "function_call", resp.Output[1].Type)
	require.Equal(t, "get_note", resp.Output[1].Name)
	require.JSONEq(t, `{"noteId":"roadmap"}`, resp.Output[1].Arguments.OfString)
	require.Equal(t, int64(100), resp.Usage.InputTokensDetails.CachedTokens)
	require.Equal(t, int64(8), resp.Usage.OutputTokens)

	resp, err = client.Responses.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatusIncomplete, resp.Status)
	require.Equal(t, "max_output_tokens", resp.IncompleteDetails.Reason)

	_, err = client.Responses.New(ctx, params)
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, 429, apiErr.StatusCode)
}

func TestChattestAnthropicSDK(t *testing.T) {
	t.Parallel()
	overloaded := chattest.Reply{Status: 529, Text: "Overloaded", RetryAfter: "0"}
	srv := chattest.NewServer(chatadapter.Anthropic, scriptedCall, scriptedCut, overloaded)
	defer srv.Close()
	ctx := context.Background()
	client := anthropic.NewClient(aoption.WithBaseURL(srv.URL+"/"), aoption.WithAPIKey(chattest.Key), aoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{Model: chattest.Model, MaxTokens: 1024,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Roadmap?"))}}

	msg, err := client.Messages.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
	require.Equal(t, "Looking.", msg.Content[0].Text)
	require.Equal(t, "tool_use", msg.Content[1].Type)
	require.Equal(t, "get_note", msg.Content[1].Name)
	require.JSONEq(t, `{"noteId":"roadmap"}`, string(msg.Content[1].Input))
	require.Equal(t, int64(20), msg.Usage.InputTokens, "the prompt less the cached part")
	require.Equal(t, int64(100), msg.Usage.CacheReadInputTokens)

	msg, err = client.Messages.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, anthropic.StopReasonMaxTokens, msg.StopReason)

	_, err = client.Messages.New(ctx, params)
	var apiErr *anthropic.Error
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, 529, apiErr.StatusCode)
	require.Contains(t, apiErr.Error(), "overloaded_error")
}

func TestChattestGeminiSDK(t *testing.T) {
	t.Parallel()
	busy := chattest.Reply{Status: 429, Text: "Quota exceeded.", RetryAfter: "7"}
	srv := chattest.NewServer(chatadapter.Gemini, scriptedCall, scriptedCut, busy)
	defer srv.Close()
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: chattest.Key, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL + "/", APIVersion: "v1beta"}})
	require.NoError(t, err)

	resp, err := client.Models.GenerateContent(ctx, chattest.Model, genai.Text("Roadmap?"), nil)
	require.NoError(t, err)
	require.Equal(t, genai.FinishReasonStop, resp.Candidates[0].FinishReason)
	require.Equal(t, "Looking.", resp.Text())
	require.Equal(t, "get_note", resp.FunctionCalls()[0].Name)
	require.Equal(t, map[string]any{"noteId": "roadmap"}, resp.FunctionCalls()[0].Args)
	require.Equal(t, int32(120), resp.UsageMetadata.PromptTokenCount)
	require.Equal(t, int32(100), resp.UsageMetadata.CachedContentTokenCount)

	resp, err = client.Models.GenerateContent(ctx, chattest.Model, genai.Text("Roadmap?"), nil)
	require.NoError(t, err)
	require.Equal(t, genai.FinishReasonMaxTokens, resp.Candidates[0].FinishReason)

	_, err = client.Models.GenerateContent(ctx, chattest.Model, genai.Text("Roadmap?"), nil)
	var apiErr genai.APIError
	require.True(t, errors.As(err, &apiErr), "%T %v", err, err)
	require.Equal(t, 429, apiErr.Code)
	require.Equal(t, "RESOURCE_EXHAUSTED", apiErr.Status)
	require.Equal(t, "7s", apiErr.Details[0]["retryDelay"])
}
