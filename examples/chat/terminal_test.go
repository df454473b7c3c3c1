package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/i18n"
)

// The terminal answers each kind of question: a confirmation, a choice,
// a form of a string, a number and a boolean; an empty line skips a
// choice, and the end of the input cancels.
func TestAnswer(t *testing.T) {
	t.Parallel()
	const form = `{"type":"object","properties":{"name":{"type":"string","title":"Name"},"count":{"type":"integer"},"urgent":{"type":"boolean","title":"Urgent"}}}`
	const choice = `{"type":"object","properties":{"color":{"type":"string","enum":["red","green"]}}}`
	tests := []struct {
		name, schema, input string
		want                ask.ElicitResult
		stderr              string
	}{
		{"confirmed", `{"type":"object","properties":{}}`, "yes\n", ask.ElicitResult{Action: ask.Accept}, "Tool asks: Sure?\n[y/N] "},
		{"not confirmed", ``, "n\n", ask.ElicitResult{Action: ask.Decline}, "Tool asks: Sure?\n[y/N] "},
		{"no answer", ``, "", ask.ElicitResult{Action: ask.Cancel}, "Tool asks: Sure?\n[y/N] \n"},
		{"chosen", choice, "2\n", ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage(`{"color":"green"}`)},
			"Tool asks: Sure?\n  1) red\n  2) green\nChoose 1-2, or press Enter to skip: "},
		{"skipped", choice, "\n", ask.ElicitResult{Action: ask.Decline}, "Tool asks: Sure?\n  1) red\n  2) green\nChoose 1-2, or press Enter to skip: "},
		{"off the list", choice, "3\n", ask.ElicitResult{Action: ask.Decline}, "Tool asks: Sure?\n  1) red\n  2) green\nChoose 1-2, or press Enter to skip: "},
		{"a form", form, "Ada\n3\ny\n", ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage(`{"count":3,"name":"Ada","urgent":true}`)},
			"Tool asks: Sure?\nName: count: Urgent: [y/N] "},
		{"not a number", form, "Ada\nthree\n", ask.ElicitResult{Action: ask.Decline}, "Tool asks: Sure?\nName: count: "},
		{"a form left", form, "Ada\n", ask.ElicitResult{Action: ask.Cancel}, "Tool asks: Sure?\nName: count: \n"},
	}
	msgs := new(i18n.Catalog)
	require.NoError(t, msgs.AddFS(locales, "locales"))
	for _, tt := range tests {
		var stderr bytes.Buffer
		s := &session{c: &config{msgs: msgs, local: "en"}, in: bufio.NewScanner(strings.NewReader(tt.input)), stderr: &stderr}
		got := s.answer(&chatadapter.Pending{Prompt: "Tool asks: Sure?", Question: &ask.ElicitRequest{Schema: json.RawMessage(tt.schema)}})
		require.Equal(t, tt.want, got, tt.name)
		require.Equal(t, tt.stderr, stderr.String(), tt.name)
	}
}
