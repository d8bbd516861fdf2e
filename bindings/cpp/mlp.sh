#!/bin/sh
# The mlp program (examples/c/mlp_sgd.c's recipe) through include/tinygrad.hpp: its output only, on stdout.
set -e
build=$("$(cd "$(dirname "$0")" && pwd)/build.sh")
exec "$build/example_cpp_mlp"
