#!/bin/sh
# The same greedy generation from C (examples/c/llm.c --ids), Python (tinygrad_c.llm), Rust (examples/llm.rs) and Go
# (bindings/go/examples/llm): a tiny random-weight model with a real SentencePiece vocabulary, 128 tokens after the
# prompt; the prompt's ids and the generated ids must be the same in every language, and there must be 128 of them (no
# early end-of-generation).
# usage: compare_llm.sh   (TINYGRAD_BUILD: the build directory, default build/; PYTHON: a Python with numpy)
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
export TINYGRAD_BUILD=${TINYGRAD_BUILD:-$root/build}
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prompt="Once upon a time, in a small town"
"$py" "$root/tests/bindings/llm_ids.py" write "$tmp/m.gguf"
"$TINYGRAD_BUILD/example_llm" --model "$tmp/m.gguf" --prompt "$prompt" -n 128 --temp 0 --ids | grep -E '^(prompt|tokens):' > "$tmp/c.txt"
[ "$(grep '^tokens:' "$tmp/c.txt" | wc -w)" = 129 ] || { echo "compare_llm: C generated other than 128 tokens:"; cat "$tmp/c.txt"; exit 1; }
TINYGRAD_LIB="$TINYGRAD_BUILD/libtinygrad.so" "$py" "$root/tests/bindings/llm_ids.py" run "$tmp/m.gguf" "$prompt" 128 > "$tmp/python.txt"
sh "$root/bindings/rust/llm.sh" "$tmp/m.gguf" "$prompt" 128 | grep -E '^(prompt|tokens):' > "$tmp/rust.txt"
sh "$root/bindings/go/llm.sh" "$tmp/m.gguf" "$prompt" 128 | grep -E '^(prompt|tokens):' > "$tmp/go.txt"
fail=0
for l in python rust go; do
  if cmp -s "$tmp/c.txt" "$tmp/$l.txt"; then echo "compare_llm: $l generates what C generates (128 greedy tokens)"
  else echo "compare_llm: $l differs from C:"; diff "$tmp/c.txt" "$tmp/$l.txt" || true; fail=1; fi
done
exit $fail
