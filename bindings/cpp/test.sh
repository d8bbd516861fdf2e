#!/bin/sh
# The C++ wrapper's tests: include/tinygrad.hpp compiles as C++17 too, then tg_cpp_tests (GoogleTest) runs.
set -e
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$("$here/build.sh")
for f in "$repo/tests/cpp/test_hpp.cpp" "$here/mlp.cpp"; do
  ${CXX:-c++} -std=c++17 -fsyntax-only -Wall -Wextra -pedantic -Werror -DTG_BUILD_DIR="\"$build\"" -I"$repo/include" "$f"
done
cd "$build" && ./tg_cpp_tests --gtest_brief=1
