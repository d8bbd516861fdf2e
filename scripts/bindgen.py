#!/usr/bin/env python3
"""Generate the low-level language bindings from the API manifest (bindings/tinygrad_api.json, written by
scripts/api_manifest.py from include/tinygrad.h).

Each language is a module scripts/bindgen/<language>.py with `generate(manifest) -> {path: text}` (paths relative to
the repository root). The generated files are committed; --check fails when any differs from what the manifest gives,
so a header change that isn't carried into every binding fails the tests.

usage: bindgen.py [--check] [language ...]
"""
import argparse
import importlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LANGUAGES = ["python", "rust", "go", "csharp", "julia"]


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--check", action="store_true", help="fail if a generated file differs from the committed one")
  ap.add_argument("languages", nargs="*", default=LANGUAGES)
  a = ap.parse_args()
  sys.path.insert(0, os.path.join(ROOT, "scripts"))
  manifest = json.load(open(os.path.join(ROOT, "bindings", "tinygrad_api.json"), encoding="utf-8"))
  stale = []
  for lang in a.languages:
    files = importlib.import_module(f"bindgen.{lang}").generate(manifest)
    for rel, text in sorted(files.items()):
      path = os.path.join(ROOT, rel)
      old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
      if old == text: continue
      if a.check: stale.append(rel)
      else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f: f.write(text)
        print(f"bindgen.py: wrote {rel}")
  if stale:
    sys.stderr.write("bindgen.py: error: generated bindings are out of date (run scripts/api_manifest.py, then scripts/bindgen.py, "
                     "and commit): " + ", ".join(stale) + "\n")
    sys.exit(1)


if __name__ == "__main__":
  main()
