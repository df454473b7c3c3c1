#!/usr/bin/env bash
# Fuzz every fuzz target of the module briefly: each Fuzz function that
# `go test -list` finds, in its own package, for FUZZTIME (default 5s).
# New targets are picked up without editing this file. Their seed corpora
# already run in `go test ./...`; this step mutates beyond them.
#
# Usage: bash .ci/fuzz.sh [PACKAGE ...]   (default ./...)
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime="${FUZZTIME:-5s}"
pkgs=("$@")
if [ ${#pkgs[@]} -eq 0 ]; then
	# The packages of this module with a fuzz target in a test file.
	mapfile -t pkgs < <(git ls-files '*_test.go' | grep -v '^examples/notes-mcp/\|^examples/notes-web/\|^chatadapter/interop/' |
		xargs grep -l '^func Fuzz' | xargs -n1 dirname | sort -u | sed 's|^|./|')
fi

n=0
while read -r pkg; do
	# go test -list prints the matching names, then "ok <pkg> <time>".
	for target in $(go test -run '^$' -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $target ($fuzztime)"
		# Go's fuzzer can end a run with "context deadline exceeded" and no
		# failing input when -fuzztime passes while a worker is still busy
		# with an input (nothing was found: no file is written under
		# testdata/fuzz). Such a run is tried once more; a run that found
		# something fails at once.
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/llmtool-fuzz.log 2>&1 ||
			{ grep -q 'context deadline exceeded' /tmp/llmtool-fuzz.log && ! grep -q 'Failing input written to' /tmp/llmtool-fuzz.log &&
				echo "fuzz.sh: $target: the fuzzer's deadline passed with nothing found; once more" &&
				go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/llmtool-fuzz.log 2>&1; } || {
			cat /tmp/llmtool-fuzz.log
			echo "fuzz.sh: $target in $pkg failed (output above; the failing input is in $pkg's testdata/fuzz/$target)" >&2
			exit 1
		}
		n=$((n + 1))
	done
done < <(go list "${pkgs[@]}")
echo "fuzzed $n targets for $fuzztime each"
