#!/bin/sh
# make test-libonly's checks on a library built with nothing but cmake and a compiler ($1, the build directory):
# it loads needing only the C and C++ runtimes, and its mlp_sgd.c (a training run) prints what the full build's ($2)
# prints on DEV=CPU:CLANG, the same C renderer and compiler, bit for bit.
set -e
lib="$1/libtinygrad.so"
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for n in $needed; do
  case "$n" in
    libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*|libpthread.so.*|libdl.so.*) ;;
    *) echo "check_libonly: $lib needs $n at load time; a compiler-only build must need only the C/C++ runtimes" >&2; exit 1 ;;
  esac
done
# no LLVM in this build: DEV=CPU compiles kernels with the C compiler
out=$(DEV=CPU "$1/example_mlp_sgd")
ref=$(DEV=CPU:CLANG "$2/example_mlp_sgd")
if [ "$out" != "$ref" ]; then
  echo "check_libonly: mlp_sgd.c from the compiler-only build printed" >&2; echo "$out" >&2
  echo "check_libonly: the full build printed" >&2; echo "$ref" >&2
  exit 1
fi
echo "library-only build: loads with $(echo $needed | tr ' ' ','); mlp_sgd.c trains to the full build's losses on CPU:CLANG"
