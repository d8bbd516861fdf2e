#!/bin/sh
# The mlp program (examples/mlp_sgd.py, the same as examples/c/mlp_sgd.c) through the Python binding.
# TINYGRAD_BUILD: the build directory holding libtinygrad.so (default: the repository's build/).
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${TINYGRAD_BUILD:-$here/../../build}
TINYGRAD_LIB=$build/libtinygrad.so PYTHONPATH=$here exec "${PYTHON:-/usr/bin/python3}" "$here/examples/mlp_sgd.py"
