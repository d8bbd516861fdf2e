# Issue 33 (ops2): elementwise math, losses, attention and gradients at extreme values, each called the way a tinygrad
# user writes it, checked against torch 1.13 (every element; forward atol 1e-6 / rtol 1e-3 unless noted, gradients atol
# 1e-5 / rtol 1e-3; ints exact) or against the value tinygrad documents. Inputs come from a fixed seed per test.
import math
import os
import zlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tinygrad_c import Tensor, dtypes


def _rng():
  return np.random.default_rng(zlib.crc32(os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0].encode()))


def _grad_check(fn_tg, fn_torch, x: np.ndarray, atol=1e-6, rtol=1e-3, gatol=1e-5, grtol=1e-3):
  """forward and d sum / d x of fn on x, in both; every element compared."""
  t = Tensor(x, requires_grad=True)
  out = fn_tg(t)
  out.sum().backward()
  tt = torch.tensor(x, requires_grad=True)
  ref = fn_torch(tt)
  ref.sum().backward()
  np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), atol=atol, rtol=rtol)
  g = t.grad.numpy()
  assert np.isfinite(g).all() == np.isfinite(tt.grad.numpy()).all()
  np.testing.assert_allclose(g, tt.grad.numpy(), atol=gatol, rtol=grtol)


# ---- gradients at extreme values (finite where torch's are) ----
@pytest.mark.parametrize("lo,hi", [(300, 400), (-400, -300), (-3, 3)])
@pytest.mark.parametrize("name,tg_fn,torch_fn", [
    ("sigmoid", Tensor.sigmoid, torch.sigmoid),
    ("tanh", Tensor.tanh, torch.tanh),
    ("quick_gelu", Tensor.quick_gelu, lambda x: x * torch.sigmoid(1.702 * x)),
    ("gelu_tanh", lambda x: x.gelu(approximate="tanh"), lambda x: F.gelu(x, approximate="tanh")),
    ("gelu_none", lambda x: x.gelu(approximate="none"), lambda x: F.gelu(x)),
    ("silu", Tensor.silu, F.silu),
])
def test_extreme_gradients(name, tg_fn, torch_fn, lo, hi):
  x = _rng().uniform(lo, hi, (9, 13)).astype(np.float32)
  _grad_check(tg_fn, torch_fn, x, gatol=1e-5 if name != "tanh" else 1e-6)


def test_sigmoid_gradient_scalar_extremes():
  for v in (300.0, -300.0, 88.0, -88.0, 0.0):
    x = Tensor([v])
    g = x.sigmoid()[0].gradient(x)[0].item()
    tt = torch.tensor([v], requires_grad=True)
    torch.sigmoid(tt)[0].backward()
    assert math.isfinite(g) and abs(g - tt.grad.item()) < 1e-7


def test_prod_backward_with_zeros():
  for vals in ([1.0, 2.0, 3.0], [0.0, 2.0, 3.0], [0.0, 0.0, 3.0], [4.0, 0.0, -2.0]):
    _grad_check(lambda x: x.prod(), lambda x: x.prod(), np.array(vals, np.float32))
  x = _rng().standard_normal((3, 4, 5)).astype(np.float32)
  x[1, 2, :2] = 0.0
  x[0, 1, 3] = 0.0
  _grad_check(lambda t: t.prod(axis=2), lambda t: t.prod(dim=2), x)
  _grad_check(lambda t: t.prod(axis=1, keepdim=True), lambda t: t.prod(dim=1, keepdim=True), x)


def test_abs_gradient_at_kink():
  for v in (-1.0, -0.0, 0.0, 1.0, math.inf, -math.inf):
    _grad_check(Tensor.abs, torch.abs, np.array([v], np.float32))


def test_clip_gradient_at_bounds():
  x = np.array([-3.0, -2.5, 0, 1.5, 2], np.float32)
  _grad_check(lambda t: t.clip(-2.5, 1.5), lambda t: t.clip(-2.5, 1.5), x)
  _grad_check(lambda t: t.clip(None, 0), lambda t: t.clip(None, 0), x)
  _grad_check(lambda t: t.clip(-2.5, None), lambda t: t.clip(-2.5, None), x)
  _grad_check(lambda t: t.clip(3, 0), lambda t: t.clip(3, 0), x)  # min > max: max everywhere, as torch
  with pytest.raises(RuntimeError): Tensor(x).clip(None, None)


def test_copysign_gradient_exact():
  vals = [-1.0, -0.0, 0.0, 1.0]
  for i in vals:
    for j in vals + [math.inf, -math.inf]:
      t, s = Tensor([i], requires_grad=True), Tensor([j])
      t.copysign(s).sum().backward()
      tt = torch.tensor([i], requires_grad=True)
      torch.copysign(tt, torch.tensor([j])).sum().backward()
      np.testing.assert_allclose(t.copysign(s).numpy(), torch.copysign(tt, torch.tensor([j])).detach().numpy())
      np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy())


@pytest.mark.parametrize("op", ["lt", "ne"])
def test_comparison_gradient_is_zero(op):
  x = _rng().standard_normal(4).astype(np.float32)
  t = Tensor(x, requires_grad=True)
  (t * (t < 0 if op == "lt" else t != 0)).sum().backward()
  tt = torch.tensor(x, requires_grad=True)
  (tt * (tt < 0 if op == "lt" else tt != 0)).sum().backward()
  np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-6)


# ---- pow, bit ops, division ----
def test_int_pow_const_int():
  x = Tensor([-2, 0, 2])
  for e in (0, 1, 2, 29):
    r = x ** e
    assert r.dtype == dtypes.int32
    np.testing.assert_array_equal(r.numpy(), torch.tensor([-2, 0, 2], dtype=torch.int32) ** e)
  np.testing.assert_array_equal((Tensor([11, 12, 13]) ** 7).numpy(), torch.tensor([11, 12, 13], dtype=torch.int32) ** 7)
  np.testing.assert_array_equal(Tensor([1, 2, 3]).pow(3).numpy(), [1, 8, 27])
  with pytest.raises(RuntimeError): x ** -2


def test_pow_scalar_base_and_float_exponent():
  np.testing.assert_array_equal((2 ** Tensor([0, 1, 5])).numpy(), [1, 2, 32])
  x = np.array([-2.0, -1, 0, 1, 2, 3], np.float32)
  for base in (0, 0.7, -2, 2.0):
    _grad_check(lambda t: base ** t, lambda t: base ** t, x, gatol=1e-5)
  for e in (0.5, 1.5, 2.0, -1.0, 0.0):
    r = Tensor([1, 2, 3, 4], dtype=dtypes.int32) ** e
    np.testing.assert_allclose(r.numpy(), (torch.tensor([1, 2, 3, 4], dtype=torch.int) ** e).numpy(), rtol=1e-6)


def test_int_or_keeps_sign():
  assert (Tensor([0], dtype=dtypes.int32) | 0xFFFFFFFF).item() == -1
  assert (Tensor([0], dtype=dtypes.int32) | 0xFFFFFFFF).dtype == dtypes.int32
  assert (Tensor([1], dtype=dtypes.uint8) ^ 0x1FF).item() == 0xFE


def test_shift_by_tensor():
  data = [[-1, -3, 1, 7], [0, -2147483648, 2147483647, -1]]
  tor, ten = torch.tensor(data, dtype=torch.int32), Tensor(data, dtype=dtypes.int32)
  for s in (0, 2, 8, 31):
    np.testing.assert_array_equal((ten << s).numpy(), (tor << s).numpy())
    np.testing.assert_array_equal((ten >> s).numpy(), (tor >> s).numpy())
  sh = [0, 2, 8, 31]
  np.testing.assert_array_equal((ten << Tensor(sh, dtype=dtypes.int32)).numpy(), (tor << torch.tensor(sh, dtype=torch.int32)).numpy())
  np.testing.assert_array_equal((ten >> Tensor(sh, dtype=dtypes.int32)).numpy(), (tor >> torch.tensor(sh, dtype=torch.int32)).numpy())
  u = Tensor([[0, 1, 2], [1 << 8, 1 << 16, 1 << 30]], dtype=dtypes.uint32)
  np.testing.assert_array_equal((u << Tensor([0, 2, 4], dtype=dtypes.uint32)).numpy(), [[0, 4, 32], [1 << 8, 1 << 18, 0]])
  np.testing.assert_array_equal(u.rshift(Tensor([0, 2, 4], dtype=dtypes.uint32)).numpy(), [[0, 0, 0], [1 << 8, 1 << 14, 1 << 26]])
  np.testing.assert_array_equal((1 << Tensor([0, 3, 10])).numpy(), [1, 8, 1024])
  with pytest.raises(RuntimeError): Tensor([1.0]) << 2
  with pytest.raises(RuntimeError): u << Tensor([1.0])
  with pytest.raises(RuntimeError): u << 1.0


def test_narrow_shifts_by_constants():
  # 8- and 16-bit lanes shifted in their own width (vector byte shifts), every amount, against numpy's wrapping shifts
  rng = _rng()
  for dt, npt in ((dtypes.uint8, np.uint8), (dtypes.int8, np.int8), (dtypes.uint16, np.uint16), (dtypes.int16, np.int16)):
    info = np.iinfo(npt)
    a = rng.integers(info.min, info.max, 256, endpoint=True).astype(npt)
    t = Tensor(a, dtype=dt)
    for s in range(8 * a.itemsize):
      np.testing.assert_array_equal((t >> s).numpy(), a >> npt(s), err_msg=f"{dt} >> {s}")
      np.testing.assert_array_equal((t << s).numpy(), a << npt(s), err_msg=f"{dt} << {s}")
      # nibble-style fields: a shift and a mask fused into one kernel
      np.testing.assert_array_equal(((t >> s) & 15).numpy(), (a >> npt(s)) & npt(15), err_msg=f"({dt} >> {s}) & 15")


def test_div_rounding_mode():
  num = [5, 6, 7, 0, -5, -6, -7]
  for den in (-10, -3, -2, 1, 3, 5, -3.0, 2.0):
    for mode in (None, "trunc", "floor"):
      for n in (num, [float(v) for v in num]):
        r = Tensor(n).div(Tensor([den]), rounding_mode=mode)
        ref = torch.tensor(n).div(torch.tensor([den]), rounding_mode=mode)
        assert r.dtype.is_float == ref.is_floating_point()
        np.testing.assert_allclose(r.numpy(), ref.numpy(), rtol=1e-6)
  np.testing.assert_array_equal((Tensor([-7, 7]) // 2).numpy(), [-4, 3])
  with pytest.raises(RuntimeError): Tensor([1.0]).div(2, rounding_mode="typo")


def test_mod_and_fmod():
  a, b = [-4, 7, 5, 4, -7, 8, -9], [2, -3, 8, -2, 3, 5, -5]
  for fa in (False, True):
    for fb in (False, True):
      va, vb = [float(v) for v in a] if fa else a, [float(v) for v in b] if fb else b
      ta, tb, ra, rb = Tensor(va), Tensor(vb), torch.tensor(va), torch.tensor(vb)
      np.testing.assert_allclose(ta.mod(tb).numpy(), (ra % rb).numpy())
      np.testing.assert_allclose((ta % 3).numpy(), (ra % 3).numpy())
      np.testing.assert_allclose((100 % ta).numpy(), (100 % ra).numpy())
      np.testing.assert_allclose(ta.fmod(tb).numpy(), torch.fmod(ra, rb).numpy())
      np.testing.assert_allclose(ta.fmod(3.5).numpy(), torch.fmod(ra, 3.5).numpy(), rtol=1e-6)


def test_log10_and_softmin():
  x = _rng().uniform(0.1, 5, (6, 7)).astype(np.float32)
  _grad_check(Tensor.log10, torch.log10, x)
  np.testing.assert_allclose(Tensor([math.inf, -math.inf, math.nan]).log10().numpy(), [math.inf, math.nan, math.nan])
  y = _rng().standard_normal((6, 7)).astype(np.float32)
  _grad_check(lambda t: t.softmin(), lambda t: torch.nn.Softmin(dim=-1)(t), y, atol=1e-7, gatol=1e-7)
  _grad_check(lambda t: t.softmin(axis=0), lambda t: F.softmin(t, dim=0), y, atol=1e-7, gatol=1e-7)


# ---- attention ----
def _sdpa_ref(q, k, v, attn_mask=None, is_causal=False):
  """torch's documented scaled_dot_product_attention (torch 1.13 has no F.scaled_dot_product_attention)."""
  s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
  if is_causal: attn_mask = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril()
  if attn_mask is not None: s = s.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == torch.bool else s + attn_mask
  return s.softmax(-1) @ v


def _qkv(shapes):
  rng = _rng()
  return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def test_sdpa_method_mask_and_causal():
  q, k, v, m = _qkv([(2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 5)])
  tq, tk, tv = (torch.tensor(a) for a in (q, k, v))
  out = Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v))
  np.testing.assert_allclose(out.numpy(), _sdpa_ref(tq, tk, tv).numpy(), atol=1e-5, rtol=1e-4)
  out = Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), attn_mask=Tensor(m))
  np.testing.assert_allclose(out.numpy(), _sdpa_ref(tq, tk, tv, attn_mask=torch.tensor(m)).numpy(), atol=1e-5, rtol=1e-4)
  bm = m > 0
  bm[..., 0] = True  # every row keeps one key
  out = Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), attn_mask=Tensor(bm))
  np.testing.assert_allclose(out.numpy(), _sdpa_ref(tq, tk, tv, attn_mask=torch.tensor(bm)).numpy(), atol=1e-5, rtol=1e-4)
  out = Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), is_causal=True)
  np.testing.assert_allclose(out.numpy(), _sdpa_ref(tq, tk, tv, is_causal=True).numpy(), atol=1e-5, rtol=1e-4)
  with pytest.raises(RuntimeError): Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), attn_mask=Tensor(m), is_causal=True)


def test_sdpa_gqa():
  q, k, v = _qkv([(2, 8, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4)])
  out = Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), enable_gqa=True)
  # enable_gqa as torch's documentation defines it: the key/value heads repeated to the query's
  tk, tv = (torch.tensor(a).repeat_interleave(4, dim=-3) for a in (k, v))
  np.testing.assert_allclose(out.numpy(), _sdpa_ref(torch.tensor(q), tk, tv).numpy(), atol=1e-5, rtol=1e-4)
  q3, k3, v3 = _qkv([(2, 7, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4)])
  with pytest.raises(RuntimeError): Tensor(q3).scaled_dot_product_attention(Tensor(k3), Tensor(v3), enable_gqa=True)


def test_sdpa_dropout_outside_training_is_identity():
  q, k, v = _qkv([(1, 2, 4, 8)] * 3)
  a = Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), dropout_p=0.5).numpy()
  np.testing.assert_allclose(a, _sdpa_ref(*(torch.tensor(x) for x in (q, k, v))).numpy(), atol=1e-5, rtol=1e-4)


# ---- losses ----
def test_cross_entropy_indices_probabilities_smoothing_reduction():
  rng = _rng()
  x = rng.standard_normal((8, 5)).astype(np.float32)
  idx = rng.integers(0, 5, (8,)).astype(np.int32)
  probs = rng.uniform(0, 1, (8, 5)).astype(np.float32)
  for red in ("mean", "sum", "none"):
    for ls in (0.0, 0.3, 1.0):
      _grad_check(lambda t: t.cross_entropy(Tensor(idx), reduction=red, label_smoothing=ls),
                  lambda t: F.cross_entropy(t, torch.tensor(idx).long(), reduction=red, label_smoothing=ls), x)
      _grad_check(lambda t: t.cross_entropy(Tensor(probs), reduction=red, label_smoothing=ls),
                  lambda t: F.cross_entropy(t, torch.tensor(probs), reduction=red, label_smoothing=ls), x)
  x1, p1 = rng.standard_normal(6).astype(np.float32), rng.uniform(0, 1, 6).astype(np.float32)  # one sample (C,)
  _grad_check(lambda t: t.cross_entropy(Tensor(p1)), lambda t: F.cross_entropy(t, torch.tensor(p1)), x1)
  x4, p4 = rng.standard_normal((4, 3, 2, 2)).astype(np.float32), rng.uniform(0, 1, (4, 3, 2, 2)).astype(np.float32)
  _grad_check(lambda t: t.cross_entropy(Tensor(p4)), lambda t: F.cross_entropy(t, torch.tensor(p4)), x4)
  with pytest.raises(RuntimeError): Tensor(x).cross_entropy(Tensor(idx.reshape(8, 1)))
  with pytest.raises(ValueError): Tensor(x).cross_entropy(Tensor(probs), reduction="typo")


def test_bce_logits_pos_weight():
  rng = _rng()
  x, y = rng.standard_normal((6, 4)).astype(np.float32), rng.uniform(0, 1, (6, 4)).astype(np.float32)
  pw = [0.25, 1.0, 3.0, 7.0]
  for red in ("mean", "sum", "none"):
    _grad_check(lambda t: t.binary_crossentropy_logits(Tensor(y), reduction=red, pos_weight=Tensor(pw)),
                lambda t: F.binary_cross_entropy_with_logits(t, torch.tensor(y), reduction=red, pos_weight=torch.tensor(pw)), x)


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
def test_nll_loss_weight_ignore_index(red):
  rng = _rng()
  x = rng.standard_normal((10, 4)).astype(np.float32)
  y = rng.integers(0, 4, (10,)).astype(np.int32)
  w = rng.uniform(0.1, 2, (4,)).astype(np.float32)
  ty = torch.tensor(y).long()
  _grad_check(lambda t: t.log_softmax(1).nll_loss(Tensor(y), Tensor(w), reduction=red),
              lambda t: F.nll_loss(F.log_softmax(t, 1), ty, torch.tensor(w), reduction=red), x)
  _grad_check(lambda t: t.log_softmax(1).nll_loss(Tensor(y), ignore_index=1, reduction=red),
              lambda t: F.nll_loss(F.log_softmax(t, 1), ty, ignore_index=1, reduction=red), x)
  _grad_check(lambda t: t.log_softmax(1).nll_loss(Tensor(y), weight=Tensor(w), ignore_index=2, reduction=red),
              lambda t: F.nll_loss(F.log_softmax(t, 1), ty, torch.tensor(w), ignore_index=2, reduction=red), x)
  x3 = rng.standard_normal((4, 5, 3, 2)).astype(np.float32)  # (N, C, d1, d2)
  y3 = rng.integers(0, 5, (4, 3, 2)).astype(np.int32)
  w3 = rng.uniform(0.1, 2, (5,)).astype(np.float32)
  _grad_check(lambda t: t.log_softmax(1).nll_loss(Tensor(y3), Tensor(w3), reduction=red),
              lambda t: F.nll_loss(F.log_softmax(t, 1), torch.tensor(y3).long(), torch.tensor(w3), reduction=red), x3)


def test_sparse_categorical_crossentropy():
  rng = _rng()
  x = rng.standard_normal((12, 10)).astype(np.float32)
  y = rng.integers(0, 10, (12,)).astype(np.int32)
  _grad_check(lambda t: t.sparse_categorical_crossentropy(Tensor(y)), lambda t: F.cross_entropy(t, torch.tensor(y).long()), x)
  y[3] = 5
  _grad_check(lambda t: t.sparse_categorical_crossentropy(Tensor(y), ignore_index=5, label_smoothing=0.2),
              lambda t: F.cross_entropy(t, torch.tensor(y).long(), ignore_index=5, label_smoothing=0.2), x)


def test_loss_label_smoothing_range_asserts():
  x, y = Tensor([[1.0, 2.0]]), Tensor([1])
  with pytest.raises(AssertionError): x.cross_entropy(y, label_smoothing=1.5)
  with pytest.raises(AssertionError): x.sparse_categorical_crossentropy(y, label_smoothing=-0.1)
