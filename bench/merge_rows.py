"""Merges benchmark rows into a results file: the new rows replace those of the same name in the file (created when
absent), the others stay, so a run that measures some rows (bench_ops; the CUDA rows only where a GPU is; each of
bench_onnx.py, bench_llm.py, bench_mpi.py) never drops the rest.
usage: merge_rows.py results.json new.json"""
import json
import os
import sys


def merge(results_path, new):
  """Writes `new` (a list of rows) into results_path in place of the rows of the same names."""
  rows = json.load(open(results_path)) if os.path.exists(results_path) else []
  names = {r["name"] for r in new}
  with open(results_path, "w") as f: json.dump([r for r in rows if r["name"] not in names] + new, f, indent=1)


if __name__ == "__main__":
  merge(sys.argv[1], json.load(open(sys.argv[2])))
