#!/usr/bin/env bash
# Provider SDK interop: run the tests of the nested module chatadapter/interop,
# which decode chatadapter's tool sets and result messages with the official
# OpenAI, Anthropic and Gemini Go SDKs and dispatch tool calls built with
# them. The SDKs stay out of llmtool's own go.mod; this module has its own
# (with a replace pointing at the checkout).
set -euo pipefail
cd "$(dirname "$0")/../chatadapter/interop"
go vet ./...
go test -race -count=1 ./...
