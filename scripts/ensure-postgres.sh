#!/usr/bin/env bash
# Makes sure Postgres server binaries (initdb, pg_ctl) exist, for the local
# cluster of `make run` and `make test`. Prints their directory.
set -euo pipefail

find_bin() {
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return 0
  fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

if find_bin; then exit 0; fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-postgres: installing Debian's postgresql package..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q postgresql >&2 || { apt-get update -q >&2 && apt-get install -y -q postgresql >&2; }
  if find_bin; then exit 0; fi
fi

cat >&2 <<'MSG'
ensure-postgres: no Postgres server binaries (initdb, pg_ctl) found.
Install them (Debian/Ubuntu: sudo apt-get install postgresql; macOS: brew install postgresql),
or point the commands at a server you run yourself:
  make run:  DATABASE_URL=postgres://user:pass@host:5432/lectern make run
  make test: TEST_DATABASE_URL=postgres://user:pass@host:5432/postgres make test
MSG
exit 1
