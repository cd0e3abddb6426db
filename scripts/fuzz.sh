#!/usr/bin/env bash
# `make fuzz`: runs every `go test -fuzz` target of the module, one after the
# other, each for FUZZTIME (default 30s). Targets are found, not listed: a
# new `func FuzzX(f *testing.F)` in any *_test.go is picked up. A finding is
# written by Go to <package>/testdata/fuzz/<FuzzX>/ and fails the run; commit
# it with the fix as the regression seed (plain `go test` replays every
# committed seed, so CI replays the corpora without this script).
#
#   FUZZTIME=5m make fuzz              every target for five minutes
#   FUZZ='FuzzRouter|FuzzResolve' make fuzz   only these (a regexp of whole names)
#   FUZZPARALLEL=2 make fuzz           workers per target (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME="${FUZZTIME:-30s}"
FUZZPARALLEL="${FUZZPARALLEL:-1}"
FUZZ="${FUZZ:-.}"

# Targets that drive the router need a database: the shared one when
# TEST_DATABASE_URL is set, else a throwaway cluster for the whole run.
if [ -z "${TEST_DATABASE_URL:-}" ]; then
  scripts/ensure-postgres.sh >/dev/null
  mkdir -p bin
  go build -o bin/devdb ./backend/cmd/devdb
  pgdir=$(mktemp -d "${TMPDIR:-/tmp}/lectern-fuzz-pg.XXXXXX")
  trap 'bin/devdb remove "$pgdir" >/dev/null 2>&1 || true' EXIT
  TEST_DATABASE_URL=$(bin/devdb start "$pgdir" postgres --throwaway)
  export TEST_DATABASE_URL
fi

targets=$(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' backend |
  while read -r file; do
    grep -oE '^func Fuzz[A-Za-z0-9_]*' "$file" | sed "s|^func |$(dirname "$file") |"
  done | { grep -E " ($FUZZ)$" || true; } | sort -u)

if [ -z "$targets" ]; then
  echo "no fuzz target matches FUZZ=$FUZZ" >&2
  exit 1
fi

failed=0
while read -r dir name; do
  echo "== $name ($dir, $FUZZTIME)"
  start=$(date +%s)
  if ! go test "./$dir" -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" \
      -fuzzminimizetime=10s -parallel="$FUZZPARALLEL"; then
    failed=1
    echo "!! $name found a failing input: see $dir/testdata/fuzz/$name/" >&2
  fi
  echo "   $name: $(( $(date +%s) - start ))s"
done <<<"$targets"
exit "$failed"
