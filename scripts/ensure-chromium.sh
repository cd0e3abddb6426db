#!/usr/bin/env bash
# ensure-chromium.sh prints the path of a usable Chromium on stdout and nothing
# else there, so callers can write BROWSER_PATH=$(scripts/ensure-chromium.sh).
#
# Order: $BROWSER_PATH if set; chromium, chromium-browser or google-chrome on
# PATH; /usr/bin/chromium. When none is found and we run as root with apt-get,
# Debian's `chromium` package is installed (the browser tests in
# backend/internal/browser need it, and so does a local BROWSER_PATH deployment).
# Otherwise it exits non-zero saying how to install one. Progress goes to stderr.
set -euo pipefail

say() { printf 'ensure-chromium: %s\n' "$*" >&2; }

usable() {
	[ -n "$1" ] && [ -x "$1" ] && [ ! -d "$1" ]
}

find_chromium() {
	if [ -n "${BROWSER_PATH:-}" ]; then
		if usable "$BROWSER_PATH"; then
			printf '%s\n' "$BROWSER_PATH"
			return 0
		fi
		# An explicit choice that does not work is an error, not a hint to
		# silently pick some other browser.
		say "BROWSER_PATH=$BROWSER_PATH is not an executable file"
		exit 1
	fi
	local name p
	for name in chromium chromium-browser google-chrome; do
		if p=$(command -v "$name" 2>/dev/null) && usable "$p"; then
			printf '%s\n' "$p"
			return 0
		fi
	done
	if usable /usr/bin/chromium; then
		printf '%s\n' /usr/bin/chromium
		return 0
	fi
	return 1
}

if find_chromium; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	say "no Chromium found (looked at \$BROWSER_PATH, chromium, chromium-browser, google-chrome, /usr/bin/chromium)."
	say "install one, e.g. on Debian/Ubuntu as root: apt-get update && apt-get install -y chromium"
	say "or point BROWSER_PATH at an existing Chromium/Chrome binary."
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# Several sessions may share one machine: wait for dpkg's lock instead of failing.
apt_opts=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=3)

# An empty package list (fresh container) cannot resolve `chromium`: update first.
if ! apt-cache show chromium >/dev/null 2>&1 || [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e '^lock$' -e '^partial$' || true)" ]; then
	say "apt-get update"
	apt-get "${apt_opts[@]}" update -qq >&2
fi

say "installing Debian's chromium"
if ! apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends chromium >&2; then
	# A stale list can name versions the mirror no longer has: refresh once and retry.
	say "install failed; refreshing package lists and retrying"
	apt-get "${apt_opts[@]}" update -qq >&2
	apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends chromium >&2
fi

if find_chromium; then
	exit 0
fi
say "chromium was installed but no binary was found at the expected paths"
exit 1
