#!/bin/sh
# The exported ABI of libtinygrad.so against the committed baseline abi/libtinygrad.abi, with libabigail (abigail-tools).
# The ABI is every exported tg_ function with its parameter and result types, and the enums, structs and callback types
# of include/tinygrad.h they reach, read from the DWARF of src/api/ (the one part of the library built with -g). Only
# types reachable from the exported functions are read, and those defined outside include/ (what a tg_tensor holds,
# everything in src/) are dropped: handles stay opaque, so changes inside the library never show here. Locations,
# absolute paths and DT_NEEDED are left out, so the dump of a fresh clone is the same file.
#   sh scripts/abi.sh check <libtinygrad.so>     abidiff: a removed function, a changed parameter or result type, enum
#                                                value or struct layout fails; functions added since the baseline pass
#   sh scripts/abi.sh baseline <libtinygrad.so>  rewrite abi/libtinygrad.abi from the library (an ABI change on purpose)
set -u
[ $# -eq 2 ] && { [ "$1" = check ] || [ "$1" = baseline ]; } || { echo "usage: sh $0 check|baseline <libtinygrad.so>" >&2; exit 2; }
mode=$1
so=$2
root=$(cd "$(dirname "$0")/.." && pwd)
baseline="$root/abi/libtinygrad.abi"
for tool in abidw abidiff; do
  command -v "$tool" >/dev/null 2>&1 || { echo "FAIL: '$tool' is not installed (Debian's abigail-tools: make deps)" >&2; exit 1; }
done
[ -e "$so" ] || { echo "FAIL: $so not found (build first: make build)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tg-abi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

abidw --headers-dir "$root/include" --drop-private-types --exported-interfaces-only --no-show-locs --no-corpus-path --no-comp-dir-path --no-elf-needed \
  --type-id-style hash --out-file "$tmp/now.abi" "$so" || { echo "FAIL: abidw could not read $so" >&2; exit 1; }
# without the DWARF of src/api/ only symbol names would be compared
grep -q "<function-decl name='tg_version'" "$tmp/now.abi" ||
  { echo "FAIL: $so has no debug info for tg_version (src/api/ is built with -g by CMakeLists.txt)" >&2; exit 1; }

if [ "$mode" = baseline ]; then
  mkdir -p "$(dirname "$baseline")" && cp "$tmp/now.abi" "$baseline" || exit 1
  echo "abi: wrote $baseline ($(grep -c "<function-decl name='tg_" "$baseline") functions)"
  exit 0
fi

[ -e "$baseline" ] || { echo "FAIL: no baseline $baseline (make abi-baseline)" >&2; exit 1; }
# A struct whose first member is struct_size is only passed by pointer and may grow at its end (a caller built against
# the shorter one sets the smaller size and gets its prefix): members added at its end are compatible.
sized=$(grep -B1 '^  size_t struct_size;' "$root/include/tinygrad.h" | sed -n 's/^typedef struct \(tg_[a-z0-9_]*\) {.*/\1/p' | paste -sd'|' -)
printf '[suppress_type]\n  type_kind = struct\n  name_regexp = ^(%s)$\n  has_data_member_inserted_at = end\n' "$sized" >"$tmp/sized.supp"
abidiff --no-show-locs --suppressions "$tmp/sized.supp" "$baseline" "$tmp/now.abi" >"$tmp/report" 2>&1
rc=$?
if [ $rc -eq 0 ]; then echo "PASS: the ABI of $so is the baseline's"; exit 0; fi
# new functions and variables are compatible: compare again without them
if abidiff --no-show-locs --no-added-syms --suppressions "$tmp/sized.supp" "$baseline" "$tmp/now.abi" >"$tmp/incompatible" 2>&1; then
  sed 's/^/    | /' "$tmp/report"
  echo "PASS: the ABI of $so is the baseline's plus the additions above (make abi-baseline records them)"
  exit 0
fi
sed 's/^/    | /' "$tmp/incompatible"
echo "FAIL: the ABI of $so differs from abi/libtinygrad.abi (abidiff exit $rc): a program built against the baseline may"
echo "      break. Undo the change, or add a new function instead; if the break is meant (a new major version), record it"
echo "      with make abi-baseline."
exit 1
