package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
)

// The fixtures of the MCP conformance suite's server scenarios, each an
// ordinary llmtool tool: the suite finds them by name and checks what they
// answer.

var (
	// testPNG is a 1x1 PNG; testWAV a WAV file with one sample.
	testPNG = mustBase64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	testWAV = mustBase64("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")
)

func mustBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// none is the In of a tool without arguments.
type none struct{}

// text answers with one text block.
func text(s string) llmtool.Rich {
	return llmtool.Rich{Content: []llmtool.Content{llmtool.TextContent(s)}}
}

// pause waits d, or until the call is cancelled.
func pause(c *llmtool.ReadCtx, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-c.Done():
		return c.Err()
	}
}

var simpleText = llmtool.Read("test_simple_text", "Returns a simple text response for conformance testing.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		return text("This is a simple text response for testing."), nil
	}, llmtool.FriendlyName("Simple text"))

var imageContent = llmtool.Read("test_image_content", "Returns image content for conformance testing.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		return llmtool.Rich{Content: []llmtool.Content{llmtool.ImageContent(testPNG, "image/png")}}, nil
	}, llmtool.FriendlyName("Image"))

var audioContent = llmtool.Read("test_audio_content", "Returns audio content for conformance testing.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		return llmtool.Rich{Content: []llmtool.Content{llmtool.AudioContent(testWAV, "audio/wav")}}, nil
	}, llmtool.FriendlyName("Audio"))

var embeddedResource = llmtool.Read("test_embedded_resource", "Returns an embedded text resource.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		return llmtool.Rich{Content: []llmtool.Content{
			llmtool.ResourceContent("test://embedded-resource", "text/plain", "This is an embedded resource content.", nil),
		}}, nil
	}, llmtool.FriendlyName("Embedded resource"))

var multipleContent = llmtool.Read("test_multiple_content_types", "Returns text, image, and embedded resource content.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		return llmtool.Rich{Content: []llmtool.Content{
			llmtool.TextContent("Multiple content types test:"),
			llmtool.ImageContent(testPNG, "image/png"),
			llmtool.ResourceContent("test://mixed-content-resource", "application/json", `{"test":"data","value":123}`, nil),
		}}, nil
	}, llmtool.FriendlyName("Mixed content"))

var withLogging = llmtool.Read("test_tool_with_logging", "Emits log messages during execution.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 {
				if err := pause(c, 50*time.Millisecond); err != nil {
					return llmtool.Rich{}, err
				}
			}
			c.Log(slog.LevelInfo, msg)
		}
		return text("Tool with logging executed successfully"), nil
	}, llmtool.FriendlyName("Logging"))

var withProgress = llmtool.Read("test_tool_with_progress", "Reports progress notifications.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		for i, done := range []float64{0, 50, 100} {
			if i > 0 {
				if err := pause(c, 50*time.Millisecond); err != nil {
					return llmtool.Rich{}, err
				}
			}
			c.Progress(done, 100, "")
		}
		return text("Progress reported"), nil
	}, llmtool.FriendlyName("Progress"))

var errorHandling = llmtool.Read("test_error_handling", "Returns an intentional tool error.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		return llmtool.Rich{}, llmtool.Conflict("This tool intentionally returns an error for testing")
	}, llmtool.FriendlyName("Error"))

type samplingIn struct {
	Prompt string `json:"prompt" desc:"Prompt to send to the LLM."`
}

var sampling = llmtool.Read("test_sampling", "Requests an LLM response from the client.",
	func(c *llmtool.ReadCtx, in samplingIn) (llmtool.Rich, error) {
		res, err := ask.Sample(c, ask.SampleRequest{
			Messages:  []ask.SampleMessage{{Role: "user", Content: llmtool.TextContent(in.Prompt)}},
			MaxTokens: 100,
		})
		if err != nil {
			return llmtool.Rich{}, err
		}
		return text("LLM response: " + res.Content.Text), nil
	}, llmtool.FriendlyName("Sampling"))

type elicitationIn struct {
	Message string `json:"message" desc:"Message to show the user."`
}

// elicit asks the user and renders the answer as "<prefix>action=…, content=…".
func elicit(c *llmtool.ReadCtx, prefix, message, schema string) (llmtool.Rich, error) {
	res, err := ask.Elicit(c, ask.ElicitRequest{Message: message, Schema: json.RawMessage(schema)})
	if err != nil {
		return llmtool.Rich{}, err
	}
	content := "{}"
	if res.Content != nil {
		content = string(res.Content)
	}
	return text(fmt.Sprintf("%saction=%s, content=%s", prefix, res.Action, content)), nil
}

var elicitation = llmtool.Read("test_elicitation", "Requests information from the user.",
	func(c *llmtool.ReadCtx, in elicitationIn) (llmtool.Rich, error) {
		return elicit(c, "User response: ", in.Message, `{"type":"object","properties":{`+
			`"username":{"type":"string","description":"User's response"},`+
			`"email":{"type":"string","description":"User's email address"}},`+
			`"required":["username","email"]}`)
	}, llmtool.FriendlyName("Elicitation"))

var elicitationDefaults = llmtool.Read("test_elicitation_sep1034_defaults", "Requests elicitation with primitive defaults.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		return elicit(c, "Elicitation completed: ", "Provide your information", `{"type":"object","properties":{`+
			`"name":{"type":"string","default":"John Doe"},`+
			`"age":{"type":"integer","default":30},`+
			`"score":{"type":"number","default":95.5},`+
			`"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},`+
			`"verified":{"type":"boolean","default":true}}}`)
	}, llmtool.FriendlyName("Elicitation defaults"))

var elicitationEnums = llmtool.Read("test_elicitation_sep1330_enums", "Requests elicitation with enum schemas.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		return elicit(c, "Elicitation completed: ", "Select options", `{"type":"object","properties":{`+
			`"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},`+
			`"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},`+
			`"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},`+
			`"untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},`+
			`"titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`)
	}, llmtool.FriendlyName("Elicitation enums"))

type address struct {
	Street string `json:"street,omitempty"`
	City   string `json:"city,omitempty"`
}

type personIn struct {
	Name    string   `json:"name,omitempty"`
	Address *address `json:"address,omitempty"`
}

// jsonSchema2020 is the suite's schema, sent verbatim: $schema, $defs and
// $ref are keywords the inference from personIn does not emit.
const jsonSchema2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
	`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}`

var jsonSchemaTool = llmtool.Read("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
	func(c *llmtool.ReadCtx, in personIn) (llmtool.Rich, error) {
		return text(fmt.Sprintf("Hello %s", in.Name)), nil
	}, llmtool.InputSchema(json.RawMessage(jsonSchema2020)), llmtool.FriendlyName("JSON Schema 2020-12"))

// reconnection is the fixture of the suite's server-sse-polling scenario
// (SEP-1699), which asks the server to close the call's SSE connection and
// answer on the stream the client resumes with Last-Event-ID. mcp-go's
// transport has no way for a handler to close its call's connection, so
// this one answers on the connection it has; the scenario is not scored.
var reconnection = llmtool.Read("test_reconnection", "A tool that triggers SSE stream closure to test client reconnection behavior.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		return text("Reconnection test completed"), nil
	}, llmtool.FriendlyName("Reconnection"))

// fixtures is the module of every fixture.
var fixtures = llmtool.DefineTools("conformance",
	simpleText, imageContent, audioContent, embeddedResource, multipleContent,
	withLogging, withProgress, errorHandling, sampling, elicitation,
	elicitationDefaults, elicitationEnums, jsonSchemaTool, reconnection)
