package chatadapter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/llmtool/llmtool"
)

// Prompt renders the prompt name (llmtool.Prompt) with args, a JSON object
// of its arguments (nil for none), for the tenant and principal in ctx, and
// returns its messages in shape's format, to start a conversation with or
// to append to one. The prompts ctx's caller may render are those
// Registry.List lists with ListOptions.Prompts, each Spec.Params an
// argument:
//
//	prompts, err := a.Registry().List(ctx, &llmtool.ListOptions{Prompts: true})
//
// A host shows them in its chat for a person to pick.
//
// The prompt runs through Registry.Invoke, so it is rendered exactly as
// over MCP (prompts/get): the policy, the argument checks and the entity
// guards apply. A prompt the caller may not use, bad arguments or a
// refused entity give an error whose message is the registry's sentence
// ("Note \"x\" (noteId) is protected; ..."), for the person who picked
// the prompt; llmtool.KindOf and errors.Is(err, llmtool.ErrUnknownTool)
// see through it.
//
// Adjacent messages of one role become one message of several parts.
// Parts take the provider's forms as render gives tool results theirs:
//
//   - OpenAIChat: {"role","content"}, content a string when every part is
//     text, else a list: text, image_url and file (PDF) parts, and
//     input_audio (WAV, MP3), in user messages;
//   - OpenAIResponses: {"role","content"} input items, content a string
//     when every part is text, else input_text, input_image and input_file
//     (PDF) parts in user messages;
//   - Anthropic: {"role","content"} with content blocks: text, and image
//     and document (PDF) blocks in user messages;
//   - Gemini: {"role","parts"}, the role "user" or "model", with text and
//     inlineData parts.
//
// An embedded text resource is text under a line naming its URI; any
// other part the provider takes in no message of that role is named in a
// placeholder line. The strict shapes render as their plain ones.
func (a *Adapter) Prompt(ctx context.Context, shape Shape, name string, args json.RawMessage) ([]json.RawMessage, error) {
	if !shape.valid() {
		return nil, fmt.Errorf("%w %d", ErrShape, shape)
	}
	res := a.reg.Invoke(ctx, llmtool.Call{Prompt: name, Args: args})
	if res.IsError {
		return nil, &promptError{msg: res.Text(), err: res.Err}
	}
	return renderPrompt(shape, res.Messages), nil
}

// promptError is Prompt's error: the registry's sentence, wrapping the
// result's error.
type promptError struct {
	msg string
	err error
}

func (e *promptError) Error() string { return e.msg }
func (e *promptError) Unwrap() error { return e.err }

// renderPrompt renders msgs in shape's format, adjacent messages of one
// role merged.
func renderPrompt(shape Shape, msgs []llmtool.Message) []json.RawMessage {
	out := []json.RawMessage{}
	for i := 0; i < len(msgs); {
		role := msgs[i].Role
		var parts []llmtool.Content
		for ; i < len(msgs) && msgs[i].Role == role; i++ {
			parts = append(parts, msgs[i].Content)
		}
		out = append(out, formatOf(shape).message(role, parts))
	}
	return out
}

// allText reports whether every part is text or a text resource.
func allText(parts []llmtool.Content) bool {
	for _, p := range parts {
		if p.Data != nil {
			return false
		}
	}
	return true
}
