#!/usr/bin/env bash
# A throwaway PostgreSQL server for llmtool's tests (see internal/pgtest).
#
# Usage, either way:
#
#   source .ci/postgres.sh             # what .ci/run does
#   bash .ci/postgres.sh CMD [ARG...]  # e.g. bash .ci/postgres.sh go test ./...
#
# It finds initdb (on PATH, else the newest /usr/lib/postgresql/*/bin),
# installing Debian's postgresql package with apt-get when there is none;
# creates a temporary cluster (initdb -A trust, as the postgres system user
# when run as root, because initdb refuses root); starts it with pg_ctl on
# 127.0.0.1 at the first free port from 55433 up, its unix socket in the
# temporary directory, fsync=off and max_connections=300 (the replica tests
# open many connections); waits until it accepts connections; and exports
#
#   LLMTOOL_TEST_POSTGRES=postgres://postgres@127.0.0.1:PORT/postgres
#   LLMTOOL_PG_BIN=<the directory holding initdb and pg_ctl>
#
# Sourced, it sets an EXIT trap in the caller that stops the cluster and
# removes the temporary directory, also when a later step fails; a caller
# that sets its own EXIT trap afterwards must call llmtool_pg_stop from it.
# Run as a command, it runs CMD with those variables and then stops the
# cluster, exiting with CMD's status. It never touches another server.

# The first port tried; the next ones up are tried until a free one is found.
LLMTOOL_PG_FIRST_PORT="${LLMTOOL_PG_FIRST_PORT:-55433}"

_llmtool_pg_dir=""
_llmtool_pg_bin=""
_llmtool_pg_runas=()

_llmtool_pg_die() {
	echo "postgres.sh: $*" >&2
	exit 1
}

# _llmtool_pg_find_bin prints the directory holding initdb, or nothing.
_llmtool_pg_find_bin() {
	local initdb
	# Resolve links (a /usr/local/bin/initdb pointing into Debian's
	# directory): the other binaries live next to the real one.
	if initdb="$(command -v initdb)"; then
		dirname "$(readlink -f "$initdb")"
		return
	fi
	# Debian keeps the binaries off PATH, one directory per major version.
	local newest
	newest="$(printf '%s\n' /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)"
	if [ -x "$newest" ]; then
		dirname "$newest"
	fi
}

_llmtool_pg_install() {
	local sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null ||
			_llmtool_pg_die "PostgreSQL is not installed and installing it needs root (or sudo): apt-get install postgresql"
		sudo=(sudo)
	fi
	command -v apt-get >/dev/null ||
		_llmtool_pg_die "PostgreSQL is not installed and there is no apt-get to install it; install it and put initdb on PATH"
	echo "installing PostgreSQL from the Debian packages (apt-get install postgresql)"
	local install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql)
	# A fresh machine often has no package lists yet: update, then retry.
	if ! "${sudo[@]}" "${install[@]}"; then
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
			_llmtool_pg_die "apt-get update failed"
		"${sudo[@]}" "${install[@]}" ||
			_llmtool_pg_die "apt-get install postgresql failed"
	fi
}

# _llmtool_pg_free reports whether nothing accepts connections on 127.0.0.1:$1.
_llmtool_pg_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# _llmtool_pg_as runs a command as the cluster's owner (cd'ing into the
# temporary directory first: the postgres user may not be able to read the
# caller's working directory).
_llmtool_pg_as() {
	(cd "$_llmtool_pg_dir" && "${_llmtool_pg_runas[@]}" "$@")
}

llmtool_pg_start() {
	local bin
	bin="$(_llmtool_pg_find_bin)"
	if [ -z "$bin" ]; then
		_llmtool_pg_install
		bin="$(_llmtool_pg_find_bin)"
		[ -n "$bin" ] || _llmtool_pg_die "installed postgresql, but found no initdb on PATH or in /usr/lib/postgresql/*/bin"
	fi
	local b
	for b in initdb pg_ctl pg_isready postgres; do
		[ -x "$bin/$b" ] || _llmtool_pg_die "$bin/$b is missing"
	done

	if [ "$(id -u)" -eq 0 ]; then
		id postgres >/dev/null 2>&1 ||
			_llmtool_pg_die "running as root, but there is no postgres user to run initdb as (initdb refuses root)"
		_llmtool_pg_runas=(runuser -u postgres --)
	fi
	_llmtool_pg_bin="$bin"
	_llmtool_pg_dir="$(mktemp -d "${TMPDIR:-/tmp}/llmtool-pg.XXXXXX")"
	# From here on the directory (and soon the cluster) is ours to clean
	# up, whatever happens next.
	trap llmtool_pg_stop EXIT
	if [ "$(id -u)" -eq 0 ]; then
		chown postgres: "$_llmtool_pg_dir"
	fi

	local port="$LLMTOOL_PG_FIRST_PORT"
	while ! _llmtool_pg_free "$port"; do
		port=$((port + 1))
		[ "$port" -lt $((LLMTOOL_PG_FIRST_PORT + 100)) ] ||
			_llmtool_pg_die "no free port in $LLMTOOL_PG_FIRST_PORT..$((port - 1))"
	done

	local data="$_llmtool_pg_dir/data" log="$_llmtool_pg_dir/server.log"
	_llmtool_pg_as "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$_llmtool_pg_dir/initdb.log" 2>&1 || {
		cat "$_llmtool_pg_dir/initdb.log" >&2
		_llmtool_pg_die "initdb failed (output above)"
	}
	_llmtool_pg_as tee -a "$data/postgresql.conf" >/dev/null <<-EOF

		# .ci/postgres.sh: a throwaway test server
		listen_addresses = '127.0.0.1'
		port = $port
		unix_socket_directories = '$_llmtool_pg_dir'
		fsync = off
		max_connections = 300
	EOF
	_llmtool_pg_as "$bin/pg_ctl" start -D "$data" -l "$log" -w -t 60 >/dev/null || {
		tail -n 30 "$log" >&2
		_llmtool_pg_die "pg_ctl start failed on 127.0.0.1:$port (server log above)"
	}
	local waited=0
	until "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -t 1; do
		waited=$((waited + 1))
		if [ "$waited" -ge 30 ]; then
			tail -n 30 "$log" >&2
			_llmtool_pg_die "PostgreSQL on 127.0.0.1:$port does not accept connections after 30s (server log above)"
		fi
		sleep 1
	done

	export LLMTOOL_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres"
	export LLMTOOL_PG_BIN="$bin"
	echo "PostgreSQL $("$bin/postgres" --version | sed 's/^postgres (PostgreSQL) //') on 127.0.0.1:$port (LLMTOOL_TEST_POSTGRES=$LLMTOOL_TEST_POSTGRES, LLMTOOL_PG_BIN=$bin)"
}

# llmtool_pg_stop stops the cluster and removes its directory. It never
# fails, so the caller exits with the status it had.
llmtool_pg_stop() {
	local -
	set +e
	[ -n "$_llmtool_pg_dir" ] || return 0
	if [ -f "$_llmtool_pg_dir/data/postmaster.pid" ]; then
		_llmtool_pg_as "$_llmtool_pg_bin/pg_ctl" stop -D "$_llmtool_pg_dir/data" -m fast -t 30 >/dev/null 2>&1 ||
			_llmtool_pg_as "$_llmtool_pg_bin/pg_ctl" stop -D "$_llmtool_pg_dir/data" -m immediate >/dev/null 2>&1
	fi
	rm -rf "$_llmtool_pg_dir"
	_llmtool_pg_dir=""
	return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	[ $# -gt 0 ] || _llmtool_pg_die "usage: bash .ci/postgres.sh CMD [ARG...] (or source it)"
	llmtool_pg_start
	status=0
	"$@" || status=$?
	exit "$status"
else
	llmtool_pg_start
fi
