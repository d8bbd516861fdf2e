"""The ONNX rows of bench/results.json: ResNet-18, MobileNetV2 and a BERT-tiny-sized encoder (2 layers, 128 wide, 2
heads, 128 tokens) exported from PyTorch with random weights, batch 1, run by the library (tinygrad_c's OnnxRunner: a
captured JIT replayed) and by ONNX Runtime (onnxruntime-node, graph optimizations on, sequential) at 1 and 2 threads,
each side in a process of its own. Value: median latency in ms of RUNS runs after warm-up; ratio = ONNX Runtime's time /
ours (higher is better for us). `beam2 onnx ...`: ours again with BEAM=2 (searched in a fresh kernel cache, then
timed; TG_BENCH_ONNX_BEAM sets the width, 0 skips these rows), against the same ONNX Runtime times. `onnx load
resnet18`: ms from the file to the first output, ours with an empty kernel cache against ORT's session creation and
first run; `... warm`: ours again with the kernels cached.
usage: bench_onnx.py results.json   (rows replace those of the same name)"""
import os
import statistics
import subprocess
import sys
import tempfile

import merge_rows  # bench/, this script's directory

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
RUNS = int(os.environ.get("TG_BENCH_ONNX_RUNS", "20"))
BEAM = int(os.environ.get("TG_BENCH_ONNX_BEAM", "2"))


def models(d):
  import torch
  import torchvision
  from onnx_models import Encoder, export
  torch.manual_seed(0)
  out = {}
  for name, m, args, names in [("resnet18", torchvision.models.resnet18(), (torch.randn(1, 3, 224, 224),), ["input"]),
                               ("mobilenetv2", torchvision.models.mobilenet_v2(), (torch.randn(1, 3, 224, 224),), ["input"]),
                               ("bert-tiny", Encoder(d=128, heads=2, layers=2, seq=128),
                                (torch.randint(0, 1000, (1, 128)), torch.ones(1, 128, dtype=torch.int64)), ["input_ids", "attention_mask"])]:
    path = os.path.join(d, name + ".onnx")
    with open(path, "wb") as f: f.write(export(m, args, names))
    out[name] = (path, {n: a.numpy() for n, a in zip(names, args)})
  return out


def ours(path, feeds_file, threads, cache, beam=0):
  """(median ms, ms to the first output) of the library in a process with `threads` cores and kernel cache `cache`."""
  code = f"""
import sys, time, statistics, numpy as np
sys.path.insert(0, {os.path.join(ROOT, 'bindings', 'python')!r})
from tinygrad_c import Tensor
from tinygrad_c.nn.onnx import OnnxRunner
t0 = time.perf_counter()
r = OnnxRunner({path!r})
feeds = {{k: Tensor(v) for k, v in np.load({feeds_file!r}).items()}}
list(r(feeds).values())[0].numpy()
first = (time.perf_counter() - t0) * 1e3
for _ in range(3): [t.numpy() for t in r(feeds).values()]
ts = []
for _ in range({RUNS}):
  s = time.perf_counter(); outs = r(feeds); [t.realize() for t in outs.values()]; ts.append((time.perf_counter() - s) * 1e3)
print(statistics.median(ts), first)
"""
  env = dict(os.environ, NUM_CPU_THREADS=str(threads), XDG_CACHE_HOME=cache, BEAM=str(beam))
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1800)
  if r.returncode != 0: raise RuntimeError(r.stderr[-2000:])
  med, first = map(float, r.stdout.split())
  return med, first


def row(name, value, unit, ref_value):
  return {"name": name, "value": round(value, 3), "unit": unit, "reference": "ONNX Runtime 1.30 (onnxruntime-node)",
          "reference_value": round(ref_value, 3), "ratio": round(ref_value / value, 3)}


def main(out_path):
  import numpy as np
  import ort_ref
  if not ort_ref.available(): raise SystemExit("bench_onnx: ONNX Runtime is missing (scripts/ort.sh installs it)")
  rows = []
  with tempfile.TemporaryDirectory() as d:
    for name, (path, feeds) in models(d).items():
      feeds_file = os.path.join(d, name + ".npz")
      np.savez(feeds_file, **feeds)
      for threads in (1, 2):
        cache = tempfile.mkdtemp(dir=d)
        med, first = ours(path, feeds_file, threads, cache)
        _, times, load = ort_ref.run(path, feeds, threads=threads, runs=RUNS, warmup=3)
        rows.append(row(f"onnx {name} {threads}t", med, "ms", statistics.median(times)))
        print(f"onnx {name} {threads}t: ours {med:.2f} ms, ONNX Runtime {statistics.median(times):.2f} ms", flush=True)
        if BEAM > 0:
          bmed, _ = ours(path, feeds_file, threads, tempfile.mkdtemp(dir=d), beam=BEAM)
          rows.append(row(f"beam{BEAM} onnx {name} {threads}t", bmed, "ms", statistics.median(times)))
          print(f"beam{BEAM} onnx {name} {threads}t: ours {bmed:.2f} ms", flush=True)
        if name == "resnet18" and threads == 1:
          _, warm = ours(path, feeds_file, threads, cache)
          rows.append(row("onnx load resnet18", first, "ms", load))
          rows.append(row("onnx load resnet18 warm", warm, "ms", load))
          print(f"onnx load resnet18: ours {first:.0f} ms cold, {warm:.0f} ms warm, ONNX Runtime {load:.0f} ms", flush=True)
  merge_rows.merge(out_path, rows)


if __name__ == "__main__":
  main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bench", "results.json"))
