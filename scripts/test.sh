#!/usr/bin/env bash
# `make test`: every test. Go vet and staticcheck, the Go suite with the race
# detector on a real Postgres (TEST_DATABASE_URL, or a throwaway cluster
# started here for the whole run), real headless Chromium, and the
# userscripts' Node tests.
set -euo pipefail
cd "$(dirname "$0")/.."

BROWSER_PATH="${BROWSER_PATH:-$(scripts/ensure-chromium.sh)}"
export BROWSER_PATH
NODE=$(scripts/ensure-node.sh)

if [ -z "${TEST_DATABASE_URL:-}" ]; then
  scripts/ensure-postgres.sh >/dev/null
  mkdir -p bin
  go build -o bin/devdb ./backend/cmd/devdb
  pgdir=$(mktemp -d "${TMPDIR:-/tmp}/lectern-test-pg.XXXXXX")
  trap 'bin/devdb remove "$pgdir" >/dev/null 2>&1 || true' EXIT
  TEST_DATABASE_URL=$(bin/devdb start "$pgdir" postgres --throwaway)
  export TEST_DATABASE_URL
fi

echo "== go vet"
go vet ./...
echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
echo "== go test -race"
go test -race -timeout 20m ./...
echo "== allocation linearity of the extractors (without -race, which they skip)"
go test -count=1 -run 'IsLinear' ./backend/internal/latest
echo "== userscripts (node --test)"
"$NODE" --test userscripts/test/
