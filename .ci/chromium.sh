#!/usr/bin/env bash
# Chromium for examples/notes-web's browser tests, which drive Debian's
# chromium package at /usr/bin/chromium with chromedp.
#
# Usage: bash .ci/chromium.sh   (what .ci/run does)
#
# It installs the package with apt-get when /usr/bin/chromium is missing
# (as root, or with sudo), updating the package lists and trying again
# when the first install fails, then prints the browser's version.
set -euo pipefail

chromium=/usr/bin/chromium

die() {
	echo "chromium.sh: $*" >&2
	exit 1
}

if [ ! -x "$chromium" ]; then
	sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null ||
			die "Chromium is not installed and installing it needs root (or sudo): apt-get install chromium"
		sudo=(sudo)
	fi
	command -v apt-get >/dev/null ||
		die "Chromium is not installed and there is no apt-get to install it; install it at $chromium"
	echo "installing Chromium from the Debian packages (apt-get install chromium)"
	install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium)
	# A fresh machine often has no package lists yet: update, then retry.
	if ! "${sudo[@]}" "${install[@]}"; then
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q || die "apt-get update failed"
		"${sudo[@]}" "${install[@]}" || die "apt-get install chromium failed"
	fi
	[ -x "$chromium" ] || die "installed chromium, but $chromium is missing"
fi
"$chromium" --version 2>/dev/null
