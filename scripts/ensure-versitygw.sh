#!/usr/bin/env bash
# Makes sure Versity's S3 gateway (versitygw, Apache-2.0) exists, for the
# tests' real S3-compatible server (backend/internal/s3test). Prints its path.
#
# It is built with `go install` into ~/.cache/lectern/bin, outside Lectern's
# go.mod: it is a test tool, not a dependency of Lectern. A warm module cache
# builds it in seconds; a cold one downloads its modules first (minutes on a
# loaded machine).
set -euo pipefail
if ! command -v go >/dev/null 2>&1; then
  echo "ensure-versitygw: Go is needed to find or build the tests' S3 server (versitygw)" >&2
  exit 1
fi
version=v1.8.0
bin_dir="${LECTERN_CACHE:-$HOME/.cache/lectern}/bin"
bin="$bin_dir/versitygw"
# The gateway prints no version of its own when built by go install; the
# build information names the module's.
ok() { [ -x "$1" ] && go version -m "$1" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/versity/versitygw[[:space:]]+$version([[:space:]]|$)"; }
if [ -n "${VERSITYGW:-}" ] && ok "$VERSITYGW"; then echo "$VERSITYGW"; exit 0; fi
if ok "$bin"; then echo "$bin"; exit 0; fi
mkdir -p "$bin_dir"
echo "ensure-versitygw: building github.com/versity/versitygw/cmd/versitygw@$version into $bin_dir ..." >&2
# Outside any module, so Lectern's go.mod neither constrains nor records it.
if ! (cd "${TMPDIR:-/tmp}" && GOFLAGS= GOWORK=off GO111MODULE=on GOBIN="$bin_dir" \
    go install "github.com/versity/versitygw/cmd/versitygw@$version") >&2; then
  echo "ensure-versitygw: could not build versitygw $version (no network for the module proxy?)." >&2
  echo "  Build it elsewhere and copy it to $bin, or set VERSITYGW=/path/to/versitygw." >&2
  exit 1
fi
if ! ok "$bin"; then
  echo "ensure-versitygw: $bin was built but does not run as versitygw $version" >&2
  exit 1
fi
echo "$bin"
