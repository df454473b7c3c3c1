package main

import (
	"errors"

	"github.com/llmtool/llmtool"
)

// The diagnostic hooks of the suite's subscriptions/listen checks
// (revision 2026-07-28, SEP-2575): each call changes the tool or prompt
// list (a kill switch off and on again, so the lists end as they were),
// and the adapter tells the open listen streams.

// registry is the registry the triggers change; run sets it.
var registry *llmtool.Registry

// toggle switches name off and on again.
func toggle(name string) error {
	if registry == nil {
		return errors.New("no registry")
	}
	if err := registry.SetEnabled(name, false); err != nil {
		return err
	}
	return registry.SetEnabled(name, true)
}

var changingTool = llmtool.Read("test_changing_tool", "A tool whose kill switch test_trigger_tool_change flips.",
	func(*llmtool.ReadCtx, none) (llmtool.Rich, error) {
		return text("Still here."), nil
	}, llmtool.FriendlyName("Changing tool"))

var changingPrompt = llmtool.Prompt("test_changing_prompt", "A prompt whose kill switch test_trigger_prompt_change flips.",
	func(*llmtool.ReadCtx, none) ([]llmtool.Message, error) {
		return []llmtool.Message{user(llmtool.TextContent("Still here."))}, nil
	}, llmtool.FriendlyName("Changing prompt"))

var triggerToolChange = llmtool.Read("test_trigger_tool_change", "Change the tool list: listen streams get notifications/tools/list_changed.",
	func(*llmtool.ReadCtx, none) (llmtool.Rich, error) {
		if err := toggle("test_changing_tool"); err != nil {
			return llmtool.Rich{}, err
		}
		return text("The tool list changed."), nil
	}, llmtool.FriendlyName("Trigger tool change"))

var triggerPromptChange = llmtool.Read("test_trigger_prompt_change", "Change the prompt list: listen streams get notifications/prompts/list_changed.",
	func(*llmtool.ReadCtx, none) (llmtool.Rich, error) {
		if err := toggle("test_changing_prompt"); err != nil {
			return llmtool.Rich{}, err
		}
		return text("The prompt list changed."), nil
	}, llmtool.FriendlyName("Trigger prompt change"))

// listen is the module of the listen fixtures.
var listen = llmtool.DefineTools("listen", changingTool, changingPrompt, triggerToolChange, triggerPromptChange)
