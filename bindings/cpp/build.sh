#!/bin/sh
# Builds the C++ wrapper's test and mlp program in $TINYGRAD_BUILD (default: <repo>/build), chatter to stderr.
set -e
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${TINYGRAD_BUILD:-$repo/build}
# ccache writes under $HOME unless told otherwise; CI's HOME may be read-only
if [ -z "$CCACHE_DIR" ] && [ -z "$XDG_CACHE_HOME" ] && ! [ -w "${HOME:-/nonexistent}" ]; then
  CCACHE_DIR=$(mktemp -d) && export CCACHE_DIR
fi
if [ -f "$build/CMakeCache.txt" ]; then
  flock /tmp/tg_build.lock cmake --build "$build" -j2 --target tg_cpp_tests example_cpp_mlp >&2
fi
for b in tg_cpp_tests example_cpp_mlp; do
  [ -x "$build/$b" ] || { echo "bindings/cpp: $build/$b is missing (configure $build with cmake first)" >&2; exit 1; }
done
echo "$build"
