"""Regression tests for input the binding used to wrap silently or that crashed the process: big Python ints in shapes,
axes and data, 0-d flip/transpose, overflowing shapes, integer division by zero, NaN into integer tensors."""
import math

import numpy as np
import pytest

from tinygrad_c import Tensor, TinygradError, dtypes


@pytest.mark.parametrize("make", [
  lambda: Tensor.zeros(2**64 + 3),
  lambda: Tensor.ones(2**63),
  lambda: Tensor.empty(3, -2**63 - 1),
  lambda: Tensor.full((2**64,), 1.0),
  lambda: Tensor.eye(2**64),
])
def test_big_int_shapes_raise_instead_of_wrapping(make):
  with pytest.raises(OverflowError):
    make()


@pytest.mark.parametrize("op", [
  lambda t: t.sum(axis=2**64 + 1),
  lambda t: t.max(axis=-2**63 - 1),
  lambda t: t.reshape(2**64 + 6),
  lambda t: t.expand(2**64 + 2, 3),
  lambda t: t.permute(2**64, 1),
  lambda t: t.flip(2**64),
  lambda t: t.transpose(2**64, 0),
  lambda t: t.softmax(2**64 - 1),
  lambda t: t.pad(((2**64, 0), (0, 0))),
])
def test_big_int_axes_and_sizes_raise_instead_of_wrapping(op):
  t = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
  with pytest.raises(OverflowError):
    op(t)


def test_list_of_ints_past_int32_becomes_int64():
  for vals in ([2**40], [-2**40, 1], [[1, 2], [3, 2**31]], [-2**31 - 1]):
    t = Tensor(vals)
    assert t.dtype is dtypes.int64
    np.testing.assert_array_equal(t.numpy(), np.array(vals, dtype=np.int64))
  assert Tensor([1, -2, 2**31 - 1]).dtype is dtypes.int32  # tinygrad's default int when it fits
  assert Tensor([True, False]).dtype is dtypes.bool
  assert Tensor([1.5, 2]).dtype is dtypes.float32


def test_list_of_ints_past_int64_raises():
  for vals in ([2**64], [-2**63 - 1], [[1], [2**70]]):
    with pytest.raises(OverflowError):
      Tensor(vals)


def test_numpy_arrays_keep_their_dtype():
  for npdt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64, np.bool_):
    a = (np.arange(6) % 3).astype(npdt).reshape(2, 3)
    t = Tensor(a)
    assert t.dtype.np == np.dtype(npdt)
    np.testing.assert_array_equal(t.numpy(), a)


def test_scalar_flip_and_transpose_are_identity():
  s = Tensor(3.0)
  for r in (s.flip(0), s.flip(-1), s.transpose(0, 0), s.transpose(-1, 0)):
    assert r.shape == ()
    assert r.item() == 3.0
  with pytest.raises(TinygradError, match="axis 1"):
    s.flip(1)


@pytest.mark.parametrize("make", [
  lambda: Tensor.zeros(2**62),  # 2^62 float32 elements: more bytes than int64 holds
  lambda: Tensor.zeros(2**40, 2**40),
  lambda: Tensor.ones(1).reshape(2**63 - 1, 2**63 - 1),
  lambda: Tensor.arange(0, 1e19),
  lambda: Tensor.ones(1).pad(((2**63 - 1, 1),)),
])
def test_overflowing_shapes_are_shape_errors(make):
  with pytest.raises(TinygradError) as e:
    make()
  assert e.value.status == "TG_ERROR_SHAPE"


def test_unallocatable_tensor_is_an_error_not_a_crash():
  t = Tensor.zeros(2**58) + 1  # fits int64 (2^60 bytes) but no machine has it
  with pytest.raises(TinygradError) as e:
    t.realize()
  assert e.value.status == "TG_ERROR_OUT_OF_MEMORY"


def test_integer_division_by_zero_is_defined():
  for dt in (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64):
    info = np.iinfo(dt.np)
    a = Tensor([7, -7, 5, info.min, info.min, 9], dtype=dt)
    b = Tensor([0, 0, -1, -1, 0, 3], dtype=dt)
    got = (a // b).numpy()
    assert got.tolist() == [0, 0, -5, info.min, 0, 3], dt.name  # x//0 == 0; MIN//-1 wraps to MIN
  u = Tensor([7, 0, 5], dtype=dtypes.uint32) // Tensor([0, 0, 2], dtype=dtypes.uint32)
  assert u.numpy().tolist() == [0, 0, 2]


@pytest.mark.parametrize("v", [math.nan, math.inf, -math.inf])
def test_non_finite_fill_of_int_tensor_raises(v):
  with pytest.raises(TinygradError) as e:
    Tensor.full((3,), v, dtype=dtypes.int32)
  assert e.value.status == "TG_ERROR_INVALID_ARGUMENT"
  assert np.isnan(Tensor.full((2,), math.nan, dtype=dtypes.float32).numpy()).all()


def test_deep_lazy_chain_realizes():
  t = Tensor([0.0])
  for _ in range(20000): t = t + 1
  assert t.numpy().tolist() == [20000.0]
