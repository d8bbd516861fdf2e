"""Regression tests for input the binding used to wrap silently, round, or that crashed the process. Each test is named
after the defect it pins: big Python ints in shapes, axes, pads, movement arguments, fill values, scalars and list data;
0-d flip/transpose; shapes too large for int64; integer division by zero; NaN into integer tensors."""
import ctypes
import math
import pickle

import numpy as np
import pytest

import tinygrad_c as tg
from tinygrad_c import Expr, Tensor, TinygradError, Variable, dtypes

I32_MIN, I64_MIN, I64_MAX, U64_MAX = -2**31, -2**63, 2**63 - 1, 2**64 - 1


def _t23():
  return Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))


# ---- Python ints that ctypes used to wrap to their low 64 bits ----------------------------------------------------------
@pytest.mark.parametrize("make", [
  lambda: Tensor.zeros(2**64 + 3),  # used to be shape (3,)
  lambda: Tensor.zeros((2**64 + 3,)),
  lambda: Tensor.ones(2**63),
  lambda: Tensor.empty(3, -2**63 - 1),
  lambda: Tensor.full((2**64,), 1.0),
  lambda: Tensor.full(2**64 + 1, 1.0),
  lambda: Tensor.eye(2**64),
  lambda: Tensor.eye(2, 2**64),
], ids=["zeros", "zeros_tuple", "ones", "empty_negative", "full", "full_int_shape", "eye", "eye_m"])
def test_big_int_shape_wrapped_silently(make):
  with pytest.raises(OverflowError, match="doesn't fit in int64"):
    make()


@pytest.mark.parametrize("op", [
  lambda t: t.sum(axis=2**64 + 1),  # used to sum axis 1
  lambda t: t.sum(axis=(0, 2**64 + 1)),
  lambda t: t.max(axis=-2**63 - 1),
  lambda t: t.mean(axis=2**64, keepdim=True),
  lambda t: t.softmax(2**64 - 1),
  lambda t: t.log_softmax(-2**64 - 1),
  lambda t: t.flip(2**64),
  lambda t: t.transpose(2**64, 0),
  lambda t: t.transpose(0, 2**64 + 1),
], ids=["sum", "sum_tuple", "max", "mean", "softmax", "log_softmax", "flip", "transpose0", "transpose1"])
def test_big_int_axis_wrapped_silently(op):
  with pytest.raises(OverflowError, match="doesn't fit in int64"):
    op(_t23())


@pytest.mark.parametrize("op", [
  lambda t: t.reshape(2**64 + 6),  # used to reshape to (6,)
  lambda t: t.reshape(2, 2**64 + 3),
  lambda t: t.reshape((2**64 + 2, 3)),
  lambda t: t.expand(2**64 + 2, 2, 3),
  lambda t: t.reshape(2, 1, 3).expand(2, 2**64 + 4, 3),
  lambda t: t.permute(2**64, 1),  # used to be permute(0, 1)
  lambda t: t.permute((1, 2**64)),
], ids=["reshape", "reshape_2d", "reshape_tuple", "expand_new_dim", "expand", "permute", "permute_tuple"])
def test_big_int_movement_argument_wrapped_silently(op):
  with pytest.raises(OverflowError, match="doesn't fit in int64"):
    op(_t23())


@pytest.mark.parametrize("op", [
  lambda t: t.pad(((2**64, 0), (0, 0))),  # used to pad nothing
  lambda t: t.pad(((0, 0), (0, 2**64 + 1))),
  lambda t: t.pad((2**64, 0)),  # torch's flat form
  lambda t: t.pad(((1, 1), (-2**63 - 1, 0))),
  lambda t: t.shrink(((0, 2**64 + 1), None)),
], ids=["pad_before", "pad_after", "pad_flat", "pad_negative", "shrink"])
def test_big_int_pad_wrapped_silently(op):
  with pytest.raises(OverflowError, match="doesn't fit in int64"):
    op(_t23())


def test_big_int_in_raw_c_call_wrapped_silently():
  # tinygrad_c.C is the raw ctypes layer; its int parameters are range-checked too (ctypes reports it as ArgumentError)
  with pytest.raises(ctypes.ArgumentError, match="OverflowError"): tg.C.tensor_eye(2**64 + 2, dtypes.float32.value, None)
  with pytest.raises(ctypes.ArgumentError, match="OverflowError"): tg.C.dtype_size(2**32 + dtypes.int8.value)  # dtype enum
  with pytest.raises(ctypes.ArgumentError, match="OverflowError"): tg.C.tensor_zeros(None, -1, dtypes.float32.value, None)  # count
  with pytest.raises(ctypes.ArgumentError, match="OverflowError"): tg.C.tensor_transpose(_t23()._h, 0, 2**63)
  with pytest.raises(ctypes.ArgumentError, match="TypeError"): tg.C.tensor_eye(2.5, dtypes.float32.value, None)


def test_big_int_in_expr_wrapped_silently():
  x = Variable("x", 0, 10)
  for make in (lambda: Expr(2**64 + 7), lambda: Variable("y", 0, 2**63), lambda: Variable("y", -2**63 - 1, 0),
               lambda: x + 2**64, lambda: 2**64 * x, lambda: x.eval(x=2**64 + 3)):
    with pytest.raises(OverflowError, match="doesn't fit in int64"):
      make()


def test_float_shape_or_axis_truncated_silently():
  # int(2.5) == 2 used to make shape (2,); numpy and tinygrad want ints here
  with pytest.raises(TypeError, match="must be an int"): Tensor.zeros(2.5)
  with pytest.raises(TypeError, match="must be an int"): Tensor.full((2, 1.5), 0.0)
  with pytest.raises(TypeError, match="must be an int"): _t23().sum(axis=1.0)
  with pytest.raises(TypeError, match="must be an int"): _t23().reshape(3.0, 2)
  with pytest.raises(TypeError, match="must be an int"): Expr(2.5)
  assert _t23().sum(axis=np.int64(1)).shape == (2,) and Tensor.zeros(np.int32(2), np.uint8(3)).shape == (2, 3)


def test_malformed_pad_or_shrink_argument_ignored_silently():
  with pytest.raises(ValueError, match="pair"): _t23().pad(((0, 1, 5), (0, 1)))  # the 5 used to be dropped
  with pytest.raises(ValueError, match="pair"): _t23().shrink(((0, 1), (0,)))
  with pytest.raises(TinygradError) as e: _t23().shrink(((0, 1), (0, 1), (0, 1)))  # the third pair used to be dropped
  assert e.value.status == "TG_ERROR_SHAPE" and "3 pairs" in e.value.message
  with pytest.raises(TinygradError) as e: _t23().shrink((None, None, None))
  assert e.value.status == "TG_ERROR_SHAPE"


def test_nul_in_string_argument_cut_silently():
  with pytest.raises(ValueError, match="NUL"): Tensor([1.0], device="CPU\0GPU")
  with pytest.raises(ValueError, match="NUL"): Variable("x\0y", 0, 1)


# ---- fill values and scalars: big ints used to wrap to the dtype or round through a double ------------------------------
def test_full_value_wrapped_silently():
  with pytest.raises(OverflowError, match="doesn't fit in int32"): Tensor.full((2,), 2**40, dtype=dtypes.int32)  # was 0
  with pytest.raises(OverflowError, match="doesn't fit in uint8"): Tensor.full((2,), -1, dtype=dtypes.uint8)  # was 255
  with pytest.raises(OverflowError, match="doesn't fit in int8"): Tensor.full((2,), 1e10, dtype=dtypes.int8)
  with pytest.raises(OverflowError, match="int64 or uint64"): Tensor.full((2,), 2**70)
  t = Tensor.full((2,), 2**40)  # an int past int32 makes int64, as for lists
  assert t.dtype is dtypes.int64 and t.tolist() == [2**40] * 2
  assert Tensor.full((), -2**40).dtype is dtypes.int64 and Tensor.full((), -2**40).item() == -2**40
  assert Tensor.full((3,), 7).dtype is dtypes.int32 and Tensor.full((2,), 3.7, dtype=dtypes.int32).tolist() == [3, 3]


def test_full_value_rounded_through_double():
  assert Tensor.full((2,), 2**53 + 1, dtype=dtypes.int64).tolist() == [2**53 + 1] * 2  # was 2**53
  assert Tensor.full((2, 1), I64_MAX).tolist() == [[I64_MAX]] * 2 and Tensor.full((), I64_MIN).item() == I64_MIN
  assert Tensor.full((3,), U64_MAX, dtype=dtypes.uint64).tolist() == [U64_MAX] * 3
  assert Tensor.full((0, 3), I64_MAX).shape == (0, 3)
  assert Tensor.full((2,), 2**63).dtype is dtypes.uint64 and Tensor.full((2,), 2**63).tolist() == [2**63] * 2


def test_scalar_operand_wrapped_silently():
  i32 = Tensor([1, 2, 3])
  with pytest.raises(OverflowError, match="doesn't fit in int32"): i32 + 2**40  # was i32 + 0
  with pytest.raises(OverflowError, match="doesn't fit in int32"): 2**40 - i32
  with pytest.raises(OverflowError, match="doesn't fit in int32"): i32 * 2**70
  with pytest.raises(OverflowError, match="doesn't fit in int8"): Tensor([1], dtype=dtypes.int8) + 200  # was -55
  with pytest.raises(OverflowError, match="doesn't fit in uint8"): Tensor([1], dtype=dtypes.uint8) + -1
  with pytest.raises(OverflowError, match="doesn't fit in int32"): (i32 > 1).where(i32, 2**40)
  assert (Tensor([True]) + 2**40).dtype is dtypes.int64 and (Tensor([True]) + 2**40).tolist() == [2**40 + 1]
  w = (i32 > 1).where(2**40, 0)
  assert w.dtype is dtypes.int64 and w.tolist() == [0, 2**40, 2**40]
  assert (Tensor([0.5]) + 2**70).tolist() == [float(2**70)]  # a float tensor takes any int, rounded like float()


def test_scalar_operand_rounded_through_double():
  i64, u64 = Tensor([0, 1], dtype=dtypes.int64), Tensor([1], dtype=dtypes.uint64)
  assert (i64 + (2**53 + 1)).tolist() == [2**53 + 1, 2**53 + 2]  # 0 + 2**53 before
  assert ((2**53 + 1) - i64).tolist() == [2**53 + 1, 2**53]
  assert (i64 * -(2**62 + 1)).tolist() == [0, -(2**62 + 1)]
  assert (u64 + (U64_MAX - 1)).tolist() == [U64_MAX]


def test_int_tensor_with_float_scalar_stayed_int():
  # tinygrad: a float scalar next to an int tensor is default_float, and the result promotes to it
  for r in (Tensor([1, 2, 3]) + 2.0, 2.0 * Tensor([1, 2, 3]), Tensor([1, 2, 3]) ** 2.0, Tensor([1, 2, 3], dtype=dtypes.int64) - 1.0):
    assert r.dtype is dtypes.float32
  assert (Tensor([1, 2, 3]) + 2.0).tolist() == [3.0, 4.0, 5.0]
  assert (Tensor([1, 2, 3]) + 2).dtype is dtypes.int32


# ---- list data: ints past int32 used to become int32 0 ------------------------------------------------------------------
@pytest.mark.parametrize("vals", [[2**40], [-2**40], [-2**40, 1], [[1, 2], [3, 2**31]], [-2**31 - 1], [I64_MIN, I64_MAX], 2**40, -2**40],
                         ids=str)
def test_list_int_past_int32_became_int32_zero(vals):
  t = Tensor(vals)
  assert t.dtype is dtypes.int64
  np.testing.assert_array_equal(t.numpy(), np.array(vals, dtype=np.int64))


def test_list_int_dtype_inference():
  assert Tensor([2**40]).tolist() == [2**40] and Tensor([-2**40]).tolist() == [-2**40]
  assert Tensor([1, -2, 2**31 - 1, I32_MIN]).dtype is dtypes.int32  # tinygrad's default int when it fits
  assert Tensor([[1, 2], [3, 4]]).dtype is dtypes.int32 and Tensor(7).dtype is dtypes.int32 and Tensor(7).shape == ()
  t = Tensor([2**63, U64_MAX])  # past int64 but in uint64: uint64, as numpy
  assert t.dtype is dtypes.uint64 and t.tolist() == [2**63, U64_MAX]
  assert Tensor([True, False]).dtype is dtypes.bool and Tensor(True).dtype is dtypes.bool
  assert Tensor([True, 2]).dtype is dtypes.int32
  assert Tensor([1.5, 2]).dtype is dtypes.float32 and Tensor(3.0).dtype is dtypes.float32 and Tensor([[1.0], [2**40]]).dtype is dtypes.float32
  assert Tensor([1.5, 2**70]).dtype is dtypes.float32 and Tensor([1.5, 2**70]).tolist() == [1.5, float(np.float32(2**70))]
  assert Tensor([]).dtype is dtypes.float32 and Tensor([]).shape == (0,)


@pytest.mark.parametrize("vals", [[2**64], [-2**63 - 1], [[1], [2**70]], [-1, 2**63], 2**64, [[-1], [U64_MAX]]], ids=str)
def test_list_int_past_int64_wrapped_silently(vals):
  with pytest.raises(OverflowError):  # no integer dtype holds them all ([-1, 2**63] used to be int64 [-1, MIN])
    Tensor(vals)


def test_list_with_dtype_wrapped_silently():
  with pytest.raises(OverflowError, match="doesn't fit in int32"): Tensor([2**40], dtype=dtypes.int32)  # was [0]
  with pytest.raises(OverflowError, match="doesn't fit in uint8"): Tensor([1, 300], dtype=dtypes.uint8)
  with pytest.raises(OverflowError, match="doesn't fit in uint8"): Tensor([-1], dtype=dtypes.uint8)
  with pytest.raises(OverflowError, match="doesn't fit in int16"): Tensor([1e6], dtype=dtypes.int16)
  with pytest.raises(OverflowError, match="doesn't fit in uint64"): Tensor([2**64], dtype=dtypes.uint64)
  assert Tensor([U64_MAX], dtype=dtypes.uint64).tolist() == [U64_MAX]
  assert Tensor([2**40], dtype=dtypes.int64).tolist() == [2**40] and Tensor([2**40], dtype=dtypes.float64).tolist() == [2.0**40]
  assert Tensor([-1, 2**63], dtype=dtypes.float64).tolist() == [-1.0, 2.0**63]  # a float dtype takes any int
  assert Tensor([2**64, 0], dtype=dtypes.bool).tolist() == [True, False]


def test_list_float_rounded_through_float32():
  assert Tensor([1.1], dtype=dtypes.float64).tolist() == [1.1]  # was 1.100000023841858
  assert Tensor([16777217.0], dtype=dtypes.int32).tolist() == [16777217]  # was 16777216
  assert Tensor([-2.7, 2.7], dtype=dtypes.int8).tolist() == [-2, 2]  # truncated, as int()


def test_list_nan_into_int_dtype_wrapped_silently():
  with pytest.raises(ValueError, match="NaN"): Tensor([1.0, math.nan], dtype=dtypes.int32)  # was INT32_MIN
  with pytest.raises(OverflowError, match="infinity"): Tensor([math.inf], dtype=dtypes.int64)
  assert Tensor([math.nan], dtype=dtypes.bool).tolist() == [True]


def test_numpy_arrays_keep_their_dtype():
  for npdt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64, np.bool_):
    a = (np.arange(6) % 3).astype(npdt).reshape(2, 3)
    if np.dtype(npdt).kind in "iu": a.flat[:2] = [np.iinfo(npdt).min, np.iinfo(npdt).max]
    for arr in (a, a[:1, :1].reshape(()), a[:, :0], a[:, ::2]):  # 2-d, 0-d, empty, a view
      t = Tensor(arr)
      assert t.dtype.np == np.dtype(npdt) and t.shape == arr.shape
      np.testing.assert_array_equal(t.numpy(), arr)


# ---- arange: ints past int32 wrapped, past 2**53 rounded ----------------------------------------------------------------
def test_arange_big_ints_wrapped_silently():
  t = Tensor.arange(2**40, 2**40 + 3)
  assert t.dtype is dtypes.int64 and t.tolist() == [2**40, 2**40 + 1, 2**40 + 2]  # was INT32_MIN three times
  with pytest.raises(OverflowError, match="doesn't fit in int8"): Tensor.arange(0, 200, dtype=dtypes.int8)
  with pytest.raises(OverflowError, match="doesn't fit in int32"): Tensor.arange(0, 2**40, 2**39, dtype=dtypes.int32)
  assert Tensor.arange(-128, 128, 51, dtype=dtypes.int8).tolist() == list(range(-128, 128, 51))
  assert Tensor.arange(5).dtype is dtypes.int32 and Tensor.arange(2**40, 0).shape == (0,)


@pytest.mark.parametrize("args", [(2**53 + 1, 2**53 + 4), (I64_MIN, I64_MAX, I64_MAX), (I64_MAX, I64_MAX - 4, -1),
                                  (2**62, -2**62, -2**61), (-2**60, -2**60 - 7, -3)], ids=str)
def test_arange_big_ints_rounded_through_double(args):
  t = Tensor.arange(*args)
  assert t.dtype is dtypes.int64 and t.tolist() == list(range(*args))


def test_arange_uint64_rounded_through_double():
  assert Tensor.arange(U64_MAX, U64_MAX - 3, -1, dtype=dtypes.uint64).tolist() == [U64_MAX, U64_MAX - 1, U64_MAX - 2]
  t = Tensor.arange(2**63 + 1, 2**63 - 2, -1)
  assert t.dtype is dtypes.uint64 and t.tolist() == list(range(2**63 + 1, 2**63 - 2, -1))


# ---- 0-d flip/transpose used to fail (torch returns the scalar unchanged) -----------------------------------------------
def test_scalar_flip_and_transpose_rejected():
  s = Tensor(3.0)
  for r in (s.flip(0), s.flip(-1), s.transpose(0, 0), s.transpose(-1, 0), s.transpose(0, -1)):
    assert r.shape == () and r.dtype is dtypes.float32 and r.item() == 3.0
  with pytest.raises(TinygradError, match="axis 1"):
    s.flip(1)


# ---- shapes whose size overflows int64 ----------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
  lambda: (Tensor.zeros(2**62) + 1).realize(),  # 2^62 float32 elements: more bytes than int64 holds
  lambda: Tensor.zeros((2**40, 2**40)),
  lambda: Tensor.zeros(2**40, 2**40).sum().realize(),
  lambda: Tensor.full((2**62,), 2**60),  # int64 fill through the exact path
  lambda: Tensor.ones(1).reshape(2**63 - 1, 2**63 - 1),
  lambda: Tensor.ones(1, 1).expand(2**62, 2**62),
  lambda: Tensor.arange(0, 1e19),
  lambda: Tensor.ones(1).pad(((2**63 - 1, 1),)),
  lambda: Tensor.eye(2**62),
], ids=["zeros_add_realize", "zeros_2d_tuple", "zeros_2d_sum", "full_int64", "reshape", "expand", "arange", "pad", "eye"])
def test_shape_overflowing_int64_not_a_clean_error(make):
  with pytest.raises(ValueError) as e:  # TG_ERROR_SHAPE is a ShapeError: a TinygradError and a ValueError
    make()
  assert isinstance(e.value, TinygradError) and e.value.status == "TG_ERROR_SHAPE", e.value


def test_shape_overflow_message_names_the_shape():
  with pytest.raises(TinygradError) as e: Tensor.zeros(2**62)
  assert str(2**62) in e.value.message
  with pytest.raises(TinygradError) as e: Tensor.zeros((2**40, 2**40))
  assert str(2**40) in e.value.message


def test_unallocatable_tensor_crashed():
  t = Tensor.zeros(2**58) + 1  # fits int64 (2^60 bytes) but no machine has it
  with pytest.raises(MemoryError) as e:
    t.realize()
  assert isinstance(e.value, TinygradError) and e.value.status == "TG_ERROR_OUT_OF_MEMORY"


# ---- integer division by zero used to trap (SIGFPE) ---------------------------------------------------------------------
def test_integer_division_by_zero_trapped():
  # floor division, as tinygrad: x//0 is the truncated 0 less floor's correction (-1 for x < 0), so x == (x//0)*0 + x%0
  assert (Tensor([7, -7, 5], dtype=dtypes.int32) // Tensor([0, 0, -1])).tolist() == [0, -1, -5]
  for dt in (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64):
    info = np.iinfo(dt.np)
    a = Tensor([7, -7, 5, int(info.min), int(info.min), 9], dtype=dt)
    b = Tensor([0, 0, -1, -1, 0, 3], dtype=dt)
    assert (a // b).tolist() == [0, -1, -5, info.min, -1, 3], dt.name  # MIN//-1 wraps to MIN
    assert (a % b).tolist() == [7, -7, 0, 0, info.min, 0], dt.name  # x%0 == x; MIN%-1 == 0
  u = Tensor([7, 0, 5], dtype=dtypes.uint32) // Tensor([0, 0, 2], dtype=dtypes.uint32)
  assert u.tolist() == [0, 0, 2]
  assert (Tensor([7, -7]) // 0).tolist() == [0, -1] and (Tensor([7, -7]) % 0).tolist() == [7, -7] and (7 % Tensor([0, 3])).tolist() == [7, 1]
  assert (Tensor([I32_MIN]) // -1).tolist() == [I32_MIN]


def test_expr_division_by_zero_variable():
  x, y = Variable("x", -10, 10), Variable("y", 0, 3)
  assert (x // y).eval(x=7, y=0) == 0 and (x % y).eval(x=7, y=0) == 7 and (x % y).eval(x=-7, y=0) == -7


# ---- NaN/inf into an int tensor used to be a C cast (undefined behaviour) -----------------------------------------------
def test_full_nan_into_int_dtype_wrapped_silently():
  for dt in (dtypes.int8, dtypes.int32, dtypes.uint64):
    with pytest.raises(ValueError, match="NaN"): Tensor.full((3,), math.nan, dtype=dt)  # tinygrad: int(nan)
    for v in (math.inf, -math.inf):
      with pytest.raises(OverflowError, match="infinity"): Tensor.full((3,), v, dtype=dt)  # int(inf)
  assert np.isnan(Tensor.full((2,), math.nan, dtype=dtypes.float32).numpy()).all()
  assert Tensor.full((2,), math.nan, dtype=dtypes.bool).tolist() == [True, True]
  # the library refuses it too: its TG_ERROR_INVALID_ARGUMENT is also a ValueError
  shape = (ctypes.c_int64 * 1)(3)
  for v in (math.nan, math.inf, -math.inf):
    with pytest.raises(ValueError) as e: tg._made(tg.C.tensor_full(shape, 1, v, dtypes.int32.value, None), "tensor_full")
    assert isinstance(e.value, TinygradError) and e.value.status == "TG_ERROR_INVALID_ARGUMENT"


# ---- status -> exception ------------------------------------------------------------------------------------------------
def test_error_status_maps_to_builtin_exception():
  for status, builtin in (("TG_ERROR_SHAPE", ValueError), ("TG_ERROR_INVALID_ARGUMENT", ValueError), ("TG_ERROR_OUT_OF_MEMORY", MemoryError)):
    e = TinygradError(status, "msg")
    assert isinstance(e, builtin) and isinstance(e, TinygradError) and isinstance(e, RuntimeError)
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is type(e) and back.status == status and back.message == "msg"
  e = TinygradError("TG_ERROR_DTYPE", "msg")
  assert type(e) is TinygradError and not isinstance(e, ValueError)
  with pytest.raises(ValueError): Tensor.zeros(2, 3).reshape(4)
  with pytest.raises(tg.ShapeError): Tensor.zeros(3, 4) + Tensor.zeros(5)


def test_deep_lazy_chain_overflowed_the_stack():
  t = Tensor([0.0])
  for _ in range(20000): t = t + 1
  assert t.numpy().tolist() == [20000.0]
