"""tg_tensor_getitem / tg_tensor_setitem through ctypes, against numpy's indexing on the same random data: ints, slices
with every sign of start/stop/step, None, an ellipsis and int index tensors (advanced indexing), every element checked."""
import ctypes
import itertools
import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
LIB = ctypes.CDLL(os.environ.get("TINYGRAD_LIB", str(ROOT / "build" / "libtinygrad.so")))
P, I64, SZ = ctypes.c_void_p, ctypes.c_int64, ctypes.c_size_t


class TgIndex(ctypes.Structure):
  _fields_ = [("kind", ctypes.c_int), ("start", I64), ("stop", I64), ("step", I64), ("has_start", ctypes.c_int), ("has_stop", ctypes.c_int),
              ("has_step", ctypes.c_int), ("tensor", P)]


for name, res, args in [("tg_tensor_from_data", P, [P, SZ, ctypes.c_int, ctypes.POINTER(I64), SZ, ctypes.c_char_p]),
                        ("tg_tensor_getitem", P, [P, ctypes.POINTER(TgIndex), SZ]),
                        ("tg_tensor_setitem", ctypes.c_int, [P, ctypes.POINTER(TgIndex), SZ, P]),
                        ("tg_tensor_ndim", I64, [P]), ("tg_tensor_shape", ctypes.c_int, [P, ctypes.POINTER(I64), SZ]),
                        ("tg_tensor_to_data", ctypes.c_int, [P, P, SZ]), ("tg_tensor_release", None, [P]),
                        ("tg_last_error_message", ctypes.c_char_p, []), ("tg_last_error", ctypes.c_int, [])]:
  fn = getattr(LIB, name)
  fn.restype, fn.argtypes = res, args

DT = {np.dtype(np.float32): 11, np.dtype(np.int32): 5, np.dtype(np.int64): 7}  # tg_dtype codes


def tensor(a: np.ndarray) -> int:
  a = np.array(a, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
  shape = (I64 * a.ndim)(*a.shape)
  h = LIB.tg_tensor_from_data(a.ctypes.data, a.nbytes, DT[a.dtype], shape, a.ndim, None)
  assert h, LIB.tg_last_error_message()
  return h


def numpy_of(h: int, dtype) -> np.ndarray:
  nd = LIB.tg_tensor_ndim(h)
  shape = (I64 * max(nd, 1))()
  assert LIB.tg_tensor_shape(h, shape, max(nd, 1)) == 0
  out = np.empty(tuple(shape[:nd]), dtype=dtype)
  assert LIB.tg_tensor_to_data(h, out.ctypes.data, out.nbytes) == 0, LIB.tg_last_error_message()
  return out


def entries(index, keep):
  """numpy index tuple -> tg_index array (tensors made here are appended to keep)."""
  arr = (TgIndex * max(len(index), 1))()
  for e, ix in zip(arr, index):
    if ix is None: e.kind = 2
    elif ix is Ellipsis: e.kind = 3
    elif isinstance(ix, int): e.kind, e.start = 0, ix
    elif isinstance(ix, slice):
      e.kind = 1
      for f in ("start", "stop", "step"):
        v = getattr(ix, f)
        if v is not None: setattr(e, f, v), setattr(e, "has_" + f, 1)
    else:
      keep.append(tensor(np.asarray(ix, dtype=np.int32)))
      e.kind, e.tensor = 4, keep[-1]
  return arr


def getitem(a: np.ndarray, index):
  keep = [tensor(a)]
  try:
    h = LIB.tg_tensor_getitem(keep[0], entries(index, keep), len(index))
    if not h: return None
    keep.append(h)
    return numpy_of(h, a.dtype)
  finally:
    for k in keep: LIB.tg_tensor_release(k)


rng = np.random.default_rng(0)
X = rng.standard_normal((4, 5, 6)).astype(np.float32)
SLICES = [slice(None), slice(1, 4), slice(-3, None), slice(None, None, 2), slice(None, None, -1), slice(4, 0, -2), slice(-1, -6, -3),
          slice(10, -10, -1), slice(2, 2), slice(-100, 100, 3), slice(5, 1), slice(None, -2, 4)]
BASIC = ([(i,) for i in (0, 3, -1, -4)] + [(s,) for s in SLICES] + [(s, t) for s, t in itertools.product(SLICES[:6], SLICES[3:9])] +
         [(1, slice(None, None, -2), 2), (None, 0), (Ellipsis, 1), (0, Ellipsis, None), (slice(1, 3), None, -1), (None, Ellipsis, None),
          (Ellipsis,), (), (2, 4, 5)])


@pytest.mark.parametrize("index", BASIC, ids=repr)
def test_basic_indexing_matches_numpy(index):
  want = X[index]
  got = getitem(X, index)
  assert got is not None, LIB.tg_last_error_message()
  assert got.shape == want.shape
  np.testing.assert_array_equal(got, want)


ADVANCED = [([0, 2, 3],), ([[1, 0], [3, 3]],), (slice(None), [4, 0, -1]), ([1, 2], [3, 4]), ([1, 2], slice(None), [0, 5]),
            (slice(1, 3), [[0], [2]], [1, 5, 3]), (Ellipsis, [5, 0]), (0, [1, 1, 2]), ([-4, 3], Ellipsis, 2), (None, [1], slice(None, None, -1))]


@pytest.mark.parametrize("index", ADVANCED, ids=repr)
def test_advanced_indexing_matches_numpy(index):
  want = X[index]
  got = getitem(X, index)
  assert got is not None, LIB.tg_last_error_message()
  assert got.shape == want.shape, (got.shape, want.shape)
  np.testing.assert_array_equal(got, want)


def test_int_tensor_data_and_errors():
  a = rng.integers(-100, 100, (6, 7)).astype(np.int64)
  np.testing.assert_array_equal(getitem(a, ([5, 0, 2], slice(1, None, 3))), a[[5, 0, 2], 1::3])
  for bad in [(6,), (-7,), (0, 0, 0), (Ellipsis, Ellipsis), (slice(None, None, 0),)]:
    assert getitem(a, bad) is None, bad
    assert LIB.tg_last_error() != 0 and LIB.tg_last_error_message()


@pytest.mark.parametrize("index", [(1,), (slice(1, 4),), (slice(None, None, 2), 3), (slice(None, None, -1),), (slice(4, 0, -2), slice(1, 6, 2)),
                                   (Ellipsis, -1), (None, 2, slice(0, 6, 5)), (slice(2, 2),), (0, 0, 0)], ids=repr)
def test_setitem_matches_numpy(index):
  want = X.copy()
  sel = want[index]
  val = rng.standard_normal(np.shape(sel)).astype(np.float32)
  want[index] = val
  keep = [tensor(X), tensor(val)]
  try:
    assert LIB.tg_tensor_setitem(keep[0], entries(index, keep), len(index), keep[1]) == 0, LIB.tg_last_error_message()
    np.testing.assert_array_equal(numpy_of(keep[0], np.float32), want)
  finally:
    for k in keep: LIB.tg_tensor_release(k)


def test_setitem_broadcasts_a_scalar():
  keep = [tensor(X), tensor(np.array(7.5, dtype=np.float32))]
  try:
    assert LIB.tg_tensor_setitem(keep[0], entries((slice(None), 2), keep), 2, keep[1]) == 0, LIB.tg_last_error_message()
    want = X.copy()
    want[:, 2] = 7.5
    np.testing.assert_array_equal(numpy_of(keep[0], np.float32), want)
    assert LIB.tg_tensor_setitem(keep[0], entries((slice(None), 9), keep), 2, keep[1]) != 0
    assert b"getitem" in LIB.tg_last_error_message()
  finally:
    for k in keep: LIB.tg_tensor_release(k)


@pytest.mark.parametrize("index", [([0, 2],), ([3, 0, 3],), (slice(None), [4, -1]), ([1, 2], [3, 4]), (0, [1, 1, 4], slice(1, 3)),
                                   ([[0], [3]], slice(None, None, 2), [0, 5]), (Ellipsis, [2, 0, 2])], ids=repr)
def test_setitem_with_tensor_indices_matches_numpy(index):
  want = X.copy()
  val = rng.standard_normal(np.shape(want[index])).astype(np.float32)
  want[index] = val  # repeated positions: numpy keeps the last value
  keep = [tensor(X), tensor(val)]
  try:
    assert LIB.tg_tensor_setitem(keep[0], entries(index, keep), len(index), keep[1]) == 0, LIB.tg_last_error_message()
    np.testing.assert_array_equal(numpy_of(keep[0], np.float32), want)
  finally:
    for k in keep: LIB.tg_tensor_release(k)
