// Package run holds a conversation with a model over net/http, with the
// tools of a chatadapter.Adapter: a host with no provider SDK gives it the
// endpoint and the conversation, and gets back the model's answer and the
// conversation after it. A host that drives its provider with its own SDK
// needs only package chatadapter.
//
//	a := chatadapter.New(reg, nil)
//	runner, err := run.New(a, run.Endpoint{Shape: chatadapter.Anthropic,
//		BaseURL: "https://api.anthropic.com/v1", APIKey: key, Model: model}, &run.Options{Stream: true})
//	tr, err := runner.Run(ctx, append(history, run.UserMessage("What is on my list?")))
//	for err == nil && tr.Pending != nil { // a call waits for the person
//		tr, err = runner.Resume(ctx, tr, askThePerson(tr.Pending)) // an ask.ElicitResult
//	}
//	// tr.Answer is the model's answer, tr.Messages the conversation to keep
//
// # The four APIs
//
// Endpoint.Shape names the API: OpenAI Chat Completions (the default, and
// every compatible server: llama.cpp, Ollama, vLLM, Azure OpenAI with
// Endpoint.Header and Query), OpenAI Responses, Anthropic Messages or
// Gemini; a strict shape sends the strict-mode tool set. Each API is one
// file of this package: its URL and headers, its request, its response
// (text, usage, a response cut short) and its stream.
//
// # A turn
//
// Runner.Run sends the conversation with the tool set for the tenant and
// principal in ctx, runs the calls of each answer with
// chatadapter.Adapter.Dispatch, and sends again until the model answers
// without calls. It pauses where Dispatch pauses: the Transcript holds the
// chatadapter.Pending call, which Runner.Resume answers before it goes on.
// A paused transcript saves with json.Marshal (its Pending call with its
// turn, sealed with the adapter's Options.SealKey) and Runner.Restore
// reads it back, in this process or another.
//
// It tries a request again as the official SDKs do, after a 408, 409,
// 429 or 5xx (or the error a stream sends for one before its first
// words) or a broken connection, as x-should-retry says when it does,
// waiting as the server asks (Retry-After) or backing off, within ctx
// (Options.MaxRetries, RetryDelay); never what waiting cannot cure. A
// request that fails for good is an *HTTPError with the provider's error
// type, code and message and one Class a host switches on:
//
//	var he *run.HTTPError
//	if errors.As(err, &he) && he.Class == "context_length" { // start a shorter conversation
//	}
//
// Transcript.Finish says why the model stopped ("stop", "length",
// "tool_calls", "content_filter", "refusal", "malformed_call", "pause",
// "other"), FinishRaw in the provider's word. It counts each request's tokens as
// the provider reports them (Transcript.Usage, StepUsage) and stops a
// turn that reaches Options.TokenBudget or MaxSteps with its history
// (Transcript.Stopped), not an error. Whatever fails, Transcript.Messages
// stays a whole conversation the host can send again.
//
// Its requests are events of the context (chatadapter.WithEvents):
// ModelRequest, ModelRetry, ModelReply, the text as it streams
// (TextDelta, ReasoningDelta and CallInputDelta, with Options.Stream) and TurnEnded, beside the
// calls' own events, labeled in the context's locale.
//
// Package chattest serves scripted models in each API's wire format, for
// testing a host's chat without a provider.
package run
