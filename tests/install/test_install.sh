#!/bin/sh
# Install a built tree into a temporary DESTDIR and use it from the outside, as a packager and a C user would:
# pkg-config + cc against the shared library, a CMake project through find_package (shared and static), and the
# shared library's exports (only tg_ symbols) and SONAME. Usage: sh tests/install/test_install.sh <build-dir>
# Needs cmake, cc, pkg-config, nm, readelf; no root (everything happens under a temporary directory).
set -u

[ $# -eq 1 ] || { echo "usage: sh $0 <build-dir>" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" 2>/dev/null && pwd) || { echo "FAIL: build dir '$1' does not exist" >&2; exit 1; }
so="$build/libtinygrad.so"
[ -e "$so" ] || { echo "FAIL: $so not found (build first: make build)" >&2; exit 1; }
for tool in cmake cc pkg-config nm readelf; do
  command -v "$tool" >/dev/null 2>&1 || { echo "FAIL: '$tool' is not installed" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tg-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
dest="$tmp/dest"
prefix="$dest/usr/local"
failed=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }
# run a step quietly; on failure show its log
step() {  # step <log-name> <command...>
  log="$tmp/$1.log"
  shift
  "$@" >"$log" 2>&1 && return 0
  sed 's/^/    | /' "$log" | tail -n 12
  return 1
}
# the libtinygrad.so a binary resolves at run time must be the one under DESTDIR
resolves_into_dest() {  # resolves_into_dest <binary>
  lib=$(env LD_LIBRARY_PATH="$libdir" ldd "$1" 2>/dev/null | sed -n 's/.*libtinygrad\.so[^ ]* => \([^ ]*\).*/\1/p')
  case "$lib" in "$dest"/*) return 0 ;; esac
  echo "    libtinygrad resolved to '${lib:-nothing}', not into $dest"
  return 1
}

# ---- exports and SONAME of the built library ----
syms=$(nm -D --defined-only "$so" | awk '{print $NF}' | sed 's/@.*//')
linker_syms=$(printf '%s\n' "$syms" | grep -E '^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_)$' | tr '\n' ' ')
# (a version node's name, TINYGRAD_0.1, is listed as an absolute symbol: it is the node, not an export)
foreign=$(printf '%s\n' "$syms" | grep -v -E '^(tg_|$)' | grep -v -E '^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_|TINYGRAD_[0-9]+\.[0-9]+)$')
ntg=$(printf '%s\n' "$syms" | grep -c '^tg_')
[ -n "$linker_syms" ] && echo "note: linker symbols exported (ignored): $linker_syms"
if [ -z "$foreign" ] && [ "$ntg" -gt 0 ]; then
  pass "exports: $ntg symbols, all tg_"
else
  fail "exports: $(printf '%s\n' "$foreign" | grep -c .) non-tg_ symbols exported by $so (and $ntg tg_), e.g.:"
  printf '%s\n' "$foreign" | head -n 8 | sed 's/^/    /'
fi
# every tg_ symbol carries a version node of cmake/tinygrad.map (TINYGRAD_0.1, ...), so programs record which they need
unversioned=$(nm -D --defined-only "$so" | awk '$NF ~ /^tg_/ && $NF !~ /@@TINYGRAD_[0-9]+\.[0-9]+$/ {print $NF}')
if [ -z "$unversioned" ]; then pass "versions: every tg_ symbol carries a TINYGRAD_ node ($(nm -D --defined-only "$so" | sed -n 's/^.* tg_version@@//p'))"
else fail "versions: tg_ symbols without a TINYGRAD_ version node, e.g. $(printf '%s\n' "$unversioned" | head -n 3 | tr '\n' ' ')"; fi
soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ "$soname" = "libtinygrad.so.0" ]; then pass "SONAME is $soname"; else fail "SONAME is '${soname:-none}', expected libtinygrad.so.0"; fi

# ---- install into DESTDIR ----
if step install env DESTDIR="$dest" cmake --install "$build" --prefix /usr/local; then
  pass "cmake --install into DESTDIR"
else
  fail "cmake --install into DESTDIR"
  echo "FAIL: $failed install check(s) failed"
  exit 1
fi
pcfile=$(find "$prefix" -name tinygrad.pc | head -n 1)
libdir=$(dirname "$(find "$prefix" -name 'libtinygrad.so*' | head -n 1)")
missing=""
[ -e "$prefix/include/tinygrad.h" ] || missing="$missing include/tinygrad.h"
for f in libtinygrad.so libtinygrad.so.0 libtinygrad.a; do [ -e "$libdir/$f" ] || missing="$missing <libdir>/$f"; done
[ -n "$pcfile" ] || missing="$missing tinygrad.pc"
[ -n "$(find "$prefix" -name tinygradConfig.cmake)" ] || missing="$missing tinygradConfig.cmake"
if [ -z "$missing" ]; then pass "installed files: header, libtinygrad.so{,.0}, libtinygrad.a, tinygrad.pc, CMake package"; else fail "installed files missing:$missing"; fi

# ---- (a) pkg-config + cc, shared library ----
pcdir=$(dirname "${pcfile:-$prefix/lib/pkgconfig/tinygrad.pc}")
pc() { PKG_CONFIG_PATH="$pcdir" PKG_CONFIG_LIBDIR="$pcdir" pkg-config --define-prefix "$@"; }
cflags=$(pc --cflags tinygrad 2>/dev/null) && libs=$(pc --libs tinygrad 2>/dev/null) && modversion=$(pc --modversion tinygrad 2>/dev/null)
case "${cflags:-} ${libs:-}" in
  *"$prefix"*) pass "pkg-config --define-prefix points into DESTDIR ($libs)" ;;
  *) fail "pkg-config flags do not point into DESTDIR: cflags='${cflags:-}' libs='${libs:-}'" ;;
esac
# shellcheck disable=SC2086 # flags are word lists
if step cc-pkgconfig cc -std=c99 -Wall -Wextra -pedantic -Werror $cflags "$here/consumer.c" -o "$tmp/consumer-pc" $libs; then
  if step run-pkgconfig env LD_LIBRARY_PATH="$libdir" "$tmp/consumer-pc" && resolves_into_dest "$tmp/consumer-pc"; then
    v=$(sed -n 's/^tinygrad //p' "$tmp/run-pkgconfig.log")
    if [ "$v" = "${modversion:-}" ]; then pass "(a) pkg-config + cc: built, ran, tg_version $v == pkg-config --modversion"
    else fail "(a) pkg-config + cc: tg_version '$v' != pkg-config --modversion '${modversion:-}'"; fi
  else
    fail "(a) pkg-config + cc: consumer failed at run time"
  fi
else
  fail "(a) pkg-config + cc: consumer did not build"
fi
# (a') pkg-config --static: the same program linked against libtinygrad.a with Libs.private
slibs=$(pc --static --libs tinygrad 2>/dev/null | sed 's/$/ /; s/-ltinygrad /-Wl,-Bstatic -ltinygrad -Wl,-Bdynamic /')
# shellcheck disable=SC2086
if step cc-pkgconfig-static cc -std=c99 $cflags "$here/consumer.c" -o "$tmp/consumer-pc-static" $slibs; then
  if step run-pkgconfig-static "$tmp/consumer-pc-static"; then pass "(a') pkg-config --static + cc: built against libtinygrad.a, ran"
  else fail "(a') pkg-config --static + cc: consumer failed at run time"; fi
elif grep -q -E "undefined reference to .*(std::|__cxa_|operator new|__gxx_personality)" "$tmp/cc-pkgconfig-static.log"; then
  fail "(a') pkg-config --static + cc: the C++ runtime is missing (fix in cmake/tinygrad.pc.in: Libs.private: -lstdc++ ...)"
else
  fail "(a') pkg-config --static + cc: consumer did not build"
fi
# (a'') the installed C++ wrapper: the mlp program of bindings/cpp through <tinygrad.hpp>, against the shared library
# shellcheck disable=SC2086
if step cxx-hpp c++ -std=c++17 -Wall -Wextra -pedantic -Werror $cflags "$here/../../bindings/cpp/mlp.cpp" -o "$tmp/cxx-hpp" $libs; then
  if step run-cxx-hpp env LD_LIBRARY_PATH="$libdir" "$tmp/cxx-hpp" && grep -q '^live handles: 0$' "$tmp/run-cxx-hpp.log"; then
    pass "(a'') c++ with the installed tinygrad.hpp: built, ran, released every handle"
  else fail "(a'') c++ with the installed tinygrad.hpp: the program failed"; fi
else
  fail "(a'') c++ with the installed tinygrad.hpp: did not build (is include/tinygrad.hpp installed?)"
fi

# ---- (b), (c) a CMake project: find_package(tinygrad) with tinygrad::tinygrad, then tinygrad::tinygrad_static ----
cmake_consumer() {  # cmake_consumer <name> <TG_STATIC ON|OFF>
  bdir="$tmp/cmake-$1"
  step "cmake-$1-configure" cmake -S "$here" -B "$bdir" -DCMAKE_PREFIX_PATH="$prefix" -DTG_STATIC="$2" -DCMAKE_BUILD_TYPE=Release || return 1
  case "$(sed -n 's/^tinygrad_DIR:PATH=//p' "$bdir/CMakeCache.txt")" in
    "$dest"/*) ;;
    *) echo "    find_package found tinygrad outside DESTDIR: $(sed -n 's/^tinygrad_DIR:PATH=//p' "$bdir/CMakeCache.txt")"; return 1 ;;
  esac
  step "cmake-$1-build" cmake --build "$bdir" || return 2
  step "cmake-$1-run" env LD_LIBRARY_PATH="$libdir" "$bdir/consumer" || return 3
}
if cmake_consumer shared OFF && resolves_into_dest "$tmp/cmake-shared/consumer"; then
  pass "(b) CMake find_package + tinygrad::tinygrad: built and ran"
else
  fail "(b) CMake find_package + tinygrad::tinygrad"
fi
cmake_consumer static ON
rc=$?
if [ $rc -eq 0 ]; then
  if readelf -d "$tmp/cmake-static/consumer" | grep -q 'NEEDED.*libtinygrad'; then
    fail "(c) CMake tinygrad::tinygrad_static: the program still needs libtinygrad.so"
  else
    pass "(c) CMake tinygrad::tinygrad_static: built, ran, no libtinygrad.so needed"
  fi
elif [ $rc -eq 2 ] && grep -q -E "undefined reference to .*(std::|__cxa_|operator new|__gxx_personality)" "$tmp/cmake-static-build.log"; then
  fail "(c) CMake tinygrad::tinygrad_static: a C program cannot link it, the exported target lacks the C++ runtime
    (fix in CMakeLists.txt: target_link_libraries(tinygrad_static INTERFACE \$<\$<LINK_LANGUAGE:C>:stdc++> m))"
else
  fail "(c) CMake tinygrad::tinygrad_static"
fi

if [ "$failed" -eq 0 ]; then echo "PASS: all install checks"; exit 0; fi
echo "FAIL: $failed install check(s) failed"
exit 1
