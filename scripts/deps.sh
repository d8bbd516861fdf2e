#!/bin/sh
# Install the Debian packages the build, tests and benchmarks need. Idempotent: does nothing when all are present.
set -e
# libclang-rt-14-dev: clang's libFuzzer and sanitizer runtimes, for make fuzz; abigail-tools: abidw and abidiff, for make
# test-abi
PKGS="cmake ninja-build g++ clang llvm-19-dev pkg-config ccache libgtest-dev libbenchmark-dev libopenblas-dev libsqlite3-dev python3-numpy python3-pytest python3-pytest-xdist python3-torch libclang-rt-14-dev zlib1g-dev dataset-fashion-mnist opencl-headers ocl-icd-libopencl1 pocl-opencl-icd abigail-tools"
# the language bindings' toolchains (bindings/): Go (cgo), C# (mono's compiler and runtime), and Rust's cargo unless a
# Rust toolchain is already installed (rustup's in ~/.cargo/bin counts)
PKGS="$PKGS golang-go mono-mcs mono-runtime"
command -v cargo >/dev/null 2>&1 || [ -x "$HOME/.cargo/bin/cargo" ] || PKGS="$PKGS cargo"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "missing Debian packages:$missing (run 'make deps' as root, or: sudo apt-get install$missing)" >&2
  exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
