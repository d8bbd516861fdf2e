"""Fused multiply-add on the CPU devices (README: TG_FMA). Where the CPU has FMA, a float32/float64 a*b+c rounds once,
as tinygrad's CPU backends contract it; TG_FMA=0 rounds the product and the sum separately, as numpy does. The inputs
are chosen so the two differ: a = 1 + 2^-12 makes a*a = 1 + 2^-11 + 2^-24 exactly, which float32 rounds (a tie, to
even) to 1 + 2^-11; minus 1 that is 2^-11 in numpy and 2^-11 + 2^-24 fused. Both CPU devices fuse the same
operations (the LLVM JIT with llvm.fma, C with C99's fmaf), so they agree bit for bit either way."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tinygrad_c import Tensor

A = np.float32(1 + 2.0**-12)
FUSED, SEPARATE = np.float32(2.0**-11 + 2.0**-24), np.float32(2.0**-11)


def has_fma():
  if os.uname().machine in ("aarch64", "arm64"): return True
  with open("/proc/cpuinfo") as f: return " fma " in f.read()


def elementwise(device):
  a = Tensor(np.full(20, A, np.float32), device=device)
  return (a * a + Tensor(np.full(20, -1, np.float32), device=device)).numpy()


def inputs():
  rng = np.random.default_rng(3)
  return [rng.standard_normal(s, np.float32) for s in ((33, 200), (200, 48), (2, 3, 12, 12), (8, 3, 3, 3), (40, 3))]


def reductions(device):
  """a matmul, an unrolled short sum, a convolution: random inputs, every output's bytes"""
  x, y, img, w, short = inputs()
  outs = [Tensor(x, device=device) @ Tensor(y, device=device), (Tensor(short, device=device) * Tensor(short[0], device=device)).sum(1),
          Tensor(img, device=device).conv2d(Tensor(w, device=device), padding=1)]
  return [o.numpy() for o in outs]


@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
def test_fused_by_default(device):
  if not has_fma(): pytest.skip("this CPU has no fused multiply-add")
  got = elementwise(device)
  assert got.dtype == np.float32 and np.all(got == FUSED), got


def test_float64_fused_half_not():
  if not has_fma(): pytest.skip("this CPU has no fused multiply-add")
  a = np.float64(1 + 2.0**-27)  # a*a = 1 + 2^-26 + 2^-54: float64 rounds the product to 1 + 2^-26
  got = (Tensor(np.full(3, a)) * Tensor(np.full(3, a)) - 1).numpy()
  assert got.dtype == np.float64 and np.all(got == 2.0**-26 + 2.0**-54)
  # 16-bit floats compute through float32 and round after each op, as torch does: never fused
  h = np.full(3, np.float16(1 + 2.0**-6), np.float16)
  got = (Tensor(h) * Tensor(h) - 1).numpy()
  assert got.dtype == np.float16 and np.all(got == (h * h - np.float16(1)))


def test_devices_agree_and_are_accurate():
  ref = None
  for dev in ("CPU", "CPU:CLANG"):
    outs = reductions(dev)
    if ref is None: ref = outs
    else:
      for a, b in zip(outs, ref): assert a.tobytes() == b.tobytes(), np.abs(a - b).max()
  x, y = inputs()[:2]
  np.testing.assert_allclose(ref[0], x.astype(np.float64) @ y.astype(np.float64), rtol=1e-5, atol=1e-4)


SCRIPT = r"""
import sys
sys.path.insert(0, {path!r})
from test_fma import elementwise, reductions
for dev in ("CPU", "CPU:CLANG"): print(dev, elementwise(dev).tobytes().hex(), *[o.tobytes().hex() for o in reductions(dev)])
"""


def test_off_gives_numpys_roundings(tmp_path):
  bindings = str(Path(__file__).resolve().parents[2] / "bindings" / "python")
  env = dict(os.environ, TG_FMA="0", XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=bindings)
  r = subprocess.run([sys.executable, "-c", SCRIPT.format(path=os.path.dirname(__file__))], env=env, capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr
  lines = [l.split() for l in r.stdout.split("\n")[:-1]]
  assert [l[0] for l in lines] == ["CPU", "CPU:CLANG"]
  for l in lines:
    got = np.frombuffer(bytes.fromhex(l[1]), np.float32)
    assert np.all(got == SEPARATE) and np.all(got == A * A - np.float32(1)), got
  assert lines[0][2:] == lines[1][2:]  # the two devices agree unfused too
  if has_fma():  # and fused is another computation: some output of the reductions differs
    fused = [o.tobytes().hex() for o in reductions("CPU")]
    assert any(a != b for a, b in zip(fused, lines[0][2:]))
