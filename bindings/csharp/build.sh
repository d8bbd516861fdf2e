#!/bin/sh
# Compiles the binding into $1: Tinygrad.dll (+ its dllmap config), Mlp.exe (examples/Mlp.cs), Tests.exe (tests/Tests.cs).
set -e
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR}
mkdir -p "$out"
cs="mcs -langversion:7.2 -nologo -warnaserror+"
# 1591: undocumented public members of the raw layer are documented by their C names
$cs -unsafe -target:library -nowarn:1591 -out:"$out/Tinygrad.dll" "$here/Native.g.cs" "$here/Api.g.cs" "$here/Tinygrad.cs"
cp "$here/Tinygrad.dll.config" "$out/"
$cs -r:"$out/Tinygrad.dll" -r:System.Numerics.dll -out:"$out/Mlp.exe" "$here/examples/Mlp.cs"
$cs -r:"$out/Tinygrad.dll" -out:"$out/Tests.exe" "$here/tests/Tests.cs"
