// Package interop proves chatadapter's wire shapes against the official
// provider SDKs (github.com/openai/openai-go, github.com/anthropics/anthropic-sdk-go,
// google.golang.org/genai) without adding them to llmtool's go.mod: it is
// a module of its own, and only its tests have code.
//
// The tests unmarshal chatadapter's tool sets and result messages into the
// SDKs' request types, and feed tool calls built with the SDKs into
// chatadapter's dispatcher. Run them with
//
//	cd chatadapter/interop && go test ./...
//
// (.ci/interop.sh does).
package interop
