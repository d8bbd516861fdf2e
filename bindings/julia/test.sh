#!/bin/sh
# The Julia binding's checks: the generated files are current and match the manifest (pytest, no Julia needed); the
# Julia test suite too where a julia is on PATH (CI has none).
set -e
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${TINYGRAD_BUILD:-$repo/build}
py=${PYTHON:-python3}
"$py" -c "import pytest" 2>/dev/null || py=/usr/bin/python3  # a python that has pytest (Debian's python3-pytest)
"$py" "$repo/scripts/bindgen.py" --check julia
"$py" -m pytest -q -p no:cacheprovider "$repo/tests/python/test_julia_binding.py"
if command -v julia >/dev/null 2>&1; then
  TINYGRAD_LIB="$build/libtinygrad.so" TINYGRAD_BUILD="$build" JULIA_DEPOT_PATH="${XDG_CACHE_HOME:-$(mktemp -d)}/julia" \
    julia --project="$here" "$here/test/runtests.jl"
else
  echo "bindings/julia: no julia on PATH: the Julia suite did not run (the static checks did)" >&2
fi
