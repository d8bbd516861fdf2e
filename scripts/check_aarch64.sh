#!/bin/sh
# make test-aarch64: the library cross-built for 64-bit ARM ($1, a build directory configured with
# cmake/aarch64-linux-gnu.cmake, no LLVM) runs the C examples under qemu-aarch64, its kernels compiled for aarch64 by the
# cross compiler (what gcc does on the board itself) with NEON-width vectors. Their outputs are compared with the host
# build's ($2) on CPU:CLANG: the same program, kernels chosen for another vector width, so numbers agree to float32
# rounding (1e-4 relative) rather than bit for bit; the text must match.
set -e
arm="$1"
host="$2"
command -v qemu-aarch64 >/dev/null || { echo "check_aarch64: qemu-aarch64 is missing (make deps installs qemu-user)" >&2; exit 1; }
readelf -h "$arm/libtinygrad.so" | grep -q AArch64 || { echo "check_aarch64: $arm/libtinygrad.so is not an aarch64 library" >&2; exit 1; }
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
for ex in hello mlp mlp_sgd; do
  out=$(XDG_CACHE_HOME="$cache" TG_CC=aarch64-linux-gnu-gcc TG_CFLAGS="-O2 -fno-math-errno -ffp-contract=off -fwrapv" \
        qemu-aarch64 -L /usr/aarch64-linux-gnu "$arm/example_$ex") || { echo "check_aarch64: example_$ex failed under qemu-aarch64:" >&2; echo "$out" >&2; exit 1; }
  ref=$(DEV=CPU:CLANG "$host/example_$ex")
  /usr/bin/python3 - "$ex" "$out" "$ref" <<'PY'
import re, sys
name, out, ref = sys.argv[1], sys.argv[2].splitlines(), sys.argv[3].splitlines()
keep = lambda ls: [l for l in ls if not re.search(r"\btime\b|\bms\b", l)]  # timings differ by nature
out, ref = keep(out), keep(ref)
num = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")
ok = len(out) == len(ref)
for a, b in zip(out, ref):
  if re.sub(r"\b[0-9a-f]{8}\b", "H", num.sub("N", a)) != re.sub(r"\b[0-9a-f]{8}\b", "H", num.sub("N", b)): ok = False
  for x, y in zip(map(float, num.findall(a)), map(float, num.findall(b))):
    if abs(x - y) > 1e-4 * max(1.0, abs(y)): ok = False
if not ok:
  print(f"check_aarch64: example_{name} under qemu-aarch64 printed\n" + "\n".join(out) + "\nthe host printed\n" + "\n".join(ref), file=sys.stderr)
  sys.exit(1)
print(f"aarch64: example_{name} under qemu-aarch64 matches the host ({len(out)} lines)")
PY
done
