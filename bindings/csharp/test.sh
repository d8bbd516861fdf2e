#!/bin/sh
# Builds the C# binding into a temp dir and runs its tests (tests/Tests.cs; test names as arguments run only those).
set -e
here=$(cd "$(dirname "$0")" && pwd)
export TINYGRAD_BUILD="${TINYGRAD_BUILD:-$here/../../build}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$here/build.sh" "$out"
LD_LIBRARY_PATH="$TINYGRAD_BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" mono "$out/Tests.exe" "$@"
