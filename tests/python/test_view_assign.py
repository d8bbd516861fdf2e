"""Assign through a view of a realized buffer writes that buffer's elements, at once, as tinygrad's view assign does:
t[1:3].assign(v), t.T[1, 0] = 5, t[::-1][0] = 5, t[1][2] = 5, t.detach()[...] = v. Every holder of the buffer sees the
write; elements outside the view keep their values. References: numpy, exact."""
import numpy as np
import pytest

from tinygrad_c import Tensor, TinyJit, Variable, dtypes


def fresh(shape=(4, 5)):
  a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
  return a, Tensor(a).realize()


@pytest.mark.parametrize("name, view, nview", [
  ("shrink", lambda t: t[1:3, 2:4], lambda a: a[1:3, 2:4]),
  ("row", lambda t: t[2], lambda a: a[2]),
  ("transpose", lambda t: t.T[1:4], lambda a: a.T[1:4]),
  ("flip", lambda t: t[::-1, 1], lambda a: a[::-1, 1]),
  ("step", lambda t: t[:, ::2], lambda a: a[:, ::2]),
  ("reshape of a row block", lambda t: t[1:3].reshape(5, 2), lambda a: a[1:3].reshape(5, 2)),
  ("detach", lambda t: t.detach()[0, 1:], lambda a: a[0, 1:]),
])
def test_assign_through_a_view_writes_the_buffer(name, view, nview):
  a, t = fresh()
  other = t.reshape(20)  # another holder of the same buffer
  v = np.random.default_rng(0).standard_normal(nview(a).shape).astype(np.float32)
  view(t).assign(Tensor(v))
  nview(a)[...] = v
  np.testing.assert_array_equal(t.numpy(), a)
  np.testing.assert_array_equal(other.numpy(), a.reshape(20))


def test_setitem_on_chained_and_reordered_views():
  a, t = fresh((3, 3))
  t[1][2] = 5
  t.T[0, 1] = 7  # t[1, 0]
  t[::-1][0] = 9  # the last row
  a[1][2], a[1, 0], a[2] = 5, 7, 9
  np.testing.assert_array_equal(t.numpy(), a)


def test_a_value_that_reads_the_buffer_elsewhere():
  a, t = fresh((3, 4))
  t[0:2].assign(t[1:3] * 2)  # rows 1, 2 read while rows 0, 1 are written: computed first, then stored
  a[0:2] = a[1:3] * 2
  np.testing.assert_array_equal(t.numpy(), a)


def test_lazy_reads_see_the_write():
  t = Tensor.zeros(6).contiguous().realize()
  s0 = t.sum()
  t[:3].assign(1.0)
  t[3:].assign(2.0)
  assert (s0.item(), t.sum().item()) == (9.0, 9.0)  # tinygrad's lazy sums see the final state as well


def test_view_assign_in_a_jit_replays():
  @TinyJit
  def f(t, a):
    t[1:3].assign(a * 2).realize()
    return (t * 1).realize()
  t = Tensor.zeros(4, 3).contiguous().realize()
  for k in range(4):
    a = np.full((2, 3), k, np.float32)
    got = f(t, Tensor(a)).numpy()
    want = np.zeros((4, 3), np.float32)
    want[1:3] = 2 * k
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(t.numpy(), want)


def test_unrealized_tensors_and_expands_keep_the_lazy_rule():
  t = Tensor.zeros(4).contiguous()  # no buffer yet: the view takes the value, nothing else changes
  v = t[1:3]
  v.assign(Tensor([5.0, 6.0]))
  np.testing.assert_array_equal(v.numpy(), [5, 6])
  np.testing.assert_array_equal(t.numpy(), [0, 0, 0, 0])
  b = Tensor.ones(1, 3).realize()
  e = b.expand(2, 3)  # two elements of e are one of b: not written through
  e.assign(Tensor.full((2, 3), 4.0))
  np.testing.assert_array_equal(b.numpy(), [[1, 1, 1]])


def test_jit_assign_at_a_variable_offset():
  # tinygrad's test_jit_setitem_variable_offset: t.shrink(((v, v+1), None)).assign(a) replays for every v
  @TinyJit
  def f(t, a, v):
    t.shrink(((v, v + 1), None)).assign(a).realize()
  t = Tensor.zeros(6, 6).contiguous().realize()
  n = np.zeros((6, 6))
  for i in range(6):
    v = Variable("v", 0, 6).bind(i)
    f(t, Tensor.full((1, 6), fill_value=i + 1, dtype=dtypes.float).contiguous(), v)
    n[i, :] = i + 1
    np.testing.assert_array_equal(t.numpy(), n)


def test_kv_cache_written_and_read_at_a_position_in_a_jit():
  @TinyJit
  def step(cache, x, p):
    cache[:, p:p + 1, :].assign(x).realize()
    return cache[:, 0:p + 1, :].sum(1).realize()  # a symbolic size after the write
  cache = Tensor.zeros(2, 16, 4).contiguous().realize()
  ref = np.zeros((2, 16, 4), np.float32)
  rng = np.random.default_rng(3)
  for i in range(10):
    x = rng.standard_normal((2, 1, 4)).astype(np.float32)
    ref[:, i:i + 1] = x
    s = step(cache, Tensor(x), Variable("p", 0, 15).bind(i))
    np.testing.assert_array_equal(cache.numpy(), ref)
    np.testing.assert_allclose(s.numpy(), ref[:, :i + 1].sum(1), rtol=1e-5, atol=1e-6)


def test_window_at_an_offset_reads_and_refuses():
  x = np.arange(24, dtype=np.float32).reshape(8, 3)
  t = Tensor(x)
  for i in (0, 4, 6):
    p = Variable("p", 0, 6).bind(i)
    np.testing.assert_array_equal(t[p:p + 2].numpy(), x[i:i + 2])
    np.testing.assert_array_equal(t.shrink(((p, p + 2), None)).numpy(), x[i:i + 2])
  with pytest.raises(Exception):
    t.shrink(((Variable("q", 0, 7).bind(7), Variable("q", 0, 7).bind(7) + 2), None))  # past the end
