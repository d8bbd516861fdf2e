#!/usr/bin/env python3
"""The layering check: every folder of src/ includes only folders below it in the pipeline (docs/layers.md).

  check_layers.py [SRC]           fail (exit 1) on each include that looks up the order
  check_layers.py --graph [SRC]   print the folder include graph (edges with their counts) and the violations, exit 0
"""
import collections, os, re, sys

# top to bottom: a folder may include itself and any folder after it
ORDER = ["api", "onnx", "nn", "tensor", "engine", "schedule", "codegen", "runtime", "renderer", "viz", "uop", "helpers"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder(rel):  # "codegen/opt/beam.cpp" -> "codegen", "helpers.h" -> "helpers"
  return rel.split("/")[0] if "/" in rel else "helpers"


def edges(src):
  out = []  # (from file, to file), both relative to src/
  for root, _, files in os.walk(src):
    for f in sorted(files):
      if not f.endswith((".h", ".cpp")): continue
      rel = os.path.relpath(os.path.join(root, f), src)
      for inc in INCLUDE.findall(open(os.path.join(root, f), encoding="utf-8").read()):
        if inc == "tinygrad.h": continue  # the public header (include/) is below everything
        target = inc if os.path.exists(os.path.join(src, inc)) else os.path.normpath(os.path.join(os.path.dirname(rel), inc))
        if os.path.exists(os.path.join(src, target)): out.append((rel, target))
  return out


def graph(es):
  g = collections.Counter()
  for a, b in es:
    fa, fb = folder(a), folder(b)
    if fa != fb: g[(fa, fb)] += 1
  return g


def upward(es):
  bad = []
  for a, b in es:
    fa, fb = folder(a), folder(b)
    if fa not in ORDER or fb not in ORDER: bad.append((a, b, f"folder not in the documented order: {fa if fa not in ORDER else fb}"))
    elif ORDER.index(fb) < ORDER.index(fa): bad.append((a, b, f"{fa} looks up at {fb}"))
  return bad


def main(argv):
  show = "--graph" in argv
  args = [a for a in argv if a != "--graph"]
  src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
  es = edges(src)
  bad = upward(es)
  if show:
    print("order: " + " -> ".join(ORDER))
    for (a, b), n in sorted(graph(es).items(), key=lambda e: (ORDER.index(e[0][0]) if e[0][0] in ORDER else 99, e[0][1])):
      print(f"  {a:9s} -> {b:9s} {n:3d}{'   UPWARD' if b in ORDER and a in ORDER and ORDER.index(b) < ORDER.index(a) else ''}")
  for a, b, why in bad: print(f"layers: src/{a} includes {b}: {why}")
  if show: return 0
  if not bad: print(f"layers: {len(es)} includes in {len({a for a, _ in es})} files follow the order")
  return 1 if bad else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
