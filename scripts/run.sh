#!/usr/bin/env bash
# `make run`: Lectern on this machine. With DATABASE_URL unset it starts (or
# reuses) a local Postgres cluster under ./.lectern/pg; data goes under
# ./.lectern/data unless DATA_DIR says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .lectern bin

# The version `lectern version` and the pages show: git's name for this tree.
VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
go build -ldflags "-X main.version=$VERSION" -o bin/lectern ./backend/cmd/lectern

if [ -z "${DATABASE_URL:-}" ]; then
  scripts/ensure-postgres.sh >/dev/null
  go build -o bin/devdb ./backend/cmd/devdb
  DATABASE_URL=$(bin/devdb start .lectern/pg lectern)
  export DATABASE_URL
  echo "run: using the local cluster in .lectern/pg ($DATABASE_URL)"
  LOCAL_PG=1
fi
# This machine only, unless LISTEN_ADDR says otherwise (":8080" for the network).
export LISTEN_ADDR="${LISTEN_ADDR:-127.0.0.1:8080}"
export PUBLIC_BASE_URL="${PUBLIC_BASE_URL:-http://localhost:8080}"
export DATA_DIR="${DATA_DIR:-$PWD/.lectern/data}"
export LOG_FORMAT="${LOG_FORMAT:-text}"
if [ -z "${BROWSER_URL:-}" ] && [ -z "${BROWSER_PATH:-}" ]; then
  # Found, not installed: `make run` should not pull a browser in unasked.
  if p=$(command -v chromium || command -v chromium-browser || command -v google-chrome); then
    export BROWSER_PATH="$p"
  else
    echo "run: no Chromium found; kagane will be skipped and novelfull read without a browser (scripts/ensure-chromium.sh installs one)"
  fi
fi

bin/lectern migrate up >/dev/null
cat <<MSG
run: Lectern $VERSION at $PUBLIC_BASE_URL, listening on $LISTEN_ADDR (data in $DATA_DIR)
run: open $PUBLIC_BASE_URL on this machine to create the Owner in the browser (from another
     machine, /setup asks for the setup code in the "first run" log line below), or from another shell:
       DATABASE_URL='$DATABASE_URL' bin/lectern reader add owner --owner
       DATABASE_URL='$DATABASE_URL' bin/lectern token new owner --name userscript
MSG
if [ -n "${LOCAL_PG:-}" ]; then
  echo "run: the local Postgres keeps running after Lectern stops; stop it with: bin/devdb stop .lectern/pg"
fi
exec bin/lectern serve
