#!/bin/sh
# Builds (if needed) and runs examples/llm.rs with the given arguments; only the program's output goes to stdout.
set -e
. "$(dirname "$0")/env.sh"
"$CARGO" build --offline -q --manifest-path "$here/Cargo.toml" -p tinygrad --example llm >&2
exec "$CARGO_TARGET_DIR/debug/examples/llm" "$@"
