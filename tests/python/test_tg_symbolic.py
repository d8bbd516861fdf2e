"""Symbolic shapes written the tinygrad way: Variable(...).bind(n), slicing and shrinking with a bound Variable, shapes
holding it, ops over symbolic dims and a TinyJit replaying across bindings.

Each value is checked elementwise against numpy at several bound values (rtol/atol 1e-5, float32); shapes, errors and
printing against what tinygrad returns or raises for the same call.
"""
import ctypes

import numpy as np
import pytest

import tinygrad_c as tg
from tinygrad_c import BoundExpr, Context, Tensor, TinyJit, TinygradError, Variable


@pytest.fixture(autouse=True)
def jit_on():
  with Context(JIT=1): yield


def close(a, b, tol=1e-5):
  np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def rnd(*shape, seed=0):
  return np.random.default_rng(seed).random(shape, dtype=np.float32)


# ---- item 1: the bound Variable ---------------------------------------------------------------------------------------
def test_bind_unbind_and_arithmetic():
  v = Variable("i", 1, 10)
  b = v.bind(3)
  assert isinstance(b, BoundExpr) and b == 3 and int(b) == 3
  var, val = b.unbind()
  assert val == 3 and var.expr == "i" and (var.vmin, var.vmax) == (1, 10)
  assert (b.vmin, b.vmax) == (1, 10) and str(b) == "i"
  assert str(b + 1) == "(i+1)" and b + 1 == 4 and str(b * 2) == "(i*2)" and b * 2 == 6
  assert 10 - b == 7 and str(10 - b) == "(10-i)" or str(10 - b) == "((i*-1)+10)"
  assert tg.sym_infer(b + 1, {"i": 7}) == 8 and tg.sym_infer(v * 2, {v: 4}) == 8
  with pytest.raises(AssertionError): v.bind(11)      # tinygrad: bind 11 not in range [1, 10]
  with pytest.raises(AssertionError): (v + 1).bind(2)  # only a Variable binds
  with pytest.raises(AssertionError): (b + 1).unbind()
  assert tg.Expr(5).val == 5
  with pytest.raises(AssertionError): v.val


# ---- items 2 and 5: slicing, shrink, reshape, creation; the shape holds the bound Variable -----------------------------
def test_slice_with_bound_variable_keeps_the_dim_symbolic():
  xv = rnd(3, 10)
  x = Tensor(xv)
  for n in (1, 4, 10):
    s = x[:, :Variable("i", 1, 10).bind(n)]
    assert s.shape == (3, n)
    d = s.shape[1]
    assert isinstance(d, BoundExpr) and d.unbind()[1] == n and str(d) == "i" and repr(s.shape) == f"(3, i={n})"
    close(s.numpy(), xv[:, :n])
    close(x.shrink(((0, 3), (0, Variable("i", 1, 10).bind(n)))).numpy(), xv[:, :n])
    close(x.shrink((None, (0, Variable("i", 1, 10).bind(n)))).numpy(), xv[:, :n])
  # a bound start is its value (tinygrad: x[3:5, vi:vi+2])
  y = Tensor(rnd(7, 11))
  for n in (1, 3):
    vi = Variable("i", 1, 10).bind(n)
    close(y[3:5, vi:vi + 2].numpy(), y.numpy()[3:5, n:n + 2])
    close(y.shrink(((3, 5), (vi, vi + 2))).numpy(), y.numpy()[3:5, n:n + 2])


def test_index_into_a_symbolic_dim():
  # negative and int indices against a symbolic dim resolve against its bound size (tinygrad's test_negative_slice)
  av = rnd(3, 10, 4)
  a = Tensor(av)
  for n in (3, 7):
    s = a[:, :Variable("i", 1, 10).bind(n)]
    close(s[:, -3:-1].numpy(), av[:, :n][:, -3:-1])
    close(s[:, -1].numpy(), av[:, :n][:, -1])
    close(s[:2, :n].numpy(), av[:2, :n])  # the full extent keeps it symbolic
    assert isinstance(s[:2, :n].shape[1], BoundExpr)


def test_shape_entries_go_back_into_reshape_and_creation():
  xv = rnd(10, 4)
  x = Tensor(xv)
  for n in (2, 5):
    s = x[:Variable("i", 1, 10).bind(n)]
    r = s.reshape(s.shape[0], 2, 2)
    assert r.shape == (n, 2, 2) and isinstance(r.shape[0], BoundExpr)
    close(r.numpy(), xv[:n].reshape(n, 2, 2))
    close(s.reshape(s.shape[0] * 4).numpy(), xv[:n].reshape(-1))  # merging it: the expression's value
    z = Tensor.zeros(s.shape[0], 4) + s
    assert isinstance(z.shape[0], BoundExpr)
    close(z.numpy(), xv[:n])
    o = Tensor.ones(Variable("i", 1, 10).bind(n), 11).contiguous()
    close(o[:, 1:2].numpy(), np.ones((n, 1), np.float32))
    assert Tensor.empty(Variable("i", 1, 10).bind(n), 3).shape == (n, 3)
    e = Tensor([[1.0, 0.0]]).expand(Variable("i", 1, 10).bind(n), 2)
    assert isinstance(e.shape[0], BoundExpr)
    close(e.numpy(), np.tile([[1.0, 0.0]], (n, 1)))
  with pytest.raises(ValueError): Tensor(rnd(30)).reshape((3, Variable("i", 1, 10).bind(3)))
  with pytest.raises(TypeError): x[:Variable("i", 1, 10)]  # unbound: no value to run with


# ---- item 3: through pad, cat, matmul, mean, var, softmax, attention ---------------------------------------------------
def test_ops_over_symbolic_dims():
  av, bv = rnd(3, 10, seed=1), rnd(10, 5, seed=2)
  a, b = Tensor(av), Tensor(bv)
  for n in (1, 3, 6):
    vi = Variable("i", 1, 10).bind(n)
    sa = a[:, :vi]
    close((sa + 1).numpy(), av[:, :n] + 1)
    close((sa + 1).pad((None, (0, 10 - sa.shape[1]))).numpy(), np.pad(av[:, :n] + 1, ((0, 0), (0, 10 - n))))
    close(sa.cat(Tensor(bv[:3, :2]), dim=1).numpy(), np.concatenate([av[:, :n], bv[:3, :2]], 1))
    close(a[:, :vi].T.cat(Tensor(bv[:2, :3]), dim=0).numpy(), np.concatenate([av[:, :n].T, bv[:2, :3]], 0))
    close((sa @ b[:vi, :]).numpy(), av[:, :n] @ bv[:n])  # at n=1 too: the contracted dim is not a broadcast 1
    close(sa.mean().numpy(), av[:, :n].mean())
    close(sa.mean(1).numpy(), av[:, :n].mean(1))
    if n > 1: close(sa.var(1).numpy(), av[:, :n].var(1, ddof=1), tol=1e-4)
    close(sa.sum().numpy(), av[:, :n].sum())
    e = np.exp(av[:, :n] - av[:, :n].max(1, keepdims=True))
    close(sa.softmax().numpy(), e / e.sum(1, keepdims=True))
    close(sa.flip(1).numpy(), av[:, :n][:, ::-1])


def test_attention_with_symbolic_sequence_length():
  qv, kv, vv = rnd(2, 1, 4, 8, seed=3), rnd(2, 10, 4, 8, seed=4), rnd(2, 10, 4, 8, seed=5)
  q, k, v = Tensor(qv), Tensor(kv), Tensor(vv)
  for n in (1, 2, 4, 9):
    vi = Variable("i", 1, 10).bind(n)
    out = q.transpose(1, 2).scaled_dot_product_attention(k[:, :vi].transpose(1, 2), v[:, :vi].transpose(1, 2)).numpy()
    qt, kt, vt = qv.transpose(0, 2, 1, 3), kv[:, :n].transpose(0, 2, 1, 3), vv[:, :n].transpose(0, 2, 1, 3)
    sc = qt @ kt.transpose(0, 1, 3, 2) / np.sqrt(8)
    w = np.exp(sc - sc.max(-1, keepdims=True))
    close(out, (w / w.sum(-1, keepdims=True)) @ vt)


# ---- item 4: TinyJit across bindings ----------------------------------------------------------------------------------
def test_jit_with_bound_slices_captures_once():
  av, bv = rnd(3, 10, seed=6), rnd(10, 5, seed=7)
  a, b = Tensor(av).realize(), Tensor(bv).realize()

  @TinyJit
  def f(x, w): return ((x @ w) + 1).realize()

  compiles = None
  for n in range(1, 9):
    vi = Variable("i", 1, 10).bind(n)
    close(f(a[:, :vi], b[:vi, :]).numpy(), av[:, :n] @ bv[:n] + 1)
    if n == 2: compiles = tg.counters()["compile_count"]
    if n > 2: assert tg.counters()["compile_count"] == compiles, f"binding {n} compiled again"
  assert f.call_count == 8 and len(f.plan().kernels) == 1

  @TinyJit
  def g(x): return x.mean(1).realize()
  for n in (1, 5, 3, 9):
    close(g(a[:, :Variable("i", 1, 10).bind(n)]).numpy(), av[:, :n].mean(1))
  assert g.call_count == 4


def test_cat_and_pad_along_a_bound_dim_replay_in_a_jit():
  # tinygrad's cat along a bound dim: the size is an expression of the Variables (i+j, i+3), kept symbolic, so one
  # capture (and one compile) serves every binding
  av, bv = rnd(10, 3, seed=20), rnd(10, 3, seed=21)
  a, b = Tensor(av).realize(), Tensor(bv).realize()

  @TinyJit
  def f(x, y): return x.cat(y, dim=0).realize()

  @TinyJit
  def g(x): return (x + 1).pad(((1, 2), None), value=-1.0).realize()

  @TinyJit
  def h(x, y): return x.T.cat(y.T, x.T, dim=1).sum(1).realize()
  compiles = None
  for k, (i, j) in enumerate([(2, 3), (4, 2), (1, 1), (10, 10), (3, 7), (6, 1)]):
    vi, vj = Variable("i", 1, 10).bind(i), Variable("j", 1, 10).bind(j)
    out = f(a[:vi], b[:vj])
    assert out.shape == (i + j, 3) and str(out.shape[0]) == "(i+j)"
    assert np.array_equal(out[:i + j, :3].numpy(), np.concatenate([av[:i], bv[:j]]))
    assert np.array_equal(g(a[:vi]).numpy(), np.pad(av[:i] + 1, ((1, 2), (0, 0)), constant_values=-1))
    close(h(a[:vi], b[:vj]).numpy(), 2 * av[:i].sum(0) + bv[:j].sum(0))
    if k == 2: compiles = tg.counters()["compile_count"]
    if k > 2: assert tg.counters()["compile_count"] == compiles, f"binding {i},{j} compiled again"
  assert f.call_count == 6 and len(f.plan().kernels) == 1 and len(g.plan().kernels) == 1


def test_ops_over_a_dim_grown_by_cat_or_pad():
  av, bv = rnd(10, 3, seed=22), rnd(4, 3, seed=23)
  a, b = Tensor(av).realize(), Tensor(bv).realize()
  for n in (1, 3, 8):
    vi = Variable("i", 1, 10).bind(n)
    x = a[:vi]
    ref = np.concatenate([av[:n], bv[:2], av[:n]])
    c = x.cat(b[:2], x)
    assert str(c.shape[0]) == "((i*2)+2)" and c.shape[0] == 2 * n + 2
    close(c.numpy(), ref)
    close(c.sum(0).numpy(), ref.sum(0))
    close(c.mean(0).numpy(), ref.mean(0))  # divides by the expression's value
    close(c.max(0).numpy(), ref.max(0))
    close((c * 2).softmax(0).numpy(), np.exp(2 * ref - (2 * ref).max(0)) / np.exp(2 * ref - (2 * ref).max(0)).sum(0))
    close(c.cat(x).numpy(), np.concatenate([ref, av[:n]]))  # a cat of a cat
    p = x.pad(((0, 2), None))
    assert p.shape[0] == n + 2
    close((p + x.cat(b[:2])).numpy(), np.pad(av[:n], ((0, 2), (0, 0))) + np.concatenate([av[:n], bv[:2]]))  # i+2 meets i+2
    close(x.cat(b[:2], x).rebind(vi.unbind()[0], 5).numpy(), np.concatenate([av[:5], bv[:2], av[:5]]))  # the lazy graph
    r = c.realize()
    close((r[1:] * 3).numpy(), 3 * ref[1:])  # a view that changes the dim reads at the binding
  # a realized cat as a jit input: its Variable travels with it
  jf = TinyJit(lambda t: (t * 3).sum(0).realize())
  for n in (1, 4, 2, 7):
    t = a[:Variable("i", 1, 10).bind(n)].cat(b[:2]).realize()
    close(jf(t).numpy(), 3 * np.concatenate([av[:n], bv[:2]]).sum(0))


def test_gradients_through_a_pad_or_cat_along_a_bound_dim():
  # a pad by plain amounts and a cat's first piece give back their part of the gradient, symbolic; a later piece of a
  # cat (a symbolic start) is refused with an error, never a wrong gradient
  av, wv = rnd(10, 3, seed=40), rnd(13, 3, seed=41)
  for n in (1, 3, 7):
    a = Tensor(av, requires_grad=True)
    vi = Variable("i", 1, 10).bind(n)
    x = a[:vi]
    (x.pad(((1, 2), None)) * Tensor(wv)[:vi + 3]).sum().backward()  # x[:v+3]: symbolic too
    want = np.zeros((10, 3), np.float32)
    want[:n] = wv[1:n + 1]
    close(a.grad.numpy(), want)
    a2 = Tensor(av, requires_grad=True)
    (a2[:vi].cat(Tensor.ones(2, 3)) * Tensor(wv)[:vi + 2]).sum().backward()
    want = np.zeros((10, 3), np.float32)
    want[:n] = wv[:n]
    close(a2.grad.numpy(), want)
    # through the bound slice itself: the gradient padded back to the source's plain size
    a3 = Tensor(av, requires_grad=True)
    (a3[:vi] * a3[:vi]).mean().backward()
    want = np.zeros((10, 3), np.float32)
    want[:n] = 2 * av[:n] / (n * 3)
    close(a3.grad.numpy(), want)
  b = Tensor(rnd(2, 3), requires_grad=True)
  with pytest.raises(TinygradError, match="no gradient"): a[:vi].cat(b).sum().backward()


def test_a_bound_dim_padded_to_a_fixed_size_replays():
  # tinygrad's x.pad((None, (0, N - x.shape[1]))) (a KV cache padded to its capacity): one capture for every binding,
  # the padding after the Variable's value computed by the kernel; pad value and a pad in front too
  av = rnd(3, 10, seed=12)
  a = Tensor(av).realize()

  @TinyJit
  def f(x): return (x + 1).pad((None, (0, 10 - x.shape[1]))).contiguous().realize()

  @TinyJit
  def g(x): return (x * 2).pad((None, (2, 12 - x.shape[1])), value=-1.0).realize()
  for n in (1, 2, 3, 7, 10, 4):
    vi = Variable("i", 1, 10).bind(n)
    assert np.array_equal(f(a[:, :vi]).numpy(), np.pad(av[:, :n] + 1, ((0, 0), (0, 10 - n))))
    assert np.array_equal(g(a[:, :vi]).numpy(), np.pad(av[:, :n] * 2, ((0, 0), (2, 12 - n)), constant_values=-1))
    close((a[:, :vi] + 1).pad((None, (0, 10 - vi))).sum(1).numpy(), (av[:, :n] + 1).sum(1))
  assert f.call_count == 6 and len(f.plan().kernels) == 1
  x3 = a[:, :Variable("i", 1, 10).bind(3)]
  assert not tg.C.tensor_pad_to(x3._h, 1, 1, 10, 0.0)  # padded by 1 in front, the largest binding (10) would not fit
  with pytest.raises(tg.ShapeError, match="up to 10"): tg._raise_last("tensor_pad_to")


def test_a_bound_dim_at_one_stays_symbolic():
  # (3, i=1): squeeze keeps it, unsqueeze and matmul's reshapes put it where asked, not on a neighbouring 1
  a = Tensor(rnd(3, 10))
  vi = Variable("i", 1, 10).bind(1)
  x = a[:, :vi]
  assert x.squeeze().shape == (3, vi) and x.squeeze(1).shape == (3, vi)
  assert x.unsqueeze(-1).shape == (3, vi, 1) and x.unsqueeze(1).shape == (3, 1, vi) and x.unsqueeze(0).shape == (1, 3, vi)
  close((x.unsqueeze(-1) * Tensor.ones(1, 1, 4)).numpy(), np.broadcast_to(a.numpy()[:, :1, None], (3, 1, 4)))
  close((x.T @ x).numpy(), a.numpy()[:, :1].T @ a.numpy()[:, :1])


def test_a_variable_range_past_the_dim_and_mismatched_inputs():
  # tinygrad: Variable("i", 1, 10) may slice a dim of 7 (the value must fit); a TinyJit replays it, and inputs whose
  # plain dims differ from the capture raise JitError
  from tinygrad_c.engine.jit import JitError
  av, a7 = rnd(3, 10, seed=8), rnd(3, 7, seed=9)
  a, b = Tensor(av).realize(), Tensor(a7).realize()

  @TinyJit
  def add(x, y): return (x + y).realize()
  for n in range(1, 5):
    vi = Variable("i", 1, 10).bind(n)
    close(add(a[:, :vi], a[:, :vi]).numpy(), 2 * av[:, :n])
  for n in (2, 7):
    vi = Variable("i", 1, 10).bind(n)
    close(add(b[:, :vi], b[:, :vi]).numpy(), 2 * a7[:, :n])
    close((b[:, :vi] * 3).numpy(), 3 * a7[:, :n])
  vi = Variable("i", 1, 10).bind(7)
  with pytest.raises(JitError, match="input 1 has shape"): add(b[:, :vi], Tensor(rnd(4, 7))[:, :vi])
  with pytest.raises(tg.ShapeError, match="more than 7"): b[:, :Variable("i", 1, 10).bind(8)]


def test_a_tensor_of_bound_variables_replays_at_each_binding():
  # tinygrad's Tensor(v.bind(n)): the value stays symbolic, so a TinyJit given bound Variables as arguments computes
  # with each call's values (a long Variable keeps its 64-bit value)
  @TinyJit
  def f(a, b): return (Tensor(a + b) * 2).realize()
  for i in range(4):
    a, b = Variable("a", 0, 2**10, dtype=tg.dtypes.int).bind(i), Variable("b", 0, 2**40, dtype=tg.dtypes.long).bind(2**35)
    assert f(a, b).item() == (2**35 + i) * 2
  assert f.call_count == 4
  out = (ctypes.c_void_p * 1)()
  assert tg.C.jit_call(f._h, None, 0, out, 1) != 0  # a replay without the Variables the capture was given
  with pytest.raises(tg.InvalidArgumentError, match="Variable 'a' with the call; this call does not pass it"): tg._raise_last("jit_call")
  assert Tensor(Variable("u", 1, 10).bind(2) + 1).item() == 3 and Tensor(Variable("u", 1, 10).bind(4)).dtype == tg.dtypes.int32
  with pytest.raises(RuntimeError, match="unbound"): Tensor(Variable("u", 1, 10))
  with pytest.raises(ValueError): Variable("u", 1, 10, dtype=tg.dtypes.float32)


def test_a_variable_bound_inside_the_function_is_refused_at_capture():
  # a kernel taking a Variable that no input dim and no argument binds would replay the captured value: refused
  x = Tensor(rnd(10)).realize()
  v = Variable("k", 1, 10)

  @TinyJit
  def f(t): return (t[:v.bind(3)] * 2).sum().realize()
  f(x)
  with pytest.raises(TinygradError, match="which no input's shape binds"): f(x)


def test_a_variable_dim_may_be_zero_and_not_chunked():
  av = rnd(3, 10, seed=11)
  a = Tensor(av).realize()

  @TinyJit
  def g(x): return (x * 2 + 1).realize()
  for n in (0, 0, 3, 0, 2):
    vz = Variable("z", 0, 10).bind(n)
    close(g(a[:, :vz]).numpy(), av[:, :n] * 2 + 1)
    assert (Tensor.ones(10).contiguous()[:vz] * Tensor(vz)).sum().item() == n * n
  with pytest.raises(AssertionError): Tensor.ones(10, 8).contiguous()[:Variable("a", 1, 10).bind(4), :].chunk(2, dim=0)
  assert len(Tensor.ones(10, 8).contiguous()[:Variable("a", 1, 10).bind(4), :].chunk(2, dim=1)) == 2


def test_expression_dims_made_directly_and_a_symbolic_diagonal():
  # tinygrad's KV-cache attention mask: full((1, 1, t, p+t), -inf).triu(p+1), symbolic in both p and t
  t = Variable("t", 1, 10).bind(4)
  for p in (0, 1, 3):
    vp = Variable("start_pos", 0, 5).bind(p)
    full = Tensor.full((1, 1, t, vp + t), float("-inf"))
    assert full.shape == (1, 1, 4, p + 4) and str(full.shape[3]) == str(vp + t)
    for name in ("tril", "triu"):
      out = getattr(full, name)(vp + 1).shrink(((0, 1), (0, 1), (0, 4), (0, p + 4))).numpy()
      np.testing.assert_equal(out, getattr(np, name)(np.full((1, 1, 4, p + 4), float("-inf")), k=p + 1))
  # in a TinyJit the mask replays at each binding, the diagonal a kernel argument
  av = rnd(10, 15, seed=30)
  a = Tensor(av).realize()

  @TinyJit
  def masked(x, q):
    s = q.shape[0]
    return (x + Tensor.full((x.shape[0], s), float("-inf")).triu(s - x.shape[0] + 1)).realize()
  for tv, pv in [(2, 1), (3, 2), (4, 0), (1, 5), (6, 3)]:
    vt, vq = Variable("t", 1, 10).bind(tv), Variable("q", 1, 15).bind(tv + pv)
    got = masked(a[:vt, :vq], Tensor.zeros(15)[:vq])
    ref = av[:tv, :tv + pv] + np.triu(np.full((tv, tv + pv), float("-inf")), k=pv + 1)
    np.testing.assert_equal(got.numpy(), ref)
  assert masked.call_count == 5
  # the buffer behind a symbolic dim is laid out at its largest size (tinygrad's t.uop.base.buffer.size)
  e = Tensor.empty(3, Variable("i", 1, 10).bind(3))
  assert e.uop.base.buffer.size == 30 and e.uop.shape == (3, 3)
  with pytest.raises(AssertionError, match="BUFFER"): (e + 1).uop.buffer
