# Forward values and gradients through the Python binding, compared with PyTorch 1.13 the way tinygrad's test/test_ops.py
# does: the same random float32 inputs go to both, every forward element is compared (np.testing.assert_allclose), then
# for differentiable ops the output is summed (weighted by a fixed random tensor for movement ops and reductions, so a
# gradient routed to the wrong element shows), .backward() runs on both, and every input's gradient is compared.
# Where torch 1.13 has no such function (or tinygrad's formula differs) the reference is numpy or the formula itself.
#
# Tolerances: forward atol=1e-6, rtol=1e-3; gradients atol=1e-4, rtol=1e-3 (per op where noted). Ints and bools exact.
# Inputs are seeded from the test's id, so each case is reproducible on its own. Random-number tests use 5-sigma bounds
# and chi-square critical values at p=1e-6, so they do not flake.
import ctypes
import math
import os
import subprocess
import sys
import zlib

import numpy as np
import pytest
import torch  # Debian's python3-torch (1.13)
import torch.nn.functional as F

import tinygrad_c as tg
from tinygrad_c import Tensor, TinygradError, ShapeError, dtypes


def _rng() -> np.random.Generator:
  return np.random.default_rng(zlib.crc32(os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0].encode()))


def _uniform(rng, shape, lo, hi, avoid_zero=False):
  a = rng.uniform(lo, hi, size=shape)
  if avoid_zero: a = np.where(np.abs(a) < 0.25, np.copysign(0.25, a) + a, a)
  return np.asarray(a, dtype=np.float32)


def _compare(got: Tensor, want, atol, rtol, what="forward"):
  want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
  g = got.numpy()
  assert g.shape == want.shape, f"{what}: shape {g.shape}, want {want.shape}"
  if want.dtype.kind in "biu" or g.dtype.kind in "biu": np.testing.assert_array_equal(g, want.astype(g.dtype), err_msg=what)
  else: np.testing.assert_allclose(g.astype(np.float64), want.astype(np.float64), atol=atol, rtol=rtol, equal_nan=True, err_msg=what)


def _tup(x): return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def helper_test_op(shapes, torch_fxn, tiny_fxn=None, atol=1e-6, rtol=1e-3, grad_atol=1e-4, grad_rtol=1e-3, forward_only=False, low=-2,
                   high=2, vals=None, weighted=False, avoid_zero=False):
  """Same random inputs (float32 in [low, high) per input, or vals) into torch_fxn and tiny_fxn; compare the outputs, then
  (unless forward_only) the gradients of sum(outputs) (times a fixed random weight when weighted) for every input."""
  tiny_fxn = tiny_fxn or torch_fxn
  rng = _rng()
  if vals is None:
    lows = low if isinstance(low, (list, tuple)) else [low] * len(shapes)
    highs = high if isinstance(high, (list, tuple)) else [high] * len(shapes)
    arrays = [_uniform(rng, s, lo, hi, avoid_zero) for s, lo, hi in zip(shapes, lows, highs)]
  else: arrays = [np.asarray(v, dtype=np.float32) if np.asarray(v).dtype.kind == "f" else np.asarray(v) for v in vals]
  grad = not forward_only and all(a.dtype.kind == "f" for a in arrays)
  ts = [torch.tensor(a, requires_grad=grad) for a in arrays]
  tt = [Tensor(a, requires_grad=grad) if grad else Tensor(a) for a in arrays]
  out_t, out_g = _tup(torch_fxn(*ts)), _tup(tiny_fxn(*tt))
  assert len(out_t) == len(out_g), f"{len(out_g)} outputs, want {len(out_t)}"
  if grad:
    # the loss is built and backward() runs before the outputs are read, so these gradients don't depend on
    # backward-after-realize, which test_backward_after_realize checks on its own
    loss_t, loss_g = 0, None
    for o_t, o_g in zip(out_t, out_g):
      if not o_t.dtype.is_floating_point: continue
      if weighted:
        w = rng.uniform(0.5, 1.5, size=tuple(o_t.shape)).astype(np.float32)
        o_t, o_g = o_t * torch.tensor(w), o_g * Tensor(w)
      loss_t, loss_g = loss_t + o_t.sum(), o_g.sum() if loss_g is None else loss_g + o_g.sum()
    loss_t.backward()
    assert loss_g.backward() is loss_g
  for i, (o_t, o_g) in enumerate(zip(out_t, out_g)): _compare(o_g, o_t, atol, rtol, f"forward output {i}")
  if not grad: return
  for i, (x_t, x_g) in enumerate(zip(ts, tt)):
    got = x_g.grad
    if x_t.grad is None and got is None: continue  # torch has none either (the input only reaches the loss through a comparison)
    want = x_t.grad if x_t.grad is not None else torch.zeros_like(x_t)
    assert got is not None, f"input {i} got no gradient"
    _compare(got, want, grad_atol, grad_rtol, f"gradient of input {i}")


SHAPES = [(), (1,), (5,), (3, 4), (2, 1, 3)]

# ---- unary math and activations ---------------------------------------------------------------------------------------
# name: (torch function, tinygrad function, low, high, extra helper kwargs)
T = Tensor
UNARY = {
  # existing ops
  "neg": (lambda x: -x, lambda x: -x, -2, 2, {}),
  "exp": (torch.exp, T.exp, -2, 2, {}),
  "exp2": (torch.exp2, T.exp2, -2, 2, {}),
  "log": (torch.log, T.log, 0.1, 3, {}),
  "log2": (torch.log2, T.log2, 0.1, 3, {}),
  "sqrt": (torch.sqrt, T.sqrt, 0.1, 3, {}),
  "reciprocal": (torch.reciprocal, T.reciprocal, -2, 2, {"avoid_zero": True}),
  "sin": (torch.sin, T.sin, -3, 3, {}),
  "cos": (torch.cos, T.cos, -3, 3, {}),
  "abs": (torch.abs, T.abs, -2, 2, {"avoid_zero": True}),
  "relu": (torch.relu, T.relu, -2, 2, {"avoid_zero": True}),
  "sigmoid": (torch.sigmoid, T.sigmoid, -4, 4, {}),
  "tanh": (torch.tanh, T.tanh, -3, 3, {}),
  # new unary math
  "rsqrt": (torch.rsqrt, T.rsqrt, 0.1, 3, {}),
  "square": (torch.square, T.square, -2, 2, {}),
  "tan": (torch.tan, T.tan, -1.2, 1.2, {}),
  "asin": (torch.asin, T.asin, -0.95, 0.95, {}),
  "acos": (torch.acos, T.acos, -0.95, 0.95, {}),
  "atan": (torch.atan, T.atan, -3, 3, {}),
  "sinh": (torch.sinh, T.sinh, -2, 2, {}),
  "cosh": (torch.cosh, T.cosh, -2, 2, {}),
  "asinh": (torch.asinh, T.asinh, -3, 3, {}),
  "acosh": (torch.acosh, T.acosh, 1.05, 4, {}),
  "atanh": (torch.atanh, T.atanh, -0.9, 0.9, {}),
  "erf": (torch.erf, T.erf, -2.5, 2.5, {}),
  "sign": (torch.sign, T.sign, -2, 2, {"avoid_zero": True}),
  "trunc": (torch.trunc, T.trunc, -5, 5, {}),
  "floor": (torch.floor, T.floor, -5, 5, {}),
  "ceil": (torch.ceil, T.ceil, -5, 5, {}),
  "round": (torch.round, T.round, -5, 5, {}),
  # activations
  "relu6": (F.relu6, T.relu6, -9, 9, {}),
  "leaky_relu": (F.leaky_relu, T.leaky_relu, -2, 2, {"avoid_zero": True}),
  "leaky_relu_0.2": (lambda x: F.leaky_relu(x, 0.2), lambda x: x.leaky_relu(0.2), -2, 2, {"avoid_zero": True}),
  "elu": (F.elu, T.elu, -3, 3, {"avoid_zero": True}),
  "elu_0.5": (lambda x: F.elu(x, 0.5), lambda x: x.elu(alpha=0.5), -3, 3, {"avoid_zero": True}),
  "celu": (F.celu, T.celu, -3, 3, {"avoid_zero": True}),
  "celu_2": (lambda x: F.celu(x, 2.0), lambda x: x.celu(2.0), -3, 3, {"avoid_zero": True}),
  "selu": (F.selu, T.selu, -3, 3, {"avoid_zero": True}),
  "gelu": (lambda x: F.gelu(x, approximate="tanh"), T.gelu, -3, 3, {}),  # tinygrad's default is the tanh form
  "gelu_none": (F.gelu, lambda x: x.gelu(approximate="none"), -3, 3, {}),
  "quick_gelu": (lambda x: x * torch.sigmoid(1.702 * x), T.quick_gelu, -3, 3, {}),
  "silu": (F.silu, T.silu, -3, 3, {}),
  "swish": (F.silu, T.swish, -3, 3, {}),
  "mish": (F.mish, T.mish, -3, 3, {}),
  "hardsigmoid": (F.hardsigmoid, T.hardsigmoid, -5, 5, {}),
  "logsigmoid": (F.logsigmoid, T.logsigmoid, -5, 5, {}),
  "softplus": (F.softplus, T.softplus, -4, 4, {}),
  "softplus_2": (lambda x: F.softplus(x, beta=2), lambda x: x.softplus(beta=2), -4, 4, {}),
  "softsign": (F.softsign, T.softsign, -3, 3, {}),
  "hardswish": (F.hardswish, T.hardswish, -5, 5, {}),
  "hardtanh": (F.hardtanh, T.hardtanh, -2, 2, {}),
  "hardtanh_args": (lambda x: F.hardtanh(x, -0.5, 1.5), lambda x: x.hardtanh(-0.5, 1.5), -2, 2, {}),
  "clamp": (lambda x: torch.clamp(x, -0.7, 0.9), lambda x: x.clamp(-0.7, 0.9), -2, 2, {}),
  "clamp_min": (lambda x: torch.clamp(x, min=-0.3), lambda x: x.clamp(min_=-0.3), -2, 2, {}),
  "clamp_max": (lambda x: torch.clamp(x, max=0.4), lambda x: x.clamp(max_=0.4), -2, 2, {}),
  "clip": (lambda x: torch.clip(x, -1.1, 0.2), lambda x: x.clip(-1.1, 0.2), -2, 2, {}),
}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", list(UNARY))
def test_unary(op, shape):
  tf, gf, lo, hi, kw = UNARY[op]
  helper_test_op([shape], tf, gf, low=lo, high=hi, **kw)


def test_round_half_to_even():
  vals = np.arange(-4, 4.5, 0.5, dtype=np.float32)
  helper_test_op(None, torch.round, Tensor.round, vals=[vals])
  helper_test_op(None, torch.trunc, Tensor.trunc, vals=[vals])
  helper_test_op(None, torch.floor, Tensor.floor, vals=[vals])
  helper_test_op(None, torch.ceil, Tensor.ceil, vals=[vals])


def test_rounding_keeps_dtype():
  for dt, npdt in ((dtypes.float64, np.float64), (dtypes.float32, np.float32)):
    a = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1.7, -1.7], npdt)
    for name, fn in (("round", np.round), ("trunc", np.trunc), ("floor", np.floor), ("ceil", np.ceil)):  # np.round: half to even
      r = getattr(Tensor(a), name)()
      assert r.dtype is dt, (name, r.dtype)
      np.testing.assert_array_equal(r.numpy(), fn(a))
  i = np.array([-3, 0, 7], np.int32)
  for name in ("round", "trunc", "floor", "ceil"):
    r = getattr(Tensor(i), name)()
    assert r.dtype is dtypes.int32, (name, r.dtype)
    np.testing.assert_array_equal(r.numpy(), i)


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.int8])
def test_sign_dtype(dt):
  a = np.array([-3, 0, 2, -1, 5], dt)
  r = Tensor(a).sign()
  assert r.dtype is dtypes.from_np(dt)
  np.testing.assert_array_equal(r.numpy(), np.sign(a))


def test_sign_nan():
  r = Tensor(np.array([np.nan, -0.0, 0.0, -np.inf, np.inf], np.float32)).sign().numpy()
  # numpy's and tinygrad's sign(nan) is nan (torch 1.13 gives 0)
  np.testing.assert_array_equal(r, np.sign(np.array([np.nan, -0.0, 0.0, -np.inf, np.inf], np.float32)))


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.0, 3e38, 1e-45], np.float32)


@pytest.mark.parametrize("op", ["isnan", "isinf", "isfinite", "logical_not"])
@pytest.mark.parametrize("shape", [(9,), (3, 3), (1, 9)], ids=str)
def test_float_predicates(op, shape):
  a = SPECIAL.reshape(shape)
  r = getattr(Tensor(a), op)()
  assert r.dtype is dtypes.bool
  np.testing.assert_array_equal(r.numpy(), getattr(torch, op)(torch.tensor(a)).numpy())


def test_isinf_sides():
  a = Tensor(SPECIAL)
  np.testing.assert_array_equal(a.isinf(detect_negative=False).numpy(), np.isposinf(SPECIAL))
  np.testing.assert_array_equal(a.isinf(detect_positive=False).numpy(), np.isneginf(SPECIAL))


@pytest.mark.parametrize("dt", [np.bool_, np.int32, np.uint8])
def test_logical_not_dtypes(dt):
  a = np.array([0, 1, 0, 1, 1], dt) if dt is np.bool_ else np.array([0, 3, 0, 200 if dt is np.uint8 else -7, 1], dt)
  r = Tensor(a).logical_not()
  assert r.dtype is dtypes.bool
  np.testing.assert_array_equal(r.numpy(), np.logical_not(a))


def test_unary_int_input_is_float32():
  r = Tensor(np.array([1, 2, 4], np.int32)).rsqrt()
  assert r.dtype is dtypes.float32
  np.testing.assert_allclose(r.numpy(), 1 / np.sqrt([1, 2, 4]), rtol=1e-6)


# ---- binary -------------------------------------------------------------------------------------------------------------
BIN_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (1, 4, 1)), ((), (5,)), ((1,), (3, 1))]
BINARY = {
  "add": (lambda a, b: a + b, None, (-2, -2), (2, 2), {}),
  "sub": (lambda a, b: a - b, None, (-2, -2), (2, 2), {}),
  "mul": (lambda a, b: a * b, None, (-2, -2), (2, 2), {}),
  "div": (lambda a, b: a / b, None, (-2, -2), (2, 2), {"avoid_zero": True}),
  "pow": (torch.pow, Tensor.pow, (0.3, -2), (2, 2), {}),
  "maximum": (torch.maximum, Tensor.maximum, (-2, -2), (2, 2), {}),
  "minimum": (torch.minimum, Tensor.minimum, (-2, -2), (2, 2), {}),
  "mod": (lambda a, b: a % b, None, (-5, -2), (5, 2), {"avoid_zero": True}),  # Python's %: the divisor's sign
  "remainder": (torch.remainder, Tensor.mod, (-5, -2), (5, 2), {"avoid_zero": True}),
  "fmod": (torch.fmod, Tensor.fmod, (-5, -2), (5, 2), {"avoid_zero": True}),
  "copysign": (torch.copysign, Tensor.copysign, (-2, -2), (2, 2), {"avoid_zero": True}),
  "logaddexp": (torch.logaddexp, Tensor.logaddexp, (-3, -3), (3, 3), {}),
}


@pytest.mark.parametrize("shapes", BIN_SHAPES, ids=str)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary(op, shapes):
  tf, gf, lo, hi, kw = BINARY[op]
  helper_test_op(list(shapes), tf, gf, low=list(lo), high=list(hi), **kw)


def _rmod2(x):  # torch 1.13 has no derivative for scalar % tensor: use the tensor % tensor form there
  return torch.remainder(torch.full_like(x, 2.0), x) if isinstance(x, torch.Tensor) else 2.0 % x


SCALAR_OPS = {
  "add": (lambda x: x + 2.5, -2, 2), "radd": (lambda x: 2.5 + x, -2, 2), "sub": (lambda x: x - 1.5, -2, 2),
  "rsub": (lambda x: 1.5 - x, -2, 2), "mul": (lambda x: x * -3, -2, 2), "div": (lambda x: x / 4, -2, 2),
  "rdiv": (lambda x: 2 / x, 0.3, 2), "pow": (lambda x: x ** 3, -2, 2), "rpow": (lambda x: 2 ** x, -2, 2),
  "pow_half": (lambda x: x ** 0.5, 0.1, 2), "mod": (lambda x: x % 0.7, -3, 3), "rmod": (_rmod2, 0.3, 3),
  "maximum": (lambda x: x.maximum(0.5) if isinstance(x, Tensor) else torch.maximum(x, torch.tensor(0.5)), -2, 2),
  "minimum": (lambda x: x.minimum(-0.5) if isinstance(x, Tensor) else torch.minimum(x, torch.tensor(-0.5)), -2, 2),
}


@pytest.mark.parametrize("op", list(SCALAR_OPS))
def test_scalar_ops(op):
  fn, lo, hi = SCALAR_OPS[op]
  helper_test_op([(3, 4)], fn, low=lo, high=hi)


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((5,), (5,), ())], ids=str)
def test_lerp(shapes):
  helper_test_op(list(shapes), torch.lerp, Tensor.lerp, low=[-2, -2, 0], high=[2, 2, 1])


def test_lerp_scalar_weight():
  helper_test_op([(3, 4), (3, 4)], lambda a, b: torch.lerp(a, b, 0.3), lambda a, b: a.lerp(b, 0.3))


@pytest.mark.parametrize("rtol,atol,equal_nan", [(1e-5, 1e-8, False), (1e-2, 0.0, False), (0.0, 1e-3, True), (0.1, 0.1, True)])
def test_isclose(rtol, atol, equal_nan):
  rng = _rng()
  a = rng.uniform(-2, 2, size=(6, 7)).astype(np.float32)
  b = (a + rng.choice([0.0, 1e-9, 1e-6, 1e-4, 1e-3, 1e-2, 0.1, 1.0], size=a.shape) * rng.choice([-1, 1], size=a.shape)).astype(np.float32)
  a[0, :4], b[0, :4] = [np.nan, np.nan, np.inf, -np.inf], [np.nan, 1.0, np.inf, np.inf]
  r = Tensor(a).isclose(Tensor(b), rtol=rtol, atol=atol, equal_nan=equal_nan)
  assert r.dtype is dtypes.bool
  np.testing.assert_array_equal(r.numpy(), torch.isclose(torch.tensor(a), torch.tensor(b), rtol=rtol, atol=atol, equal_nan=equal_nan).numpy())


def test_mod_python_semantics():
  a, b = np.array([-7.5, 7.5, -7.5, 7.5, 3.0, -3.0], np.float32), np.array([2.0, -2.0, -2.0, 2.0, 1.5, 1.5], np.float32)
  np.testing.assert_array_equal((Tensor(a) % Tensor(b)).numpy(), np.mod(a, b))
  np.testing.assert_array_equal(Tensor(a).fmod(Tensor(b)).numpy(), np.fmod(a, b))


@pytest.mark.parametrize("dt", [np.int32, np.int8, np.int64])
def test_int_mod_and_fmod(dt):
  rng = _rng()
  a = rng.integers(-50, 50, size=(4, 6)).astype(dt)
  b = rng.integers(1, 9, size=(4, 6)).astype(dt) * rng.choice(np.array([-1, 1], dt), size=(4, 6))
  ta, tb = Tensor(a), Tensor(b)
  r = Tensor._wrap(tg.C.tensor_mod(ta._h, tb._h), "tensor_mod")  # tg_tensor_mod: Python's % for ints too
  assert r.dtype is dtypes.from_np(dt)
  np.testing.assert_array_equal(r.numpy(), np.mod(a, b))
  f = ta.fmod(tb)
  assert f.dtype is dtypes.from_np(dt)
  np.testing.assert_array_equal(f.numpy(), np.fmod(a, b))
  np.testing.assert_array_equal((ta % tb).numpy(), np.mod(a, b))  # int % is Python's (floor) remainder, as tinygrad


BITWISE_DT = [np.int32, np.uint8, np.int16, np.bool_]


@pytest.mark.parametrize("dt", BITWISE_DT)
@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise(op, dt):
  rng = _rng()
  if dt is np.bool_: a, b = rng.random((3, 5)) < 0.5, rng.random((3, 5)) < 0.5
  else:
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, size=(3, 5), dtype=dt, endpoint=True)
    b = rng.integers(info.min, info.max, size=(5,), dtype=dt, endpoint=True)
  npf = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
  r = getattr(Tensor(a), f"bitwise_{op}")(Tensor(b))
  assert r.dtype is dtypes.from_np(dt)
  np.testing.assert_array_equal(r.numpy(), npf(a, b))
  r2 = {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y}[op](Tensor(a), Tensor(b))
  np.testing.assert_array_equal(r2.numpy(), npf(a, b))
  s = True if dt is np.bool_ else dt(5)
  r3 = {"and": lambda x: x & s, "or": lambda x: x | s, "xor": lambda x: x ^ s}[op](Tensor(a))
  np.testing.assert_array_equal(r3.numpy(), npf(a, s))
  r4 = {"and": lambda x: s & x, "or": lambda x: s | x, "xor": lambda x: s ^ x}[op](Tensor(a))
  np.testing.assert_array_equal(r4.numpy(), npf(s, a))


@pytest.mark.parametrize("dt", BITWISE_DT)
def test_bitwise_not(dt):
  rng = _rng()
  a = rng.random((4, 3)) < 0.5 if dt is np.bool_ else rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, size=(4, 3), dtype=dt, endpoint=True)
  r = ~Tensor(a)
  assert r.dtype is dtypes.from_np(dt)
  np.testing.assert_array_equal(r.numpy(), np.invert(a))
  np.testing.assert_array_equal(Tensor(a).bitwise_not().numpy(), torch.bitwise_not(torch.tensor(a)).numpy())


@pytest.mark.parametrize("dt", [np.int32, np.uint8, np.int64, np.uint32])
@pytest.mark.parametrize("bits", [0, 1, 3, 7])
def test_shifts(dt, bits):
  rng = _rng()
  info = np.iinfo(dt)
  a = rng.integers(info.min, info.max, size=(5, 4), dtype=dt, endpoint=True)
  a.flat[:3] = [info.min, info.max, 0]
  lsh, rsh = Tensor(a) << bits, Tensor(a) >> bits
  assert lsh.dtype is dtypes.from_np(dt) and rsh.dtype is dtypes.from_np(dt)
  np.testing.assert_array_equal(lsh.numpy(), np.left_shift(a, dt(bits)))  # wraps to the dtype's width
  np.testing.assert_array_equal(rsh.numpy(), np.right_shift(a, dt(bits)))  # arithmetic for signed ints, as torch's >>
  np.testing.assert_array_equal(Tensor(a).lshift(bits).numpy(), np.left_shift(a, dt(bits)))


def test_shift_negative_matches_torch():
  a = np.array([-8, -7, -1, 5, -128], np.int32)
  np.testing.assert_array_equal((Tensor(a) >> 2).numpy(), (torch.tensor(a) >> 2).numpy())
  np.testing.assert_array_equal((Tensor(a) << 2).numpy(), (torch.tensor(a) << 2).numpy())


# ---- reductions -------------------------------------------------------------------------------------------------------
def _tdim(x, axis):
  return tuple(range(x.ndim)) if axis is None else axis


RED_CASES = [((3, 4), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), (0, 2)), ((2, 3, 4), 1), ((5,), 0), ((4, 1), 1)]
REDUCE = {
  "sum": (lambda x, ax, kd: x.sum(_tdim(x, ax), keepdim=kd), lambda x, ax, kd: x.sum(ax, keepdim=kd)),
  "mean": (lambda x, ax, kd: x.mean(_tdim(x, ax), keepdim=kd), lambda x, ax, kd: x.mean(ax, keepdim=kd)),
  "max": (lambda x, ax, kd: x.amax(_tdim(x, ax), keepdim=kd), lambda x, ax, kd: x.max(ax, keepdim=kd)),
  "min": (lambda x, ax, kd: x.amin(_tdim(x, ax), keepdim=kd), lambda x, ax, kd: x.min(ax, keepdim=kd)),
  "prod": (lambda x, ax, kd: _tprod(x, ax, kd), lambda x, ax, kd: x.prod(ax, keepdim=kd)),
  "logsumexp": (lambda x, ax, kd: torch.logsumexp(x, _tdim(x, ax), keepdim=kd), lambda x, ax, kd: x.logsumexp(ax, keepdim=kd)),
}


def _tprod(x, ax, kd):
  for a in sorted([d % x.ndim for d in _tup(_tdim(x, ax))], reverse=True): x = x.prod(a, keepdim=kd)
  return x


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,axis", RED_CASES, ids=str)
@pytest.mark.parametrize("op", list(REDUCE))
def test_reduce(op, shape, axis, keepdim):
  tf, gf = REDUCE[op]
  helper_test_op([shape], lambda x: tf(x, axis, keepdim), lambda x: gf(x, axis, keepdim), weighted=True, low=-2 if op != "prod" else 0.5,
                 atol=1e-5)


@pytest.mark.parametrize("op", list(REDUCE))
def test_reduce_0d(op):
  tf, gf = REDUCE[op]
  helper_test_op([()], lambda x: x * 1, lambda x: gf(x, None, False), weighted=True)  # of one element: itself


STD_CASES = [((3, 4), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), (0, 2)), ((7,), 0)]


@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,axis", STD_CASES, ids=str)
@pytest.mark.parametrize("op", ["std", "var", "std_mean", "var_mean"])
def test_std_var(op, shape, axis, keepdim, correction):
  tf = getattr(torch, op)
  helper_test_op([shape], lambda x: tf(x, _tdim(x, axis), correction=correction, keepdim=keepdim),
                 lambda x: getattr(x, op)(axis, keepdim=keepdim, correction=correction), weighted=True, atol=1e-5)


def test_std_default_correction():
  helper_test_op([(4, 5)], lambda x: torch.std(x), lambda x: x.std())
  helper_test_op([(4, 5)], lambda x: torch.var(x, 1), lambda x: x.var(1))


@pytest.mark.parametrize("op", ["std", "var"])
def test_std_var_int_input(op):
  a = np.arange(12, dtype=np.int32).reshape(3, 4)
  r = getattr(Tensor(a), op)(axis=1)
  assert r.dtype.is_float
  np.testing.assert_allclose(r.numpy(), getattr(np, op)(a.astype(np.float64), axis=1, ddof=1), rtol=1e-6)


@pytest.mark.parametrize("p", [0.05, 0.5, 0.95])
@pytest.mark.parametrize("shape,axis", [((3, 4), None), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), (0, 2)), ((6,), 0)], ids=str)
@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any(op, shape, axis, p):
  rng = _rng()
  a = rng.random(shape) < p
  for kd in (False, True):
    r = getattr(Tensor(a), op)(axis, keepdim=kd)
    assert r.dtype is dtypes.bool
    np.testing.assert_array_equal(r.numpy(), getattr(np, op)(a, axis=axis, keepdims=kd))
  f = np.where(a, rng.uniform(0.5, 2, size=shape), 0.0).astype(np.float32)  # truthiness of floats
  np.testing.assert_array_equal(getattr(Tensor(f), op)(axis).numpy(), getattr(np, op)(f, axis=axis))


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,axis", [((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 4), 1), ((7,), 0), ((3, 1), 1)], ids=str)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(op, shape, axis, keepdim):
  rng = _rng()
  a = rng.uniform(-2, 2, size=shape).astype(np.float32)
  r = getattr(Tensor(a), op)(axis, keepdim=keepdim)
  assert r.dtype is dtypes.int32
  np.testing.assert_array_equal(r.numpy(), getattr(torch, op)(torch.tensor(a), axis, keepdim=keepdim).numpy())


@pytest.mark.parametrize("shape", [(3, 4), (7,), (2, 3, 4), ()], ids=str)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_flat(op, shape):
  a = _rng().uniform(-2, 2, size=shape).astype(np.float32)
  r = getattr(Tensor(a), op)()
  assert r.shape == () and r.dtype is dtypes.int32
  assert r.item() == getattr(np, op)(a)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_ties_first(op):
  a = _rng().integers(0, 3, size=(5, 8)).astype(np.int32)  # many ties: the first index wins, as numpy and tinygrad
  np.testing.assert_array_equal(getattr(Tensor(a), op)(1).numpy(), getattr(np, op)(a, axis=1))
  np.testing.assert_array_equal(getattr(Tensor(a), op)(0).numpy(), getattr(np, op)(a, axis=0))
  assert getattr(Tensor(a), op)().item() == getattr(np, op)(a)


SCAN_CASES = [((5,), 0), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 4), 1), ((1, 4), 0), ((), 0)]


@pytest.mark.parametrize("shape,axis", SCAN_CASES, ids=str)
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
def test_scans(op, shape, axis):
  tf = getattr(torch, op)
  helper_test_op([shape], lambda x: tf(x, axis), lambda x: getattr(x, op)(axis), weighted=True, low=-2 if op != "cumprod" else 0.5,
                 high=2 if op != "cumprod" else 1.5, atol=1e-5)


def test_cumsum_large_axis():
  helper_test_op([(600,)], lambda x: torch.cumsum(x, 0), lambda x: x.cumsum(), weighted=True, atol=1e-4)


@pytest.mark.parametrize("dt", [np.int32, np.int8, np.uint8])
def test_cumsum_int(dt):
  a = _rng().integers(0, 100, size=(3, 6)).astype(dt)
  r = Tensor(a).cumsum(1)
  want = np.cumsum(a.astype(np.int64), axis=1)
  assert r.dtype is (dtypes.uint32 if dt is np.uint8 else dtypes.int32)
  np.testing.assert_array_equal(r.numpy(), want)
  m = Tensor(a).cummax(1)[0]
  assert m.dtype is dtypes.from_np(dt)
  np.testing.assert_array_equal(m.numpy(), np.maximum.accumulate(a, axis=1))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax(op, axis):
  helper_test_op([(3, 5)], lambda x: getattr(torch, op)(x, axis), lambda x: getattr(x, op)(axis), weighted=True, atol=1e-5)


# ---- movement ---------------------------------------------------------------------------------------------------------
MOVEMENT = {
  "reshape": ((3, 4), lambda x: x.reshape(2, 6), None),
  "reshape_-1": ((2, 3, 4), lambda x: x.reshape(-1, 4), None),
  "permute": ((2, 3, 4), lambda x: x.permute(2, 0, 1), None),
  "expand": ((3, 1), lambda x: x.expand(3, 4), None),
  "expand_new": ((1, 4), lambda x: x.expand(2, 3, 4), None),
  "pad_grouped": ((3, 4), lambda x: F.pad(x, (2, 0, 1, 2)), lambda x: x.pad(((1, 2), (2, 0)))),
  "pad_flat": ((3, 4), lambda x: F.pad(x, (1, 2)), lambda x: x.pad((1, 2))),
  "pad_flat2": ((2, 3, 4), lambda x: F.pad(x, (1, 0, 0, 2)), lambda x: x.pad((1, 0, 0, 2))),
  "pad_value": ((3, 4), lambda x: F.pad(x, (1, 1, 1, 1), value=1.5), lambda x: x.pad(((1, 1), (1, 1)), value=1.5)),
  "pad_none": ((3, 4), lambda x: F.pad(x, (0, 0, 2, 1)), lambda x: x.pad(((2, 1), None))),
  "shrink": ((4, 5), lambda x: x[1:3, 0:4], lambda x: x.shrink(((1, 3), (0, 4)))),
  "flip": ((3, 4), lambda x: x.flip(1), None),
  "flip2": ((2, 3, 4), lambda x: x.flip(0, 2), None),
  "transpose": ((3, 4), lambda x: x.transpose(1, 0), None),
  "transpose3": ((2, 3, 4), lambda x: x.transpose(0, 2), None),
  "T": ((3, 4), lambda x: x.T, None),
  "flatten": ((2, 3, 4), torch.flatten, Tensor.flatten),
  "flatten_1_2": ((2, 3, 4), lambda x: x.flatten(1, 2), None),
  "flatten_0_1": ((2, 3, 4), lambda x: x.flatten(0, 1), None),
  "flatten_neg": ((2, 3, 4, 5), lambda x: x.flatten(-3, -2), None),
  "flatten_1d": ((5,), lambda x: x.flatten(), None),
  "flatten_0d": ((), lambda x: x.flatten(), None),
  "unflatten": ((6, 4), lambda x: x.unflatten(0, (2, 3)), None),
  "unflatten_neg": ((2, 12), lambda x: x.unflatten(-1, (3, -1)), None),
  "unflatten_1d": ((4,), lambda x: x.unflatten(0, (2, 1, 2)), None),
  "squeeze_0": ((1, 3, 1, 4), lambda x: x.squeeze(0), None),
  "squeeze_2": ((1, 3, 1, 4), lambda x: x.squeeze(2), None),
  "squeeze_neg": ((1, 3, 1, 4), lambda x: x.squeeze(-2), None),
  "squeeze_noop": ((1, 3, 1, 4), lambda x: x.squeeze(1), None),
  "squeeze_all": ((1, 3, 1, 4), lambda x: x.squeeze(), None),
  "squeeze_all_ones": ((1, 1), lambda x: x.squeeze(), None),
  "squeeze_0d": ((), lambda x: x.squeeze(0), None),
  "unsqueeze_0": ((3, 4), lambda x: x.unsqueeze(0), None),
  "unsqueeze_1": ((3, 4), lambda x: x.unsqueeze(1), None),
  "unsqueeze_end": ((3, 4), lambda x: x.unsqueeze(2), None),
  "unsqueeze_neg": ((3, 4), lambda x: x.unsqueeze(-1), None),
  "unsqueeze_neg3": ((3, 4), lambda x: x.unsqueeze(-3), None),
  "unsqueeze_0d": ((), lambda x: x.unsqueeze(0), None),
  "repeat_1d": ((3,), lambda x: x.repeat(2), None),
  "repeat_2d": ((2, 3), lambda x: x.repeat(2, 2), None),
  "repeat_ones": ((2, 3), lambda x: x.repeat(1, 1), None),
  "repeat_newdim": ((2, 3), lambda x: x.repeat(3, 1, 2), None),
  "repeat_tuple": ((2, 3), lambda x: x.repeat((2, 1)), None),
  "repeat_0d": ((), lambda x: x.repeat(4), None),
  "repeat_interleave": ((3,), lambda x: x.repeat_interleave(2), None),
  "repeat_interleave_dim1": ((2, 3), lambda x: x.repeat_interleave(3, dim=1), None),
  "repeat_interleave_dim0": ((2, 3), lambda x: x.repeat_interleave(2, dim=0), None),
  "repeat_interleave_flat": ((2, 3), lambda x: x.repeat_interleave(2), None),
  "repeat_interleave_neg": ((2, 3, 2), lambda x: x.repeat_interleave(2, dim=-2), None),
  "roll_1d": ((5,), lambda x: x.roll(2, 0), None),
  "roll_neg": ((5,), lambda x: x.roll(-1, 0), None),
  "roll_2d": ((3, 4), lambda x: x.roll((1, -2), (0, 1)), None),
  "roll_big": ((3, 4), lambda x: x.roll(7, 1), None),
  "roll_flat": ((3, 4), lambda x: x.roll(5), None),
  "roll_3d": ((2, 3, 4), lambda x: x.roll(1, -1), None),
  "tril": ((4, 4), lambda x: x.tril(), None),
  "tril_1": ((4, 4), lambda x: x.tril(1), None),
  "tril_-1": ((4, 4), lambda x: x.tril(-1), None),
  "tril_rect": ((3, 5), lambda x: x.tril(2), None),
  "tril_batch": ((2, 3, 4), lambda x: x.tril(), None),
  "tril_far": ((3, 4), lambda x: x.tril(-5), None),
  "triu": ((4, 4), lambda x: x.triu(), None),
  "triu_1": ((4, 4), lambda x: x.triu(1), None),
  "triu_-1": ((4, 4), lambda x: x.triu(-1), None),
  "triu_rect": ((5, 3), lambda x: x.triu(-2), None),
  "triu_batch": ((2, 3, 4), lambda x: x.triu(1), None),
  "triu_far": ((3, 4), lambda x: x.triu(5), None),
}


@pytest.mark.parametrize("op", list(MOVEMENT))
def test_movement(op):
  shape, tf, gf = MOVEMENT[op]
  helper_test_op([shape], tf, gf, weighted=True)


CAT_CASES = [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 5), (2, 1)], 1), ([(2, 3), (2, 5)], -1), ([(3,), (3,), (1,)], 0), ([(2, 1, 3), (2, 2, 3)], 1),
             ([(1, 4)], 0), ([(2, 3), (2, 3)], 0)]


@pytest.mark.parametrize("shapes,dim", CAT_CASES, ids=str)
def test_cat(shapes, dim):
  helper_test_op(shapes, lambda *xs: torch.cat(xs, dim), lambda *xs: Tensor.cat(*xs, dim=dim), weighted=True)
  helper_test_op(shapes, lambda *xs: torch.cat(xs, dim), lambda *xs: xs[0].cat(*xs[1:], dim=dim), weighted=True)


@pytest.mark.parametrize("shapes,dim", [([(3,), (3,)], 0), ([(3,), (3,)], 1), ([(3,), (3,)], -1), ([(2, 3)] * 3, 1), ([(2, 3)] * 3, 2),
                                        ([(), ()], 0), ([(2, 3)], 0), ([(1, 4), (1, 4)], -2)], ids=str)
def test_stack(shapes, dim):
  helper_test_op(shapes, lambda *xs: torch.stack(xs, dim), lambda *xs: Tensor.stack(*xs, dim=dim), weighted=True)
  helper_test_op(shapes, lambda *xs: torch.stack(xs, dim), lambda *xs: xs[0].stack(*xs[1:], dim=dim), weighted=True)


def test_cat_promotes():
  r = Tensor(np.array([1, 2], np.int32)).cat(Tensor(np.array([0.5], np.float32)))
  assert r.dtype is dtypes.float32
  np.testing.assert_array_equal(r.numpy(), np.array([1, 2, 0.5], np.float32))
  r = Tensor(np.array([[1, 2]], np.int8)).stack(Tensor(np.array([[3, 4]], np.int8)), dim=1)
  assert r.dtype is dtypes.int8 and r.shape == (1, 2, 2)
  np.testing.assert_array_equal(r.numpy(), np.stack([[[1, 2]], [[3, 4]]], axis=1))


@pytest.mark.parametrize("dt", [np.int32, np.bool_, np.float64])
def test_tril_triu_dtypes(dt):
  a = (np.arange(20).reshape(4, 5) % 3).astype(dt)
  for k in (-1, 0, 2):
    r, u = Tensor(a).tril(k), Tensor(a).triu(k)
    assert r.dtype is dtypes.from_np(dt) and u.dtype is dtypes.from_np(dt)
    np.testing.assert_array_equal(r.numpy(), np.tril(a, k))
    np.testing.assert_array_equal(u.numpy(), np.triu(a, k))


_NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap", "constant": "constant"}
PAD_MODE_CASES = [((5,), ((2, 1),)), ((3, 4), ((1, 2), (2, 1))), ((2, 3, 4), ((0, 0), (1, 1), (3, 2))), ((4, 6), ((0, 0), (0, 5))),
                  ((3, 4), ((2, 0), (0, 0)))]


@pytest.mark.parametrize("shape,pads", PAD_MODE_CASES, ids=str)
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "constant"])
def test_pad_mode(mode, shape, pads):
  # numpy's pad is the reference for the values; the gradient of sum(w * out) is w summed back through the index map
  lim = {"reflect": -1, "circular": 0}.get(mode)  # reflect needs pads < size, circular pads <= size
  if lim is not None: pads = tuple((min(b, s + lim), min(a, s + lim)) for (b, a), s in zip(pads, shape))
  rng = _rng()
  a = rng.uniform(-2, 2, size=shape).astype(np.float32)
  x = Tensor(a, requires_grad=True)
  out = x.pad(pads, mode=mode, value=0.75) if mode == "constant" else x.pad(pads, mode=mode)
  kw = {"constant_values": 0.75} if mode == "constant" else {}
  want = np.pad(a, pads, mode=_NP_MODE[mode], **kw)
  w = rng.uniform(0.5, 1.5, size=want.shape).astype(np.float32)
  (out * Tensor(w)).sum().backward()
  _compare(out, want, 1e-6, 1e-6)
  idx = np.pad(np.arange(a.size).reshape(shape), pads, mode=_NP_MODE[mode], constant_values=-1) if mode == "constant" else \
    np.pad(np.arange(a.size).reshape(shape), pads, mode=_NP_MODE[mode])
  g = np.zeros(a.size, np.float64)
  np.add.at(g, idx[idx >= 0], w[idx >= 0])
  _compare(x.grad, g.reshape(shape), 1e-5, 1e-5, "gradient")


def test_pad_mode_flat_torch_order():
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  _compare(Tensor(a).pad((1, 2, 2, 0), mode="reflect"), np.pad(a, ((2, 0), (1, 2)), mode="reflect"), 0, 0)
  _compare(Tensor(a).pad((1, 1), mode="replicate"), np.pad(a, ((0, 0), (1, 1)), mode="edge"), 0, 0)
  t = torch.tensor(a).reshape(1, 3, 4)
  _compare(Tensor(a).pad((1, 2), mode="circular"), F.pad(t, (1, 2), mode="circular").reshape(3, 7), 0, 0)


# ---- existing ops: gradients ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((4,), (4, 3)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 2)), ((2, 3, 4), (2, 4, 5)),
                                    ((1, 4), (4, 1))], ids=str)
def test_matmul(shapes):
  helper_test_op(list(shapes), torch.matmul, lambda a, b: a @ b, weighted=True, atol=1e-5)


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((5,), (), (5,))], ids=str)
def test_where(shapes):
  helper_test_op(list(shapes), lambda c, x, y: torch.where(c > 0, x, y), lambda c, x, y: (c > 0).where(x, y), weighted=True)


def test_where_scalar():
  helper_test_op([(3, 4), (3, 4)], lambda c, x: torch.where(c > 0, x, torch.tensor(0.5)), lambda c, x: (c > 0).where(x, 0.5), weighted=True)


@pytest.mark.parametrize("shape", [(3, 4), (), (5,)], ids=str)
def test_cast_float64(shape):
  helper_test_op([shape], lambda x: (x.double() * 1.5).exp(), lambda x: (x.cast(dtypes.float64) * 1.5).exp(), weighted=True)


def test_cast_float64_dtype():
  x = Tensor(np.ones((2, 2), np.float32), requires_grad=True)
  y = x.cast(dtypes.float64)
  assert y.dtype is dtypes.float64
  y.sum().backward()
  assert x.grad.dtype is dtypes.float32 and x.grad.shape == (2, 2)
  np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 2), np.float32))


def test_mlp_grad():
  rng = _rng()
  xs = [rng.uniform(-1, 1, size=s).astype(np.float32) for s in ((8, 5), (5, 16), (16,), (16, 3))]
  y = rng.integers(0, 3, size=8)
  onehot = np.eye(3, dtype=np.float32)[y]

  def fwd(lib, x, w1, b1, w2, oh):
    h = (x @ w1 + b1).relu() if lib == "tg" else torch.relu(x @ w1 + b1)
    logits = h @ w2
    ls = logits.log_softmax(-1) if lib == "tg" else torch.log_softmax(logits, -1)
    return -(ls * oh).sum() / 8

  tt = [torch.tensor(a, requires_grad=True) for a in xs]
  gg = [Tensor(a, requires_grad=True) for a in xs]
  lt, lg = fwd("torch", *tt, torch.tensor(onehot)), fwd("tg", *gg, Tensor(onehot))
  lt.backward(), lg.backward()
  _compare(lg, lt, 1e-5, 1e-4)
  for a, b in zip(tt, gg): _compare(b.grad, a.grad, 1e-5, 1e-3, "gradient")


# ---- autograd semantics -----------------------------------------------------------------------------------------------
def test_requires_grad_flag():
  a = Tensor(np.ones(3, np.float32))
  assert a.requires_grad is False
  a.requires_grad = True
  assert a.requires_grad is True
  a.requires_grad = False
  assert a.requires_grad is False
  assert Tensor([1.0, 2.0], requires_grad=True).requires_grad is True
  assert Tensor.ones(2, 2, requires_grad=True).requires_grad is True
  assert Tensor.zeros(2, requires_grad=True).requires_grad is True
  assert Tensor.full((2,), 3.0, requires_grad=True).requires_grad is True
  assert Tensor.rand(3, requires_grad=True).requires_grad is True
  assert Tensor.eye(2, requires_grad=True).requires_grad is True
  assert Tensor.zeros(2).requires_grad is False


def test_grad_none_until_backward():
  x = Tensor(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
  assert x.grad is None
  out = (x * x).sum()
  assert out.backward() is out
  np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


@pytest.mark.parametrize("op", ["neg", "exp", "matmul"])
def test_backward_after_realize(op):
  # torch and tinygrad both allow reading the output before calling backward on a loss built from it
  a = _rng().uniform(-1, 1, size=(3, 3)).astype(np.float32)
  fn = {"neg": lambda x: -x, "exp": lambda x: x.exp(), "matmul": lambda x: x @ x}[op]
  x, xt = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
  out, out_t = fn(x), fn(xt)
  _compare(out, out_t, 1e-6, 1e-5)  # realizes out
  out.sum().backward()
  out_t.sum().backward()
  assert x.grad is not None, "no gradient after the output was realized"
  _compare(x.grad, xt.grad, 1e-5, 1e-4, "gradient")


def test_no_grad_with_requires_grad_false():
  x = Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
  y = Tensor(np.array([3.0, 4.0], np.float32), requires_grad=False)
  (x * y).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])
  assert y.grad is None


def test_backward_fills_every_float_tensor_it_depends_on():
  # current tinygrad: no requires_grad needed; intermediates held in Python get theirs too, ints and unrelated ones don't
  x, w = Tensor([1.0, -2.0, 3.0]), Tensor([0.5, 0.5, 0.5])
  h = x * w
  i, other = Tensor([1, 2, 3]), Tensor([9.0])
  loss = (h.relu() * i).sum()
  loss.backward()
  np.testing.assert_allclose(x.grad.numpy(), [0.5, 0.0, 1.5])
  np.testing.assert_allclose(w.grad.numpy(), [1.0, 0.0, 9.0])
  np.testing.assert_allclose(h.grad.numpy(), [1.0, 0.0, 3.0])
  np.testing.assert_allclose(loss.grad.numpy(), 1.0)
  assert i.grad is None and other.grad is None
  # tinygrad's test_cmp_lt_backwards: a comparison's gradient is zero, not missing
  t = Tensor([-1.0, 2.0, -3.0, 4.0])
  (t * (t < 0)).sum().backward()
  np.testing.assert_array_equal(t.grad.numpy(), [1.0, 0.0, 1.0, 0.0])


def test_unused_tensor_gets_no_grad():
  x = Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
  z = Tensor(np.array([5.0], np.float32), requires_grad=True)
  (x * 2).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
  assert z.grad is None


def test_grad_accumulates():
  a = np.array([0.5, -1.0, 2.0], np.float32)
  x, xt = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
  (x * x).sum().backward()
  x.sin().sum().backward()
  (xt * xt).sum().backward()
  xt.sin().sum().backward()
  _compare(x.grad, xt.grad, 1e-6, 1e-5)


def test_set_grad_and_clear():
  x = Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
  x.grad = Tensor(np.array([10.0, 20.0], np.float32))
  np.testing.assert_array_equal(x.grad.numpy(), [10.0, 20.0])
  (x * 3).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [13.0, 23.0])
  x.grad = None
  assert x.grad is None
  (x * 3).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_set_grad_wrong_shape():
  x = Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
  with pytest.raises(ShapeError): x.grad = Tensor(np.ones(3, np.float32))


def test_backward_one_element_loss():
  x = Tensor(np.array([[2.0]], np.float32), requires_grad=True)
  (x * x * x).backward()  # a (1, 1) loss counts as a scalar
  np.testing.assert_allclose(x.grad.numpy(), [[12.0]])


def test_backward_non_scalar_fails():
  x = Tensor(np.ones(3, np.float32), requires_grad=True)
  with pytest.raises(ShapeError): (x * 2).backward()


def test_backward_with_gradient_vjp():
  a, g = _rng().uniform(-1, 1, size=(3, 4)).astype(np.float32), _rng().uniform(-1, 1, size=(3, 4)).astype(np.float32)
  x, xt = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
  x.exp().backward(Tensor(g))
  xt.exp().backward(torch.tensor(g))
  _compare(x.grad, xt.grad, 1e-6, 1e-5)


def test_gradient_list():
  rng = _rng()
  a, b = rng.uniform(-1, 1, size=(3, 4)).astype(np.float32), rng.uniform(-1, 1, size=(4,)).astype(np.float32)
  x, y = Tensor(a), Tensor(b)  # no requires_grad needed
  z = Tensor(np.ones(2, np.float32))
  loss = (x * y).tanh().sum()
  gx, gy, gz = loss.gradient(x, y, z)
  xt, yt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
  want = torch.autograd.grad((xt * yt).tanh().sum(), [xt, yt])
  _compare(gx, want[0], 1e-6, 1e-5)
  _compare(gy, want[1], 1e-6, 1e-5)
  _compare(gz, np.zeros(2, np.float32), 0, 0)  # a target the loss does not depend on: zeros
  assert x.grad is None and y.grad is None  # gradient() does not touch .grad


def test_gradient_with_upstream():
  a, g = _rng().uniform(-1, 1, size=(5,)).astype(np.float32), np.arange(5, dtype=np.float32)
  x = Tensor(a)
  (gx,) = x.sin().gradient(x, gradient=Tensor(g))
  _compare(gx, np.cos(a) * g, 1e-6, 1e-5)


def test_detach():
  a = np.array([1.0, -2.0, 3.0], np.float32)
  x = Tensor(a, requires_grad=True)
  d = x.detach()
  np.testing.assert_array_equal(d.numpy(), a)
  (d * x).sum().backward()  # no gradient flows through the detached factor
  np.testing.assert_allclose(x.grad.numpy(), a)
  xt = torch.tensor(a, requires_grad=True)
  (xt.detach() * xt).sum().backward()
  _compare(x.grad, xt.grad, 0, 0)


def test_second_order_via_gradient():
  x = Tensor(np.array([0.3, 1.2], np.float32))
  (g,) = (x ** 3).sum().gradient(x)
  np.testing.assert_allclose(g.numpy(), 3 * np.array([0.3, 1.2]) ** 2, rtol=1e-5)


# ---- random numbers ---------------------------------------------------------------------------------------------------
RANDOM_MAKERS = {
  "rand": lambda: Tensor.rand(4, 5),
  "randn": lambda: Tensor.randn(4, 5),
  "uniform": lambda: Tensor.uniform(4, 5, low=-3.0, high=2.0),
  "normal": lambda: Tensor.normal(4, 5, mean=1.0, std=3.0),
  "randint": lambda: Tensor.randint(4, 5, low=-5, high=100),
  "rand_f64": lambda: Tensor.rand(4, 5, dtype=dtypes.float64),
}


@pytest.mark.parametrize("kind", list(RANDOM_MAKERS))
def test_same_seed_same_numbers(kind):
  mk = RANDOM_MAKERS[kind]
  Tensor.manual_seed(1234)
  a1, a2 = mk().numpy(), mk().numpy()
  Tensor.manual_seed(1234)
  b1, b2 = mk().numpy(), mk().numpy()
  np.testing.assert_array_equal(a1, b1)
  np.testing.assert_array_equal(a2, b2)
  assert not np.array_equal(a1, a2)  # the next tensor gets new numbers
  Tensor.manual_seed(1235)
  assert not np.array_equal(mk().numpy(), a1)  # another seed, other numbers
  assert len(np.unique(a1)) > 10


@pytest.mark.parametrize("kind", list(RANDOM_MAKERS))
def test_random_shape_dtype_range(kind):
  Tensor.manual_seed(7)
  t = RANDOM_MAKERS[kind]()
  want_dt = {"randint": dtypes.int32, "rand_f64": dtypes.float64}.get(kind, dtypes.float32)
  assert t.shape == (4, 5) and t.dtype is want_dt
  a = t.numpy()
  assert np.isfinite(a).all()
  if kind in ("rand", "rand_f64"): assert (a >= 0).all() and (a < 1).all()
  if kind == "uniform": assert (a >= -3).all() and (a < 2).all()
  if kind == "randint": assert (a >= -5).all() and (a < 100).all()


def test_random_same_program_same_numbers():
  # the numbers come from a per-device counter advanced as the draws are realized: the same program (the same draws,
  # realized in the same order) gives the same numbers, and pending draws never share numbers
  def run():
    Tensor.manual_seed(99)
    a, b = Tensor.rand(50), Tensor.rand(50)
    bn, an = b.numpy(), a.numpy()
    return an, bn
  an, bn = run()
  an2, bn2 = run()
  np.testing.assert_array_equal(an, an2)
  np.testing.assert_array_equal(bn, bn2)
  assert not np.isin(an, bn).any()


def test_random_tensor_is_one_value_in_every_kernel():
  Tensor.manual_seed(5)
  t = Tensor.rand(1000)
  x, y = (t * 2).numpy(), (t + 1).numpy()
  np.testing.assert_allclose(x / 2, y - 1, atol=1e-6)
  np.testing.assert_array_equal(t.numpy(), t.numpy())
  np.testing.assert_allclose(t.numpy(), y - 1, atol=1e-6)


N = 1_000_000


def _chi2_crit(df: int, p_z: float = 4.7534) -> float:
  """Chi-square critical value at upper tail p=1e-6 (z=4.7534), by the Wilson-Hilferty approximation."""
  return df * (1 - 2 / (9 * df) + p_z * math.sqrt(2 / (9 * df))) ** 3


def test_rand_moments():
  Tensor.manual_seed(2024)
  a = Tensor.rand(N).numpy().astype(np.float64)
  assert (a >= 0).all() and (a < 1).all()
  assert abs(a.mean() - 0.5) < 5 * math.sqrt(1 / 12 / N)
  assert abs(a.var() - 1 / 12) < 5 * math.sqrt((1 / 80 - 1 / 144) / N)


def test_rand_chi_square():
  Tensor.manual_seed(31337)
  a = Tensor.rand(N).numpy()
  counts = np.bincount(np.floor(a.astype(np.float64) * 100).astype(np.int64), minlength=100)
  assert len(counts) == 100
  chi2 = ((counts - N / 100) ** 2 / (N / 100)).sum()
  assert chi2 < _chi2_crit(99), chi2
  assert chi2 > 30, chi2  # far too even is not random either (p < 1e-6 as well for df=99)


def test_rand_serial_correlation():
  Tensor.manual_seed(11)
  a = Tensor.rand(N).numpy().astype(np.float64) - 0.5
  r = (a[1:] * a[:-1]).mean() / a.var()
  assert abs(r) < 5 / math.sqrt(N), r
  b = Tensor.rand(N).numpy().astype(np.float64) - 0.5  # the next tensor is independent of this one
  assert abs((a * b).mean() / math.sqrt(a.var() * b.var())) < 5 / math.sqrt(N)


def test_randn_moments():
  Tensor.manual_seed(77)
  a = Tensor.randn(N).numpy().astype(np.float64)
  assert abs(a.mean()) < 5 / math.sqrt(N)
  assert abs(a.var() - 1) < 5 * math.sqrt(2 / N)
  within = (np.abs(a) < 1).mean()  # 68.27% within one sigma: the shape, not just the moments
  assert abs(within - 0.682689) < 5 * math.sqrt(0.682689 * 0.317311 / N), within
  assert abs((a ** 3).mean()) < 5 * math.sqrt(15 / N)  # skewness 0


def test_normal_uniform_params():
  Tensor.manual_seed(3)
  a = Tensor.normal(N, mean=3.0, std=2.0).numpy().astype(np.float64)
  assert abs(a.mean() - 3) < 5 * 2 / math.sqrt(N) and abs(a.std() - 2) < 5 * 2 * math.sqrt(0.5 / N)
  u = Tensor.uniform(N, low=-2.0, high=6.0).numpy().astype(np.float64)
  assert (u >= -2).all() and (u < 6).all()
  assert abs(u.mean() - 2) < 5 * 8 * math.sqrt(1 / 12 / N)


@pytest.mark.parametrize("low,high,dt", [(0, 10, dtypes.int32), (-3, 7, dtypes.int32), (0, 256, dtypes.uint8), (-50, 50, dtypes.int64),
                                         (1000, 1013, dtypes.int16)])
def test_randint_chi_square(low, high, dt):
  Tensor.manual_seed(1000 + low * 7 + high)
  t = Tensor.randint(200_000, low=low, high=high, dtype=dt)
  assert t.dtype is dt
  a = t.numpy().astype(np.int64)
  assert a.min() >= low and a.max() < high
  k = high - low
  counts = np.bincount(a - low, minlength=k)
  assert len(counts) == k and (counts > 0).all()
  chi2 = ((counts - len(a) / k) ** 2 / (len(a) / k)).sum()
  assert chi2 < _chi2_crit(k - 1), chi2


def test_random_dtypes():
  Tensor.manual_seed(8)
  for dt in (dtypes.float16, dtypes.float32, dtypes.float64):
    for mk in (Tensor.rand, Tensor.randn):
      t = mk(1000, dtype=dt)
      assert t.dtype is dt and t.shape == (1000,)
      a = t.numpy()
      assert np.isfinite(a).all() and len(np.unique(a)) > 100
      if mk is Tensor.rand: assert (a >= 0).all() and (a < 1).all()


def test_random_0d_and_empty():
  Tensor.manual_seed(1)
  assert Tensor.rand().shape == () and 0 <= Tensor.rand().item() < 1
  assert Tensor.randn(0, 3).numpy().shape == (0, 3)


def test_random_reproducible_across_processes():
  code = ("import tinygrad_c as tg\n"
          "tg.Tensor.manual_seed(4242)\n"
          "print(repr(tg.Tensor.rand(6).tolist())); print(repr(tg.Tensor.randn(2, 3).tolist()))\n"
          "print(repr(tg.Tensor.randint(5, low=0, high=1000).tolist()))\n")
  env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(tg.__file__)), os.environ.get("PYTHONPATH", "")]),
             TINYGRAD_LIB=tg.library_path)
  r = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True, env=env, timeout=300)
  assert r.returncode == 0, r.stderr
  Tensor.manual_seed(4242)
  want = [repr(Tensor.rand(6).tolist()), repr(Tensor.randn(2, 3).tolist()), repr(Tensor.randint(5, low=0, high=1000).tolist())]
  assert r.stdout.strip().splitlines() == want


def test_random_grad():
  Tensor.manual_seed(2)
  x = Tensor.rand(3, 4, requires_grad=True)
  (x * x).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy(), rtol=1e-6)


# ---- errors -----------------------------------------------------------------------------------------------------------
def _t(*shape): return Tensor(np.ones(shape, np.float32))


ERRORS = {
  "std_axis": (ShapeError, lambda: _t(3, 4).std(2)),
  "var_axis": (ShapeError, lambda: _t(3, 4).var(-3)),
  "std_mean_axis": (ShapeError, lambda: _t(3, 4).std_mean(5)),
  "var_mean_axis": (ShapeError, lambda: _t(3, 4).var_mean((0, 2))),
  "all_axis": (ShapeError, lambda: _t(3).all(1)),
  "any_axis": (ShapeError, lambda: _t(3).any(-2)),
  "logsumexp_axis": (ShapeError, lambda: _t(3, 4).logsumexp(2)),
  "argmax_axis": (ShapeError, lambda: _t(3, 4).argmax(2)),
  "argmin_axis": (ShapeError, lambda: _t(3, 4).argmin(-3)),
  "cumsum_axis": (ShapeError, lambda: _t(3, 4).cumsum(2)),
  "cumprod_axis": (ShapeError, lambda: _t(3, 4).cumprod(-3)),
  "cummax_axis": (ShapeError, lambda: _t(3, 4).cummax(2)),
  "cummin_axis": (ShapeError, lambda: _t(3).cummin(1)),
  "flatten_axis": (ShapeError, lambda: _t(3, 4).flatten(0, 2)),
  "flatten_order": (ShapeError, lambda: _t(2, 3, 4).flatten(2, 1)),
  "unflatten_sizes": (ShapeError, lambda: _t(6, 4).unflatten(0, (4, 2))),
  "unflatten_axis": (ShapeError, lambda: _t(6, 4).unflatten(2, (2, 2))),
  "squeeze_axis": (ShapeError, lambda: _t(1, 3).squeeze(2)),
  "unsqueeze_axis": (ShapeError, lambda: _t(3, 4).unsqueeze(3)),
  "unsqueeze_neg": (ShapeError, lambda: _t(3, 4).unsqueeze(-4)),
  "repeat_short": (ShapeError, lambda: _t(2, 3).repeat(2)),
  "repeat_interleave_axis": (ShapeError, lambda: _t(2, 3).repeat_interleave(2, dim=2)),
  "roll_axis": (ShapeError, lambda: _t(2, 3).roll(1, 2)),
  "cat_shapes": (ShapeError, lambda: _t(2, 3).cat(_t(3, 4))),
  "cat_ndim": (ShapeError, lambda: _t(2, 3).cat(_t(3))),
  "cat_axis": (ShapeError, lambda: _t(2, 3).cat(_t(2, 3), dim=2)),
  "stack_shapes": (ShapeError, lambda: _t(2, 3).stack(_t(3, 2))),
  "stack_axis": (ShapeError, lambda: _t(2, 3).stack(_t(2, 3), dim=4)),
  "tril_1d": (ShapeError, lambda: _t(3).tril()),
  "triu_0d": (ShapeError, lambda: _t().triu()),
  "pad_mode_count": (ValueError, lambda: _t(3, 4).pad(((1, 1),) * 3, mode="reflect")),
  "reflect_too_big": (ValueError, lambda: _t(3, 4).pad(((0, 0), (4, 0)), mode="reflect")),
  "lerp_shapes": (ShapeError, lambda: _t(3).lerp(_t(4), 0.5)),
  "logaddexp_shapes": (ShapeError, lambda: _t(2, 3).logaddexp(_t(4))),
  "isclose_shapes": (ShapeError, lambda: _t(2, 3).isclose(_t(3, 2))),
  "bitwise_float": (TinygradError, lambda: _t(3) & _t(3)),
  "shift_float": (TinygradError, lambda: _t(3) << 1),
  "bitwise_not_float": (TinygradError, lambda: ~_t(3)),
  "randint_float_dtype": (TypeError, lambda: Tensor.randint(3, dtype=dtypes.float32)),
  "randint_empty_range": (ValueError, lambda: Tensor.randint(3, low=5, high=5)),
  "randint_wraps": (OverflowError, lambda: Tensor.randint(3, low=0, high=300, dtype=dtypes.uint8)),
  "uniform_empty_range": (ValueError, lambda: Tensor.uniform(3, low=1.0, high=0.0)),
  "normal_negative_std": (ValueError, lambda: Tensor.normal(3, std=-1.0)),
  "seed_negative": (OverflowError, lambda: Tensor.manual_seed(-1)),
  "seed_too_big": (OverflowError, lambda: Tensor.manual_seed(2**64)),
  "shift_too_big": (OverflowError, lambda: Tensor(np.ones(3, np.int32)) << 2**64),
  "argmax_axis_big": (OverflowError, lambda: _t(3).argmax(2**63)),
  "clamp_none": (RuntimeError, lambda: _t(3).clamp()),
  "pad_mode_unknown": (NotImplementedError, lambda: _t(3).pad((1, 1), mode="symmetric")),
  "rand_bad_dim": (ShapeError, lambda: Tensor.rand(-1, 3)),
  "grad_non_float": (TinygradError, lambda: Tensor(np.ones(3, np.int32)).sum().gradient(Tensor(np.ones(3, np.int32)))),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors(case):
  exc, fn = ERRORS[case]
  with pytest.raises(exc) as e: fn()
  if isinstance(e.value, TinygradError): assert e.value.status != "TG_ERROR_UNSUPPORTED", e.value


def test_error_status_names():
  with pytest.raises(TinygradError) as e: _t(3) & _t(3)
  assert e.value.status == "TG_ERROR_DTYPE"
  with pytest.raises(ShapeError) as e: _t(3, 4).std(2)
  assert e.value.status == "TG_ERROR_SHAPE" and isinstance(e.value, ValueError)


def test_raw_randint_float_refused():
  h = tg.C.tensor_randint((ctypes.c_int64 * 1)(3), 1, 0, 10, dtypes.float32.value, None)
  assert not h
  code = tg.C.last_error()
  tg.C.clear_error()
  assert tg.C.status_name(code).decode() in ("TG_ERROR_DTYPE", "TG_ERROR_INVALID_ARGUMENT")


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dt", [np.int32, np.int64, np.float32])
def test_div_rounding_mode_matches_torch(mode, dt):
  r = np.random.default_rng(12)
  a = r.integers(-50, 50, 64).astype(dt)
  b = r.integers(1, 9, 64).astype(dt) * np.where(r.random(64) < 0.5, -1, 1).astype(dt)
  got = Tensor(a).div(Tensor(b), rounding_mode=mode).numpy()
  want = torch.div(torch.tensor(a), torch.tensor(b), rounding_mode=mode).numpy()
  assert got.dtype == want.dtype
  np.testing.assert_array_equal(got, want)
  with pytest.raises(RuntimeError): Tensor(a).div(Tensor(b), rounding_mode="round")  # tinygrad's exception


def test_device_default_and_canonical_names():
  from tinygrad_c import Device
  # $DEV (else $DEVICE) picks the default: CPU (the LLVM JIT) unless set, e.g. DEV=CPU:CLANG
  assert Device.DEFAULT == Tensor([1.0]).device == (os.environ.get("DEV") or os.environ.get("DEVICE") or "CPU").upper()
  assert Device.canonicalize("cpu") == "CPU" and Device.canonicalize("clang") == "CPU:CLANG" and Device.canonicalize("llvm") == "CPU"
  with pytest.raises(Exception): Device.canonicalize("NO_SUCH_DEVICE")
