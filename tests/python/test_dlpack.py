"""DLPack exchange with numpy and PyTorch: memory shared both ways (writes on one side read on the other), every dtype the
libraries have in common with us, strided input copied, and every capsule's memory let go exactly once: a producer's
array is finalized once no tensor and no export uses it, and never while one does."""
import ctypes
import gc
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

import tinygrad_c as tg
from tinygrad_c import Tensor, dtypes

torch = pytest.importorskip("torch")
from torch.utils import dlpack as tdl  # noqa: E402

_live = tg._dll.tg_live_handles
_live.restype, _live.argtypes = ctypes.c_int64, []

NP_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64"]
TORCH_DTYPES = ["int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


@pytest.fixture(autouse=True)
def handles_back_to_start():
  gc.collect()
  start = _live()
  yield
  gc.collect()
  assert _live() == start, "tensor handles leaked"


def addr(a: np.ndarray) -> int: return a.__array_interface__["data"][0]


class Finalized:
  """Counts the finalization of an object (a producer's array): DLPack's deleter drops the producer's reference."""
  def __init__(self, obj): self.n, self._f = 0, weakref.finalize(obj, self._done)
  def _done(self): self.n += 1


def rand_np(dt: str, shape=(3, 4)) -> np.ndarray:
  rng = np.random.default_rng(0)
  if dt.startswith("float"): return rng.standard_normal(shape).astype(dt)
  info = np.iinfo(dt)
  return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)


@pytest.mark.parametrize("dt", NP_DTYPES)
def test_numpy_round_trip_shares_memory(dt):
  a = rand_np(dt)
  t = tg.from_dlpack(a)
  assert t.dtype is tg.to_dtype(dt) and t.shape == (3, 4)
  np.testing.assert_array_equal(t.numpy(), a)
  back = np.from_dlpack(t)
  assert back.dtype == a.dtype and addr(back) == addr(a), "zero copy both ways"
  np.testing.assert_array_equal(back, a)


def test_numpy_writes_seen_both_ways():
  a = np.arange(6, dtype=np.float32).reshape(2, 3)
  t = tg.from_dlpack(a)
  a[0, 0] = 100  # numpy writes, tinygrad's next kernel reads
  np.testing.assert_array_equal((t * 2).numpy(), a * 2)
  t.assign(t + 1).realize()  # tinygrad writes, numpy reads
  np.testing.assert_array_equal(a, [[101, 2, 3], [4, 5, 6]])
  # tinygrad -> numpy: numpy's import is read-only, so tinygrad writes and numpy reads
  u = Tensor([1.0, 2.0, 3.0])
  v = np.from_dlpack(u)
  u.assign(u * 10).realize()
  np.testing.assert_array_equal(v, [10, 20, 30])
  w = np.from_dlpack(u + 1)  # a lazy tensor is realized into its own buffer first
  np.testing.assert_array_equal(w, [11, 21, 31])


def test_numpy_zero_dim_and_empty():
  t = tg.from_dlpack(np.array(2.5, dtype=np.float64))
  assert t.shape == () and t.item() == 2.5
  assert np.from_dlpack(t).shape == ()
  e = tg.from_dlpack(np.zeros((0, 3), np.int32))
  assert e.shape == (0, 3) and np.from_dlpack(e).shape == (0, 3)


def test_numpy_strided_input_is_copied():
  x = np.arange(12, dtype=np.int32).reshape(3, 4)
  t = tg.from_dlpack(x.T)  # a transposed view
  np.testing.assert_array_equal(t.numpy(), x.T)
  x[0, 0] = -1  # the copy doesn't follow
  assert t.numpy()[0, 0] == 0
  s = tg.from_dlpack(x[:, ::2])  # every other column
  np.testing.assert_array_equal(s.numpy(), [[-1, 2], [4, 6], [8, 10]])
  r = tg.from_dlpack(x[1:])  # an offset, row-major: shared
  x[2, 3] = 99
  assert r.numpy()[1, 3] == 99


@pytest.mark.parametrize("dt", TORCH_DTYPES)
def test_torch_both_ways(dt):
  x = (torch.arange(12) - 5).reshape(3, 4).to(getattr(torch, dt))
  t = tg.from_dlpack(tdl.to_dlpack(x))
  assert t.dtype is tg.to_dtype(dt) and t.shape == (3, 4)
  y = tdl.from_dlpack(t.__dlpack__())
  assert y.dtype == x.dtype and y.data_ptr() == x.data_ptr(), "zero copy both ways"
  z = torch.from_dlpack(t)  # the __dlpack__ protocol
  assert torch.equal(z, x) and z.data_ptr() == x.data_ptr()
  t2 = tg.from_dlpack(x)  # and torch's own __dlpack__
  got = t2.cast(dtypes.float32).numpy()
  np.testing.assert_array_equal(got, x.to(torch.float32).numpy())


def test_torch_writes_seen_both_ways():
  t = Tensor([1.0, 2.0, 3.0])
  y = torch.from_dlpack(t)
  y[1] = 20  # torch writes into tinygrad's buffer
  np.testing.assert_array_equal(t.numpy(), [1, 20, 3])
  np.testing.assert_array_equal((t + 1).numpy(), [2, 21, 4])
  x = torch.zeros(4, dtype=torch.int64)
  u = tg.from_dlpack(x)
  x[2] = 7  # torch writes into its own memory, tinygrad reads it
  assert u.numpy().tolist() == [0, 0, 7, 0]
  u.assign(u + 1).realize()
  assert x.tolist() == [1, 1, 8, 1]
  # numpy reads what torch wrote through tinygrad's export
  assert np.from_dlpack(t).tolist() == [1, 20, 3]


def test_producer_released_once_after_last_user():
  a = np.arange(4, dtype=np.float32)
  fin = Finalized(a)
  t = tg.from_dlpack(a)
  b = np.from_dlpack(t)  # numpy holds tinygrad's export of numpy's memory
  del a
  gc.collect()
  assert fin.n == 0
  del t
  gc.collect()
  assert fin.n == 0, "the export keeps the memory alive"
  assert b.tolist() == [0, 1, 2, 3]
  del b
  gc.collect()
  assert fin.n == 1


def test_unconsumed_capsules_are_released():
  a = np.ones(3, np.float32)
  fin = Finalized(a)
  t = tg.from_dlpack(a)
  del a
  for _ in range(3): t.__dlpack__()  # dropped at once
  cap = t.__dlpack__()
  del t
  gc.collect()
  assert fin.n == 0
  del cap
  gc.collect()
  assert fin.n == 1


def test_refusing_consumers_release_the_capsule():
  # numpy 1.24 has no bool and torch 1.13 no uint16 in DLPack: their errors come through, and the memory is let go
  a = np.array([1, 0, 1], np.uint8)
  fin = Finalized(a)
  t = tg.from_dlpack(a).cast(dtypes.bool)
  with pytest.raises(Exception, match="(?i)dtype|bool"):
    np.from_dlpack(t)
  u = tg.from_dlpack(a).cast(dtypes.uint16)
  with pytest.raises(RuntimeError, match="bits 16|[Uu]nsupported"):
    torch.from_dlpack(u)
  w = tg.from_dlpack(a)  # shares a: a's memory stays in use until w and its exports are gone
  with pytest.raises(RuntimeError):
    torch.from_dlpack(w.cast(dtypes.uint32))
  del a, t, u
  gc.collect()
  assert fin.n == 0
  del w
  gc.collect()
  assert fin.n == 1


def test_refused_imports_leave_the_capsule():
  cap = np.arange(3, dtype=np.complex64).__dlpack__()
  with pytest.raises(tg.TinygradError, match="complex") as e:
    tg.from_dlpack(cap)
  assert e.value.status == "TG_ERROR_DTYPE"

  class Again:  # the refused capsule is still unconsumed: numpy takes it
    def __dlpack__(self, stream=None): return cap
    def __dlpack_device__(self): return (1, 0)
  np.testing.assert_array_equal(np.from_dlpack(Again()), np.arange(3))
  with pytest.raises(TypeError, match="dltensor"):
    tg.from_dlpack(object())
  used = np.arange(3).__dlpack__()
  tg.from_dlpack(used)
  with pytest.raises(TypeError, match="dltensor"):
    tg.from_dlpack(used)  # consumed once already
  with pytest.raises(BufferError):
    Tensor([1.0]).__dlpack__(stream=1)


def test_dlpack_device_and_names():
  t = Tensor([1, 2])
  assert t.__dlpack_device__() == (1, 0)
  assert Tensor.from_dlpack is tg.from_dlpack
  assert "from_dlpack" in tg.__all__


def test_gc_with_capsules_in_cycles():
  # capsules and arrays that die together in a collection, in any order, free once and don't crash
  holders = []
  for i in range(20):
    t = Tensor.arange(8) + i
    h = {"cap": t.__dlpack__(), "arr": np.from_dlpack(t), "t": t}
    h["self"] = h
    holders.append(h)
  del holders, h, t
  gc.collect()


def test_imports_on_the_default_cpu_device():
  # with DEV=CPU:CLANG an import is a CPU:CLANG tensor (the same host memory); a new process reads the variable
  env = dict(os.environ, DEV="CPU:CLANG", PYTHONPATH=os.path.dirname(os.path.dirname(tg.__file__)), TINYGRAD_LIB=tg.library_path)
  code = "import numpy as np, tinygrad_c as tg; print(tg.from_dlpack(np.ones(2, np.float32)).device)"
  r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip() == "CPU:CLANG"
