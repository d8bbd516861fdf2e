# The GPU heuristics' staged matmuls (both inputs copied into local memory by the whole work-group, 16 reduce steps at a
# time) and tf32 tensor cores, end to end on the CL device (PoCL in CI), each in a fresh process: the settings that turn
# them on there are read once. PoCL is an OpenCL device of CPU cores, which stages nothing unless TG_GPU_STAGE_TILE asks
# (a GPU does by default); ALLOW_TF32=1 with EMULATE=CUDA gives the CL device CUDA's tensor cores with tf32.
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = r"""
import sys
import numpy as np
from tinygrad_c import Device, Tensor, TinygradError, dtypes
try:
  Device.open("CL")
except TinygradError as e:
  print("SKIP", e)
  sys.exit(0)
rng = np.random.default_rng(11)
def r(*s): return rng.uniform(-1, 1, s).astype(np.float32)
def check(name, got, want, rtol):
  err = np.abs(got.astype(np.float64) - want) / (np.abs(want) + 1)
  assert err.max() <= rtol, f"{name}: max relative error {err.max()} at {np.unravel_index(err.argmax(), err.shape)}"
  print(name, "ok", err.max())
RTOL = float(sys.argv[1])
# shapes the staged tile takes (N a multiple of 16 x tile, M of 8 x tile, K of 16), one batched
for sa, sb in [((64, 256), (256, 128)), ((128, 48), (48, 64)), ((2, 32, 64), (2, 64, 64))]:
  a, b = r(*sa), r(*sb)
  check(f"{sa}@{sb}", (Tensor(a, device="CL") @ Tensor(b, device="CL")).numpy(), a.astype(np.float64) @ b.astype(np.float64), RTOL)
# a linear layer's forward (bias and ReLU after the product) and backward (two more products)
x, w, bias = r(64, 96), r(96, 128), r(128)
tx, tw, tb = (Tensor(v, device="CL", requires_grad=True) for v in (x, w, bias))
y = (tx @ tw + tb).relu()
ref = np.maximum(x.astype(np.float64) @ w + bias, 0)
check("linear", y.numpy(), ref, RTOL)
y.sum().backward()
g = (ref > 0).astype(np.float64)
check("linear grad x", tx.grad.numpy(), g @ w.T.astype(np.float64), RTOL)
check("linear grad w", tw.grad.numpy(), x.T.astype(np.float64) @ g, RTOL)
print("DONE")
"""


def run(env_extra, rtol):
  root = Path(__file__).resolve().parents[2]
  env = dict(os.environ, DEV="CL", DEBUG="4", PYTHONPATH=str(root / "bindings" / "python"), **env_extra)
  r = subprocess.run([sys.executable, "-c", SCRIPT, str(rtol)], env=env, capture_output=True, text=True, timeout=900)
  if r.stdout.startswith("SKIP"): pytest.skip(r.stdout.strip())
  assert r.returncode == 0 and "DONE" in r.stdout, (r.stdout + r.stderr)[-6000:]
  return r.stderr  # DEBUG=4: every kernel's source


def test_staged_matmuls_match_numpy():
  src = run({"TG_GPU_STAGE_TILE": "4"}, 1e-5)
  assert "__local float temp1000[" in src and "barrier(CLK_LOCAL_MEM_FENCE);" in src, "no matmul was staged in local memory"


def test_tf32_tensor_cores_match_numpy():
  # the emulation multiplies in float32 (no rounding to tf32's 10 bits): the tolerance is float32's
  src = run({"EMULATE": "CUDA", "ALLOW_TF32": "1"}, 1e-5)
  assert "tg_wmma_8_16_8_float32_float32(" in src, "no float32 matmul ran on the (emulated) tf32 tensor cores"
