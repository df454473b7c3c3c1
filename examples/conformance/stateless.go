package main

import (
	"fmt"
	"log/slog"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
)

// The diagnostic tools of the suite's server-stateless scenario (protocol
// revision 2026-07-28, SEP-2575), which calls them with requests whose
// _meta declares chosen client capabilities and log level.

// missingCapability asks the client's model for a completion. The suite
// calls it from a client that declares no sampling capability, which
// mcpadapter answers with a MissingRequiredClientCapabilityError (-32021)
// naming sampling.
var missingCapability = llmtool.Read("test_missing_capability", "Requests an LLM completion from the client, which needs the sampling capability.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		res, err := ask.Sample(c, ask.SampleRequest{
			Messages:  []ask.SampleMessage{{Role: "user", Content: llmtool.TextContent("Say hello.")}},
			MaxTokens: 20,
		})
		if err != nil {
			return llmtool.Rich{}, err
		}
		return text("LLM response: " + res.Content.Text), nil
	}, llmtool.FriendlyName("Missing capability"))

// streamingElicitation asks the user for input. The suite checks that its
// response stream carries no request of the server's own: under protocol
// revision 2026-07-28 a server asks through an input-required result
// instead (SEP-2322).
var streamingElicitation = llmtool.Read("test_streaming_elicitation", "Requests information from the user while streaming its response.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		res, err := ask.Elicit(c, ask.ElicitRequest{Message: "What is your name?",
			Schema: []byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)})
		if err != nil {
			return llmtool.Rich{}, err
		}
		content := "{}"
		if res.Content != nil {
			content = string(res.Content)
		}
		return text(fmt.Sprintf("User response: action=%s, content=%s", res.Action, content)), nil
	}, llmtool.FriendlyName("Streaming elicitation"))

// loggingTool logs at every level from debug to error. The suite checks
// that a request whose _meta sets no log level gets no notifications/message.
var loggingTool = llmtool.Read("test_logging_tool", "Emits log messages at several levels.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			c.Log(l, "test_logging_tool: a "+l.String()+" message")
		}
		return text("Logged four messages"), nil
	}, llmtool.FriendlyName("Logging levels"))

// stateless is the module of the diagnostic tools.
var stateless = llmtool.DefineTools("stateless", missingCapability, streamingElicitation, loggingTool)
