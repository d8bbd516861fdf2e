#!/bin/sh
# Builds the Go binding and runs its tests (go vet, gofmt, go test) against $TINYGRAD_BUILD (default: <repo>/build).
set -e
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
cd "$here"
unformatted=$(gofmt -l .)
[ -z "$unformatted" ] || { echo "gofmt: not formatted: $unformatted" >&2; exit 1; }
go vet ./...
status=0
out=$(go test -count=1 -v ./... 2>&1) || status=$?
printf '%s\n' "$out" | grep -v '^=== RUN' || true
exit $status
