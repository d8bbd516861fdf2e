"""The OpenCL row of the benchmark (PoCL on this machine's CPU cores, where OpenCL is installed): a 1024^3 float32
matmul on the CL device with its heuristics, against the CPU device's own heuristics kernel of the same product in the
same process. A GPU's heuristics stage a matmul's inputs in local memory (PACK); an OpenCL device of CPU cores doesn't
by default, and the same product staged (TG_GPU_STAGE_TILE=4, in a child process: settings are read once) is printed
beside it.

  cl matmul 1024 : GFLOP/s of the CL kernel; reference: the CPU device's kernel; ratio = CL / CPU

usage: bench_cl.py [OUT.json]     (TINYGRAD_LIB names the library; medians of 7 runs after 2 warm-ups)
"""
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bindings" / "python"))
import numpy as np  # noqa: E402

from tinygrad_c import Device, Tensor  # noqa: E402


def gflops(dev, n=1024):
  rng = np.random.default_rng(0)
  a_np, b_np = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
  a, b = Tensor(a_np, device=dev).realize(), Tensor(b_np, device=dev).realize()
  got = (a @ b).numpy()
  ref = a_np.astype(np.float64) @ b_np.astype(np.float64)
  assert np.allclose(got, ref, rtol=1e-3, atol=1e-3), f"{dev}: the matmul disagrees with numpy"
  ts = []
  for i in range(9):
    t0 = time.perf_counter()
    (a @ b).realize()
    if i >= 2: ts.append(time.perf_counter() - t0)
  return 2 * n ** 3 / statistics.median(ts) * 1e-9


def main():
  if "--one" in sys.argv:  # the child: one figure
    print(gflops("CL"))
    return
  try:
    Device.open("CL")
  except Exception as e:  # noqa: BLE001
    print(f"bench_cl: no OpenCL device here, the cl row is skipped ({e})")
    return
  ours, cpu = gflops("CL"), gflops("CPU")
  env = dict(os.environ, TG_GPU_STAGE_TILE="4")
  staged = float(subprocess.run([sys.executable, __file__, "--one"], env=env, capture_output=True, text=True, check=True).stdout.split()[-1])
  row = {"name": "cl matmul 1024", "value": round(ours, 3), "unit": "GFLOP/s", "reference": "CPU device heuristics kernel",
         "reference_value": round(cpu, 3), "ratio": round(ours / cpu, 3)}
  print(f"cl matmul 1024: {ours:.1f} GFLOP/s (heuristics), {staged:.1f} staged in local memory (TG_GPU_STAGE_TILE=4); "
        f"the CPU device's kernel {cpu:.1f}", flush=True)
  if len(sys.argv) > 1:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import merge_rows
    merge_rows.merge(sys.argv[1], [row])


if __name__ == "__main__":
  main()
