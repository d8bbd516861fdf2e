"""Tensor.qr() and Tensor.svd(full_matrices=True) written as a tinygrad user writes them, checked element by element
against numpy.linalg (values) and torch (gradients). float32 tolerances: products and orthonormality atol 2e-5 times
the matrix's scale, singular values rtol 1e-4 / atol 2e-5, gradients rtol 1e-3 / atol 1e-4."""
import numpy as np
import pytest
import torch

from tinygrad_c import Tensor, dtypes

SHAPES = [(4, 4), (7, 3), (3, 7), (16, 12), (12, 16), (2, 3, 4, 4), (2, 5, 3)]


def rnd(*shape, seed=0):
  return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def eye_like(n, batch):
  return np.broadcast_to(np.eye(n, dtype=np.float32), batch + (n, n))


def T(x):  # transpose the last two dims
  return np.swapaxes(x, -2, -1)


@pytest.mark.parametrize("shape", SHAPES)
def test_qr(shape):
  a = rnd(*shape, seed=sum(shape))
  Q, R = Tensor(a).qr()
  q, r = Q.numpy(), R.numpy()
  *batch, m, n = shape
  batch, k, tol = tuple(batch), min(m, n), 2e-5 * max(m, n)
  assert q.shape == batch + (m, m) and r.shape == batch + (m, n)
  np.testing.assert_allclose(q @ r, a, atol=tol)
  np.testing.assert_allclose(T(q) @ q, eye_like(m, batch), atol=tol)
  assert (np.tril(r, -1) == 0).all()  # exactly upper triangular
  # numpy's (LAPACK's) factors agree up to the sign of each of the first k reflections
  qn, rn = np.linalg.qr(a.astype(np.float64), mode="complete")
  d = np.sign(np.diagonal(r, axis1=-2, axis2=-1)[..., :k]) * np.sign(np.diagonal(rn, axis1=-2, axis2=-1)[..., :k])
  np.testing.assert_allclose(r[..., :k, :], rn[..., :k, :] * d[..., :, None], atol=tol)
  np.testing.assert_allclose(q[..., :, :k], qn[..., :, :k] * d[..., None, :], atol=tol)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(shape, full_matrices):
  a = rnd(*shape, seed=sum(shape) + 1)
  U, S, Vh = Tensor(a).svd(full_matrices=full_matrices)
  u, s, vh = U.numpy(), S.numpy(), Vh.numpy()
  *batch, m, n = shape
  batch, k, tol = tuple(batch), min(m, n), 2e-5 * max(m, n)
  um, vn = (m, n) if full_matrices else (k, k)
  assert u.shape == batch + (m, um) and s.shape == batch + (k,) and vh.shape == batch + (vn, n)
  np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.float64), compute_uv=False), rtol=1e-4, atol=2e-5)
  assert (np.diff(s, axis=-1) <= 0).all()  # descending
  np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=tol)
  np.testing.assert_allclose(T(u) @ u, eye_like(um, batch), atol=tol)
  np.testing.assert_allclose(vh @ T(vh), eye_like(vn, batch), atol=tol)


def test_svd_matches_numpy_vectors_up_to_sign():
  a = rnd(6, 4, seed=3)
  U, S, Vh = Tensor(a).svd(full_matrices=False)
  un, _, vhn = np.linalg.svd(a.astype(np.float64), full_matrices=False)
  sgn = np.sign((U.numpy() * un).sum(0))  # each singular pair is unique up to one sign
  np.testing.assert_allclose(U.numpy(), un * sgn, atol=1e-4)
  np.testing.assert_allclose(Vh.numpy(), vhn * sgn[:, None], atol=1e-4)


def test_rank_deficient_zero_column_gives_no_nan():
  a = rnd(5, 4, seed=4)
  a[:, 2] = 0
  Q, R = Tensor(a).qr()
  U, S, Vh = Tensor(a).svd()
  q, r, u, s, vh = (t.numpy() for t in (Q, R, U, S, Vh))
  for x in (q, r, u, s, vh): assert np.isfinite(x).all()
  np.testing.assert_allclose(q @ r, a, atol=1e-4)
  np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-4, atol=2e-5)
  assert s[-1] == 0
  np.testing.assert_allclose((u[:, :4] * s) @ vh, a, atol=1e-4)
  # tinygrad's zero matrix and rank-1 cases
  u0, s0, v0 = (t.numpy() for t in Tensor.zeros(3, 3).contiguous().svd())
  assert np.isfinite(u0).all() and np.isfinite(v0).all() and (s0 == 0).all()
  np.testing.assert_allclose(Tensor([[1.0, 1.0], [2.0, 2.0]]).svd()[1].numpy(), [np.sqrt(10), 0.0], atol=1e-5)


def test_int_input_computes_in_default_float():
  # tinygrad promotes an int matrix through its float reflectors
  Q, R = Tensor([[1, 2], [3, 4]]).qr()
  assert Q.dtype == dtypes.default_float and R.dtype == dtypes.default_float
  np.testing.assert_allclose(Q.numpy() @ R.numpy(), [[1, 2], [3, 4]], atol=1e-5)
  U, S, Vh = Tensor([[1, 2], [3, 4]]).svd()
  assert S.dtype == dtypes.default_float
  np.testing.assert_allclose(S.numpy(), np.linalg.svd(np.array([[1.0, 2], [3, 4]]), compute_uv=False), rtol=1e-5)


def test_rank_below_two_raises_assertion():
  with pytest.raises(AssertionError): Tensor([1.0, 2.0]).qr()
  with pytest.raises(AssertionError): Tensor([1.0, 2.0]).svd()
  with pytest.raises(AssertionError): Tensor(3.0).svd(full_matrices=False)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5)])
def test_qr_gradient_matches_torch(shape):
  a, w1, w2 = rnd(*shape, seed=5), rnd(shape[0], shape[1], seed=6), rnd(shape[0], shape[0], seed=7)
  # squares make the loss independent of each reflection's sign, where tinygrad and LAPACK may differ
  x = Tensor(a, requires_grad=True)
  Q, R = x.qr()
  ((R.square() * Tensor(w1)).sum() + (Q.square() * Tensor(w2)).sum()).backward()
  xt = torch.tensor(a, requires_grad=True)
  qt, rt = torch.linalg.qr(xt)
  ((rt.square() * torch.tensor(w1)).sum() + (qt.square() * torch.tensor(w2)).sum()).backward()
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_svd_gradient_matches_torch():
  a, w = rnd(5, 4, seed=8), rnd(4, seed=9)
  x = Tensor(a, requires_grad=True)
  U, S, Vh = x.svd(full_matrices=False)
  ((S * Tensor(w)).sum() + (Vh.square() * Tensor(a[:4])).sum()).backward()
  xt = torch.tensor(a, requires_grad=True)
  ut, st, vht = torch.linalg.svd(xt, full_matrices=False)
  ((st * torch.tensor(w)).sum() + (vht.square() * torch.tensor(a[:4])).sum()).backward()
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-3, atol=1e-4)
