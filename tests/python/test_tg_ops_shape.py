# tinygrad's reductions, shape ops, indexing and dtypes as a tinygrad user calls them (issue 33), against torch 1.13 and
# numpy through test_grad_ops.helper_test_op (same random float32 inputs, every forward element compared, then every
# input's gradient) or element by element here; errors are checked against the class tinygrad raises.
#
# Tolerances: float32 forward atol=1e-5, rtol=1e-3; gradients atol=1e-4, rtol=1e-3 (helper_test_op's); ints, bools and
# indices exact.
import math
import os
import struct
import subprocess
import sys

import numpy as np
import pytest
import torch  # Debian's python3-torch (1.13)
import torch.nn.functional as F

from test_grad_ops import helper_test_op
import tinygrad_c
from tinygrad_c import Tensor, dtypes

ATOL = 1e-5


def hto(shapes, tf, gf, atol=ATOL, **kw): helper_test_op(shapes, tf, gf, atol=atol, **kw)


# ---- signatures -----------------------------------------------------------------------------------------------------
def test_reshape_varargs_none_and_minus_one():
  hto([(4, 3, 6)], lambda x: x.reshape(12, 6), lambda x: x.reshape(12, 6))
  hto([(4, 3, 6)], lambda x: x.reshape((-1, 6)), lambda x: x.reshape((-1, 6)))
  hto([(4, 3, 6)], lambda x: x.reshape(4, 3, 6), lambda x: x.reshape(None, None, 6))
  hto([(4, 3, 6)], lambda x: x.reshape(4, 18), lambda x: x.reshape(None, -1))
  hto([()], lambda x: x.reshape(1, 1), lambda x: x.reshape(1, 1))
  t = Tensor.ones(3, 4)
  with pytest.raises(RuntimeError): t.reshape(-1, -1, 2)  # tinygrad: RuntimeError
  with pytest.raises(ValueError): t.reshape([])           # size mismatch: ValueError
  with pytest.raises(ValueError): t.reshape((2, 6), 1)    # argfix: a tuple next to more arguments
  for fn in (Tensor.kaiming_uniform, Tensor.kaiming_normal):
    with pytest.raises(ValueError): fn(-3, 3)
    with pytest.raises(ValueError): fn((-3, 3), 3)


def test_sum_prod_dtype():
  hto([(45, 3)], lambda x: x.sum(), lambda x: x.sum(dtype=dtypes.float32))
  hto([(45, 3)], lambda x: x.sum(dtype=torch.float64), lambda x: x.sum(dtype=dtypes.float64))
  a = np.array([100, 100, 120], np.int8)
  got = Tensor(a).sum(dtype=dtypes.int16)
  assert got.dtype is dtypes.int16 and got.item() == 320
  assert Tensor(a).sum().dtype is dtypes.int32  # the default accumulation, as tinygrad
  got = Tensor(a).prod(dtype="int32")
  assert got.dtype is dtypes.int32 and got.item() == 100 * 100 * 120
  hto([(3, 4)], lambda x: x.prod(1), lambda x: x.prod(axis=1, dtype="float32"))
  with pytest.raises(AttributeError): Tensor([1.0, 2.0]).sum(dtype="")
  with pytest.raises(AttributeError): Tensor([1.0, 2.0]).prod(dtype="")
  with pytest.raises(TypeError): Tensor([1.0]).mean(dtype=dtypes.float16)  # tinygrad's mean has no dtype=


def test_reduce_axis_errors_are_index_errors():
  x = Tensor.ones(3, 4, 5, 6)
  for f in (lambda: x.sum(5), lambda: x.max(-5), lambda: x.std(4), lambda: Tensor(1.0).sum(1), lambda: Tensor(1.0).sum((1,)),
            lambda: x.cumsum(4), lambda: Tensor(1.0).cumprod(1), lambda: x.cummax(-5), lambda: Tensor(2.0).cummin(1),
            lambda: x.squeeze(50), lambda: x.unsqueeze(5), lambda: x.flip(4), lambda: x.unfold(4, 1, 1)):
    with pytest.raises(IndexError): f()
    with pytest.raises(tinygrad_c.ShapeError): f()  # also the C status it always was
  hto([()], lambda x: x.sum(), lambda x: x.sum(()))
  hto([()], lambda x: x.sum(0), lambda x: x.sum(-1))


@pytest.mark.parametrize("axis", [None, 0, 2, (0, 2), (1, 2), [1, 2]])
def test_std_var_correction(axis):
  dims = {"dim": (0, 1, 2) if axis is None else axis}  # torch 1.13 takes correction= only with a dim
  for corr in (0, 1, 5):
    hto([(15, 25, 35)], lambda x: x.std(**dims, correction=corr), lambda x: x.std(axis, correction=corr))
    hto([(15, 25, 35)], lambda x: x.var(**dims, correction=corr, keepdim=True), lambda x: x.var(axis, keepdim=True, correction=corr))
  s, m = Tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4)).std_mean(axis, correction=0)
  ts, tm = torch.std_mean(torch.arange(24.).reshape(2, 3, 4), **dims, correction=0)
  np.testing.assert_allclose(s.numpy(), ts.numpy(), rtol=1e-5)
  np.testing.assert_allclose(m.numpy(), tm.numpy(), rtol=1e-6)
  v, m = Tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4)).var_mean(axis, keepdim=True, correction=2)
  tv, tm = torch.var_mean(torch.arange(24.).reshape(2, 3, 4), **dims, keepdim=True, correction=2)
  np.testing.assert_allclose(v.numpy(), tv.numpy(), rtol=1e-5)
  np.testing.assert_allclose(m.numpy(), tm.numpy(), rtol=1e-6)


@pytest.mark.parametrize("shape,axis", [((3, 4, 5, 6), (1, 2)), ((3, 4, 5, 6), (0, 2)), ((1, 0, 3, 0, 5), (1, 3)), ((4, 5), -1)])
def test_any_all_axis_tuple(shape, axis):
  a = np.random.default_rng(3).random(shape) > 0.6
  for keepdim in (False, True):
    np.testing.assert_array_equal(Tensor(a).any(axis=axis, keepdim=keepdim).numpy(), a.any(axis=axis, keepdims=keepdim))
    np.testing.assert_array_equal(Tensor(a).all(axis=axis, keepdim=keepdim).numpy(), a.all(axis=axis, keepdims=keepdim))


def test_where_method_and_clone():
  np.testing.assert_array_equal(Tensor([True, False]).where(1, 3).clone().numpy(), np.array([1, 3], np.int32))
  hto([(10, 10), (10,), (10,)], lambda c, a, b: torch.where(c > 0.5, a, b), lambda c, a, b: (c > 0.5).where(a, b), forward_only=True)
  hto([(4, 5)], lambda x: (x * 1).clone() * 3, lambda x: x.clone() * 3)  # gradients flow through clone
  x = Tensor([1.0, 2.0, 3.0]).realize()
  c = x.clone().realize()
  x.assign(Tensor([7.0, 7.0, 7.0])).realize()
  np.testing.assert_array_equal(c.numpy(), [1, 2, 3])  # its own buffer
  w = Tensor([1.0, 2.0], requires_grad=True)
  (w * w).sum().backward()
  assert w.clone().grad is not None and w.clone().grad.tolist() == [2.0, 4.0]


def test_replace():
  a, b = Tensor([1.0, 2.0]), Tensor([5, 6], dtype=dtypes.int32)
  assert a.replace(b) is a and a.dtype is dtypes.int32 and a.tolist() == [5, 6]
  with pytest.raises(AssertionError): a.replace(Tensor([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("shape,kw", [((5, 5), {}), ((3, 4), {}), ((4, 3), {}), ((3, 3, 3), {"dim1": -2, "dim2": -1}),
                                      ((4, 5, 6), {"dim1": -2, "dim2": -1}), ((2, 3, 4, 5), {"dim1": 1, "dim2": 3}),
                                      ((4, 5, 6), {}), ((5, 5), {"offset": 1}), ((5, 5), {"offset": -1}), ((3, 5), {"offset": 2}),
                                      ((4, 5, 6), {"offset": -2, "dim1": 2, "dim2": 0})])
def test_diagonal(shape, kw):
  hto([shape], lambda x: x.diagonal(**kw), lambda x: x.diagonal(**kw), weighted=True)


def test_diagonal_errors():
  with pytest.raises(RuntimeError): Tensor.ones(3, 3).diagonal(dim1=0, dim2=0)
  with pytest.raises(IndexError): Tensor.ones(3, 3).diagonal(dim1=2)


@pytest.mark.parametrize("p,dim", [(2.0, 1), (2.0, 0), (1, 1), (3, 0), (0, 1), (-1, 1)])
def test_normalize(p, dim):
  hto([(45, 65)], lambda x: F.normalize(x, p=p, dim=dim), lambda x: x.normalize(p=p, dim=dim), atol=1e-6, grad_atol=1e-6)
  hto([(10, 10, 10)], lambda x: F.normalize(x, dim=2), lambda x: x.normalize(dim=2), atol=1e-6, grad_atol=1e-6)


# ---- dtypes ---------------------------------------------------------------------------------------------------------
def test_dtype_min_max_and_attributes():
  assert dtypes.float32.max == math.inf and dtypes.float32.min == -math.inf and dtypes.float16.min == -math.inf
  assert dtypes.bool.max is True and dtypes.bool.min is False
  for dt in (dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64):
    info = np.iinfo(dt.np)
    assert (dt.min, dt.max) == (int(info.min), int(info.max)) and type(dt.max) is int, dt
    assert dt.bitsize == 8 * dt.itemsize and struct.calcsize(dt.fmt) == dt.itemsize and struct.unpack(dt.fmt, struct.pack(dt.fmt, dt.max))[0] == dt.max
  assert dtypes.int.max == 2**31 - 1 and dtypes.int.min == -2**31
  assert (dtypes.float32.fmt, dtypes.float16.fmt, dtypes.float64.fmt, dtypes.bool.fmt, dtypes.bfloat16.fmt) == ("f", "e", "d", "?", None)
  assert dtypes.bool.bitsize == 1 and dtypes.float32.itemsize == 4 and dtypes.bfloat16.bitsize == 16
  assert dtypes.is_float(dtypes.half) and not dtypes.is_int(dtypes.bool) and dtypes.is_bool(dtypes.bool) and dtypes.is_unsigned(dtypes.uint8)
  assert dtypes.finfo(dtypes.float32) == (8, 23) and dtypes.finfo(dtypes.bfloat16) == (8, 7)
  with pytest.raises(ValueError): dtypes.finfo(dtypes.int32)
  assert set(dtypes.floats) == {dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64}
  assert len(dtypes.ints) == 8 and dtypes.int8 in dtypes.sints and dtypes.uint64 in dtypes.uints
  assert Tensor([1]).cast("HALF").dtype is dtypes.float16 and Tensor([1]).cast("float").dtype is dtypes.float32
  with pytest.raises(AttributeError): Tensor([1]).cast("nope")
  # test_ops' use: the extremes as values
  m = Tensor([-1234, 0, 1234, dtypes.int.max, dtypes.int.min]).maximum(dtypes.int.max)
  assert m.tolist() == [dtypes.int.max] * 5


def test_default_float_settable():
  old = dtypes.default_float
  try:
    dtypes.default_float = dtypes.float16
    assert dtypes.default_float is dtypes.float16
    assert Tensor([1.5, 2.5]).dtype is dtypes.float16 and Tensor.rand(3).dtype is dtypes.float16
    assert Tensor.ones(2).dtype is dtypes.float16 and Tensor.linspace(0, 1, 3).dtype is dtypes.float16
    dtypes.default_float = "bfloat16"
    assert Tensor.zeros(2).dtype is dtypes.bfloat16
    with pytest.raises(ValueError): dtypes.default_float = dtypes.int32
  finally: dtypes.default_float = old
  assert Tensor([1.5]).dtype is dtypes.float32


def test_default_float_env():
  # tinygrad's DEFAULT_FLOAT=HALF in the environment (mixed precision)
  code = "from tinygrad_c import Tensor, dtypes; print(dtypes.default_float, Tensor([1.5]).dtype, Tensor.randn(2).dtype)"
  env = {**os.environ, "DEFAULT_FLOAT": "HALF", "PYTHONPATH": os.path.dirname(tinygrad_c.__path__[0])}
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
  assert out.stdout.split() == ["dtypes.float16"] * 3, out.stderr


# ---- scans ----------------------------------------------------------------------------------------------------------
def test_cumsum_cumprod_0d():
  hto([()], lambda x: torch.cumsum(x, dim=0), lambda x: Tensor.cumsum(x, axis=0))
  hto([()], lambda x: torch.cumprod(x, dim=0), lambda x: Tensor.cumprod(x, axis=-1))
  assert Tensor(True).cumsum().dtype is dtypes.int32  # a sum's dtype, as tinygrad
  with pytest.raises(IndexError): Tensor(1.0).cumsum(1)
  with pytest.raises(IndexError): Tensor([1.0, 2.0]).cumprod(-2)


def test_cummax_cummin_axis():
  hto([(5, 6)], lambda x: torch.cummax(x, dim=1).values, lambda x: x.cummax(1)[0])
  hto([(5, 6)], lambda x: torch.cummin(x, dim=0).indices.int(), lambda x: x.cummin(0)[1], forward_only=True)
  v, i = Tensor(3.0).cummax(0)
  assert v.item() == 3.0 and i.item() == 0 and i.dtype is dtypes.int32
  for bad in ((Tensor(3.0), 1), (Tensor([1.0, 2.0]), 1), (Tensor([1.0, 2.0]), -2)):
    with pytest.raises(IndexError): bad[0].cummax(bad[1])
    with pytest.raises(IndexError): bad[0].cummin(bad[1])


@pytest.mark.parametrize("shape,axis", [((45, 65), 0), ((45, 65), 1), ((6, 6, 6), 2), ((6, 6, 6, 6), 2), ((45,), 0), ((), 0), ((), -1)])
def test_logcumsumexp(shape, axis):
  hto([shape], lambda x: torch.logcumsumexp(x, dim=axis), lambda x: x.logcumsumexp(axis), atol=1e-6, grad_atol=1e-6)


def test_logcumsumexp_numerical():
  hto(None, lambda x: torch.logcumsumexp(x, dim=0), lambda x: x.logcumsumexp(), vals=[[0.0, 100.0]], atol=1e-6)
  hto(None, lambda x: torch.logcumsumexp(x, dim=1), lambda x: x.logcumsumexp(1), vals=[[[-1e4, 0.0, 90.0], [3.0, -50.0, 80.0]]], atol=1e-4)


# ---- shapes ---------------------------------------------------------------------------------------------------------
def test_cat_edge_cases():
  for dim in range(-2, 3):
    hto([(4, 5, 3)] * 3, lambda x, y, z: torch.cat((x, y, z), dim), lambda x, y, z: x.cat(y, z, dim=dim))
  hto([(4, 0, 3), (4, 1, 3), (4, 2, 3)], lambda x, y, z: torch.cat((x, y, z), 1), lambda x, y, z: x.cat(y, z, dim=1))
  a = Tensor(3.14)
  with pytest.raises(IndexError): a.cat(a)
  with pytest.raises(IndexError): Tensor.ones(2, 3).cat(Tensor.ones(2, 3), dim=2)


def test_squeeze_stack_unsqueeze_edge_cases():
  for shape, dim in [((1, 3, 6), 0), ((4, 3, 1), -1), ((4, 3, 6), 1), ((), 0), ((), -1), ((2, 1, 3), None)]:
    hto([shape], lambda x: x.squeeze() if dim is None else x.squeeze(dim), lambda x: x.squeeze(dim))
  for dim in (0, -1):
    hto([()], lambda x: x.unsqueeze(dim), lambda x: x.unsqueeze(dim))
  for bad in ((), 1), ((), -2), ((), 10), ((4, 3), 2):
    with pytest.raises(IndexError): Tensor.ones(*bad[0]).squeeze(bad[1])
  for dim in range(-1, 3):
    hto([(5, 6, 3)] * 3, lambda x, y, z: torch.stack((x, y, z), dim), lambda x, y, z: Tensor.stack(x, y, z, dim=dim))
    hto([(5, 6, 3)] * 2, lambda x, y: torch.stack((x, y), dim), lambda x, y: Tensor.stack((x, y), dim=dim))
  np.testing.assert_allclose(Tensor.stack(Tensor(3.14), Tensor(2.5)).numpy(), np.array([3.14, 2.5], np.float32))
  with pytest.raises(IndexError): Tensor.stack(Tensor.ones(4, 5, 3), dim=77)
  with pytest.raises(ValueError): Tensor.stack((Tensor([1, 2]), Tensor([3, 4])), Tensor([5, 6]))


def test_unfold_edge_cases():
  hto([(8,)], lambda x: x.unfold(0, 2, 2), lambda x: x.unfold(0, 2, 2))
  hto([(3, 3, 3)], lambda x: x.unfold(-1, 2, 3), lambda x: x.unfold(-1, 2, 3))
  hto([(4, 5)], lambda x: x.unfold(1, 5, 1), lambda x: x.unfold(1, 5, 1))
  for size, step in ((-1, 1), (1, 0), (9, 1)):
    with pytest.raises(RuntimeError): Tensor.ones(8).unfold(0, size, step)
  with pytest.raises(IndexError): Tensor(1.0).unfold(0, 1, 1)


@pytest.mark.parametrize("formula,shapes", [("ii->i", [(4, 4)]), ("ii->", [(4, 4)]), ("ii", [(4, 4)]), ("...ii->...i", [(3, 5, 5)]),
                                            ("...ii->...", [(3, 5, 5)]), ("iij->j", [(3, 3, 2)]), ("i,i", [(5,), (5,)]),
                                            ("...id,...jd->...ij", [(3, 8, 9), (3, 8, 9)]), ("...id, ...jd", [(3, 8, 9), (3, 8, 9)]),
                                            ("i...j,ji...->...", [(2, 3, 4, 5), (5, 2, 4)]), ("ij...,ij...->ij", [(3, 4, 2, 2, 2), (3, 4, 2, 2, 2)]),
                                            ("b...,...->b...", [(2, 3, 4), (3, 4)])])
def test_einsum_trace_and_ellipsis(formula, shapes):
  hto(shapes, lambda *xs: torch.einsum(formula, *xs), lambda *xs: Tensor.einsum(formula, *xs))
  hto(shapes, lambda *xs: torch.einsum(formula, list(xs)), lambda *xs: Tensor.einsum(formula, list(xs)), forward_only=True)


def test_einsum_errors():
  a = Tensor.ones(2, 3, 4)
  with pytest.raises((RuntimeError, IndexError)): Tensor.einsum("...ik..., ...jk ->", a, a)
  with pytest.raises(RuntimeError): Tensor.einsum("i...j,ji...->...", a, a)


# ---- indexing -------------------------------------------------------------------------------------------------------
def test_gather_edge_values():
  for vals in ([1.0, 2.0, 3.0], [-math.inf, 2.0, 3.0], [math.inf, math.nan, -0.5]):
    t = torch.tensor(vals)
    got = Tensor(np.array(vals, np.float32)).gather(0, Tensor([2, 1, 0, 1, 2])).numpy()
    np.testing.assert_array_equal(got, t.gather(0, torch.tensor([2, 1, 0, 1, 2])).numpy())
  b = np.random.default_rng(5).integers(0, 3, (3, 4, 5))
  for dim in (0, 1, 2, -1, -3):
    hto([(4, 5, 6)], lambda x: x.gather(dim, torch.tensor(b)), lambda x: x.gather(dim, Tensor(b.astype(np.int32))))
  with pytest.raises((RuntimeError, AssertionError)): Tensor.ones(4, 5, 6).gather(0, Tensor([1]))
  with pytest.raises((RuntimeError, AssertionError)): Tensor.ones(2, 1, 1).gather(0, Tensor(b.astype(np.int32)))
  with pytest.raises(IndexError): Tensor.ones(4, 5).gather(2, Tensor([[0]]))


@pytest.mark.parametrize("start,stop,steps,dtype", [(5, 10, 3, None), (5, 10, 1, None), (5, 10, 0, None), (5, 10, 30, None), (-5.5, 5.5, 10, None),
                                                    (5.5, -5.5, 10, None), (5, 10, 3, "int32"), (5, 10, 20, "int32"), (0, 10, 4, "int32")])
def test_linspace(start, stop, steps, dtype):
  got = Tensor.linspace(start, stop, steps, dtype=dtype)
  want = torch.linspace(start, stop, steps, dtype=getattr(torch, dtype) if dtype else None).numpy()
  assert got.dtype is (dtypes.int32 if dtype else dtypes.float32)
  np.testing.assert_allclose(got.numpy(), want, atol=1e-6, rtol=1e-6)


def test_linspace_errors_and_int_rounding():
  with pytest.raises(ValueError): Tensor.linspace(5, 10, 3, dtype="bool")
  with pytest.raises(ValueError): Tensor.linspace(1, 2, -1)
  # tinygrad computes start + i*step in float and truncates (torch 1.13 differs for a descending int range)
  want = np.trunc(np.float32(5) + np.arange(20, dtype=np.float32) * np.float32(-10 / 19)).astype(np.int32)
  np.testing.assert_array_equal(Tensor.linspace(5, -5, 20, dtype="int32").numpy(), want)


def test_nonzero_index_dtype():
  a = np.random.default_rng(2).random((10, 5, 3)) > 0.5
  got = Tensor(a).nonzero()
  assert got.dtype is dtypes.int32
  np.testing.assert_array_equal(got.numpy(), np.argwhere(a))
  for v in (0, 1, 0.0, 2.5, True, False):
    got = Tensor(v).nonzero()
    assert got.shape == torch.tensor(v).nonzero().shape and got.dtype is dtypes.int32


def test_nonzero_size():
  np.testing.assert_equal(Tensor([1, 0, 2, 0, 3]).nonzero(size=3).numpy(), [[0], [2], [4]])
  np.testing.assert_equal(Tensor([1, 0, 2, 0, 3]).nonzero(size=5, fill_value=-1).numpy(), [[0], [2], [4], [-1], [-1]])
  np.testing.assert_equal(Tensor([[1, 0], [0, 2]]).nonzero(size=2).numpy(), [[0, 0], [1, 1]])
  assert Tensor(5).nonzero(size=4).shape == (4, 0)
  np.testing.assert_equal(Tensor([], dtype=dtypes.int32).nonzero(size=3, fill_value=-1).numpy(), [[-1], [-1], [-1]])
  assert Tensor([1, 0]).nonzero(size=3, fill_value=-1.5).dtype is dtypes.default_int


def test_masked_select_size():
  t = Tensor([0, 1, 2, 3, 4, 5, 6, 7, 8])
  mask = Tensor([True, False, True, False, True, False, False, False, True])
  np.testing.assert_equal(t.masked_select(mask, size=4).numpy(), [0, 2, 4, 8])
  np.testing.assert_equal(t.masked_select(mask, size=6, fill_value=-1).numpy(), [0, 2, 4, 8, -1, -1])
  np.testing.assert_equal(t.masked_select(mask, size=2).numpy(), [0, 2])
  np.testing.assert_equal(Tensor([], dtype=dtypes.int32).masked_select(Tensor([], dtype=dtypes.bool), size=2, fill_value=-1).numpy(), [-1, -1])
  assert Tensor([1.0, 2.0]).masked_select(Tensor([True, False]), size=3, fill_value=-1).dtype is dtypes.default_float
  x = np.random.default_rng(8).standard_normal((4, 5)).astype(np.float32)
  m = np.array([True, False, True, True, False])
  np.testing.assert_array_equal(Tensor(x).masked_select(Tensor(m)).numpy(), x[np.broadcast_to(m, x.shape)])  # broadcast mask
  with pytest.raises(RuntimeError): Tensor(x).masked_select(Tensor(m.astype(np.int32)))


def test_one_hot():
  np.testing.assert_array_equal(Tensor([1, 2, 4]).one_hot(6).numpy(), F.one_hot(torch.tensor([1, 2, 4]), 6).numpy())
  data = [[[1, 2, 3], [0, 3, 5]], [[1, 2, 3], [0, 3, 5]]]
  got = Tensor(data).one_hot(8)
  assert got.dtype is dtypes.int32
  np.testing.assert_array_equal(got.numpy(), F.one_hot(torch.tensor(data), 8).numpy())
  with pytest.raises(ValueError): Tensor([1, 2]).one_hot(-1)
  with pytest.raises(RuntimeError): Tensor([1.0, 2.0]).one_hot(3)
  assert Tensor([1]).one_hot(0).shape == (1, 0)


def test_scatter_errors():
  b = np.random.default_rng(9).integers(0, 3, (3, 4, 5))
  a = Tensor(b.astype(np.int32))
  for dim in (0, 1, -1):
    hto([(4, 5, 6), (4, 5, 6)], lambda x, s: x.scatter(dim, torch.tensor(b), s), lambda x, s: x.scatter(dim, a, s), forward_only=True)
  x = Tensor.ones(3, 4, 5)
  with pytest.raises((RuntimeError, AssertionError)): Tensor.ones(2, 3, 10).scatter(1, a, Tensor.ones(10, 10, 10))
  with pytest.raises((RuntimeError, AssertionError)): Tensor.ones(10, 3, 10).scatter(1, a, Tensor.ones(10, 3, 10))
  with pytest.raises(TypeError): x.scatter(1, a, x, mode="typo")
  with pytest.raises(RuntimeError): x.half().scatter(1, a, x)  # src of another dtype
  with pytest.raises(TypeError): x.scatter(1, a, 1.0, reduce="sub")
  with pytest.raises(TypeError): Tensor.ones(4).scatter(dim=0, index=Tensor([0]), src=Tensor.ones(4), reduce="add")
  with pytest.raises(RuntimeError): x.scatter_reduce(0, a, x, reduce="INVALID")
  with pytest.raises(RuntimeError): x.half().scatter_reduce(0, a, x, reduce="sum")
  np.testing.assert_array_equal(x.scatter(1, a, 3.0).numpy(), torch.ones(3, 4, 5).scatter(1, torch.tensor(b), 3.0).numpy())
