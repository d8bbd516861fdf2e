#!/bin/sh
# Builds (if needed) and runs examples/llm with the given arguments; only the program's output goes to stdout.
set -e
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
cd "$here"
mkdir -p "$cache"
go build -o "$cache/llm" ./examples/llm >&2
exec "$cache/llm" "$@"
