# Tensor ops through the Python binding, checked element by element against numpy (and torch for a few).
#
# Tolerances (rtol, atol) per result dtype:
#   exact ops (ints, bool, movement, cast to int):  exact equality
#   float32:  arithmetic 1e-5 / 1e-6;  transcendental (exp, log, sin, pow, softmax, ...) 1e-4 / 1e-5;
#             reductions and matmul 1e-5 / 1e-5 (summation order differs from numpy's pairwise sums)
#   float64:  arithmetic 1e-10 / 1e-12; transcendental 1e-7 / 1e-9; reductions 1e-10 / 1e-10
#   float16:  1e-2 / 1e-3 (reductions and matmul 1e-2 / 1e-2)
#   bfloat16: 1e-2 / 1e-2
# References are computed in float64 from the same inputs and cast to the result dtype; int references are computed
# by numpy in the ints' own dtype, so wraparound matches C.
import os
import re
import subprocess
import sys
import zlib

import numpy as np
import pytest

import tinygrad_c as tg
from tinygrad_c import Tensor, TinygradError, dtypes

import torch  # python3-torch, installed by `make deps`

F16, F32, F64, I8, U8, I32, B = np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.bool_
TG = {F16: dtypes.float16, F32: dtypes.float32, F64: dtypes.float64, I8: dtypes.int8, U8: dtypes.uint8, I32: dtypes.int32,
      B: dtypes.bool, np.int16: dtypes.int16, np.uint32: dtypes.uint32, np.int64: dtypes.int64, np.uint64: dtypes.uint64}
TOL = {"arith": {F32: (1e-5, 1e-6), F64: (1e-10, 1e-12), F16: (1e-2, 1e-3)},
       "trans": {F32: (1e-4, 1e-5), F64: (1e-7, 1e-9), F16: (1e-2, 1e-3)},
       "acc": {F32: (1e-5, 1e-5), F64: (1e-10, 1e-10), F16: (1e-2, 1e-2)}}


def rng_for(*key) -> np.random.Generator:
  """A generator seeded from the test's parameters, so every case is reproducible on its own."""
  return np.random.default_rng(zlib.crc32(repr(key).encode()))


def rand(rng, shape, dtype, lo=-2.0, hi=2.0, avoid_zero=False):
  dtype = np.dtype(dtype)
  if dtype == np.bool_: return rng.random(shape) < 0.5
  if dtype.kind in "iu":
    info = np.iinfo(dtype)
    a = rng.integers(max(int(np.floor(lo)), info.min), min(int(np.ceil(hi)), info.max) + 1, size=shape, dtype=dtype)
    if avoid_zero: a[a == 0] = 1
    return a
  a = rng.uniform(lo, hi, size=shape)
  if avoid_zero: a = np.where(np.abs(a) < 0.25, np.copysign(0.25, a) + a, a)
  return a.astype(dtype)


def check(t: Tensor, want: np.ndarray, kind="arith", dtype=None):
  """Every element of t equals want: exactly for ints/bool, within TOL[kind] for floats. dtype: expected tinygrad dtype."""
  want = np.asarray(want)
  assert t.dtype is (dtype or TG[want.dtype.type]), f"dtype {t.dtype}, want {dtype or TG[want.dtype.type]}"
  got = t.numpy()
  assert got.shape == want.shape, f"shape {got.shape}, want {want.shape}"
  assert got.dtype == want.dtype, f"numpy dtype {got.dtype}, want {want.dtype}"
  if want.dtype.kind == "f":
    rtol, atol = TOL[kind][want.dtype.type]
    np.testing.assert_allclose(got.astype(F64), want.astype(F64), rtol=rtol, atol=atol, equal_nan=True)
  else: np.testing.assert_array_equal(got, want)


def ref(fn, *xs, out):
  """numpy reference: floats computed in float64 and cast to `out`; ints/bool computed in their own dtype."""
  out = np.dtype(out)
  if out.kind == "f" or any(x.dtype.kind == "f" for x in xs):
    with np.errstate(all="ignore"): return np.asarray(fn(*[x.astype(F64) for x in xs])).astype(out)
  with np.errstate(all="ignore"): return np.asarray(fn(*xs)).astype(out)


# ---- creation and data ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", [B, I8, U8, np.int16, I32, np.uint32, np.int64, np.uint64, F16, F32, F64])
def test_roundtrip(dt):
  a = rand(rng_for("rt", dt), (3, 5), dt, -100, 100)
  if np.dtype(dt).kind in "iu": a.flat[:2] = [np.iinfo(dt).min, np.iinfo(dt).max]  # extremes survive the copy
  t = Tensor(a)
  assert t.shape == (3, 5) and t.dtype is TG[dt] and t.device == tg.Device.DEFAULT and t.numel() == 15 and t.ndim == 2 and len(t) == 3
  np.testing.assert_array_equal(t.numpy(), a)
  assert t.numpy().dtype == a.dtype


def test_from_noncontiguous_numpy():
  a = np.arange(24, dtype=F32).reshape(4, 6)
  for view in (a[:, ::2], a.T, a[::-1], np.broadcast_to(a[:1], (3, 6))):
    np.testing.assert_array_equal(Tensor(view).numpy(), view)


@pytest.mark.parametrize("data, dtype, want", [
  ([1.5, 2.0], None, np.array([1.5, 2.0], F32)), ([[1, 2], [3, 4]], None, np.array([[1, 2], [3, 4]], I32)),
  ([True, False], None, np.array([True, False])), (3.5, None, np.array(3.5, F32)), (7, None, np.array(7, I32)),
  ([], None, np.zeros((0,), F32)), ([1, 2], dtypes.float16, np.array([1, 2], F16)), ([1.7, -2.7], "int32", np.array([1, -2], I32)),
  (np.array([1, 2], np.int64), None, np.array([1, 2], np.int64)), (np.array([0.5], F64), dtypes.float32, np.array([0.5], F32))])
def test_tensor_from_python(data, dtype, want):
  check(Tensor(data, dtype=dtype), want)


def test_bfloat16():
  a = np.array([1.0, -2.5, 3.140625, 1e-3, 65504.0, 1 / 3], F32)
  t = Tensor(a, dtype=dtypes.bfloat16)
  assert t.dtype is dtypes.bfloat16
  got = t.numpy()
  assert got.dtype == F32
  np.testing.assert_allclose(got, a, rtol=2 ** -8)
  np.testing.assert_array_equal(got[:3], a[:3])  # exactly representable
  np.testing.assert_allclose(Tensor(a).cast(dtypes.bfloat16).numpy(), got, rtol=2 ** -7)
  np.testing.assert_allclose(t.cast(dtypes.float32).numpy(), got, rtol=0)
  np.testing.assert_array_equal(Tensor(2.5, dtype=dtypes.bfloat16).numpy(), np.array(2.5, F32))  # 0-d
  special = np.array([np.inf, -np.inf, np.nan, -3.4e38], F32)  # -3.4e38 rounds past bfloat16's max: -inf
  np.testing.assert_array_equal(Tensor(special, dtype=dtypes.bfloat16).numpy(), np.array([np.inf, -np.inf, np.nan, -np.inf], F32))
  np.testing.assert_array_equal(Tensor(special).cast(dtypes.bfloat16).numpy(), np.array([np.inf, -np.inf, np.nan, -np.inf], F32))


@pytest.mark.parametrize("make, want", [
  (lambda: Tensor.zeros(2, 3), np.zeros((2, 3), F32)), (lambda: Tensor.zeros((2, 3), dtype=dtypes.int32), np.zeros((2, 3), I32)),
  (lambda: Tensor.ones(4), np.ones(4, F32)), (lambda: Tensor.ones(2, 0, dtype=dtypes.uint8), np.ones((2, 0), U8)),
  (lambda: Tensor.full((2, 2), 2.5), np.full((2, 2), 2.5, F32)), (lambda: Tensor.full((3,), 7), np.full(3, 7, I32)),
  (lambda: Tensor.full((), True), np.array(True)), (lambda: Tensor.full((2,), -3, dtype=dtypes.int8), np.full(2, -3, I8)),
  (lambda: Tensor.arange(5), np.arange(5, dtype=I32)), (lambda: Tensor.arange(1, 10, 3), np.arange(1, 10, 3, dtype=I32)),
  (lambda: Tensor.arange(10, 0, -3), np.arange(10, 0, -3, dtype=I32)), (lambda: Tensor.arange(0, 1, 0.25), np.arange(0, 1, 0.25, dtype=F32)),
  (lambda: Tensor.arange(5, dtype=dtypes.float64), np.arange(5, dtype=F64)), (lambda: Tensor.arange(3, 3), np.zeros(0, I32)),
  (lambda: Tensor.eye(3), np.eye(3, dtype=F32)), (lambda: Tensor.eye(4, dtype=dtypes.int32), np.eye(4, dtype=I32)),
  (lambda: Tensor.eye(2, 3), np.eye(2, 3, dtype=F32)), (lambda: Tensor.eye(3, 2), np.eye(3, 2, dtype=F32))])
def test_creation(make, want):
  check(make(), want)


def test_empty():
  t = Tensor.empty(3, 4, dtype=dtypes.int16)
  assert t.shape == (3, 4) and t.dtype is dtypes.int16 and t.numpy().shape == (3, 4)
  assert Tensor.empty(2).dtype is dtypes.float32


def test_realize_contiguous_item():
  a = rand(rng_for("rc"), (3, 4), F32)
  t = Tensor(a) * 2
  assert t.realize() is t
  np.testing.assert_allclose(t.numpy(), a * 2, rtol=1e-6)
  x, y = Tensor(a) + 1, Tensor(a) - 1
  Tensor.realize_many(x, y)
  check(x, ref(lambda a: a + 1, a, out=F32)), check(y, ref(lambda a: a - 1, a, out=F32))
  check(Tensor(a).permute(1, 0).contiguous(), a.T)
  assert Tensor(a).sum().item() == pytest.approx(float(a.astype(F64).sum()), rel=1e-5, abs=1e-5)
  assert Tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]


def test_python_protocols():
  t = Tensor([1.0, 2.0])
  assert isinstance(t == 1.0, Tensor) and isinstance(t != t, Tensor) and len({t, t}) == 1
  with pytest.raises(TypeError): bool(t)
  assert "shape=(2,)" in repr(t) and "float32" in repr(t)


def test_counters():
  tg.reset_counters()
  before = tg.counters()
  assert set(before) == {"kernel_count", "global_ops", "global_mem", "time_sum_s", "compile_count", "schedule_count", "lower_count",
                         "copy_count", "copy_bytes"}
  (Tensor(rand(rng_for("cnt"), (7, 3), F32)) * 3.25 + 1).realize()
  assert tg.counters()["kernel_count"] >= before["kernel_count"] + 1


# ---- elementwise binary ---------------------------------------------------------------------------------------------
# name: (binding call, numpy fn, domain of a, domain of b (lo, hi, avoid_zero), kind)
BINARY = {
  "add": (lambda a, b: a + b, np.add, (-2, 2), (-2, 2, False), "arith"),
  "sub": (lambda a, b: a - b, np.subtract, (-2, 2), (-2, 2, False), "arith"),
  "mul": (lambda a, b: a * b, np.multiply, (-2, 2), (-2, 2, False), "arith"),
  "div": (lambda a, b: a / b, np.divide, (-2, 2), (-2, 2, True), "arith"),
  "idiv": (lambda a, b: a // b, np.floor_divide, (-20, 20), (-6, 6, True), "arith"),  # floor division, as tinygrad and Python
  "mod": (lambda a, b: a % b, np.mod, (-20, 20), (-6, 6, True), "arith"),  # the remainder of the floor //: the divisor's sign
  "maximum": (lambda a, b: a.maximum(b), np.maximum, (-2, 2), (-2, 2, False), "arith"),
  "minimum": (lambda a, b: a.minimum(b), np.minimum, (-2, 2), (-2, 2, False), "arith"),
  "pow": (lambda a, b: a ** b, np.power, (0.25, 3), (-2, 2, False), "trans"),
  "lt": (lambda a, b: a < b, np.less, (-2, 2), (-2, 2, False), "arith"),
  "le": (lambda a, b: a <= b, np.less_equal, (-2, 2), (-2, 2, False), "arith"),
  "gt": (lambda a, b: a > b, np.greater, (-2, 2), (-2, 2, False), "arith"),
  "ge": (lambda a, b: a >= b, np.greater_equal, (-2, 2), (-2, 2, False), "arith"),
  "eq": (lambda a, b: a == b, np.equal, (-2, 2), (-2, 2, False), "arith"),
  "ne": (lambda a, b: a != b, np.not_equal, (-2, 2), (-2, 2, False), "arith"),
}
CMP = {"lt", "le", "gt", "ge", "eq", "ne"}
BIN_SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 4)), ((1,), (5,)), ((), (2, 3)), ((0, 3), (1, 3)), ((2, 1, 3), (2, 4, 1))]
# every shape for the main ops, two shapes for the rest (they share the broadcasting code)
BIN_SHAPE_CASES = [(op, sa, sb) for op in BINARY for sa, sb in (BIN_SHAPES if op in ("add", "mul", "div", "idiv", "mod", "maximum", "pow", "lt")
                                                               else BIN_SHAPES[1:3])]
# dtypes each op is meaningful for (idiv and mod are integer-only); the variants of an op get two
_ALL_DT = [F64, F16, I32, I8, U8]
BIN_DTYPES = {"add": _ALL_DT + [B], "mul": _ALL_DT + [B], "div": _ALL_DT, "idiv": [I32, I8, U8], "mod": [I32, I8, U8], "maximum": _ALL_DT + [B],
              "pow": [F64, F16, I32, U8], "lt": _ALL_DT + [B], "eq": _ALL_DT + [B], "sub": [F16, U8], "minimum": [I8, B],
              "le": [F16, I8], "gt": [F64, U8], "ge": [I32, B], "ne": [F16, B]}


def _bin_inputs(op, sa, sb, dt):
  _, _, da, db, _ = BINARY[op]
  rng = rng_for(op, sa, sb, dt)
  if op == "pow" and np.dtype(dt).kind in "iu": da, db = (-3, 3), (0, 3, False)  # small ints, non-negative exponents
  if np.dtype(dt).kind in "iu" and op in ("add", "sub", "mul", "maximum", "minimum") + tuple(CMP): da, db = (-100, 100), (-100, 100, False)
  a, b = rand(rng, sa, dt, *da), rand(rng, sb, dt, db[0], db[1], db[2])
  if op in CMP and np.dtype(dt).kind == "f": a, b = np.round(a * 2) / 2, np.round(b * 2) / 2  # multiples of 0.5: ties happen
  return a, b


def _bin_out(op, dt):
  if op in CMP: return B
  if op == "div" and np.dtype(dt).kind in "iub": return F32
  return dt


def _run_binary(op, sa, sb, dt):
  fn, npfn, _, _, kind = BINARY[op]
  a, b = _bin_inputs(op, sa, sb, dt)
  out = _bin_out(op, dt)
  if op in ("idiv", "mod"): want = npfn(a, b).astype(dt)
  else: want = ref(npfn, a, b, out=out)
  check(fn(Tensor(a), Tensor(b)), want, kind)


@pytest.mark.parametrize("op, sa, sb", BIN_SHAPE_CASES, ids=str)
def test_binary_shapes(op, sa, sb):
  _run_binary(op, sa, sb, I32 if op in ("idiv", "mod") else F32)


@pytest.mark.parametrize("op, dt", [(op, dt) for op in BINARY for dt in BIN_DTYPES[op]], ids=lambda x: getattr(x, "__name__", str(x)))
def test_binary_dtypes(op, dt):
  _run_binary(op, (2, 3), (3,), dt)


def test_pow_negative_base():
  a = np.array([-2.0, -1.5, -1.0, 0.0, 0.5, 2.0, -3.0, -0.5], F32)
  b = np.array([2.0, 3.0, 0.0, 2.0, -1.0, 0.5, 1.0, -2.0], F32)
  check(Tensor(a) ** Tensor(b), ref(np.power, a, b, out=F32), "trans")
  check(Tensor(a) ** 2, ref(lambda x: x ** 2, a, out=F32), "trans")
  check(Tensor(a) ** 3.0, ref(lambda x: x ** 3, a, out=F32), "trans")


@pytest.mark.parametrize("e", [1, 2, 3, 4, 5, 7, 8, 13, 64], ids=str)
def test_pow_whole_constant_is_multiplication(e):
  # a float to a constant whole power in [1, 64] is squarings and products (as tinygrad's): the values as numpy's pow
  # to float32 rounding (a few roundings for high powers), signed zeros, infinities and NaN as pow's; the gradient too
  a = np.array([-3.5, -0.0, 0.0, 1.5, np.inf, -np.inf, np.nan, 1.0001, -2.0, 0.5], F32)
  t = Tensor(a) ** e
  with np.errstate(over="ignore", invalid="ignore"):
    want = np.power(a.astype(np.float64), e).astype(F32)
  np.testing.assert_allclose(t.numpy(), want, rtol=2e-7 * e, atol=0, equal_nan=True)
  assert np.array_equal(np.signbit(t.numpy()), np.signbit(want))
  x = Tensor(np.array([-1.5, 0.0, 2.0, 0.75], F32), requires_grad=True)
  (x ** e).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), e * np.array([-1.5, 0.0, 2.0, 0.75], np.float64) ** (e - 1), rtol=1e-5)


# mixed dtypes promote like tinygrad's least_upper_dtype
@pytest.mark.parametrize("da, db, out", [(I32, F32, F32), (I8, U8, np.int16), (I32, F16, F16), (F16, F32, F32), (U8, I32, I32),
                                         (B, I8, I8), (F32, F64, F64), (B, F32, F32)], ids=str)
def test_binary_promotion(da, db, out):
  rng = rng_for("promo", da, db)
  a, b = rand(rng, (3, 4), da, -50, 50), rand(rng, (4,), db, -50, 50)
  want = ref(np.add, a, b, out=out) if np.dtype(out).kind == "f" else (a.astype(out) + b.astype(out))
  check(Tensor(a) + Tensor(b), want, "arith")
  check(Tensor(b) * Tensor(a), ref(np.multiply, b, a, out=out) if np.dtype(out).kind == "f" else b.astype(out) * a.astype(out))


# Python scalars on either side: (binding call, numpy reference on the same array, input dtype, result dtype, kind)
SCALAR_CASES = {
  "t+2": (lambda t: t + 2, lambda a: a + 2, F32, F32, "arith"), "2+t": (lambda t: 2 + t, lambda a: 2 + a, F32, F32, "arith"),
  "t-1.5": (lambda t: t - 1.5, lambda a: a - 1.5, F32, F32, "arith"), "1.5-t": (lambda t: 1.5 - t, lambda a: 1.5 - a, F32, F32, "arith"),
  "t*3": (lambda t: t * 3, lambda a: a * 3, F32, F32, "arith"), "3*t": (lambda t: 3 * t, lambda a: 3 * a, F32, F32, "arith"),
  "t/4": (lambda t: t / 4, lambda a: a / 4, F32, F32, "arith"), "2/t": (lambda t: 2 / t, lambda a: 2 / a, F32, F32, "arith"),
  "t**2": (lambda t: t ** 2, lambda a: a ** 2, F32, F32, "trans"), "t**0.5": (lambda t: t.abs() ** 0.5, lambda a: np.abs(a) ** 0.5, F32, F32, "trans"),
  "2**t": (lambda t: 2 ** t, lambda a: 2 ** a, F32, F32, "trans"), "-t": (lambda t: -t, lambda a: -a, F32, F32, "arith"),
  "t<0.5": (lambda t: t < 0.5, lambda a: a < 0.5, F32, B, "arith"), "0.5<t": (lambda t: 0.5 < t, lambda a: 0.5 < a, F32, B, "arith"),
  "t==1": (lambda t: t == 1, lambda a: a == 1, I32, B, "arith"), "t!=1": (lambda t: t != 1, lambda a: a != 1, I32, B, "arith"),
  "t>=0": (lambda t: t >= 0, lambda a: a >= 0, I32, B, "arith"),
  "max(t,0)": (lambda t: t.maximum(0.0), lambda a: np.maximum(a, 0), F32, F32, "arith"),
  "min(t,1)": (lambda t: t.minimum(1), lambda a: np.minimum(a, 1), I32, I32, "arith"),
  "int+5": (lambda t: t + 5, lambda a: a + 5, I32, I32, "arith"), "5-int": (lambda t: 5 - t, lambda a: 5 - a, I32, I32, "arith"),
  "int*-3": (lambda t: t * -3, lambda a: a * -3, I32, I32, "arith"), "int//3": (lambda t: t // 3, lambda a: np.floor(a / 3), I32, I32, "arith"),
  "int+2.5": (lambda t: t + 2.5, lambda a: a + 2.5, I32, F32, "arith"),
  "int+2.0": (lambda t: t + 2.0, lambda a: a + 2.0, I32, F32, "arith"),  # a float scalar makes it float, as tinygrad
  "int%3": (lambda t: t % 3, lambda a: np.mod(a, 3), I32, I32, "arith"), "7%int": (lambda t: 7 % t, lambda a: np.mod(7, a), I32, I32, "arith"), "int/2": (lambda t: t / 2, lambda a: a / 2, I32, F32, "arith"),
  "int*0.5": (lambda t: t * 0.5, lambda a: a * 0.5, I32, F32, "arith"), "uint8+3": (lambda t: t + 3, lambda a: a + 3, U8, U8, "arith"),
  "3-uint8": (lambda t: 3 - t, lambda a: np.uint8(3) - a, U8, U8, "arith"), "int8*2": (lambda t: t * 2, lambda a: a * np.int8(2), I8, I8, "arith"),
  "bool+1": (lambda t: t + 1, lambda a: a.astype(I32) + 1, B, I32, "arith"), "bool*2.5": (lambda t: t * 2.5, lambda a: a * 2.5, B, F32, "arith"),
  "f16*3": (lambda t: t * 3, lambda a: a * 3, F16, F16, "arith"), "f64-0.1": (lambda t: t - 0.1, lambda a: a - 0.1, F64, F64, "arith"),
  "ndarray+t": (lambda t: np.full((4,), 2, F32) + t, lambda a: 2 + a, F32, F32, "arith"),
}


@pytest.mark.parametrize("case", list(SCALAR_CASES))
def test_scalar_ops(case):
  fn, npfn, dt, out, kind = SCALAR_CASES[case]
  a = rand(rng_for("scalar", case), (3, 4), dt, -10 if np.dtype(dt).kind in "iu" else -2, 10 if np.dtype(dt).kind in "iu" else 2, avoid_zero=True)
  if np.dtype(dt).kind == "f": a[0, :2] = [1, 0.5]  # hit the comparison constants exactly
  check(fn(Tensor(a)), ref(npfn, a, out=out) if np.dtype(out).kind == "f" else np.asarray(npfn(a)).astype(out), kind)


# operands that are views: permute, flip, shrink, pad, expand before the op
def test_binary_noncontiguous():
  rng = rng_for("views")
  a, b = rand(rng, (4, 3), F32), rand(rng, (3, 4), F32)
  A, Bt = Tensor(a), Tensor(b)
  check(A.permute(1, 0) + Bt, a.T + b)
  check(A.flip(0) * Bt.T, a[::-1] * b.T)
  check(A.shrink(((1, 3), (0, 2))) - Bt.shrink(((0, 2), (2, 4))), ref(np.subtract, a[1:3, 0:2], b[0:2, 2:4], out=F32))
  check(A.pad(((1, 0), (0, 1))) / (Bt.T.pad(((0, 1), (1, 0)), value=2.0)),
        ref(np.divide, np.pad(a, ((1, 0), (0, 1))), np.pad(b.T, ((0, 1), (1, 0)), constant_values=2.0), out=F32))
  check(A.permute(1, 0).flip(1).maximum(Bt.flip((0, 1))), np.maximum(a.T[:, ::-1], b[::-1, ::-1]))
  check(A.shrink(((0, 4), (1, 2))).expand(4, 5) < Bt.reshape(4, 3).pad(((0, 0), (0, 2)), value=0.5),
        np.broadcast_to(a[:, 1:2], (4, 5)) < np.pad(b.reshape(4, 3), ((0, 0), (0, 2)), constant_values=0.5))


# ---- where and cast -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sc, sx, sy, dt", [((3, 4), (3, 4), (3, 4), F32), ((3, 1), (1, 4), (), F32), ((2, 3), (3,), (2, 1), I32),
                                           ((4,), (4,), (4,), F16), ((2, 2), (2, 2), (2, 2), U8), ((3,), (3,), (3,), B),
                                           ((0, 2), (1, 2), (0, 2), F32)], ids=str)
def test_where(sc, sx, sy, dt):
  rng = rng_for("where", sc, sx, sy, dt)
  c, x, y = rand(rng, sc, B), rand(rng, sx, dt, -50, 50), rand(rng, sy, dt, -50, 50)
  check(Tensor(c).where(Tensor(x), Tensor(y)), np.where(c, x, y))


def test_where_cond_and_scalars():
  rng = rng_for("where2")
  a, ci = rand(rng, (3, 4), F32), rand(rng, (3, 4), I32, -1, 1)
  check((Tensor(a) > 0).where(Tensor(a), 0.0), np.where(a > 0, a, np.float32(0)))
  check((Tensor(a) > 0).where(1.0, Tensor(a)), np.where(a > 0, np.float32(1), a))
  check((Tensor(a) > 0).where(2, -1), np.where(a > 0, 2, -1).astype(I32))
  check(Tensor(ci).where(Tensor(a), -Tensor(a)), np.where(ci != 0, a, -a))  # int condition: cast to bool


@pytest.mark.parametrize("src, dst, lo, hi", [(F32, I32, -50, 50), (F32, U8, 0, 200), (I32, F16, -1000, 1000), (F32, B, -1, 1),
                                             (B, F32, 0, 1), (I8, U8, -128, 127), (U8, I8, 0, 255), (F64, F32, -1e6, 1e6),
                                             (F32, F16, -100, 100), (F16, F32, -100, 100), (I32, np.int64, -1e9, 1e9),
                                             (np.int64, I32, -1e9, 1e9), (I32, B, -2, 2), (U8, F64, 0, 255)], ids=str)
def test_cast(src, dst, lo, hi):
  a = rand(rng_for("cast", src, dst), (4, 5), src, lo, hi)
  if src == F32 and dst == B: a[0, :3] = [0.0, -0.0, 1e-30]
  if np.dtype(dst).kind == "f": want = a.astype(F64).astype(dst)
  else: want = a.astype(dst)
  check(Tensor(a).cast(TG[dst]), want)
  if src in (F32, U8): check(Tensor(a).permute(1, 0).cast(TG[dst]), want.T)  # and from a view


# ---- elementwise unary ----------------------------------------------------------------------------------------------
# name: (numpy fn in float64, domain, kind, keeps int dtype)
UNARY = {
  "neg": (np.negative, (-3, 3), "arith", True), "exp": (np.exp, (-5, 5), "trans", False), "exp2": (np.exp2, (-5, 5), "trans", False),
  "log": (np.log, (0.05, 5), "trans", False), "log2": (np.log2, (0.05, 5), "trans", False), "sqrt": (np.sqrt, (0, 5), "trans", False),
  "reciprocal": (np.reciprocal, (-3, 3), "arith", False), "sin": (np.sin, (-10, 10), "trans", False),
  "cos": (np.cos, (-10, 10), "trans", False), "abs": (np.abs, (-3, 3), "arith", True),
  "relu": (lambda x: np.maximum(x, 0), (-3, 3), "arith", True), "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-8, 8), "trans", False),
  "tanh": (np.tanh, (-5, 5), "trans", False),
}
UN_SHAPES = [(2, 1, 3), (37, 19), (0, 3), ()]


def _run_unary(op, shape, dt, view=None):
  npfn, (lo, hi), kind, keeps = UNARY[op]
  if np.dtype(dt).kind in "iu": lo, hi = (max(lo, 1), hi * 4) if op in ("log", "log2", "reciprocal") else (lo * 3, hi * 3)
  a = rand(rng_for("unary", op, shape, dt, view), shape, dt, lo, hi, avoid_zero=op == "reciprocal")
  out = dt if (np.dtype(dt).kind == "f" or keeps) else F32
  t = Tensor(a)
  if view == "permute": t, a = t.permute(1, 0), a.T
  elif view == "flip": t, a = t.flip(0), a[::-1]
  elif view == "shrink": t, a = t.shrink(((1, 3), (1, 4))), a[1:3, 1:4]
  got = getattr(t, op)()
  if np.dtype(out).kind == "f": want = ref(npfn, a, out=out)
  else: want = np.asarray(npfn(a)).astype(out)
  if np.dtype(dt) == F16 and np.dtype(out).kind == "f": kind = "trans"
  check(got, want, kind)


@pytest.mark.parametrize("shape", UN_SHAPES, ids=str)
@pytest.mark.parametrize("op", list(UNARY))
def test_unary_shapes(op, shape):
  _run_unary(op, shape, F32)


@pytest.mark.parametrize("dt", [F64, F16, I32], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", list(UNARY))
def test_unary_dtypes(op, dt):
  _run_unary(op, (3, 5), dt)


@pytest.mark.parametrize("op, view", [("exp", "permute"), ("sqrt", "flip"), ("sin", "shrink"), ("neg", "permute"), ("tanh", "flip")])
def test_unary_views(op, view):
  _run_unary(op, (4, 5), F32, view)


@pytest.mark.parametrize("op, dt", [("abs", I8), ("neg", I8), ("relu", I8), ("abs", U8), ("relu", U8)], ids=str)
def test_unary_small_ints(op, dt):
  _run_unary(op, (3, 5), dt)


@pytest.mark.parametrize("op, x", [("exp", [0.0, -100.0, 100.0]), ("log", [0.0, 1.0, np.inf]), ("sqrt", [0.0, 1.0, 4.0]),
                                   ("sigmoid", [-100.0, 0.0, 100.0]), ("tanh", [-50.0, 0.0, 50.0]), ("reciprocal", [np.inf, -2.0, 0.5]),
                                   ("sin", [0.0, np.pi / 2, 100.0])], ids=str)
def test_unary_special_values(op, x):
  a = np.array(x, F32)
  check(getattr(Tensor(a), op)(), ref(UNARY[op][0], a, out=F32), "trans")


# ---- reductions -----------------------------------------------------------------------------------------------------
NP_RED = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean}
RED_CASES = [((4, 5), None, False), ((4, 5), 0, False), ((4, 5), -1, True), ((2, 3, 4), (0, 2), False), ((3, 1, 4), 1, False),
             ((16, 33), 1, False), ((300, 257), 0, False), ((), None, False), ((4, 5), (), False)]
# result dtypes (tinygrad): sum/prod of ints accumulate in int32 (uint32 for unsigned), mean of ints is float32
RED_OUT = {("sum", I8): I32, ("sum", U8): np.uint32, ("sum", B): I32, ("prod", I8): I32, ("prod", U8): np.uint32,
           ("mean", I32): F32, ("mean", I8): F32, ("mean", U8): F32, ("mean", B): F32}


def _run_reduce(op, shape, axis, keepdim, dt, view=None):
  rng = rng_for("red", op, shape, axis, keepdim, dt, view)
  lo, hi = (0.6, 1.5) if op == "prod" else (-2, 2)
  if np.dtype(dt).kind in "iu": lo, hi = (-2, 2) if op == "prod" else (-100, 100)
  a = rand(rng, shape, dt, lo, hi)
  if op == "prod" and np.dtype(dt).kind == "f": a = a * np.where(rng.random(shape) < 0.5, -1, 1).astype(dt)
  t = Tensor(a)
  if view == "permute": t, a = t.permute(2, 0, 1), a.transpose(2, 0, 1)
  elif view == "flip": t, a = t.flip(1), a[:, ::-1]
  elif view == "pad": t, a = t.pad(((1, 1), (0, 2))), np.pad(a, ((1, 1), (0, 2)))
  out = RED_OUT.get((op, dt), dt)
  npaxis = axis if axis is not None else None
  want = NP_RED[op](a.astype(F64) if np.dtype(out).kind == "f" else a.astype(out), axis=npaxis, keepdims=keepdim).astype(out)
  check(getattr(t, op)(axis=axis, keepdim=keepdim), want, "acc")


@pytest.mark.parametrize("shape, axis, keepdim", RED_CASES, ids=str)
@pytest.mark.parametrize("op", list(NP_RED))
def test_reduce_shapes(op, shape, axis, keepdim):
  _run_reduce(op, shape, axis, keepdim, F32)


@pytest.mark.parametrize("op, dt", [(op, dt) for op in NP_RED for dt in (F64, F16, I32, I8, U8, B) if not (dt == B and op in ("prod", "mean"))],
                         ids=lambda x: getattr(x, "__name__", str(x)))
def test_reduce_dtypes(op, dt):
  _run_reduce(op, (4, 5), 1, False, dt)


@pytest.mark.parametrize("op, shape, axis, view", [("sum", (2, 3, 4), 0, "permute"), ("max", (2, 3, 4), (1, 2), "permute"),
                                                   ("mean", (4, 5), 1, "flip"), ("min", (4, 5), 0, "pad"), ("sum", (4, 5), None, "pad")], ids=str)
def test_reduce_views(op, shape, axis, view):
  _run_reduce(op, shape, axis, False, F32, view)


@pytest.mark.parametrize("op, axis", [("sum", 0), ("sum", 1), ("sum", None), ("prod", 0), ("prod", 1)], ids=str)
def test_reduce_empty(op, axis):
  a = np.zeros((0, 3), F32)
  check(getattr(Tensor(a), op)(axis=axis), NP_RED[op](a, axis=axis).astype(F32), "acc")


# ---- softmax --------------------------------------------------------------------------------------------------------
def _np_softmax(x, axis):
  e = np.exp(x - x.max(axis=axis, keepdims=True))
  return e / e.sum(axis=axis, keepdims=True)


SOFTMAX_CASES = [("softmax", (4, 5), -1, F32), ("softmax", (4, 5), 0, F32), ("softmax", (2, 3, 4), 1, F32), ("softmax", (3, 1), -1, F32),
                 ("softmax", (64, 100), -1, F32), ("softmax", (4, 5), -1, F64), ("softmax", (4, 5), -1, F16),
                 ("log_softmax", (4, 5), -1, F32), ("log_softmax", (2, 3, 4), 0, F32), ("log_softmax", (1, 7), -1, F32),
                 ("log_softmax", (4, 5), -1, F64), ("log_softmax", (4, 5), -1, F16)]


@pytest.mark.parametrize("op, shape, axis, dt", SOFTMAX_CASES, ids=str)
def test_softmax(op, shape, axis, dt):
  a = rand(rng_for(op, shape, axis, dt), shape, dt, -5, 5)
  npfn = (lambda x: _np_softmax(x, axis)) if op == "softmax" else (lambda x: np.log(_np_softmax(x, axis)))
  check(getattr(Tensor(a), op)(axis), ref(npfn, a, out=dt), "trans")


# ---- movement -------------------------------------------------------------------------------------------------------
# (binding call, numpy equivalent, input shape)
MOVEMENT = {
  "reshape": (lambda t: t.reshape(6, 4), lambda a: a.reshape(6, 4), (2, 3, 4)),
  "reshape_tuple": (lambda t: t.reshape((4, -1)), lambda a: a.reshape(4, -1), (2, 3, 4)),
  "reshape_flat": (lambda t: t.reshape(-1), lambda a: a.reshape(-1), (2, 3, 4)),
  "reshape_scalar": (lambda t: t.reshape(()), lambda a: a.reshape(()), (1, 1)),
  "reshape_empty": (lambda t: t.reshape(3, 0), lambda a: a.reshape(3, 0), (0, 3)),
  "permute": (lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), (2, 3, 4)),
  "permute_tuple": (lambda t: t.permute((1, 0, 2)), lambda a: a.transpose(1, 0, 2), (2, 3, 4)),
  "expand": (lambda t: t.expand(3, 4), lambda a: np.broadcast_to(a, (3, 4)), (3, 1)),
  "expand_new_dims": (lambda t: t.expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4)), (3, 1)),
  "expand_keep": (lambda t: t.expand(-1, 5), lambda a: np.broadcast_to(a, (4, 5)), (4, 1)),
  "pad": (lambda t: t.pad(((1, 2), (0, 1))), lambda a: np.pad(a, ((1, 2), (0, 1))), (3, 4)),
  "pad_value": (lambda t: t.pad(((0, 0), (3, 3)), value=-1.5), lambda a: np.pad(a, ((0, 0), (3, 3)), constant_values=-1.5), (2, 2)),
  "pad_none": (lambda t: t.pad((None, (2, 0))), lambda a: np.pad(a, ((0, 0), (2, 0))), (2, 3)),
  "pad_flat": (lambda t: t.pad((1, 2)), lambda a: np.pad(a, ((0, 0), (1, 2))), (2, 3)),
  "shrink": (lambda t: t.shrink(((1, 3), (0, 2))), lambda a: a[1:3, 0:2], (4, 5)),
  "shrink_none": (lambda t: t.shrink((None, (1, 4))), lambda a: a[:, 1:4], (4, 5)),
  "shrink_empty": (lambda t: t.shrink(((0, 0), (1, 2))), lambda a: a[0:0, 1:2], (4, 5)),
  "flip0": (lambda t: t.flip(0), lambda a: a[::-1], (3, 4, 2)),
  "flip01": (lambda t: t.flip((0, 1)), lambda a: a[::-1, ::-1], (3, 4, 2)),
  "flip_neg": (lambda t: t.flip(-1), lambda a: a[..., ::-1], (3, 4, 2)),
  "transpose": (lambda t: t.transpose(), lambda a: a.swapaxes(0, 1), (3, 4, 2)),
  "transpose02": (lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2), (3, 4, 2)),
  "T": (lambda t: t.T, lambda a: a.T, (3, 5)),
  "chain": (lambda t: t.permute(1, 0).flip(0).shrink(((1, 4), (0, 2))).pad(((0, 1), (2, 0))),
            lambda a: np.pad(a.T[::-1][1:4, 0:2], ((0, 1), (2, 0))), (3, 5)),
  "chain_expand": (lambda t: t.reshape(3, 1, 5).expand(3, 2, 5).permute(2, 1, 0).reshape(10, 3),
                   lambda a: np.broadcast_to(a.reshape(3, 1, 5), (3, 2, 5)).transpose(2, 1, 0).reshape(10, 3), (3, 5)),
}


@pytest.mark.parametrize("case", list(MOVEMENT))
def test_movement(case):
  fn, npfn, shape = MOVEMENT[case]
  a = rand(rng_for("mv", case), shape, F32)
  check(fn(Tensor(a)), np.array(npfn(a), order="C"))


@pytest.mark.parametrize("case, dt", [("chain", dt) for dt in (I32, U8, B, F16, F64, I8)] + [("pad", B), ("flip01", I8)], ids=str)
def test_movement_dtypes(case, dt):
  fn, npfn, shape = MOVEMENT[case]
  a = rand(rng_for("mvd", case, dt), shape, dt, -100, 100)
  check(fn(Tensor(a)), np.array(npfn(a), order="C").astype(dt))


def test_pad_value_int():
  a = np.arange(6, dtype=I32).reshape(2, 3)
  check(Tensor(a).pad(((1, 1), (1, 1)), value=7), np.pad(a, 1, constant_values=7))


# ---- matmul ---------------------------------------------------------------------------------------------------------
MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
                 ((1, 3, 4), (2, 4, 2)), ((1, 1), (1, 1)), ((3, 0), (0, 2)), ((17, 33), (33, 9)), ((2, 1, 2, 3), (3, 3, 2))]


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES, ids=str)
def test_matmul_shapes(sa, sb):
  rng = rng_for("mm", sa, sb)
  a, b = rand(rng, sa, F32), rand(rng, sb, F32)
  check(Tensor(a) @ Tensor(b), ref(np.matmul, a, b, out=F32), "acc")


@pytest.mark.parametrize("dt", [F64, F16, I32], ids=lambda d: d.__name__)
@pytest.mark.parametrize("sa, sb", [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5))], ids=str)
def test_matmul_dtypes(sa, sb, dt):
  rng = rng_for("mmd", sa, sb, dt)
  # float16 products round, so its inputs are small integers (every product and sum is exact in float16)
  a, b = [rand(rng, s, I8 if dt == F16 else dt, -5, 5).astype(dt) for s in (sa, sb)]
  check(Tensor(a).dot(Tensor(b)), ref(np.matmul, a, b, out=dt) if np.dtype(dt).kind == "f" else np.matmul(a, b).astype(dt), "acc")


def test_matmul_views():
  rng = rng_for("mmv")
  a, b = rand(rng, (4, 3), F32), rand(rng, (5, 4), F32)
  check(Tensor(a).T @ Tensor(b).T, ref(lambda x, y: x.T @ y.T, a, b, out=F32), "acc")
  check(Tensor(a).flip(0).T.matmul(Tensor(b).permute(1, 0)), ref(lambda x, y: x[::-1].T @ y.T, a, b, out=F32), "acc")
  check(Tensor(a).pad(((0, 1), (0, 0))).T @ Tensor(b).T.shrink(((0, 4), (1, 3))).pad(((0, 1), (0, 0))),
        ref(lambda x, y: np.pad(x, ((0, 1), (0, 0))).T @ np.pad(y.T[:, 1:3], ((0, 1), (0, 0))), a, b, out=F32), "acc")
  check(a @ Tensor(a.T.copy()), ref(lambda x: x @ x.T, a, out=F32), "acc")  # ndarray @ Tensor goes to __rmatmul__


# ---- errors ---------------------------------------------------------------------------------------------------------
def _raises(status, fn):
  with pytest.raises(TinygradError) as e: fn()
  assert e.value.status == status, (e.value.status, e.value.message)
  assert e.value.message and str(e.value).startswith(status)
  return e.value.message


def test_error_matmul_shapes():
  msg = _raises("TG_ERROR_SHAPE", lambda: Tensor.zeros(3, 7) @ Tensor.zeros(5, 11))
  assert re.search(r"3\D{1,3}7", msg) and re.search(r"5\D{1,3}11", msg), msg


SHAPE, ARG = "TG_ERROR_SHAPE", "TG_ERROR_INVALID_ARGUMENT"


# the header names TG_ERROR_SHAPE for shapes, broadcasting, axes and reshapes; bad movement arguments may be either
@pytest.mark.parametrize("name, statuses, fn", [
  ("reshape", (SHAPE,), lambda: Tensor.zeros(2, 3).reshape(4)), ("reshape_two_minus_one", (SHAPE,), lambda: Tensor.zeros(2, 3).reshape(-1, -1)),
  ("sum_axis", (SHAPE,), lambda: Tensor.zeros(2, 3).sum(axis=5)), ("max_axis", (SHAPE,), lambda: Tensor.zeros(2, 3).max(axis=-3)),
  ("softmax_axis", (SHAPE,), lambda: Tensor.zeros(2, 3).softmax(2)), ("broadcast", (SHAPE,), lambda: Tensor.zeros(3, 4) + Tensor.zeros(5)),
  ("where", (SHAPE,), lambda: (Tensor.zeros(2) > 0).where(Tensor.zeros(3), Tensor.zeros(2))),
  ("flip", (SHAPE,), lambda: Tensor.zeros(2, 3).flip(2)), ("transpose", (SHAPE,), lambda: Tensor.zeros(2, 3).transpose(0, 2)),
  ("permute", (SHAPE, ARG), lambda: Tensor.zeros(2, 3).permute(0, 0)), ("expand", (SHAPE, ARG), lambda: Tensor.zeros(2, 3).expand(4, 3)),
  ("shrink", (SHAPE, ARG), lambda: Tensor.zeros(2, 3).shrink(((0, 3), (0, 3)))),
  ("pad", (SHAPE, ARG), lambda: Tensor.zeros(2, 3).pad(((-3, 0), (0, 0))))], ids=lambda v: "fn" if callable(v) else str(v))
def test_error_shape(name, statuses, fn):
  with pytest.raises(TinygradError) as e: fn()
  assert e.value.status in statuses and e.value.message, (e.value.status, e.value.message)


def test_errors_named_in_message():
  assert "5" in _raises("TG_ERROR_SHAPE", lambda: Tensor.zeros(2, 3).sum(axis=5))
  msg = _raises("TG_ERROR_SHAPE", lambda: Tensor.zeros(2, 3).reshape(4))
  assert "4" in msg and re.search(r"2\D{1,3}3", msg), msg


def test_error_recovery():
  # a failed call leaves nothing behind: the next calls work and raise nothing stale
  with pytest.raises(TinygradError): Tensor.zeros(2, 3).reshape(7)
  check(Tensor([1.0, 2.0]) * 2, np.array([2.0, 4.0], F32))
  assert tg.C.last_error() == 0


def test_error_bad_device():
  with pytest.raises(TinygradError) as e: Tensor([1.0], device="NOSUCHDEVICE")
  assert e.value.status in ("TG_ERROR_DEVICE", "TG_ERROR_INVALID_ARGUMENT") and "NOSUCHDEVICE" in e.value.message


def test_error_unsupported_numpy_dtype():
  with pytest.raises(TypeError): Tensor(np.zeros(3, np.complex64))


# ---- lifetime -------------------------------------------------------------------------------------------------------
def test_release_at_shutdown():
  # tensors alive in globals and in cycles at interpreter exit are released without errors
  code = ("import numpy as np, tinygrad_c as tg\n"
          "a = tg.Tensor(np.ones((3, 3), np.float32)); b = (a + 1).realize(); c = a @ b\n"
          "class Holder: pass\n"
          "h = Holder(); h.self = h; h.t = a.sum(); x = tg.Variable('x', 0, 4) * 2\n"
          "print((b * 2).numpy().sum())\n")
  env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(tg.__file__)), os.environ.get("PYTHONPATH", "")]),
             TINYGRAD_LIB=tg.library_path)
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip() == "36.0" and "Exception ignored" not in r.stderr, r.stderr


def test_many_handles_released():
  a = Tensor(np.ones(4, F32))
  for _ in range(2000): b = a + 1  # each dropped Tensor releases its handle
  check(b, np.full(4, 2, F32))


# ---- torch ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "sigmoid", "tanh", "matmul"])
def test_against_torch(op):
  rng = rng_for("torch", op)
  a, b = rand(rng, (6, 7), F32, -4, 4), rand(rng, (7, 3), F32)
  if op == "matmul": got, want = Tensor(a) @ Tensor(b), (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()
  elif op in ("softmax", "log_softmax"): got, want = getattr(Tensor(a), op)(-1), getattr(torch, op)(torch.from_numpy(a), -1).numpy()
  else: got, want = getattr(Tensor(a), op)(), getattr(torch, op)(torch.from_numpy(a)).numpy()
  check(got, want, "acc" if op == "matmul" else "trans")
