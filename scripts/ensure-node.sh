#!/usr/bin/env bash
# Makes sure Node.js (18 or newer) exists, for building and testing the
# userscripts. Prints its path.
set -euo pipefail
ok() { command -v node >/dev/null 2>&1 && [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 18 ]; }
if ok; then command -v node; exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-node: installing Debian's nodejs package..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q nodejs >&2 || { apt-get update -q >&2 && apt-get install -y -q nodejs >&2; }
  if ok; then command -v node; exit 0; fi
fi
echo "ensure-node: Node.js 18 or newer is needed for the userscripts (Debian: sudo apt-get install nodejs)." >&2
exit 1
