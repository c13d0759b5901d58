#!/usr/bin/env bash
# Makes sure schemathesis (the fuzzer test/integration/api-fuzz.test.ts runs against the
# HTTP API) is available, without a human.
#
# Order: $SCHEMATHESIS_PATH, then the project's own copy in
# .tools/schemathesis (a Python virtual environment). If neither has the
# pinned version (package.json, "config.schemathesisVersion"), it is installed
# into .tools/schemathesis from PyPI with `python3 -m venv` and pip. Prints
# the path of the `schemathesis` command it settled on.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="$(node -p "require('$root/package.json').config.schemathesisVersion")"
venv="$root/.tools/schemathesis"
target="$venv/bin/schemathesis"

has_version() {
  "$1" --version 2>/dev/null | grep -q ", version $version\$"
}
found() {
  echo "schemathesis: $1 ($("$1" --version 2>/dev/null | head -n 1))" >&2
  exit 0
}

if [ -n "${SCHEMATHESIS_PATH:-}" ]; then
  if [ -x "$SCHEMATHESIS_PATH" ] && has_version "$SCHEMATHESIS_PATH"; then found "$SCHEMATHESIS_PATH"; fi
  echo "SCHEMATHESIS_PATH=$SCHEMATHESIS_PATH is not schemathesis $version; unset it or point it at a \`schemathesis\` (or \`st\`) command of that version" >&2
  exit 1
fi
if [ -x "$target" ] && has_version "$target"; then found "$target"; fi

if ! command -v python3 >/dev/null 2>&1; then
  echo "schemathesis $version needs Python 3.11 or later (python3) to install; install python3 and python3-venv, or set SCHEMATHESIS_PATH to a \`schemathesis\` command of version $version" >&2
  exit 1
fi
echo "schemathesis $version not found; installing it into $venv" >&2
rm -rf "$venv"
if ! python3 -m venv "$venv" >&2; then
  rm -rf "$venv"
  echo "could not make a Python virtual environment in $venv: on Debian and Ubuntu install the python3-venv package, then run this again" >&2
  exit 1
fi
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$version" >&2 || ! has_version "$target"; then
  rm -rf "$venv"
  echo "could not install schemathesis $version from PyPI into $venv (it needs Python 3.11 or later and access to PyPI); install it yourself and set SCHEMATHESIS_PATH to its \`schemathesis\` command" >&2
  exit 1
fi
found "$target"
