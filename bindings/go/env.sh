# Sourced by test.sh and mlp.sh: the library to build against, and a Go that stays offline and writes its caches
# under $XDG_CACHE_HOME (else this directory's ignored .cache), never into a read-only HOME.
here=$(cd "$(dirname "$0")" && pwd)
TINYGRAD_BUILD=${TINYGRAD_BUILD:-$(cd "$here/../.." && pwd)/build}
cache=${XDG_CACHE_HOME:-$here/.cache}/tinygrad-go
export CGO_LDFLAGS="-L$TINYGRAD_BUILD -Wl,-rpath,$TINYGRAD_BUILD" TINYGRAD_BUILD
export GOCACHE="$cache/build" GOPATH="$cache/gopath" GOTOOLCHAIN=local GOPROXY=off GOFLAGS= GO111MODULE=on
