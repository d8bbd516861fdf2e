"""Merges benchmark rows into a results file: the rows of `new` replace those of the same name in `results` (created
when absent), the others stay, so a run that measures some rows (bench_ops; the CUDA rows only where a GPU is) never
drops the rest.
usage: merge_rows.py results.json new.json"""
import json
import os
import sys


def main(results_path, new_path):
  rows = json.load(open(results_path)) if os.path.exists(results_path) else []
  new = json.load(open(new_path))
  names = {r["name"] for r in new}
  with open(results_path, "w") as f: json.dump([r for r in rows if r["name"] not in names] + new, f, indent=1)


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2])
