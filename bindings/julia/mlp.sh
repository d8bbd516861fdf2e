#!/bin/sh
# The mlp program (examples/c/mlp_sgd.c's recipe) through Tinygrad.jl: needs a julia on PATH.
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${TINYGRAD_BUILD:-$(cd "$here/../.." && pwd)/build}
command -v julia >/dev/null 2>&1 || { echo "bindings/julia/mlp.sh: no julia on PATH" >&2; exit 1; }
TINYGRAD_LIB="$build/libtinygrad.so" JULIA_DEPOT_PATH="${XDG_CACHE_HOME:-$(mktemp -d)}/julia" \
  exec julia --project="$here" "$here/examples/mlp.jl"
