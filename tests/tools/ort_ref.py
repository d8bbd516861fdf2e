"""ONNX Runtime as a reference from Python: the onnxruntime-node package (npm, installed under build/ort by
scripts/ort.sh) run through tests/tools/ort_run.js in a node process."""
import json
import os
import subprocess
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORT_DIR = os.environ.get("TG_ORT_DIR", os.path.join(ROOT, "build", "ort", "node_modules"))
TYPES = {np.float32: "float32", np.float64: "float64", np.int64: "int64", np.int32: "int32", np.int8: "int8", np.uint8: "uint8",
         np.bool_: "bool", np.int16: "int16", np.uint16: "uint16"}


def available():
  return os.path.isdir(os.path.join(ORT_DIR, "onnxruntime-node"))


def run(model_path, feeds, threads=1, runs=0, warmup=0):
  """(outputs as numpy arrays in the model's order, times of `runs` runs in ms, ms from session creation to the first
  output) for `feeds` ({name: numpy array})."""
  with tempfile.TemporaryDirectory() as d:
    inputs = []
    for i, (name, a) in enumerate(feeds.items()):
      a = np.ascontiguousarray(a)
      f = os.path.join(d, f"in{i}.bin")
      a.tofile(f)
      inputs.append({"name": name, "type": TYPES[a.dtype.type], "dims": list(a.shape), "file": f})
    spec = os.path.join(d, "spec.json")
    with open(spec, "w") as f:
      json.dump({"ort": ORT_DIR, "model": os.path.abspath(model_path), "threads": threads, "runs": runs, "warmup": warmup, "inputs": inputs,
                 "out_dir": d}, f)
    r = subprocess.run(["node", os.path.join(ROOT, "tests", "tools", "ort_run.js"), spec], capture_output=True, text=True, timeout=600)
    if r.returncode != 0: raise RuntimeError(f"onnxruntime failed: {r.stderr[-2000:]}")
    res = json.loads(r.stdout)
    back = {v: k for k, v in TYPES.items()}
    outs = [np.fromfile(o["file"], dtype=back[o["type"]]).reshape(o["dims"]) for o in res["outputs"]]
    return outs, res["times_ms"], res["load_ms"]
