package main

import (
	"encoding/json"
	"fmt"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
)

// The resources and prompts of the conformance suite's scenarios, each an
// ordinary llmtool resource or prompt.

var staticText = llmtool.Resource("static-text", "test://static-text", "A static text resource for testing.",
	func(*llmtool.ReadCtx, none) (llmtool.Rich, error) {
		return text("This is the content of the static text resource."), nil
	}, llmtool.FriendlyName("Static Text Resource"))

var staticBinary = llmtool.Resource("static-binary", "test://static-binary", "A static binary resource for testing.",
	func(*llmtool.ReadCtx, none) (llmtool.Rich, error) {
		return llmtool.Rich{Content: []llmtool.Content{llmtool.ResourceContent("", "image/png", "", testPNG)}}, nil
	}, llmtool.FriendlyName("Static Binary Resource"))

var watched = llmtool.Resource("watched-resource", "test://watched-resource", "A resource clients subscribe to.",
	func(*llmtool.ReadCtx, none) (llmtool.Rich, error) {
		return text("Watched resource content."), nil
	})

// TemplateIn is the variable of test://template/{id}/data.
type TemplateIn struct {
	ID string `json:"id" desc:"The ID to substitute."`
}

var template = llmtool.Resource("template", "test://template/{id}/data", "A resource template with parameter substitution.",
	func(_ *llmtool.ReadCtx, in TemplateIn) (llmtool.Rich, error) {
		c := llmtool.TextContent(fmt.Sprintf(`{"id":%q,"templateTest":true,"data":%q}`, in.ID, "Data for ID: "+in.ID))
		c.MIMEType = "application/json"
		return llmtool.Rich{Content: []llmtool.Content{c}}, nil
	})

func user(c llmtool.Content) llmtool.Message { return llmtool.Message{Role: "user", Content: c} }

var simplePrompt = llmtool.Prompt("test_simple_prompt", "A simple prompt without arguments.",
	func(*llmtool.ReadCtx, none) ([]llmtool.Message, error) {
		return []llmtool.Message{user(llmtool.TextContent("This is a simple prompt for testing."))}, nil
	}, llmtool.FriendlyName("Simple Test Prompt"))

// PromptArgs are the arguments of test_prompt_with_arguments.
type PromptArgs struct {
	Arg1 string `json:"arg1" desc:"First test argument."`
	Arg2 string `json:"arg2" desc:"Second test argument."`
}

var argsPrompt = llmtool.Prompt("test_prompt_with_arguments", "A prompt with required arguments.",
	func(_ *llmtool.ReadCtx, in PromptArgs) ([]llmtool.Message, error) {
		return []llmtool.Message{user(llmtool.TextContent(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", in.Arg1, in.Arg2)))}, nil
	}, llmtool.FriendlyName("Prompt With Arguments"))

// EmbedIn is the argument of test_prompt_with_embedded_resource.
type EmbedIn struct {
	ResourceURI string `json:"resourceUri" desc:"URI of the resource to embed."`
}

var embedPrompt = llmtool.Prompt("test_prompt_with_embedded_resource", "A prompt that includes an embedded resource.",
	func(_ *llmtool.ReadCtx, in EmbedIn) ([]llmtool.Message, error) {
		return []llmtool.Message{
			user(llmtool.ResourceContent(in.ResourceURI, "text/plain", "Embedded resource content for testing.", nil)),
			user(llmtool.TextContent("Please process the embedded resource above.")),
		}, nil
	}, llmtool.FriendlyName("Prompt With Embedded Resource"))

var imagePrompt = llmtool.Prompt("test_prompt_with_image", "A prompt that includes image content.",
	func(*llmtool.ReadCtx, none) ([]llmtool.Message, error) {
		return []llmtool.Message{
			user(llmtool.ImageContent(testPNG, "image/png")),
			user(llmtool.TextContent("Please analyze the image above.")),
		}, nil
	}, llmtool.FriendlyName("Prompt With Image"))

// resources is the module of the resource and prompt fixtures.
var resources = llmtool.DefineTools("resources", staticText, staticBinary, watched, template,
	simplePrompt, argsPrompt, embedPrompt, imagePrompt, contextPrompt)

// contextPrompt asks the user, through an input-required result, what
// context the prompt should use, then renders with the answer.
var contextPrompt = llmtool.Prompt("test_input_required_result_prompt", "A prompt that asks the user for context first.",
	func(c *llmtool.ReadCtx, _ none) ([]llmtool.Message, error) {
		res, err := ask.Elicit(c, ask.ElicitRequest{
			Key:     "user_context",
			Message: "What context should the prompt use?",
			Schema:  json.RawMessage(`{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`),
		})
		if err != nil {
			return nil, err
		}
		var answer struct {
			Context string `json:"context"`
		}
		if res.Action == ask.Accept {
			if err := json.Unmarshal(res.Content, &answer); err != nil {
				return nil, err
			}
		}
		return []llmtool.Message{user(llmtool.TextContent("Use this context: " + answer.Context))}, nil
	})
