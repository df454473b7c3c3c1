package chatadapter_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/stretchr/testify/require"
)

// pathOf is where each API's requests go under a test model's /v1.
func pathOf(shape chatadapter.Shape, stream bool) string {
	switch shape {
	case chatadapter.OpenAIResponses:
		return "/v1/responses"
	case chatadapter.Anthropic:
		return "/v1/messages"
	case chatadapter.Gemini:
		if stream {
			return "/v1/models/m:streamGenerateContent"
		}
		return "/v1/models/m:generateContent"
	}
	return "/v1/chat/completions"
}

// failWith answers with status, the JSON body and, if not "", an
// x-should-retry header.
func failWith(status int, shouldRetry, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if shouldRetry != "" {
			w.Header().Set("X-Should-Retry", shouldRetry)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// Recorded error bodies, written from each provider's documentation.
const (
	oaQuota     = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	oaRate      = `{"error":{"message":"Rate limit reached for gpt-4o in organization org-1 on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	oaContext   = `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	oaKey       = `{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	oaServer    = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	oaBad       = `{"error":{"message":"Invalid value for 'temperature': must be at most 2.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`
	vllmContext = `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in the messages.","type":"BadRequestError","param":null,"code":400}`
	ollamaGone  = `{"error":"model \"llama9\" not found, try pulling it first"}`

	anRate       = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50 requests per minute."},"request_id":"req_1"}`
	anOverloaded = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`
	anAuth       = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_1"}`
	anPermission = `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."},"request_id":"req_1"}`
	anBad        = `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate between \"user\" and \"assistant\""},"request_id":"req_1"}`
	anContext    = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"},"request_id":"req_1"}`
	anSpend      = `{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC."},"request_id":"req_1"}`
	anNotFound   = `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"},"request_id":"req_1"}`
	anTooLarge   = `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."},"request_id":"req_1"}`
	anAPI        = `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_1"}`
	anTimeout    = `{"type":"error","error":{"type":"timeout_error","message":"Request timed out"},"request_id":"req_1"}`

	gDaily = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-flash"},"quotaValue":"250"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0s"}]}}`
	gMinute = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaValue":"10"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0s"}]}}`
	gKey = `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}`
	gContext    = `{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`
	gDenied     = `{"error":{"code":403,"message":"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.","status":"PERMISSION_DENIED"}}`
	gInternal   = `{"error":{"code":500,"message":"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}`
	gBusy       = `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`
	gDeadline   = `{"error":{"code":504,"message":"Deadline expired before operation could complete.","status":"DEADLINE_EXCEEDED"}}`
	gBadRequest = `{"error":{"code":400,"message":"* GenerateContentRequest.contents: contents is not specified","status":"INVALID_ARGUMENT"}}`
)

// A failed request is an *HTTPError with the provider's type, code and
// message and a class that is the same for every provider; Run tries it
// again as the official SDKs do (408, 409, 429, 5xx, x-should-retry
// either way), never what waiting cannot cure: a quota or spend limit, a
// context too long, a key refused, a bad request.
func TestProviderErrorsEachAPI(t *testing.T) {
	t.Parallel()
	oa, rs, an, ge := chatadapter.OpenAIChat, chatadapter.OpenAIResponses, chatadapter.Anthropic, chatadapter.Gemini
	tests := []struct {
		shape             chatadapter.Shape
		name              string
		status            int
		shouldRetry, body string
		typ, code, class  string
		retried           bool
	}{
		{oa, "insufficient_quota: waiting cannot cure it", 429, "", oaQuota, "insufficient_quota", "insufficient_quota", "quota", false},
		{oa, "a quota, even if the server says retry", 429, "true", oaQuota, "insufficient_quota", "insufficient_quota", "quota", false},
		{oa, "rate_limit_exceeded", 429, "", oaRate, "requests", "rate_limit_exceeded", "rate_limit", true},
		{oa, "a rate limit the server says not to retry", 429, "false", oaRate, "requests", "rate_limit_exceeded", "rate_limit", false},
		{oa, "context_length_exceeded", 400, "", oaContext, "invalid_request_error", "context_length_exceeded", "context_length", false},
		{oa, "invalid_api_key", 401, "", oaKey, "invalid_request_error", "invalid_api_key", "auth", false},
		{oa, "a bad request", 400, "", oaBad, "invalid_request_error", "invalid_value", "bad_request", false},
		{oa, "server_error", 500, "", oaServer, "server_error", "", "server", true},
		{oa, "a 503 without a body", 503, "", "", "", "", "overloaded", true},
		{oa, "408", 408, "", "", "", "", "timeout", true},
		{oa, "409", 409, "", "", "", "", "timeout", true},
		{oa, "a bare 400 the server says to retry", 400, "true", "", "", "", "bad_request", true},
		{oa, "a 500 the server says not to retry", 500, "false", oaServer, "server_error", "", "server", false},
		{oa, "vLLM's context length", 400, "", vllmContext, "BadRequestError", "400", "context_length", false},
		{oa, "Ollama's model not found", 404, "", ollamaGone, "", "", "bad_request", false},
		{rs, "insufficient_quota", 429, "", oaQuota, "insufficient_quota", "insufficient_quota", "quota", false},
		{rs, "rate_limit_exceeded", 429, "", oaRate, "requests", "rate_limit_exceeded", "rate_limit", true},
		{rs, "context_length_exceeded", 400, "", oaContext, "invalid_request_error", "context_length_exceeded", "context_length", false},
		{an, "rate_limit_error", 429, "", anRate, "rate_limit_error", "", "rate_limit", true},
		{an, "overloaded_error", 529, "", anOverloaded, "overloaded_error", "", "overloaded", true},
		{an, "overloaded, the server says not to retry", 529, "false", anOverloaded, "overloaded_error", "", "overloaded", false},
		{an, "authentication_error", 401, "", anAuth, "authentication_error", "", "auth", false},
		{an, "permission_error", 403, "", anPermission, "permission_error", "", "auth", false},
		{an, "invalid_request_error", 400, "", anBad, "invalid_request_error", "", "bad_request", false},
		{an, "prompt is too long", 400, "", anContext, "invalid_request_error", "", "context_length", false},
		{an, "a spend limit", 400, "", anSpend, "invalid_request_error", "", "quota", false},
		{an, "not_found_error", 404, "", anNotFound, "not_found_error", "", "bad_request", false},
		{an, "request_too_large", 413, "", anTooLarge, "request_too_large", "", "context_length", false},
		{an, "api_error", 500, "", anAPI, "api_error", "", "server", true},
		{an, "timeout_error", 504, "", anTimeout, "timeout_error", "", "timeout", true},
		{ge, "a daily quota", 429, "", gDaily, "RESOURCE_EXHAUSTED", "GenerateRequestsPerDayPerProjectPerModel-FreeTier", "quota", false},
		{ge, "a quota per minute", 429, "", gMinute, "RESOURCE_EXHAUSTED", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "rate_limit", true},
		{ge, "an API key not valid", 400, "", gKey, "INVALID_ARGUMENT", "API_KEY_INVALID", "auth", false},
		{ge, "too many input tokens", 400, "", gContext, "INVALID_ARGUMENT", "", "context_length", false},
		{ge, "INVALID_ARGUMENT", 400, "", gBadRequest, "INVALID_ARGUMENT", "", "bad_request", false},
		{ge, "PERMISSION_DENIED", 403, "", gDenied, "PERMISSION_DENIED", "", "auth", false},
		{ge, "INTERNAL", 500, "", gInternal, "INTERNAL", "", "server", true},
		{ge, "UNAVAILABLE", 503, "", gBusy, "UNAVAILABLE", "", "overloaded", true},
		{ge, "DEADLINE_EXCEEDED", 504, "", gDeadline, "DEADLINE_EXCEEDED", "", "timeout", true},
	}
	for _, tt := range tests {
		bothWays(t, tt.shape.String()+"/"+tt.name, func(t *testing.T, stream bool) {
			fail := failWith(tt.status, tt.shouldRetry, tt.body)
			m := newModelAt(t, pathOf(tt.shape, stream), fail, fail, fail)
			f := newStreamFixture(t)
			r, err := run.New(f.a, run.Endpoint{Shape: tt.shape, BaseURL: m.srv.URL + "/v1", Model: "m"}, &run.Options{Stream: stream, MaxRetries: 2, RetryDelay: 1})
			require.NoError(t, err)
			rec := &recorder{}
			in := []json.RawMessage{run.TextMessage(tt.shape, "user", "Hi.")}
			tr, err := r.Run(chatadapter.WithEvents(f.ctx, rec.add), in)
			var he *run.HTTPError
			require.True(t, errors.As(err, &he), "%v", err)
			require.Equal(t, tt.status, he.StatusCode)
			require.Equal(t, tt.typ, he.Type)
			require.Equal(t, tt.code, he.Code)
			require.Equal(t, tt.class, he.Class)
			require.False(t, he.Stream)
			if tt.body != "" {
				require.NotEmpty(t, he.Message)
				var msg bytes.Buffer
				enc := json.NewEncoder(&msg)
				enc.SetEscapeHTML(false)
				require.NoError(t, enc.Encode(he.Message))
				require.Contains(t, tt.body, strings.TrimSpace(msg.String()), "the provider's message")
			}
			want := 1
			if tt.retried {
				want = 3
			}
			require.Len(t, m.requests(), want, "requests sent")
			require.Len(t, rec.of(chatadapter.ModelRetry), want-1)
			require.Equal(t, in, tr.Messages)
			ended := rec.of(chatadapter.TurnEnded)
			require.Len(t, ended, 1)
			require.Equal(t, he.Line(nil, "en"), ended[0].Label, "the turn's end says why in the person's words")
		})
	}
}

// bothWays runs f as a parallel subtest name, unstreamed, and as
// name/streamed, streamed.
func bothWays(t *testing.T, name string, f func(t *testing.T, stream bool)) {
	for _, stream := range []bool{false, true} {
		sub := name
		if stream {
			sub += "/streamed"
		}
		t.Run(sub, func(t *testing.T) {
			t.Parallel()
			f(t, stream)
		})
	}
}

// An error the endpoint sends inside its stream is the same
// *HTTPError, Stream set: before the model's first words it is retried as
// its status would be (overloaded: retried; a quota: not), after them it
// fails the turn at once, the text already shown kept out of the
// transcript.
func TestProviderStreamErrorsEachAPI(t *testing.T) {
	t.Parallel()
	oa, rs, an, ge := chatadapter.OpenAIChat, chatadapter.OpenAIResponses, chatadapter.Anthropic, chatadapter.Gemini
	ok := map[chatadapter.Shape]func(http.ResponseWriter, *http.Request){
		oa: sse(delta(`{"content":"Fine."}`), finish("stop"), "[DONE]"),
		rs: sse(rCreated, rText("Fine."), `{"type":"response.completed","response":{"object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Fine."}]}]}}`),
		an: sse(aStart, aTextStart, aText("Fine."), aDelta("end_turn"), aStop),
		ge: sse(gText("Fine.", "STOP")),
	}
	text := map[chatadapter.Shape]string{oa: delta(`{"content":"Hm"}`), rs: rText("Hm"), an: aText("Hm"), ge: gText("Hm", "")}
	start := map[chatadapter.Shape][]string{an: {aStart, aTextStart}, rs: {rCreated}}
	rsFailed := func(code, msg string) string {
		return `{"type":"response.failed","sequence_number":3,"response":{"object":"response","status":"failed","error":{"code":"` + code + `","message":"` + msg + `"},"output":[]}}`
	}
	tests := []struct {
		shape     chatadapter.Shape
		name      string
		event     string // the error event
		afterText bool
		typ, code string
		class     string
		status    int
		requests  int    // with the stream that succeeds after them
		err       string // "" when a retry cured it
	}{
		{an, "overloaded before text: retried", aOverloaded, false, "overloaded_error", "", "overloaded", 529, 2, ""},
		{an, "overloaded after text: the turn fails", aOverloaded, true, "overloaded_error", "", "overloaded", 529, 1,
			"the endpoint sent an error in the stream: overloaded_error: Overloaded"},
		{an, "a spend limit before text: not retried", anSpend, false, "invalid_request_error", "", "quota", 400, 1,
			"the endpoint sent an error in the stream: invalid_request_error: You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC."},
		{oa, "insufficient_quota before text: not retried", oaQuota, false, "insufficient_quota", "insufficient_quota", "quota", 429, 1,
			`the endpoint sent an error in the stream: {"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}`},
		{oa, "server_error before text: retried", oaServer, false, "server_error", "", "server", 500, 2, ""},
		{oa, "server_error after text", oaServer, true, "server_error", "", "server", 500, 1,
			`the endpoint sent an error in the stream: {"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}`},
		{rs, "a rate limit before text: retried", `{"type":"error","code":"rate_limit_exceeded","message":"Rate limit reached.","param":null,"sequence_number":1}`, false,
			"", "rate_limit_exceeded", "rate_limit", 429, 2, ""},
		{rs, "response.failed before text: retried", rsFailed("server_error", "The model failed."), false, "", "server_error", "server", 500, 2, ""},
		{rs, "response.failed after text", rsFailed("server_error", "The model failed."), true, "", "server_error", "server", 500, 1,
			"the response failed: server_error: The model failed."},
		{rs, "response.failed for the prompt: not retried", rsFailed("invalid_prompt", "Invalid prompt."), false, "", "invalid_prompt", "bad_request", 400, 1,
			"the response failed: invalid_prompt: Invalid prompt."},
		{ge, "a daily quota before text: not retried", gDaily, false, "RESOURCE_EXHAUSTED", "GenerateRequestsPerDayPerProjectPerModel-FreeTier", "quota", 429, 1,
			"the endpoint sent an error in the stream: RESOURCE_EXHAUSTED: You exceeded your current quota, please check your plan and billing details."},
		{ge, "UNAVAILABLE before text: retried", gBusy, false, "UNAVAILABLE", "", "overloaded", 503, 2, ""},
		{ge, "UNAVAILABLE after text", gBusy, true, "UNAVAILABLE", "", "overloaded", 503, 1,
			"the endpoint sent an error in the stream: UNAVAILABLE: The model is overloaded. Please try again later."},
	}
	for _, tt := range tests {
		t.Run(tt.shape.String()+"/"+tt.name, func(t *testing.T) {
			t.Parallel()
			events := append([]string(nil), start[tt.shape]...)
			var deltas []string
			if tt.afterText {
				events = append(events, text[tt.shape])
				deltas = []string{"Hm"}
			} else {
				deltas = []string{"Fine."}
			}
			if tt.err != "" && !tt.afterText {
				deltas = nil
			}
			m := newModelAt(t, pathOf(tt.shape, true), sse(append(events, tt.event)...), ok[tt.shape])
			f := newStreamFixture(t)
			rec := &recorder{}
			in := []json.RawMessage{run.TextMessage(tt.shape, "user", "Go.")}
			r, err := run.New(f.a, run.Endpoint{Shape: tt.shape, BaseURL: m.srv.URL + "/v1", Model: "m"}, &run.Options{Stream: true, RetryDelay: 1})
			require.NoError(t, err)
			tr, err := r.Run(chatadapter.WithEvents(f.ctx, rec.add), in)
			var pieces []string
			for _, e := range rec.of(chatadapter.TextDelta) {
				pieces = append(pieces, e.Text)
			}
			require.Equal(t, deltas, pieces)
			require.Len(t, m.requests(), tt.requests)
			if tt.err == "" {
				require.NoError(t, err)
				require.Equal(t, "Fine.", tr.Answer)
				retries := rec.of(chatadapter.ModelRetry)
				require.Len(t, retries, 1)
				var he *run.HTTPError
				require.ErrorAs(t, retries[0].Err, &he)
				require.True(t, he.Stream)
				require.Equal(t, tt.class, he.Class)
				require.Equal(t, tt.status, he.StatusCode)
				return
			}
			url := m.srv.URL + "/v1" + map[chatadapter.Shape]string{oa: "/chat/completions", rs: "/responses", an: "/messages", ge: "/models/m:streamGenerateContent?alt=sse"}[tt.shape]
			require.EqualError(t, err, "chatadapter: POST "+url+": "+tt.err)
			var he *run.HTTPError
			require.ErrorAs(t, err, &he)
			require.True(t, he.Stream)
			require.Equal(t, url, he.URL)
			require.Equal(t, tt.typ, he.Type)
			require.Equal(t, tt.code, he.Code)
			require.Equal(t, tt.class, he.Class)
			require.Equal(t, tt.status, he.StatusCode)
			require.Empty(t, he.Status)
			require.Equal(t, in, tr.Messages, "the transcript ends before the failed request")
			ended := rec.of(chatadapter.TurnEnded)
			require.Len(t, ended, 1)
			require.Equal(t, he.Line(nil, "en"), ended[0].Label)
		})
	}
}
