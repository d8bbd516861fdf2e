"""Scatter through the Python binding: setitem with tensor indices, scatter and scatter_reduce write each value once (a
kernel over the values that stores through their positions), so their cost is the values', not the tensor's times
the values'. References: numpy's assignment (exact), torch 1.13's scatter_reduce (float32 atol=1e-5, rtol=1e-4; int32
exact)."""
import time

import numpy as np
import pytest
import torch

from tinygrad_c import Tensor, TinyJit


def test_numpy_combined_advanced_setitem_on_12m_elements():
  # numpy's example: x[:, ind_1, :, ind_2] with ind_1, ind_2 broadcasting to (2, 3, 4) selects (2, 3, 4, 10, 30, 50)
  rng = np.random.default_rng(0)
  x = rng.standard_normal((10, 20, 30, 40, 50), dtype=np.float32)
  ind_1, ind_2 = rng.integers(-20, 20, (2, 3, 4)), rng.integers(-40, 40, (2, 1, 4))
  ind_1[1, 2, 3], ind_1[0, 0, 3] = 7, 7  # repeated pairs: the later values win, as numpy
  v = rng.standard_normal((2, 3, 4, 10, 30, 50), dtype=np.float32)
  t = Tensor(x).realize()
  st = time.perf_counter()
  t[:, Tensor(ind_1.astype(np.int32)), :, Tensor(ind_2.astype(np.int32))] = Tensor(v)
  t.realize()
  took = time.perf_counter() - st
  want = x.copy()
  want[:, ind_1, :, ind_2] = v
  np.testing.assert_array_equal(t.numpy(), want)
  print(f"setitem of 360,000 values into 12M elements: {took:.3f} s")


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_with_repeats_matches_torch(reduce, dtype):
  rng = np.random.default_rng(1)
  x = (rng.standard_normal((7, 9)) * 4).astype(dtype)
  src = (rng.standard_normal((12, 9)) * 4).astype(dtype)
  idx = rng.integers(0, 3, (12, 9))  # every column sends four values to each of rows 0..2 on average
  for include_self in (True, False):
    want = torch.tensor(x).scatter_reduce(0, torch.tensor(idx), torch.tensor(src), reduce, include_self=include_self).numpy()
    got = Tensor(x).scatter_reduce(0, Tensor(idx.astype(np.int32)), Tensor(src), reduce, include_self).numpy()
    if dtype == np.int32: np.testing.assert_array_equal(got, want)
    else: np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-4)


def test_setitem_replays_in_a_jit_with_new_indices():
  @TinyJit
  def f(t, i, v):
    t[i] = v
    return t.realize()
  rng = np.random.default_rng(2)
  for _ in range(4):
    base = rng.standard_normal((50, 3)).astype(np.float32)
    i, v = rng.integers(-50, 50, (20,)).astype(np.int32), rng.standard_normal((20, 3)).astype(np.float32)
    want = base.copy()
    want[i] = v
    np.testing.assert_array_equal(f(Tensor(base).realize(), Tensor(i), Tensor(v)).numpy(), want)


def test_scatter_on_opencl_keeps_the_order():
  try: t = Tensor.zeros(64, device="CL").contiguous().realize()
  except Exception as e: pytest.skip(f"no OpenCL device: {e}")
  i = np.arange(4096, dtype=np.int32) % 64
  t[Tensor(i, device="CL")] = Tensor(np.arange(4096, dtype=np.float32), device="CL")
  np.testing.assert_array_equal(t.numpy(), np.arange(4096 - 64, 4096, dtype=np.float32))
