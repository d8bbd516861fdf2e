"""The distributed rows of bench/results.json, run under Open MPI's mpirun on this machine:

- allreduce 16MB 2 ranks: tg_comm_allreduce of 16 MB of float32 against MPI_Allreduce called directly from C, in the
  same two processes, rounds alternating (bench/bench_mpi.c); GB/s = 16 MB / median time; ratio = ours / direct.
- ddp step overhead: examples/c/train_fashion_mnist.c trained data-parallel on 2 ranks x 64 images (1 CPU thread each,
  the machine's 2 cores) against one process training batch 64 on 1 thread: the step time's excess in %; ratio = the
  one process's step time / the data-parallel one (1.0: no overhead).

- allreduce 16MB 4 devices: tg_tensor_allreduce (ring) of 16 MB of float32 on CPU, CPU:1, CPU:2, CPU:3 in one process,
  captured by TinyJit (warm replays), against a 16 MB memcpy (numpy copyto) on the same machine; GB/s = 16 MB / median
  time; ratio = ours / memcpy.

usage: bench_mpi.py results.json   (rows replace those of the same name)"""
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import merge_rows  # bench/, this script's directory

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("TINYGRAD_LIB", ROOT / "build" / "libtinygrad.so")).resolve().parent
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
MPIRUN = [shutil.which("mpirun") or "mpirun", "--allow-run-as-root", "--oversubscribe"]
STEPS = 1500


def run(cmd, env=ENV):
  r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=900)
  if r.returncode != 0: sys.exit(f"{' '.join(map(str, cmd))} failed:\n{r.stdout}{r.stderr}")
  return r.stdout


def train_seconds(cmd, env=ENV):
  out = run(cmd, env)
  return float(re.search(r"trained \d+ steps of batch \d+ in ([0-9.]+) s", out).group(1))


def main(out_path):
  rows = []
  # three runs of 30 alternating rounds each: the median of their medians
  runs = [run(MPIRUN + ["-np", "2", BUILD / "bench_mpi", 16 << 20]).split() for _ in range(3)]
  direct = statistics.median(float(r[3]) for r in runs)
  ours = statistics.median(float(r[4]) for r in runs)
  gb = (16 << 20) / 1e9
  rows.append({"name": "allreduce 16MB 2 ranks", "value": round(gb / ours, 3), "unit": "GB/s",
               "reference": "MPI_Allreduce called directly from C (Open MPI, same processes, rounds alternating)",
               "reference_value": round(gb / direct, 3), "ratio": round(direct / ours, 3)})
  print(f"allreduce 16MB 2 ranks: {gb / ours:.2f} GB/s, MPI_Allreduce {gb / direct:.2f} GB/s", flush=True)
  exe, data = BUILD / "example_train_fashion_mnist", ["", os.devnull]
  one_env = dict(ENV, NUM_CPU_THREADS="1")
  single, ddp = [], []
  for i in range(3):  # the first of each warms the kernel cache; the step rates of the others are compared
    s = train_seconds([exe, "--batch", "64", STEPS] + data, one_env)
    d = train_seconds(MPIRUN + ["-np", "2", exe, "--ddp", "--batch", "128", STEPS] + data)
    if i: single.append(s), ddp.append(d)
  s, d = statistics.median(single), statistics.median(ddp)
  rows.append({"name": "ddp step overhead", "value": round((d / s - 1) * 100, 1), "unit": "%",
               "reference": "one process, batch 64, 1 thread (2 ranks x 64, 1 thread each)", "reference_value": round(s / STEPS * 1e3, 3),
               "ratio": round(s / d, 3)})
  print(f"ddp step: {d / STEPS * 1e3:.3f} ms on 2 ranks x 64, {s / STEPS * 1e3:.3f} ms alone at 64: overhead {(d / s - 1) * 100:.1f}%", flush=True)
  rows.append(devices_row())
  merge_rows.merge(out_path, rows)


def devices_row():
  import time
  import numpy as np
  sys.path.insert(0, str(ROOT / "bindings" / "python"))
  from tinygrad_c import Tensor, TinyJit
  from tinygrad_c.comm import allreduce_devices
  n, devs = (16 << 20) // 4, ["CPU", "CPU:1", "CPU:2", "CPU:3"]
  ts = [Tensor(np.full(n, k, np.float32), device=d).realize() for k, d in enumerate(devs)]
  step = TinyJit(lambda *xs: [o.realize() for o in allreduce_devices(xs)])
  src, dst = np.ones(n, np.float32), np.empty(n, np.float32)

  def timed(f, reps=20):
    f(), f(), f()  # capture, then warm
    times = []
    for _ in range(reps):
      t0 = time.perf_counter()
      f()
      times.append(time.perf_counter() - t0)
    return statistics.median(times)
  ours, ref = [], []
  for _ in range(3):  # alternating, the median of medians
    ours.append(timed(lambda: step(*ts)))
    ref.append(timed(lambda: np.copyto(dst, src)))
  assert (step(*ts)[2].numpy() == 6).all()
  gb = (16 << 20) / 1e9
  o, r = statistics.median(ours), statistics.median(ref)
  print(f"allreduce 16MB 4 devices: {gb / o:.2f} GB/s (ring, {o * 1e3:.2f} ms), memcpy {gb / r:.2f} GB/s", flush=True)
  return {"name": "allreduce 16MB 4 devices", "value": round(gb / o, 3), "unit": "GB/s",
          "reference": "a 16 MB memcpy (numpy copyto) in the same process", "reference_value": round(gb / r, 3), "ratio": round(r / o, 3)}


if __name__ == "__main__":
  main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "bench" / "results.json"))
