#!/usr/bin/env bash
# Run staticcheck, at the pinned version, over every module (the root and
# the nested chatadapter/interop, examples/notes-mcp and examples/notes-web),
# failing on any finding.
#
# Usage: bash .ci/staticcheck.sh
#
# The binary is installed once with go install into
# ${LLMTOOL_CI_CACHE:-~/.cache/llmtool-ci}/bin and reused while its version
# matches. Checks are configured in staticcheck.conf at the root; a
# deliberate exception is a //lint:ignore CHECK <reason> on the line
# before the finding (//lint:file-ignore for a whole file), always with
# its reason.
set -euo pipefail

# 2026.2.2: the release that supports Go 1.26 (2025.1.1 still builds with
# it, but predates the language changes of Go 1.26).
STATICCHECK_VERSION=v0.8.2 # staticcheck 2026.2.2

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${LLMTOOL_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llmtool-ci}"
BIN="$CACHE/bin/staticcheck"

# Reinstall when the version differs, or when the binary was built by
# another Go (staticcheck must know the Go release it checks).
if ! "$BIN" -version 2>/dev/null | grep -q "(${STATICCHECK_VERSION#v})" ||
  [ "$(go version "$BIN" 2>/dev/null | awk '{print $2}')" != "$(go env GOVERSION)" ]; then
  echo "installing staticcheck $STATICCHECK_VERSION into $CACHE/bin"
  mkdir -p "$CACHE/bin"
  # Outside the module, so its go.mod and GOFLAGS do not apply to the tool.
  (cd "$CACHE" && GOBIN="$CACHE/bin" GOFLAGS= go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION")
fi
"$BIN" -version

status=0
for mod in . chatadapter/interop examples/notes-mcp examples/notes-web; do
  echo "staticcheck: module $mod"
  if ! (cd "$ROOT/$mod" && "$BIN" ./...); then
    status=1
  fi
done
if [ "$status" -ne 0 ]; then
  echo "staticcheck: findings above; fix them, or for a deliberate one add //lint:ignore CHECK <reason> on the line before it" >&2
  exit 1
fi
echo "staticcheck: clean"
