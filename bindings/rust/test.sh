#!/bin/sh
# Builds the Rust binding and runs its tests: the generated files are current, the safe crate's tests and doc tests.
set -e
. "$(dirname "$0")/env.sh"
if command -v python3 >/dev/null; then python3 "$here/../../scripts/bindgen.py" --check rust; fi
"$CARGO" test --offline -q --manifest-path "$here/Cargo.toml" --workspace
