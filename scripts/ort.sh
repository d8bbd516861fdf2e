#!/bin/sh
# ONNX Runtime, the reference of the ONNX tests and benchmarks: the onnxruntime-node package from the npm registry,
# unpacked under build/ort (never committed). Idempotent: does nothing when it is there. Needs node and npm (make deps).
set -e
dir="${1:-build/ort}"
version=1.30.0
[ -f "$dir/node_modules/onnxruntime-node/package.json" ] && grep -q "\"version\": \"$version\"" "$dir/node_modules/onnxruntime-node/package.json" && exit 0
command -v npm >/dev/null 2>&1 || { echo "ort.sh: npm is missing (make deps installs it)" >&2; exit 1; }
mkdir -p "$dir"
# --ignore-scripts: its install script fetches GPU providers, which the CPU reference doesn't use
npm install --prefix "$dir" --ignore-scripts --no-audit --no-fund --loglevel=error "onnxruntime-node@$version"
