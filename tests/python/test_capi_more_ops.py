"""The C API's sorting, scattering, data-dependent, shape and nn functions through ctypes, against torch and numpy on
the same random inputs (every element compared; float32 within rtol 1e-5 / atol 1e-5 unless stated)."""
import ctypes
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
LIB = ctypes.CDLL(os.environ.get("TINYGRAD_LIB", str(ROOT / "build" / "libtinygrad.so")))
P, I64, SZ, INT, D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_size_t, ctypes.c_int, ctypes.c_double
PP, IP = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(I64)
SIG = {
  "tg_tensor_from_data": (P, [P, SZ, INT, IP, SZ, ctypes.c_char_p]), "tg_tensor_ndim": (I64, [P]), "tg_tensor_shape": (INT, [P, IP, SZ]),
  "tg_tensor_dtype": (INT, [P, ctypes.POINTER(INT)]), "tg_tensor_to_data": (INT, [P, P, SZ]), "tg_tensor_release": (None, [P]),
  "tg_last_error_message": (ctypes.c_char_p, []), "tg_last_error": (INT, []), "tg_manual_seed": (None, [ctypes.c_uint64]),
  "tg_tensor_sort": (INT, [P, I64, INT, PP]), "tg_tensor_argsort": (P, [P, I64, INT]), "tg_tensor_topk": (INT, [P, I64, I64, INT, PP]),
  "tg_tensor_scatter": (P, [P, I64, P, P]), "tg_tensor_scatter_reduce": (P, [P, I64, P, P, ctypes.c_char_p, INT]),
  "tg_tensor_masked_fill": (P, [P, P, P]), "tg_tensor_nonzero": (P, [P]), "tg_tensor_masked_select": (P, [P, P]),
  "tg_tensor_split": (INT, [P, IP, SZ, I64, PP]), "tg_tensor_chunk": (I64, [P, I64, I64, PP, SZ]), "tg_tensor_meshgrid": (INT, [PP, SZ, INT, PP]),
  "tg_tensor_diag": (P, [P]), "tg_tensor_diagonal": (P, [P]), "tg_tensor_unfold": (P, [P, I64, I64, I64]), "tg_tensor_bitcast": (P, [P, INT]),
  "tg_tensor_einsum": (P, [ctypes.c_char_p, PP, SZ]), "tg_tensor_dot": (P, [P, P]),
  "tg_tensor_conv_transpose2d": (P, [P, P, P, I64, I64, I64, I64, I64, I64, I64, I64, I64]),
  "tg_tensor_interpolate": (P, [P, IP, SZ, ctypes.c_char_p, INT]), "tg_tensor_linspace": (P, [D, D, I64, INT, ctypes.c_char_p]),
  "tg_tensor_randperm": (P, [I64, INT, ctypes.c_char_p]), "tg_tensor_multinomial": (P, [P, I64, INT]),
  "tg_tensor_full_like": (P, [P, D]), "tg_tensor_zeros_like": (P, [P]), "tg_tensor_ones_like": (P, [P]), "tg_tensor_rand_like": (P, [P]),
  "tg_tensor_kaiming_uniform": (P, [IP, SZ, D, INT, ctypes.c_char_p]), "tg_tensor_glorot_uniform": (P, [IP, SZ, INT, ctypes.c_char_p]),
  "tg_tensor_conv2d": (P, [P, P, P, I64, I64, I64, I64, I64, I64, I64]), "tg_tensor_max_pool2d": (P, [P] + [I64] * 8),
  "tg_tensor_avg_pool2d": (P, [P] + [I64] * 6 + [INT]), "tg_tensor_layernorm": (P, [P, IP, SZ, D]),
  "tg_tensor_cross_entropy": (P, [P, P, D, INT]), "tg_tensor_sparse_categorical_crossentropy": (P, [P, P, I64, D, INT]),
  "tg_tensor_nll_loss": (P, [P, P, INT]), "tg_tensor_binary_crossentropy": (P, [P, P, INT]), "tg_tensor_binary_crossentropy_logits": (P, [P, P, INT]),
  "tg_tensor_gather": (P, [P, I64, P]), "tg_tensor_one_hot": (P, [P, I64]), "tg_tensor_scaled_dot_product_attention": (P, [P, P, P, P, INT]),
  "tg_tensor_linear": (P, [P, P, P]), "tg_tensor_assign": (INT, [P, P]),
}
for _n, (_r, _a) in SIG.items():
  _f = getattr(LIB, _n)
  _f.restype, _f.argtypes = _r, _a

CODE = {np.dtype(np.bool_): 0, np.dtype(np.int32): 5, np.dtype(np.uint32): 6, np.dtype(np.int64): 7, np.dtype(np.float32): 11,
        np.dtype(np.float64): 12}
NP = {v: k for k, v in CODE.items()}
rng = np.random.default_rng(1)
live = []


@pytest.fixture(autouse=True)
def release_all():
  yield
  while live: LIB.tg_tensor_release(live.pop())


def T(a) -> int:
  a = np.array(a, order="C")
  h = LIB.tg_tensor_from_data(a.ctypes.data, a.nbytes, CODE[a.dtype], (I64 * max(a.ndim, 1))(*a.shape), a.ndim, None)
  assert h, LIB.tg_last_error_message()
  live.append(h)
  return h


def ok(h) -> int:
  assert h, LIB.tg_last_error_message()
  live.append(h)
  return h


def N(h) -> np.ndarray:
  nd = LIB.tg_tensor_ndim(h)
  shape = (I64 * max(nd, 1))()
  dt = INT()
  assert LIB.tg_tensor_shape(h, shape, max(nd, 1)) == 0 and LIB.tg_tensor_dtype(h, ctypes.byref(dt)) == 0
  out = np.empty(tuple(shape[:nd]), dtype=NP[dt.value])
  assert LIB.tg_tensor_to_data(h, out.ctypes.data, out.nbytes) == 0, LIB.tg_last_error_message()
  return out


def outs(n):
  return (ctypes.c_void_p * n)()


def taken(arr, n):
  hs = [arr[i] for i in range(n)]
  live.extend(hs)
  return hs


def close(got, want, rtol=1e-5, atol=1e-5):
  want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
  assert got.shape == want.shape, (got.shape, want.shape)
  np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---- sorting ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((4, 9), -1), ((4, 9), 0), ((3, 5, 6), 1), ((1,), 0)])
@pytest.mark.parametrize("descending", [0, 1])
def test_sort_argsort_match_torch(shape, dim, descending):
  x = rng.integers(-4, 4, shape).astype(np.float32)  # many ties: the sort must be stable
  o = outs(2)
  assert LIB.tg_tensor_sort(T(x), dim, descending, o) == 0, LIB.tg_last_error_message()
  v, i = taken(o, 2)
  tv, ti = torch.sort(torch.tensor(x), dim=dim, descending=bool(descending), stable=True)
  close(N(v), tv)
  np.testing.assert_array_equal(N(i), ti.numpy().astype(np.int32))
  np.testing.assert_array_equal(N(ok(LIB.tg_tensor_argsort(T(x), dim, descending))), ti.numpy().astype(np.int32))


def test_sort_puts_nan_last_and_topk():
  x = np.array([3, np.nan, -1, 2, np.nan, 0], dtype=np.float32)
  o = outs(2)
  assert LIB.tg_tensor_sort(T(x), 0, 0, o) == 0
  v, _ = taken(o, 2)
  np.testing.assert_array_equal(N(v), np.sort(x))
  y = rng.standard_normal((5, 11)).astype(np.float32)
  for largest in (0, 1):
    assert LIB.tg_tensor_topk(T(y), 4, 1, largest, o) == 0
    v, i = taken(o, 2)
    tv, ti = torch.topk(torch.tensor(y), 4, dim=1, largest=bool(largest))
    close(N(v), tv)
    np.testing.assert_array_equal(N(i), ti.numpy().astype(np.int32))
  assert LIB.tg_tensor_topk(T(y), 12, 1, 1, o) != 0 and b"topk" in LIB.tg_last_error_message()


# ---- scatter ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [0, 1])
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_reduce_matches_torch(reduce, include_self, dim):
  x = rng.standard_normal((4, 6)).astype(np.float32)
  src = rng.standard_normal((5, 7)).astype(np.float32)
  idx = rng.integers(0, x.shape[dim], (3, 4)).astype(np.int64)
  want = torch.tensor(x).scatter_reduce(dim, torch.tensor(idx), torch.tensor(src), reduce, include_self=bool(include_self))
  got = N(ok(LIB.tg_tensor_scatter_reduce(T(x), dim, T(idx), T(src), reduce.encode(), include_self)))
  close(got, want, 1e-5, 1e-5)


def test_scatter_unique_indices_matches_torch_and_errors():
  x = np.zeros((3, 5), dtype=np.float32)
  idx = np.array([[0, 1, 2], [2, 0, 1]], dtype=np.int64)  # distinct per column: torch's result is defined
  src = rng.standard_normal((2, 3)).astype(np.float32)
  want = torch.tensor(x).scatter(0, torch.tensor(idx), torch.tensor(src))
  close(N(ok(LIB.tg_tensor_scatter(T(x), 0, T(idx), T(src)))), want)
  assert not LIB.tg_tensor_scatter_reduce(T(x), 0, T(idx), T(src), b"median", 1)
  assert b"median" in LIB.tg_last_error_message()
  assert not LIB.tg_tensor_scatter(T(x), 0, T(src), T(src)) and LIB.tg_last_error() != 0  # a float index


def test_masked_fill_nonzero_masked_select():
  x = rng.standard_normal((4, 5)).astype(np.float32)
  m = x > 0.3
  close(N(ok(LIB.tg_tensor_masked_fill(T(x), T(m), T(np.array(-9, np.float32))))), np.where(m, -9, x))
  np.testing.assert_array_equal(N(ok(LIB.tg_tensor_nonzero(T(m)))), np.argwhere(m))
  np.testing.assert_array_equal(N(ok(LIB.tg_tensor_masked_select(T(x), T(m)))), x[m])
  z = np.zeros((3, 2), np.int32)
  assert N(ok(LIB.tg_tensor_nonzero(T(z)))).shape == (0, 2)
  assert N(ok(LIB.tg_tensor_masked_select(T(x), T(np.zeros((4, 5), bool))))).shape == (0,)


# ---- shapes -----------------------------------------------------------------------------------------------------------
def test_split_chunk_meshgrid_diag_unfold():
  x = rng.standard_normal((7, 4)).astype(np.float32)
  o = outs(8)
  assert LIB.tg_tensor_split(T(x), (I64 * 3)(2, 0, 5), 3, 0, o) == 0
  for h, w in zip(taken(o, 3), np.split(x, [2, 2])): close(N(h), w)
  n = LIB.tg_tensor_chunk(T(x), 3, 0, o, 8)
  assert n == 3
  for h, w in zip(taken(o, n), torch.chunk(torch.tensor(x), 3, 0)): close(N(h), w)
  assert LIB.tg_tensor_chunk(T(x), 7, 0, o, 2) == -1 and b"room" in LIB.tg_last_error_message()
  a, b = np.arange(3, dtype=np.float32), np.arange(4, dtype=np.float32) * 10
  for xy in (0, 1):
    assert LIB.tg_tensor_meshgrid((ctypes.c_void_p * 2)(T(a), T(b)), 2, xy, o) == 0
    for h, w in zip(taken(o, 2), np.meshgrid(a, b, indexing="xy" if xy else "ij")): close(N(h), w)
  v = rng.standard_normal(5).astype(np.float32)
  close(N(ok(LIB.tg_tensor_diag(T(v)))), np.diag(v))
  for s in [(4, 4), (3, 6), (6, 3), (2, 3, 5)]:
    y = rng.standard_normal(s).astype(np.float32)
    close(N(ok(LIB.tg_tensor_diagonal(T(y)))), np.diagonal(y, axis1=-2, axis2=-1))
  y = rng.standard_normal((3, 10, 2)).astype(np.float32)
  for size, step in [(3, 1), (4, 3), (10, 1), (2, 5)]:
    close(N(ok(LIB.tg_tensor_unfold(T(y), 1, size, step))), torch.tensor(y).unfold(1, size, step))


def test_bitcast_like_linspace():
  x = rng.standard_normal(6).astype(np.float32)
  np.testing.assert_array_equal(N(ok(LIB.tg_tensor_bitcast(T(x), CODE[np.dtype(np.uint32)]))), x.view(np.uint32))
  assert not LIB.tg_tensor_bitcast(T(x), CODE[np.dtype(np.float64)])
  close(N(ok(LIB.tg_tensor_full_like(T(x), 2.5))), np.full(6, 2.5, np.float32))
  close(N(ok(LIB.tg_tensor_zeros_like(T(x)))), np.zeros(6, np.float32))
  close(N(ok(LIB.tg_tensor_ones_like(T(x)))), np.ones(6, np.float32))
  r = N(ok(LIB.tg_tensor_rand_like(T(x))))
  assert r.dtype == np.float32 and r.shape == (6,) and ((r >= 0) & (r < 1)).all()
  for start, stop, steps in [(0, 1, 5), (-3, 7, 11), (2, 2, 1), (1, -1, 4)]:
    close(N(ok(LIB.tg_tensor_linspace(start, stop, steps, 12, None))), np.linspace(start, stop, steps), 1e-12, 1e-12)


def test_einsum_and_dot_match_numpy():
  a, b, c = (rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (4, 5), (5,)])
  for f, ops in [("ij,jk->ik", (a, b)), ("ij,jk", (a, b)), ("ij->ji", (a,)), ("ij->", (a,)), ("ij,jk,k->i", (a, b, c)), ("i,i->", (c, c)),
                 ("bij,bjk->bik", (rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 4, 2)).astype(np.float32)))]:
    hs = [T(o) for o in ops]
    close(N(ok(LIB.tg_tensor_einsum(f.encode(), (ctypes.c_void_p * len(hs))(*hs), len(hs)))), np.einsum(f, *ops), 1e-4, 1e-4)
  close(N(ok(LIB.tg_tensor_dot(T(a), T(b)))), a @ b, 1e-5, 1e-5)
  assert not LIB.tg_tensor_einsum(b"ij,jk->ik", (ctypes.c_void_p * 1)(T(a)), 1)
  assert not LIB.tg_tensor_einsum(b"ii->i", (ctypes.c_void_p * 1)(T(a)), 1)


# ---- nn ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("stride,padding,dilation,groups,opad", [(1, 0, 1, 1, 0), (2, 1, 1, 1, 1), (3, 2, 2, 1, 0), (2, 0, 1, 2, 1), (1, 1, 1, 2, 0)])
def test_conv_transpose2d_matches_torch(stride, padding, dilation, groups, opad):
  x = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
  w = rng.standard_normal((4, 6 // groups, 3, 2)).astype(np.float32)
  b = rng.standard_normal(6).astype(np.float32)
  want = torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride, padding, opad, groups, dilation)
  got = N(ok(LIB.tg_tensor_conv_transpose2d(T(x), T(w), T(b), groups, stride, stride, dilation, dilation, padding, padding, opad, opad)))
  close(got, want, 1e-4, 1e-4)


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (2, 1, 1, 2), (3, 0, 2, 4)])
def test_conv2d_matches_torch(stride, padding, dilation, groups):
  x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
  w = rng.standard_normal((8, 4 // groups, 3, 3)).astype(np.float32)
  b = rng.standard_normal(8).astype(np.float32)
  want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride, padding, dilation, groups)
  got = N(ok(LIB.tg_tensor_conv2d(T(x), T(w), T(b), groups, stride, stride, dilation, dilation, padding, padding)))
  close(got, want, 1e-4, 1e-4)


@pytest.mark.parametrize("k,s,p,d", [(2, 2, 0, 1), (3, 1, 1, 1), (3, 2, 1, 2), (2, 3, 0, 1)])
def test_pools_match_torch(k, s, p, d):
  x = rng.standard_normal((2, 3, 9, 10)).astype(np.float32)
  tx = torch.tensor(x)
  close(N(ok(LIB.tg_tensor_max_pool2d(T(x), k, k, s, s, d, d, p, p))), torch.nn.functional.max_pool2d(tx, k, s, p, d))
  if d == 1:
    for cip in (0, 1):
      want = torch.nn.functional.avg_pool2d(tx, k, s, p, count_include_pad=bool(cip))
      close(N(ok(LIB.tg_tensor_avg_pool2d(T(x), k, k, s, s, p, p, cip))), want)


@pytest.mark.parametrize("size,mode,align", [((7, 9), "linear", 0), ((3, 4), "linear", 0), ((7, 9), "linear", 1), ((8, 10), "nearest", 0),
                                              ((3, 2), "nearest", 0), ((7, 9), "nearest-exact", 0)])
def test_interpolate_matches_torch(size, mode, align):
  x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
  tmode = {"linear": "bilinear", "nearest": "nearest", "nearest-exact": "nearest-exact"}[mode]
  kw = {"align_corners": bool(align)} if mode == "linear" else {}
  if tmode == "nearest-exact" and not hasattr(torch.nn.functional, "interpolate"): pytest.fail("torch lacks interpolate")
  want = torch.nn.functional.interpolate(torch.tensor(x), size=size, mode=tmode, **kw)
  close(N(ok(LIB.tg_tensor_interpolate(T(x), (I64 * 2)(*size), 2, mode.encode(), align))), want, 1e-5, 1e-5)


def test_losses_and_attention_match_torch():
  logits = rng.standard_normal((6, 5)).astype(np.float32)
  y = rng.integers(0, 5, 6).astype(np.int32)
  tl, ty = torch.tensor(logits), torch.tensor(y).long()
  for ls in (0.0, 0.1):
    close(N(ok(LIB.tg_tensor_cross_entropy(T(logits), T(y), ls, 1))), torch.nn.functional.cross_entropy(tl, ty, label_smoothing=ls))
    close(N(ok(LIB.tg_tensor_sparse_categorical_crossentropy(T(logits), T(y), -1, ls, 1))), torch.nn.functional.cross_entropy(tl, ty, label_smoothing=ls))
  close(N(ok(LIB.tg_tensor_cross_entropy(T(logits), T(y), 0.0, 0))), torch.nn.functional.cross_entropy(tl, ty, reduction="none"))
  close(N(ok(LIB.tg_tensor_cross_entropy(T(logits), T(y), 0.0, 2))), torch.nn.functional.cross_entropy(tl, ty, reduction="sum"))
  lp = torch.log_softmax(tl, 1)
  close(N(ok(LIB.tg_tensor_nll_loss(T(lp.numpy()), T(y), 1))), torch.nn.functional.nll_loss(lp, ty))
  p = rng.uniform(0.05, 0.95, (4, 3)).astype(np.float32)
  t = rng.integers(0, 2, (4, 3)).astype(np.float32)
  close(N(ok(LIB.tg_tensor_binary_crossentropy(T(p), T(t), 1))), torch.nn.functional.binary_cross_entropy(torch.tensor(p), torch.tensor(t)))
  z = rng.standard_normal((4, 3)).astype(np.float32) * 5
  close(N(ok(LIB.tg_tensor_binary_crossentropy_logits(T(z), T(t), 1))),
        torch.nn.functional.binary_cross_entropy_with_logits(torch.tensor(z), torch.tensor(t)))
  q, k, v = (rng.standard_normal((2, 3, 6, 8)).astype(np.float32) for _ in range(3))
  for causal in (0, 1):
    want = torch.nn.functional.softmax(torch.tensor(q) @ torch.tensor(k).transpose(-2, -1) / np.sqrt(8) +
                                       (torch.triu(torch.full((6, 6), float("-inf")), 1) if causal else 0), -1) @ torch.tensor(v)
    close(N(ok(LIB.tg_tensor_scaled_dot_product_attention(T(q), T(k), T(v), None, causal))), want, 1e-5, 1e-5)
  x = rng.standard_normal((4, 6)).astype(np.float32)
  close(N(ok(LIB.tg_tensor_layernorm(T(x), None, 0, 1e-5))), torch.nn.functional.layer_norm(torch.tensor(x), (6,)), 1e-4, 1e-5)
  idx = rng.integers(0, 6, (4, 3)).astype(np.int64)
  close(N(ok(LIB.tg_tensor_gather(T(x), 1, T(idx)))), torch.gather(torch.tensor(x), 1, torch.tensor(idx)))
  np.testing.assert_array_equal(N(ok(LIB.tg_tensor_one_hot(T(y), 5))), np.eye(5, dtype=np.int32)[y])
  w, b = rng.standard_normal((6, 2)).astype(np.float32), rng.standard_normal(2).astype(np.float32)
  close(N(ok(LIB.tg_tensor_linear(T(x), T(w), T(b)))), x @ w + b)


def test_assign_replaces_contents():
  a, b = T(np.zeros(3, np.float32)), T(np.array([1, 2, 3], np.int32))
  assert LIB.tg_tensor_assign(a, b) == 0
  np.testing.assert_array_equal(N(a), np.array([1, 2, 3], np.float32))
  assert LIB.tg_tensor_assign(a, T(np.zeros(4, np.float32))) != 0 and b"assign" in LIB.tg_last_error_message()


# ---- random -----------------------------------------------------------------------------------------------------------
def test_randperm_multinomial_initializers():
  LIB.tg_manual_seed(4)
  p = N(ok(LIB.tg_tensor_randperm(1000, 7, None)))
  np.testing.assert_array_equal(np.sort(p), np.arange(1000))
  assert (p != np.arange(1000)).any()
  w = np.array([[1, 0, 3], [0, 0, 1]], np.float32)
  s = N(ok(LIB.tg_tensor_multinomial(T(w), 20000, 1)))
  assert s.shape == (2, 20000) and (s[1] == 2).all() and not (s[0] == 1).any()
  frac = (s[0] == 2).mean()
  assert abs(frac - 0.75) < 5 * np.sqrt(0.75 * 0.25 / 20000)
  shape = (I64 * 2)(300, 200)
  k = N(ok(LIB.tg_tensor_kaiming_uniform(shape, 2, 0.01, 11, None)))
  bound = np.sqrt(3) * np.sqrt(2 / (1 + 0.01 ** 2)) / np.sqrt(200)
  assert np.abs(k).max() <= bound and np.abs(k).max() > 0.99 * bound and abs(k.mean()) < 5 * bound / np.sqrt(3 * 60000)
  g = N(ok(LIB.tg_tensor_glorot_uniform(shape, 2, 11, None)))
  gb = np.sqrt(6 / (300 + 200))
  assert np.abs(g).max() <= gb and abs(g.var() - gb ** 2 / 3) < 0.05 * gb ** 2 / 3


def test_random_numbers_are_reproducible_across_processes():
  prog = ("import ctypes,numpy as np;L=ctypes.CDLL(%r);L.tg_tensor_rand.restype=ctypes.c_void_p;"
          "L.tg_tensor_rand.argtypes=[ctypes.POINTER(ctypes.c_int64),ctypes.c_size_t,ctypes.c_int,ctypes.c_char_p];"
          "L.tg_tensor_to_data.argtypes=[ctypes.c_void_p,ctypes.c_void_p,ctypes.c_size_t];L.tg_manual_seed(77);"
          "t=L.tg_tensor_rand((ctypes.c_int64*1)(8),1,11,None);o=np.empty(8,np.float32);L.tg_tensor_to_data(t,o.ctypes.data,32);print(o.tolist())")
  lib = os.environ.get("TINYGRAD_LIB", str(ROOT / "build" / "libtinygrad.so"))
  runs = [subprocess.run([sys.executable, "-c", prog % lib], capture_output=True, text=True, check=True).stdout for _ in range(2)]
  assert runs[0] == runs[1] and len(eval(runs[0])) == 8
