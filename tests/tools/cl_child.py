"""Tests of settings the CL device reads once (EMULATE, ALLOW_TF32, TG_GPU_STAGE_TILE) run their script in a fresh
process. PRELUDE opens CL (printing SKIP and leaving when there is none) and defines `check(name, got, want, rtol)`:
the largest error relative to |want| + 1, asserted and printed. run() starts the child and returns its stderr (with
DEBUG=4, every kernel's source)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

PRELUDE = r"""
import sys
import numpy as np
from tinygrad_c import Device, Tensor, TinygradError, dtypes
try:
  Device.open("CL")
except TinygradError as e:
  print("SKIP", e)
  sys.exit(0)
def check(name, got, want, rtol):
  err = np.abs(got.astype(np.float64) - want) / (np.abs(want) + 1)
  assert err.max() <= rtol, f"{name}: max relative error {err.max()} at {np.unravel_index(err.argmax(), err.shape)}"
  print(name, "ok", err.max())
"""


def run(script, env_extra, args=()):
  """Runs PRELUDE + script with DEV=CL, DEBUG=4 and `env_extra`; skips the test where CL is absent; the script must
  print DONE."""
  root = Path(__file__).resolve().parents[2]
  env = dict(os.environ, DEV="CL", DEBUG="4", PYTHONPATH=str(root / "bindings" / "python"), **env_extra)
  r = subprocess.run([sys.executable, "-c", PRELUDE + script, *args], env=env, capture_output=True, text=True, timeout=900)
  if r.stdout.startswith("SKIP"): pytest.skip(r.stdout.strip())
  assert r.returncode == 0 and "DONE" in r.stdout, (r.stdout + r.stderr)[-6000:]
  return r.stderr
