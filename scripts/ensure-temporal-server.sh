#!/usr/bin/env bash
# Makes sure Temporal's own server binaries are built, without a human: the
# server (`temporal-server`) and its SQL schema tool (`temporal-sql-tool`) of
# the pinned version (package.json, "config.temporalServerVersion"), with the
# PostgreSQL schema files of that version, in .tools/temporal-server/<version>/.
# They are built from source with `go install` (go.temporal.io/server from the
# Go module proxy; Go 1.26.8 builds v1.32.0), once: a copy already there is
# reused. Go's module and build caches stay where `go env` puts them, outside
# the clone, so a second clone builds from cache.
#
# Prints the directory (bin/, schema/) on stdout; progress goes to stderr.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="$(node -p "require('$root/package.json').config.temporalServerVersion")"
target="$root/.tools/temporal-server/$version"

if [ -x "$target/bin/temporal-server" ] && [ -x "$target/bin/temporal-sql-tool" ] && [ -d "$target/schema/postgresql/v12" ]; then
  echo "temporal server $version: $target (built before)" >&2
  echo "$target"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "building Temporal's server $version needs Go (1.26.8 or later): install it, or put temporal-server, temporal-sql-tool and schema/ from the server's release into $target" >&2
  exit 1
fi

started=$SECONDS
echo "temporal server $version: building temporal-server and temporal-sql-tool with $(go version) (cold: a few minutes on 2 cores)" >&2
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# One `go install` for both: they come from the same module at the same version.
# Without symbol tables (-s -w): a smaller binary, the same code.
GOBIN="$tmp/bin" go install -ldflags='-s -w' "go.temporal.io/server/cmd/server@v$version" "go.temporal.io/server/cmd/tools/sql@v$version" >&2
# The schema files: from the module as `go install` downloaded it.
module_dir="$(cd "$tmp" && go mod download -json "go.temporal.io/server@v$version" | node -e 'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>console.log(JSON.parse(s).Dir))')"

mkdir -p "$tmp/out/bin" "$tmp/out/schema"
mv "$tmp/bin/server" "$tmp/out/bin/temporal-server"
mv "$tmp/bin/sql" "$tmp/out/bin/temporal-sql-tool"
cp -R "$module_dir/schema/postgresql" "$tmp/out/schema/postgresql"
chmod -R u+w,go+rX "$tmp/out"
mkdir -p "$(dirname "$target")"
rm -rf "$target"
mv "$tmp/out" "$target"
echo "temporal server $version: built in $((SECONDS - started)) s into $target" >&2
echo "$target"
