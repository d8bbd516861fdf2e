#!/bin/sh
# The Debian packages a make target needs, installed when missing (as root) or listed (as anyone else). Idempotent: does
# nothing when all are present.
#   deps.sh          everything make test needs (make deps, make test)
#   deps.sh run      what make run needs: a compiler, cmake and the data set (LLVM 19 too, for the in-process JIT)
# The library alone needs only cmake and a C++20 compiler (make lib; cmake -S . -B build && cmake --build build).
set -e
group="${1:-all}"
# needed for the group / wanted (installed when root, listed otherwise, never a failure)
NEED="cmake g++"
WANT="ninja-build ccache llvm-19-dev"
case "$group" in
  run) NEED="$NEED dataset-fashion-mnist"; WANT="$WANT clang" ;;
  all)
    # libclang-rt-14-dev: clang's libFuzzer and sanitizer runtimes, for make fuzz; abigail-tools: abidw and abidiff, for
    # make test-abi
    NEED="$NEED ninja-build clang llvm-19-dev pkg-config ccache libgtest-dev libbenchmark-dev libopenblas-dev libsqlite3-dev python3-numpy"
    NEED="$NEED python3-pytest python3-pytest-xdist python3-torch libclang-rt-14-dev zlib1g-dev dataset-fashion-mnist opencl-headers"
    NEED="$NEED ocl-icd-libopencl1 pocl-opencl-icd abigail-tools"
    # ONNX: the conformance suite's node tests (model + expected outputs), the onnx package and torchvision's models for
    # the tests that export models from PyTorch
    NEED="$NEED libonnx-testdata python3-onnx python3-torchvision"
    # ONNX Runtime, the reference, comes from the npm registry as onnxruntime-node (scripts/ort.sh): node runs it
    command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || NEED="$NEED nodejs npm"
    # ARM: the cross compilers (with their C libraries; C++ for the library's aarch64 build) and qemu's user-mode emulators,
    # for the C export's checks and the library built for and run on aarch64
    NEED="$NEED gcc-aarch64-linux-gnu g++-aarch64-linux-gnu gcc-arm-linux-gnueabihf libc6-dev-arm64-cross libc6-dev-armhf-cross qemu-user"
    # the language bindings' toolchains (bindings/): Go (cgo), C# (mono's compiler and runtime), and Rust's cargo unless a
    # Rust toolchain is already installed (rustup's in ~/.cargo/bin counts)
    NEED="$NEED golang-go mono-mcs mono-runtime"
    command -v cargo >/dev/null 2>&1 || [ -x "$HOME/.cargo/bin/cargo" ] || NEED="$NEED cargo"
    # VIZ's browser test: Debian's chromium, driven headless by npm's puppeteer-core (scripts/viz_deps.sh)
    NEED="$NEED chromium"
    # the communicator's tests: Open MPI's mpirun and libmpi.so.40 (the library dlopens it; mpi.h is not used)
    NEED="$NEED openmpi-bin libopenmpi-dev"
    WANT="" ;;
  *) echo "deps.sh: unknown group '$group' (all, run)" >&2; exit 2 ;;
esac
missing() {
  m=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || m="$m $p"
  done
  echo "$m"
}
# without dpkg (not Debian) nothing can be checked or installed: the build says what it lacks
command -v dpkg-query >/dev/null 2>&1 || exit 0
need=$(missing $NEED)
want=$(missing $WANT)
[ -z "$need$want" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  [ -n "$want" ] && echo "optional Debian packages not installed:$want (sudo apt-get install$want)" >&2
  if [ -n "$need" ]; then
    echo "missing Debian packages:$need (run 'make deps' as root, or: sudo apt-get install$need)" >&2
    exit 1
  fi
  exit 0
fi
echo "installing:$need$want"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $need $want >/dev/null
