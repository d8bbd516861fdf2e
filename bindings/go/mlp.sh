#!/bin/sh
# Builds (if needed) and runs examples/mlp, the Go version of examples/c/mlp_sgd.c; only its output goes to stdout.
set -e
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
cd "$here"
mkdir -p "$cache"
go build -o "$cache/mlp" ./examples/mlp >&2
exec "$cache/mlp"
