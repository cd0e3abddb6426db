#!/usr/bin/env bash
# `make test`: every test. Go vet and staticcheck, the Go suite with the race
# detector on a real Postgres (TEST_DATABASE_URL, or a throwaway cluster
# started here for the whole run), real headless Chromium, a real S3 server
# (versitygw, found or built in the background while vet and staticcheck
# run), and the userscripts' Node tests.
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

# The S3 tests' server: found, or built (minutes on a cold module cache)
# while vet and staticcheck run. A failure stops the run here, before the
# suite, so the S3 tests never pass by being skipped.
vgw_log=$(mktemp "${TMPDIR:-/tmp}/lectern-versitygw.XXXXXX")
scripts/ensure-versitygw.sh >"$vgw_log" 2>&1 &
vgw_pid=$!

echo "== go vet"
go vet ./...
echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
echo "== S3 server (versitygw)"
if ! wait "$vgw_pid"; then
  cat "$vgw_log" >&2
  echo "make test: no S3 server for the tests (scripts/ensure-versitygw.sh failed, above)" >&2
  exit 1
fi
VERSITYGW=$(tail -n 1 "$vgw_log")
export VERSITYGW
rm -f "$vgw_log"
echo "$VERSITYGW"
echo "== go test -race"
# The planner (schedule) is pure and starts no goroutines, so the race
# detector finds nothing in it and only slows its week-long simulations
# tenfold (90 s of this run). It runs without -race below; the Poll's tests,
# which call it from River's workers, run under -race here.
go test -race -timeout 20m $(go list ./... | grep -v '/backend/internal/schedule$')
echo "== the planner, without -race"
go test ./backend/internal/schedule
echo "== allocation linearity of the extractors (without -race, which they skip)"
go test -count=1 -run 'IsLinear' ./backend/internal/latest
echo "== userscripts (node --test)"
"$NODE" --test userscripts/test/
