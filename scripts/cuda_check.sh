#!/usr/bin/env bash
# The GPU checks in one run, for a machine with an NVIDIA GPU, CUDA's driver and NVRTC, and a CUDA PyTorch:
# the CUDA rows of the benchmark (bench/bench_cuda.py; BEAM's row last), the Python op suites on DEV=CUDA and, with
# CTESTS=1, the C GPU tests.
#
# usage: scripts/cuda_check.sh BUILD OUTDIR [quick]
#   BUILD  a build folder holding libtinygrad.so (and tg_tests, if built with tests); built for the GPU machine,
#          e.g. `cmake -B build-gpu -DTG_WITH_LLVM=OFF` (the CUDA path doesn't use LLVM)
#   OUTDIR where the logs and bench_cuda.json (bench_cuda_beam.json: the BEAM row) go
#   quick  no BEAM row, and only the op suite in Python
# Each stage has its own time limit so one that hangs can't take the others' time; the exit status is the first
# failing stage's.
set -u
B=$(cd "$1" && pwd) O=$2 Q=${3:-}
mkdir -p "$O"
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export TINYGRAD_LIB=$B/libtinygrad.so PYTHONUNBUFFERED=1 XDG_CACHE_HOME=$(mktemp -d)
rc=0
stage() {  # stage NAME SECONDS CMD...
  local name=$1 t=$2; shift 2
  echo "=== $name ($(date +%T))"
  timeout "$t" "$@" > "$O/$name.log" 2>&1
  local r=$?
  tail -n 25 "$O/$name.log"
  echo "=== $name: rc $r"
  [ $r -ne 0 ] && [ $rc -eq 0 ] && rc=$r
  return 0
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
stage bench 200 $PY bench/bench_cuda.py "$O/bench_cuda.json" --no-beam
suites="tests/python/test_ops.py"
[ -z "$Q" ] && suites="$suites tests/python/test_grad_ops.py tests/python/test_nn.py tests/python/test_nn_index_ops.py \
  tests/python/test_optim.py tests/python/test_jit.py tests/python/test_devices.py tests/python/test_capi_more_ops.py"
stage pytest 240 env DEV=CUDA $PY -m pytest -q --maxfail=30 -n 8 -p no:cacheprovider $suites
[ -z "$Q" ] && stage beam 200 $PY bench/bench_cuda.py "$O/bench_cuda_beam.json" --beam-only
# the C GPU tests (NVRTC compiles, launch grids; the CL ones skip without OpenCL): CTESTS=1, they take minutes there
command -v clang >/dev/null || export TG_CC=${TG_CC:-gcc}  # the CPU references of the C GPU tests
[ -n "${CTESTS:-}" ] && [ -x "$B/tg_tests" ] && \
  stage ctests 200 env TG_TEST_SRC=$PWD "$B/tg_tests" --gtest_brief=1 --gtest_filter='Gpu.*:*Cuda*:*CUDA*'
exit $rc
