#!/bin/sh
# The same program in every language: examples/c/mlp_sgd.c and each binding's version (bindings/<language>/mlp.sh)
# must print the same lines, byte for byte: 20 losses to the last bit, the shape error's C message, 0 live handles.
# usage: compare_mlp.sh [language ...]   (TINYGRAD_BUILD: the build directory, default build/)
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
export TINYGRAD_BUILD=${TINYGRAD_BUILD:-$root/build}
langs=${*:-python cpp rust go csharp}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$TINYGRAD_BUILD/example_mlp_sgd" > "$tmp/c.txt"
grep -q '^live handles: 0$' "$tmp/c.txt" || { echo "compare_mlp: the C program leaked handles"; cat "$tmp/c.txt"; exit 1; }
fail=0
for l in $langs; do
  if sh "$root/bindings/$l/mlp.sh" > "$tmp/$l.txt" 2> "$tmp/$l.err" && cmp -s "$tmp/c.txt" "$tmp/$l.txt"; then
    echo "compare_mlp: $l prints what C prints ($(grep -c '^step' "$tmp/$l.txt") losses, bit for bit)"
  else
    echo "compare_mlp: $l differs from C:"; diff "$tmp/c.txt" "$tmp/$l.txt" || true; tail -20 "$tmp/$l.err"; fail=1
  fi
done
exit $fail
