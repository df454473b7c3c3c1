#!/usr/bin/env bash
# Build cmd/llmtoolvet and run it with go vet over the whole module
# (examples included) and the nested modules examples/notes-mcp and
# examples/notes-web, failing on any finding.
#
# Usage: bash .ci/vet.sh [PACKAGES...]   (default: ./... and the two examples)
#
# Prints the findings, then "llmtoolvet: clean" or "llmtoolvet: findings";
# exits 0 when clean, 1 on findings or build errors.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

BIN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/llmtoolvet.XXXXXX")"
trap 'rm -rf "$BIN_DIR"' EXIT
BIN="$BIN_DIR/llmtoolvet"

go build -o "$BIN" ./cmd/llmtoolvet

status=0
if [ "$#" -eq 0 ]; then
  go vet -vettool="$BIN" ./... || status=1
  # Modules of their own (go vet ./... at the root does not reach them).
  for mod in examples/notes-mcp examples/notes-web; do
    (cd "$mod" && go vet -vettool="$BIN" ./...) || status=1
  done
else
  go vet -vettool="$BIN" "$@" || status=1
fi
if [ "$status" -eq 0 ]; then
  echo "llmtoolvet: clean"
else
  echo "llmtoolvet: go vet failed: findings or build errors above (what each finding means: go doc ./cmd/llmtoolvet/asynccheck; silence a deliberate one with //llmtoolvet:ignore <reason> on its line or the line above)" >&2
  exit 1
fi
