#!/bin/sh
# llama.cpp, the reference of the GGUF tokenizer tests (tests/tools/llama_ref.py): the prebuilt libllama of the
# @node-llama-cpp/linux-x64 npm package (llama.cpp build b1-0ad4a86), unpacked under build/llama (never committed).
# Idempotent: does nothing when it is there. Needs node and npm (make deps). Linux x86-64 with glibc only.
set -e
dir="${1:-build/llama}"
version=3.22.1
pkg="$dir/node_modules/@node-llama-cpp/linux-x64/package.json"
[ -f "$pkg" ] && grep -q "\"version\": \"$version\"" "$pkg" && exit 0
command -v npm >/dev/null 2>&1 || { echo "llama_deps.sh: npm is missing (make deps installs it)" >&2; exit 1; }
mkdir -p "$dir"
# --ignore-scripts: the package is binaries only, it has nothing to build
npm install --prefix "$dir" --ignore-scripts --no-audit --no-fund --loglevel=error "@node-llama-cpp/linux-x64@$version"
