#!/bin/sh
# Builds the C# mlp_sgd into a temp dir and runs it: its output is examples/c/mlp_sgd.c's, byte for byte.
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${TINYGRAD_BUILD:-$here/../../build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$here/build.sh" "$out" >&2
LD_LIBRARY_PATH="$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" mono "$out/Mlp.exe"
