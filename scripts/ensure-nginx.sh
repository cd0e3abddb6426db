#!/usr/bin/env bash
# ensure-nginx.sh prints the path of an nginx binary on stdout and nothing
# else there, for the Cover route benchmark's reference server
# (NGINX_PATH=$(scripts/ensure-nginx.sh)). Only `make bench` uses it; tests
# never do.
#
# Order: $NGINX_PATH if set; nginx on PATH; /usr/sbin/nginx. When none is
# found and we run as root with apt-get, Debian's `nginx-light` is installed.
# Otherwise it exits non-zero saying how to install one. Progress goes to
# stderr.
set -euo pipefail

say() { printf 'ensure-nginx: %s\n' "$*" >&2; }

find_nginx() {
	if [ -n "${NGINX_PATH:-}" ]; then
		if [ -x "$NGINX_PATH" ] && [ ! -d "$NGINX_PATH" ]; then
			printf '%s\n' "$NGINX_PATH"
			return 0
		fi
		say "NGINX_PATH=$NGINX_PATH is not an executable file"
		exit 1
	fi
	local p
	if p=$(command -v nginx 2>/dev/null); then
		printf '%s\n' "$p"
		return 0
	fi
	if [ -x /usr/sbin/nginx ]; then
		printf '%s\n' /usr/sbin/nginx
		return 0
	fi
	return 1
}

if find_nginx; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	say "no nginx found (looked at \$NGINX_PATH, nginx on PATH, /usr/sbin/nginx)."
	say "install one, e.g. on Debian/Ubuntu as root: apt-get update && apt-get install -y nginx-light"
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt_opts=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=3)
if ! apt-cache show nginx-light >/dev/null 2>&1; then
	say "apt-get update"
	apt-get "${apt_opts[@]}" update -qq >&2
fi
say "installing Debian's nginx-light"
# policy-rc.d keeps the package from starting a system nginx on port 80;
# one that is already there is left as it is.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod +x /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends nginx-light >&2

if find_nginx; then
	exit 0
fi
say "nginx was installed but no binary was found"
exit 1
