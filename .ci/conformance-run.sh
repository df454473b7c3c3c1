#!/usr/bin/env bash
# Run the MCP conformance suite against examples/conformance: build the
# example server, start it on a free loopback port, wait until it answers,
# run .ci/conformance.sh against it (which prints the pass count and honours
# .ci/conformance-baseline.txt), and stop the server.
#
# Usage: bash .ci/conformance-run.sh [SCENARIO ...]
# Exit status: that of .ci/conformance.sh (0 when every failure is in the
# baseline), or 2 when the server cannot be built or started.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp="$(mktemp -d "${TMPDIR:-/tmp}/llmtool-conformance.XXXXXX")"
server_pid=""
cleanup() {
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/conformance-server" ./examples/conformance

# Port 0: the kernel picks a free port; the server prints the address it got.
"$tmp/conformance-server" -addr 127.0.0.1:0 -db "$tmp/conformance.db" 2>"$tmp/server.log" &
server_pid=$!

url=""
for _ in $(seq 1 150); do
	url="$(sed -n 's/^conformance: serving \(http:[^ ]*\)$/\1/p' "$tmp/server.log" | head -n 1)"
	[ -n "$url" ] && break
	if ! kill -0 "$server_pid" 2>/dev/null; then
		cat "$tmp/server.log" >&2
		echo "conformance-run: the example server exited before serving" >&2
		exit 2
	fi
	sleep 0.2
done
if [ -z "$url" ]; then
	cat "$tmp/server.log" >&2
	echo "conformance-run: the example server did not start within 30s" >&2
	exit 2
fi

# Wait until it answers HTTP (any status).
hostport="${url#http://}"
hostport="${hostport%%/*}"
answered=""
for _ in $(seq 1 50); do
	if (exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}" &&
		printf 'GET /mcp HTTP/1.0\r\nHost: %s\r\n\r\n' "$hostport" >&3 &&
		head -c 12 <&3 | grep -q '^HTTP/') 2>/dev/null; then
		answered=1
		break
	fi
	sleep 0.2
done
if [ -z "$answered" ]; then
	cat "$tmp/server.log" >&2
	echo "conformance-run: $url does not answer HTTP" >&2
	exit 2
fi

echo "conformance-run: examples/conformance at $url"
set +e
bash .ci/conformance.sh "$url" "$@"
rc=$?
set -e
if [ -s "$tmp/server.log" ] && grep -qv '^conformance: serving' "$tmp/server.log"; then
	echo "conformance-run: server log:"
	grep -v '^conformance: serving' "$tmp/server.log" | tail -n 20
fi
exit "$rc"
