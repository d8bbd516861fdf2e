# Sourced by test.sh and mlp.sh: finds cargo and the library, and keeps every build output in a cache or ./target.
here=$(cd "$(dirname "$0")" && pwd)
export TINYGRAD_BUILD="${TINYGRAD_BUILD:-$(cd "$here/../.." && pwd)/build}"
export TINYGRAD_LIB_DIR="$TINYGRAD_BUILD"
if [ -n "$XDG_CACHE_HOME" ]; then
  export CARGO_TARGET_DIR="$XDG_CACHE_HOME/tinygrad-rust-target"
else
  export CARGO_TARGET_DIR="$here/target"
fi
CARGO=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
[ -x "$CARGO" ] || { echo "cargo not found on PATH or in ~/.cargo/bin" >&2; exit 1; }
[ -f "$TINYGRAD_BUILD/libtinygrad.so" ] || { echo "no libtinygrad.so in $TINYGRAD_BUILD (set TINYGRAD_BUILD)" >&2; exit 1; }
