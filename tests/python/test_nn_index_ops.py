# Indexing, shape/index ops, nn functional ops, losses and initializers through the Python binding, compared with
# PyTorch 1.13 (Debian's python3-torch) and numpy the way test_grad_ops.py does (its helper_test_op): the same random
# float32 inputs go to both, every forward element is compared, then the outputs are summed (weighted by a fixed random
# tensor where noted, so a gradient routed to the wrong element shows), backward() runs on both and every float input's
# gradient is compared. Index tensors, masks and labels are fixed per test and closed over.
#
# Tolerances: float32 forward atol=1e-5, rtol=1e-3 (conv-like ops atol=1e-4); gradients atol=1e-4, rtol=1e-3. Ints,
# bools and indexing results exact. Inputs are seeded from the test's id.
import gc
import math

import numpy as np
import pytest
import torch  # Debian's python3-torch (1.13)
import torch.nn.functional as F

from test_grad_ops import _rng, helper_test_op
from tinygrad_c import Tensor, TinygradError, ShapeError, dtypes

ATOL, CONV_ATOL = 1e-5, 1e-4


def hto(shapes, tf, gf, atol=ATOL, **kw): helper_test_op(shapes, tf, gf, atol=atol, **kw)


# ---- __getitem__ against numpy ------------------------------------------------------------------------------------------
class TI:
  """A table entry meaning "this int array as a Tensor index" (numpy gets the array)."""
  def __init__(self, *a, dtype=np.int32): self.a = np.array(a[0] if len(a) == 1 else a, dtype=dtype)
  def __repr__(self): return f"TI({self.a.tolist()},{self.a.dtype})"


class NA:
  """A table entry meaning "this numpy int array" (both sides get the array)."""
  def __init__(self, a, dtype=np.int64): self.a = np.array(a, dtype=dtype)
  def __repr__(self): return f"NA({self.a.tolist()},{self.a.dtype})"


def to_np(ix):
  if isinstance(ix, tuple): return tuple(to_np(i) for i in ix)
  return ix.a if isinstance(ix, (TI, NA)) else ix


def to_torch(ix):
  if isinstance(ix, tuple): return tuple(to_torch(i) for i in ix)
  return torch.tensor(ix.a.astype(np.int64)) if isinstance(ix, (TI, NA)) else ix


def to_tg(ix):
  if isinstance(ix, tuple): return tuple(to_tg(i) for i in ix)
  if isinstance(ix, TI): return Tensor(ix.a)
  if isinstance(ix, NA): return ix.a
  return ix


S = slice
X = np.random.default_rng(0).standard_normal((4, 5, 6)).astype(np.float32)
SLICES = [S(None), S(1, 4), S(-3, None), S(None, 2), S(None, -1), S(None, None, 2), S(None, None, -1), S(4, 0, -2), S(-1, -6, -3),
          S(10, -10, -1), S(2, 2), S(-100, 100, 3), S(5, 1), S(None, -2, 4), S(-2, None, -1), S(1, None, -1), S(3, -4, -1), S(0, 1),
          S(-4, -1, 2), S(2**70, -2**70, -1), S(-2**70, 2**70, 2**65)]
GETITEM = (
  [0, 3, -1, -4, np.int64(2), np.int32(-3), (1, 2), (-1, -1, -1), (0, 4, 5), (3, -5, 0), (np.int16(1), np.uint8(2))] +
  [(s,) for s in SLICES] +
  [(s, t) for s, t in zip(SLICES, SLICES[5:] + SLICES[:5])] +
  [(1, S(None, None, -2), 2), (None,), (None, 0), (0, None), (Ellipsis,), (), (Ellipsis, 1), (1, Ellipsis), (0, Ellipsis, None),
   (S(1, 3), None, -1), (None, Ellipsis, None), (None, None, 1, None), (Ellipsis, S(None, None, -1)), (Ellipsis, None, S(1, 5, 2)),
   (-1, S(None), None, S(None, None, -3)), (S(None), Ellipsis, S(None), S(None))] +
  # advanced: Python lists, numpy arrays, Tensors, and combinations with basic indices
  [[0, 2, 3], [-1, 0, -1], [[1, 0], [3, 3]], (S(None), [4, 0, -1]), ([1, 2], [3, 4]), ([1, 2], S(None), [0, 5]),
   (S(1, 3), [[0], [2]], [1, 5, 3]), (Ellipsis, [5, 0]), (0, [1, 1, 2]), ([-4, 3], Ellipsis, 2), (None, [1], S(None, None, -1)),
   ([2], None, [3]), (S(None, None, -1), [0, 4], None), ([[0, 1], [2, 3]], 1), (1, S(None), [[0, 5], [5, 0]]),
   NA([3, 1]), NA([[0, 1, 2]], np.int32), (NA([2, 0]), NA([1, 4])), (S(None), NA([-1, -5], np.int8)), (NA(1), S(None, 3)),
   TI([2, 0, 1]), TI([[3], [0]]), (TI([0, 1]), TI([4, 3]), TI([0, 5])), (Ellipsis, TI([1, 1])), (TI([1, 2], dtype=np.int64), 3),
   (S(None, None, 2), TI([0, 3]), S(1, None)), (TI(2), S(None)), (TI([3, 1], dtype=np.uint8), None), (TI([-1, 1], dtype=np.int16),),
   ([0, 1], TI([2, 3])), (NA([0]), [4], TI([5])), ([], S(None)), (TI([], dtype=np.int32),)])


# numpy counts an int as an advanced index when there are arrays: X[1, :, arr] puts arr's dims first. torch and tinygrad
# apply the int first (X[1][:, arr]), and so does the library: these cases are compared with torch instead.
TORCH_RULE = {repr((1, S(None), [[0, 5], [5, 0]])), repr((-1, S(None), [0, 3]))}
GETITEM.append((-1, S(None), [0, 3]))


@pytest.mark.parametrize("index", GETITEM, ids=repr)
def test_getitem_matches_numpy(index):
  want = X[to_np(index)]
  if repr(index) in TORCH_RULE:
    assert want.shape != torch.tensor(X)[to_torch(index)].shape  # the two rules really differ here
    want = torch.tensor(X)[to_torch(index)].numpy()
  got = Tensor(X)[to_tg(index)].numpy()
  assert got.shape == want.shape, (got.shape, want.shape)
  np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.uint8, np.bool_, np.float64])
def test_getitem_dtypes(dt):
  a = (np.random.default_rng(1).standard_normal((5, 4)) * 50).astype(dt)
  for ix in [(1, S(None, None, -1)), ([4, 0], 2), (Ellipsis, S(1, 3), None)]:
    np.testing.assert_array_equal(Tensor(a)[ix].numpy(), a[ix])


def test_getitem_0d_and_views_are_lazy():
  t = Tensor(np.float32(3.5))
  assert t[()].numpy() == np.float32(3.5) and t[None].shape == (1,) and t[...].shape == ()
  with pytest.raises(IndexError): t[0]
  base = Tensor(X)
  v = base[1:3, ::-1]
  np.testing.assert_array_equal((v * 2).numpy(), X[1:3, ::-1] * 2)


def test_getitem_keeps_temporary_index_tensors_alive():
  t = Tensor(X)
  for i in range(40):
    got = t[Tensor(np.array([i % 4, 3 - i % 4], np.int32)), [i % 5]].numpy()  # the index Tensors have no other reference
    gc.collect()
    np.testing.assert_array_equal(got, X[[i % 4, 3 - i % 4], [i % 5]])


GETITEM_ERRORS = [(1.5, IndexError), (np.float32(0.0), IndexError), (True, IndexError), (np.bool_(False), IndexError), ("a", IndexError),
                  (4, IndexError), (-5, IndexError), ((0, 5), IndexError), ((0, 0, 6), IndexError), ((0, 0, 0, 0), IndexError),
                  ((Ellipsis, Ellipsis), IndexError), (S(None, None, 0), ValueError), (S(1.5, 3), TypeError), (2**70, IndexError),
                  ([1.5, 2.0], IndexError), ([True, False, True, False], IndexError), (np.array([0.5]), IndexError), (object(), IndexError)]


@pytest.mark.parametrize("index,exc", GETITEM_ERRORS, ids=lambda v: "object" if type(v) is object else repr(v))
def test_getitem_errors(index, exc):
  with pytest.raises(exc): Tensor(X)[index]


def test_getitem_float_and_bool_tensor_index_errors():
  with pytest.raises(IndexError): Tensor(X)[Tensor([0.0, 1.0])]
  with pytest.raises(IndexError): Tensor(X)[Tensor([True, False, True, True])]


GETITEM_GRAD = [(1,), (S(1, 3), S(None, None, 2)), (Ellipsis, 2), (None, S(None, None, 2), -1), ([0, 0, 2],), ([[1, 3], [3, 0]], S(None), [2, 2]),
                (S(None), [4, 0, 4]), (TI([2, 1]), TI([0, 0])), (-1, S(0, 4, 3), [1, 5]), (NA([3, 3, 3]), None), (1, S(None), [[0, 5], [5, 0]])]


@pytest.mark.parametrize("index", GETITEM_GRAD, ids=repr)
def test_getitem_backward(index):
  hto([(4, 5, 6)], lambda x: x[to_torch(index)], lambda x: x[to_tg(index)], weighted=True)


@pytest.mark.parametrize("index,flip", [((S(None, None, -1),), (0,)), ((S(1, 3), S(None, None, -2)), (1,)), ((Ellipsis, S(None, None, -1), [0, 2]), (1,)),
                                        ((S(None, None, -1), 2, S(None, None, -1)), (0, 2))], ids=repr)
def test_getitem_negative_step_backward(index, flip):
  # torch has no negative steps: the reference flips, then takes the same positive-step slice
  pos = tuple(S(None, None, -i.step) if isinstance(i, slice) and i.step and i.step < 0 else i for i in index)
  hto([(4, 5, 6)], lambda x: x.flip(flip)[pos], lambda x: x[index], weighted=True)


# ---- __setitem__ against numpy ------------------------------------------------------------------------------------------
SETITEM = [1, -1, (2, 3), (0, 0, 0), (-1, -1, -1), S(1, 3), S(None, None, 2), S(None, None, -1), (S(4, 0, -2), S(1, 6, 2)), (Ellipsis, -1),
           (None, 2, S(0, 6, 5)), S(2, 2), (S(None), 1, S(None, None, -2)), (1, Ellipsis, S(-3, None)), (S(-100, 100, 3),), (None, Ellipsis, None),
           (Ellipsis,), (S(None, -2), None, 4), (np.int64(3), S(1, 3)), (S(3, -4, -1), 2, 1)]


@pytest.mark.parametrize("value_kind", ["scalar", "tensor", "broadcast", "numpy"])
@pytest.mark.parametrize("index", SETITEM, ids=repr)
def test_setitem_matches_numpy(index, value_kind):
  rng = _rng()
  want, t = X.copy(), Tensor(X)
  sel_shape = np.shape(want[index])
  if value_kind == "scalar": val = val_t = float(rng.uniform(-9, 9))
  elif value_kind == "broadcast":
    val = rng.standard_normal(sel_shape[-1:]).astype(np.float32)
    val_t = Tensor(val)
  else:
    val = rng.standard_normal(sel_shape).astype(np.float32)
    val_t = Tensor(val) if value_kind == "tensor" else val
  want[index] = val
  t[index] = val_t
  assert t.shape == X.shape and t.dtype is dtypes.float32
  np.testing.assert_array_equal(t.numpy(), want)


SETITEM_ADV = [([0, 2],), (S(None), [4, 1]), ([1, 3], [0, 2], [5, 4]), (Ellipsis, TI([5, 0, 2])), (TI([[0], [3]]), S(1, 3)), (NA([2]), 1, [0, 1])]


@pytest.mark.parametrize("value_kind", ["scalar", "tensor"])
@pytest.mark.parametrize("index", SETITEM_ADV, ids=repr)
def test_setitem_tensor_index_matches_numpy(index, value_kind):
  rng = _rng()
  want, t = X.copy(), Tensor(X)
  sel_shape = np.shape(want[to_np(index)])
  val = float(rng.uniform(-9, 9)) if value_kind == "scalar" else rng.standard_normal(sel_shape).astype(np.float32)
  want[to_np(index)] = val
  t[to_tg(index)] = val if value_kind == "scalar" else Tensor(val)
  np.testing.assert_array_equal(t.numpy(), want)


def test_setitem_casts_and_checks_ints():
  a = np.arange(12, dtype=np.int32).reshape(3, 4)
  t = Tensor(a)
  t[1] = 7
  t[:, -1] = Tensor([1.9, -2.9, 3.5])  # cast to int32 (truncated, as a C cast)
  want = a.copy()
  want[1] = 7
  want[:, -1] = [1, -2, 3]
  np.testing.assert_array_equal(t.numpy(), want)
  with pytest.raises(OverflowError): t[0] = 2**40  # never wrapped silently
  with pytest.raises(IndexError): t[3] = 1
  with pytest.raises(ValueError): t[0] = Tensor([1, 2, 3])  # doesn't broadcast to (4,)
  u = Tensor(np.zeros(5, np.uint8))
  with pytest.raises(OverflowError): u[1] = -1


def test_setitem_keeps_earlier_views():
  t = Tensor(X)
  before = t[0] * 1
  t[0] = 0.0
  np.testing.assert_array_equal(before.numpy(), X[0])
  assert (t.numpy()[0] == 0).all()


# ---- shape and index ops ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sizes,dim", [(2, 0), (3, 1), (4, -1), ([1, 3], 0), ([2, 0, 3], 1), ([6], -1), (1, 2), (10, 0)], ids=str)
def test_split(sizes, dim):
  x = np.random.default_rng(2).standard_normal((4, 5, 6)).astype(np.float32)
  want = torch.tensor(x).split(sizes, dim)
  got = Tensor(x).split(sizes, dim)
  assert isinstance(got, tuple) and len(got) == len(want)
  for g, w in zip(got, want): np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("chunks,dim", [(2, 0), (3, 1), (4, -1), (7, 2), (1, 0), (6, -2)], ids=str)
def test_chunk(chunks, dim):
  x = np.random.default_rng(3).standard_normal((4, 5, 6)).astype(np.float32)
  want = torch.tensor(x).chunk(chunks, dim)
  got = Tensor(x).chunk(chunks, dim)
  assert isinstance(got, list) and len(got) == len(want)
  for g, w in zip(got, want): np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_split_chunk_errors():
  t = Tensor(X)
  with pytest.raises(ValueError): t.split([1, 2], 0)  # sums to 3, not 4
  with pytest.raises(ValueError): t.chunk(0)
  with pytest.raises(IndexError): t.split(2, 3)
  with pytest.raises(OverflowError): t.split([2**64, 1], 0)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_meshgrid(n, indexing):
  arrs = [np.arange(k + 2, dtype=np.float32) * (k + 1) for k in range(n)]
  want = np.meshgrid(*arrs, indexing=indexing)
  for got in (Tensor.meshgrid(*[Tensor(a) for a in arrs], indexing=indexing), Tensor(arrs[0]).meshgrid(*[Tensor(a) for a in arrs[1:]], indexing=indexing)):
    assert isinstance(got, tuple) and len(got) == n
    for g, w in zip(got, want): np.testing.assert_array_equal(g.numpy(), w)
  with pytest.raises(RuntimeError): Tensor.meshgrid(Tensor(arrs[0]), indexing="ji")


def test_diag_diagonal():
  v = np.array([1.5, -2, 3, 4], np.float32)
  np.testing.assert_array_equal(Tensor(v).diag().numpy(), np.diag(v))
  for shape in [(4, 4), (3, 5), (5, 3), (2, 3, 3)]:
    y = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(Tensor(y).diagonal(dim1=-2, dim2=-1).numpy(), np.diagonal(y, axis1=-2, axis2=-1))
  with pytest.raises(TinygradError): Tensor(np.zeros((2, 2), np.float32)).diag()
  hto([(5,)], torch.diag, Tensor.diag, weighted=True)
  hto([(4, 4)], torch.diagonal, Tensor.diagonal, weighted=True)


@pytest.mark.parametrize("dim,size,step", [(0, 2, 1), (1, 3, 2), (-1, 6, 1), (2, 1, 4), (1, 5, 5)], ids=str)
def test_unfold(dim, size, step):
  hto([(4, 5, 6)], lambda x: x.unfold(dim, size, step), lambda x: x.unfold(dim, size, step), weighted=True)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -1), ((2, 3, 4), 1)], ids=str)
def test_sort(shape, dim, descending):
  hto([shape], lambda x: torch.sort(x, dim=dim, descending=descending, stable=True), lambda x: x.sort(dim, descending), weighted=True)
  x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
  got = Tensor(x).argsort(dim, descending)
  assert got.dtype is dtypes.int32
  np.testing.assert_array_equal(got.numpy(), torch.argsort(torch.tensor(x), dim, descending).numpy())


def test_sort_is_stable_and_int():
  a = np.array([3, 1, 3, 2, 1, 3], np.int32)
  v, i = Tensor(a).sort()
  tv, ti = torch.sort(torch.tensor(a), stable=True)
  np.testing.assert_array_equal(v.numpy(), tv.numpy())
  np.testing.assert_array_equal(i.numpy(), ti.numpy())
  v, i = Tensor(a).sort(descending=True)
  tv, ti = torch.sort(torch.tensor(a), descending=True, stable=True)
  np.testing.assert_array_equal(i.numpy(), ti.numpy())


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape,k,dim", [((8,), 3, 0), ((3, 6), 1, 1), ((3, 6), 6, -1), ((4, 5), 2, 0), ((2, 3, 5), 4, 2)], ids=str)
def test_topk(shape, k, dim, largest):
  hto([shape], lambda x: torch.topk(x, k, dim, largest), lambda x: x.topk(k, dim, largest), weighted=True)
  with pytest.raises(TinygradError): Tensor(np.zeros(shape, np.float32)).topk(shape[dim] + 1, dim)


@pytest.mark.parametrize("shape,k,dim,largest", [((32000,), 40, 0, True), ((3, 5000), 7, 1, False), ((5000, 2), 100, 0, True)], ids=str)
def test_topk_of_a_long_dim_in_chunks_is_the_stable_sorts_first_k(shape, k, dim, largest):
  # a long dim takes the k first of each chunk, then of those: the same values and indices as a stable sort's first k,
  # ties (repeated values, -inf, NaN) included, and the padding of the last chunk never chosen
  rng = np.random.default_rng(5)
  x = rng.standard_normal(shape).astype(np.float32)
  for v, n in ((1.0, 60), (np.nan, 5), (-np.inf, 5)): x.flat[rng.integers(0, x.size, n)] = v
  v, i = Tensor(x).topk(k, dim, largest)
  tv, ti = torch.sort(torch.tensor(x), stable=True, dim=dim, descending=largest)
  np.testing.assert_array_equal(v.numpy(), tv.narrow(dim, 0, k).numpy())
  np.testing.assert_array_equal(i.numpy(), ti.narrow(dim, 0, k).numpy())


@pytest.mark.parametrize("dim,idx_shape", [(0, (3, 4)), (0, (6, 5)), (1, (4, 3)), (-1, (2, 8)), (1, (4, 1))], ids=str)
def test_gather(dim, idx_shape):
  rng = _rng()
  idx = rng.integers(0, (4, 5)[dim], size=idx_shape).astype(np.int64)
  hto([(4, 5)], lambda x: torch.gather(x, dim, torch.tensor(idx)), lambda x: x.gather(dim, Tensor(idx)), weighted=True)


@pytest.mark.parametrize("src_kind", ["tensor", "scalar"])
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter(dim, src_kind):
  rng = _rng()
  x = rng.standard_normal((4, 5)).astype(np.float32)
  idx = np.stack([rng.permutation(x.shape[dim])[:3] for _ in range(x.shape[1 - dim])], axis=1 - dim).astype(np.int64)  # unique along dim
  src = rng.standard_normal(idx.shape).astype(np.float32) if src_kind == "tensor" else 2.5
  want = torch.tensor(x).scatter(dim, torch.tensor(idx), torch.tensor(src) if src_kind == "tensor" else src)
  got = Tensor(x).scatter(dim, Tensor(idx), Tensor(src) if src_kind == "tensor" else src)
  np.testing.assert_allclose(got.numpy(), want.numpy(), atol=ATOL, rtol=1e-3)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce(reduce, include_self):
  rng = _rng()
  idx = rng.integers(0, 4, size=(6, 5)).astype(np.int64)
  tf = lambda x, s: torch.scatter_reduce(x, 0, torch.tensor(idx), s, reduce, include_self=include_self)
  gf = lambda x, s: x.scatter_reduce(0, Tensor(idx), s, reduce, include_self)
  hto([(4, 5), (6, 5)], tf, gf, weighted=True)


def test_scatter_reduce_errors_and_scatter_reduce_arg():
  t, idx = Tensor(np.zeros((3, 3), np.float32)), Tensor(np.zeros((3, 3), np.int32))
  with pytest.raises(RuntimeError): t.scatter_reduce(0, idx, t, "median")
  np.testing.assert_array_equal(t.scatter(0, idx, 1.0, reduce="add").numpy(), [[3, 3, 3], [0, 0, 0], [0, 0, 0]])


def test_masked_fill_nonzero_masked_select():
  rng = np.random.default_rng(6)
  x = rng.standard_normal((4, 5)).astype(np.float32)
  m = rng.random((4, 5)) < 0.4
  np.testing.assert_array_equal(Tensor(x).masked_fill(Tensor(m), -9.0).numpy(), np.where(m, np.float32(-9), x))
  np.testing.assert_array_equal(Tensor(x).masked_fill(Tensor(m[0]), Tensor(np.float32(1.5))).numpy(), np.where(m[0], np.float32(1.5), x))
  nz = Tensor(m).nonzero()
  assert nz.dtype is dtypes.int32  # tinygrad's index dtype
  np.testing.assert_array_equal(nz.numpy(), np.argwhere(m))
  np.testing.assert_array_equal(Tensor(x).nonzero().numpy(), np.argwhere(x))
  np.testing.assert_array_equal(Tensor(x).masked_select(Tensor(m)).numpy(), x[m])
  assert Tensor(x).masked_select(Tensor(np.zeros_like(m))).shape == (0,)
  hto([(4, 5)], lambda x: x.masked_fill(torch.tensor(m), 0.5), lambda x: x.masked_fill(Tensor(m), 0.5), weighted=True)


@pytest.mark.parametrize("src,dst", [(np.float32, np.int32), (np.float32, np.uint32), (np.int32, np.float32), (np.int16, np.float16), (np.float16, np.int16), (np.uint16, np.float16),
                                     (np.float64, np.int64), (np.uint8, np.int8)], ids=str)
def test_bitcast(src, dst):
  a = (np.random.default_rng(7).standard_normal(12) * 100).astype(src)
  got = Tensor(a).bitcast(dtypes.from_np(dst))
  assert got.dtype is dtypes.from_np(dst)
  np.testing.assert_array_equal(got.numpy().view(np.uint8), a.view(np.uint8))
  with pytest.raises(TinygradError): Tensor(a).bitcast(dtypes.bool if a.itemsize != 1 else dtypes.int16)


@pytest.mark.parametrize("num_classes", [5, 9])  # -1 (torch's inference) is a ValueError, as tinygrad
def test_one_hot(num_classes):
  y = np.array([[0, 3, 4], [1, 1, 2]], np.int32)
  got = Tensor(y).one_hot(num_classes)
  want = F.one_hot(torch.tensor(y, dtype=torch.int64), num_classes).numpy()
  assert got.dtype is dtypes.int32
  np.testing.assert_array_equal(got.numpy(), want)


def test_assign():
  # in place, as tinygrad: a lazy tensor made before the assign and realized with it reads the old contents; one realized
  # later reads the buffer as it is then
  t = Tensor(np.zeros((2, 3), np.float32)).realize()
  old, later = t + 0, t * 3
  assert t.assign(Tensor(np.ones((2, 3), np.float32) * 4)) is t
  Tensor.realize_many(t, old)
  np.testing.assert_array_equal(t.numpy(), np.full((2, 3), 4, np.float32))
  np.testing.assert_array_equal(old.numpy(), np.zeros((2, 3), np.float32))
  np.testing.assert_array_equal(later.numpy(), np.full((2, 3), 12, np.float32))
  # an unrealized tensor takes the value's graph: tensors made from it before keep the old value
  u = Tensor(np.zeros((2, 3), np.float32)) + 1
  before = u * 2
  u.assign(Tensor(np.full((2, 3), 5, np.float32)))
  np.testing.assert_array_equal(before.numpy(), np.full((2, 3), 2, np.float32))
  np.testing.assert_array_equal(u.numpy(), np.full((2, 3), 5, np.float32))
  assert t.assign([[1, 2, 3], [4, 5, 6]]) is t
  np.testing.assert_array_equal(t.numpy(), [[1, 2, 3], [4, 5, 6]])
  with pytest.raises(TinygradError): t.assign(Tensor(np.zeros(4, np.float32)))


# ---- linear algebra -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5), (5,)), ((2, 3, 4), (4, 6), (6,)), ((4,), (4, 2), None), ((3, 4), (4, 5), None)], ids=str)
def test_linear(shapes):
  if shapes[2] is None:
    hto(list(shapes[:2]), lambda x, w: x @ w, lambda x, w: x.linear(w), atol=CONV_ATOL)
  else:
    hto(list(shapes), lambda x, w, b: x @ w + b, lambda x, w, b: x.linear(w, b), atol=CONV_ATOL)


@pytest.mark.parametrize("shapes", [((5,), (5,)), ((3, 4), (4,)), ((4,), (4, 3)), ((3, 4), (4, 2)), ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5))], ids=str)
def test_dot(shapes):
  hto(list(shapes), torch.matmul, Tensor.dot, atol=CONV_ATOL)


EINSUM = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ij->ji", [(3, 4)]),
          ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("i,i->", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]), ("ijk->k", [(2, 3, 4)]),
          ("ij,ij->i", [(3, 4), (3, 4)]), ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)])]


@pytest.mark.parametrize("formula,shapes", EINSUM, ids=str)
def test_einsum(formula, shapes):
  hto(shapes, lambda *xs: torch.einsum(formula, *xs), lambda *xs: Tensor.einsum(formula, *xs), atol=CONV_ATOL)
  hto(shapes, lambda *xs: torch.einsum(formula, *xs), lambda *xs: Tensor.einsum(formula, list(xs)), atol=CONV_ATOL, forward_only=True)


def test_einsum_errors():
  a = Tensor(np.zeros((3, 4), np.float32))
  with pytest.raises(TinygradError): Tensor.einsum("ij,jk->ik", a)
  with pytest.raises(TinygradError): Tensor.einsum("ij,jk->ik", a, a)
  with pytest.raises(ValueError): Tensor.einsum("ij\0", a)
  with pytest.raises(TinygradError, match="sizes"): Tensor.einsum("ii->i", Tensor(np.zeros((4, 3), np.float32)))  # a trace needs a square


# ---- convolution and pooling --------------------------------------------------------------------------------------------
CONV = [dict(), dict(stride=2), dict(padding=1), dict(padding=(1, 2)), dict(dilation=2), dict(stride=(2, 1), padding=(0, 1)),
        dict(groups=2), dict(groups=4, padding=1), dict(stride=2, padding=2, dilation=2), dict(padding=(1, 0, 2, 1)), dict(bias=False),
        dict(groups=2, stride=3, dilation=(1, 2))]


@pytest.mark.parametrize("cfg", CONV, ids=str)
def test_conv2d(cfg):
  cfg = dict(cfg)
  use_bias, groups = cfg.pop("bias", True), cfg.get("groups", 1)
  stride, dilation, padding = cfg.get("stride", 1), cfg.get("dilation", 1), cfg.get("padding", 0)
  cout = 8 if groups == 4 else 6
  shapes = [(2, 4, 9, 8), (cout, 4 // groups, 3, 3)] + ([(cout,)] if use_bias else [])
  def tf(x, w, b=None):
    if isinstance(padding, tuple) and len(padding) == 4: x, p = F.pad(x, padding), 0
    else: p = padding
    return F.conv2d(x, w, b, stride, p, dilation, groups)
  gf = lambda x, w, b=None: x.conv2d(w, b, groups=groups, stride=stride, dilation=dilation, padding=padding)
  hto(shapes, tf, gf, atol=CONV_ATOL)


def test_conv2d_1x1_and_errors():
  hto([(1, 3, 4, 4), (5, 3, 1, 1)], F.conv2d, Tensor.conv2d, atol=CONV_ATOL)
  x, w = Tensor(np.zeros((1, 3, 4, 4), np.float32)), Tensor(np.zeros((5, 2, 3, 3), np.float32))
  with pytest.raises(AssertionError): x.conv2d(w)  # tinygrad's assert on the channels
  with pytest.raises(OverflowError): x.conv2d(Tensor(np.zeros((5, 3, 3, 3), np.float32)), stride=2**64)
  with pytest.raises(ValueError): x.conv2d(w, padding=(1, 2, 3))


CONVT = [dict(), dict(stride=2), dict(padding=1), dict(stride=2, padding=1, output_padding=1), dict(dilation=2), dict(groups=2),
         dict(stride=(2, 3), padding=(1, 0)), dict(bias=False, stride=3, dilation=2, output_padding=(1, 2))]


@pytest.mark.parametrize("cfg", CONVT, ids=str)
def test_conv_transpose2d(cfg):
  cfg = dict(cfg)
  use_bias, groups = cfg.pop("bias", True), cfg.get("groups", 1)
  stride, dilation, padding, opad = cfg.get("stride", 1), cfg.get("dilation", 1), cfg.get("padding", 0), cfg.get("output_padding", 0)
  shapes = [(2, 4, 5, 6), (4, 6 // groups, 3, 3)] + ([(6,)] if use_bias else [])
  tf = lambda x, w, b=None: F.conv_transpose2d(x, w, b, stride, padding, opad, groups, dilation)
  gf = lambda x, w, b=None: x.conv_transpose2d(w, b, groups=groups, stride=stride, dilation=dilation, padding=padding, output_padding=opad)
  hto(shapes, tf, gf, atol=CONV_ATOL)


POOL = [dict(), dict(kernel_size=3), dict(kernel_size=(2, 3)), dict(kernel_size=3, stride=1), dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0)), dict(kernel_size=2, stride=1, dilation=2), dict(kernel_size=1)]


@pytest.mark.parametrize("cfg", POOL, ids=str)
def test_max_pool2d(cfg):
  k = cfg.get("kernel_size", (2, 2))
  tf = lambda x: F.max_pool2d(x, k, cfg.get("stride"), cfg.get("padding", 0), cfg.get("dilation", 1))
  hto([(2, 3, 8, 7)], tf, lambda x: x.max_pool2d(**cfg), atol=CONV_ATOL, weighted=True)


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("cfg", [c for c in POOL if "dilation" not in c], ids=str)
def test_avg_pool2d(cfg, count_include_pad):
  k = cfg.get("kernel_size", (2, 2))
  tf = lambda x: F.avg_pool2d(x, k, cfg.get("stride"), cfg.get("padding", 0), count_include_pad=count_include_pad)
  hto([(2, 3, 8, 7)], tf, lambda x: x.avg_pool2d(**cfg, count_include_pad=count_include_pad), atol=CONV_ATOL, weighted=True)


def test_pool_asymmetric_padding_and_errors():
  x = np.random.default_rng(8).standard_normal((1, 2, 6, 6)).astype(np.float32)
  want = F.max_pool2d(F.pad(torch.tensor(x), (1, 0, 0, 1), value=-math.inf), 2)
  np.testing.assert_allclose(Tensor(x).max_pool2d(2, padding=(1, 0, 0, 1)).numpy(), want.numpy(), atol=CONV_ATOL)
  want = F.avg_pool2d(F.pad(torch.tensor(x), (0, 1, 1, 0)), 3, 1)
  np.testing.assert_allclose(Tensor(x).avg_pool2d(3, 1, padding=(0, 1, 1, 0)).numpy(), want.numpy(), atol=CONV_ATOL)
  t = Tensor(x)  # dilation and ceil_mode work now (test_tg_conv.py); a bad padding length is tinygrad's ValueError
  with pytest.raises(ValueError): t.avg_pool2d(2, padding=(1, 2, 3))


INTERP = [((2, 3, 4, 5), (8, 10)), ((2, 3, 4, 5), (3, 7)), ((1, 2, 6, 6), (3, 2)), ((2, 3, 7), (12,)), ((1, 1, 2, 3, 4), (3, 5, 2)),
          ((1, 2, 5, 5), (5, 5))]


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("shape,size", INTERP, ids=str)
def test_interpolate_linear(shape, size, align_corners):
  mode = {1: "linear", 2: "bilinear", 3: "trilinear"}[len(size)]
  hto([shape], lambda x: F.interpolate(x, size=size, mode=mode, align_corners=align_corners),
      lambda x: x.interpolate(size, mode="linear", align_corners=align_corners), atol=CONV_ATOL, weighted=True)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("shape,size", INTERP[:5], ids=str)
def test_interpolate_nearest(shape, size, mode):
  hto([shape], lambda x: F.interpolate(x, size=size, mode=mode), lambda x: x.interpolate(size, mode=mode), forward_only=True)


# ---- normalization, dropout, attention ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,axis,eps", [((3, 8), -1, 1e-5), ((2, 3, 6), -1, 1e-5), ((2, 3, 6), (-2, -1), 1e-5), ((4, 5), -1, 0.1),
                                            ((2, 3, 4, 5), (1, 2, 3), 1e-3)], ids=str)
def test_layernorm(shape, axis, eps):
  axes = axis if isinstance(axis, tuple) else (axis,)
  norm = tuple(shape[a] for a in axes)
  hto([shape], lambda x: F.layer_norm(x, norm, eps=eps), lambda x: x.layernorm(axis, eps), atol=CONV_ATOL, weighted=True)


@pytest.mark.parametrize("shape,axis", [((4, 3, 5, 5), 1), ((6, 3), 1), ((2, 3, 4), 1), ((2, 4, 3), 2), ((2, 4, 3), -1)], ids=str)
def test_batchnorm(shape, axis):
  c = shape[axis]
  bshape = tuple(c if i == axis % len(shape) else 1 for i in range(len(shape)))
  tf = lambda x, w, b, m, s: (x - m.reshape(bshape)) * w.reshape(bshape) * s.reshape(bshape) + b.reshape(bshape)
  gf = lambda x, w, b, m, s: x.batchnorm(w, b, m, s, axis=axis)
  hto([shape, (c,), (c,), (c,), (c,)], tf, gf, low=[-2, -2, -2, -1, 0.2], high=[2, 2, 2, 1, 2], atol=CONV_ATOL, weighted=True)


def test_batchnorm_without_affine():
  tf = lambda x, m, s: (x - m.reshape(1, 3, 1)) * s.reshape(1, 3, 1)
  hto([(2, 3, 4), (3,), (3,)], tf, lambda x, m, s: x.batchnorm(None, None, m, s), low=[-2, -1, 0.2], high=[2, 1, 2], atol=CONV_ATOL)


def test_dropout(monkeypatch):
  x = np.random.default_rng(9).uniform(1, 2, (200, 100)).astype(np.float32)
  t = Tensor(x)
  assert Tensor.training is False
  assert t.dropout(0.5) is t  # no-op outside training
  monkeypatch.setattr(Tensor, "training", True)
  assert t.dropout(0.0) is t
  y = t.dropout(0.25).numpy()
  kept = y != 0
  np.testing.assert_allclose(y[kept], x[kept] / 0.75, rtol=1e-6)
  n, p = x.size, 0.25
  assert abs((~kept).sum() - n * p) < 5 * math.sqrt(n * p * (1 - p))
  assert (t.dropout(1.0).numpy() == 0).all()
  with pytest.raises(ValueError): t.dropout(1.5)


def _sdpa_ref(q, k, v, mask=None, causal=False):
  s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
  if causal: s = s.masked_fill(~torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril(), -math.inf)
  if mask is not None: s = s.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool else s + mask
  return s.softmax(-1) @ v


@pytest.mark.parametrize("kind", ["plain", "causal", "bool_mask", "float_mask"])
@pytest.mark.parametrize("shapes", [((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7)), ((4, 4), (4, 4), (4, 3)), ((2, 5, 8), (2, 5, 8), (2, 5, 8))],
                         ids=str)
def test_scaled_dot_product_attention(shapes, kind):
  L, S_ = shapes[0][-2], shapes[1][-2]
  rng = _rng()
  bmask = rng.random((L, S_)) < 0.6
  bmask[np.arange(L), np.arange(L) % S_] = True  # no row fully masked
  fmask = rng.uniform(-1, 1, (L, S_)).astype(np.float32)
  mask_t = {"bool_mask": torch.tensor(bmask), "float_mask": torch.tensor(fmask), "causal_float_mask": torch.tensor(fmask)}.get(kind)
  mask_g = {"bool_mask": Tensor(bmask), "float_mask": Tensor(fmask), "causal_float_mask": Tensor(fmask)}.get(kind)
  causal = kind.startswith("causal")
  hto(list(shapes), lambda q, k, v: _sdpa_ref(q, k, v, mask_t, causal),
      lambda q, k, v: q.scaled_dot_product_attention(k, v, attn_mask=mask_g, is_causal=causal), atol=CONV_ATOL)


def test_sdpa_mask_and_causal_together_is_an_error():
  q = Tensor(np.zeros((4, 4), np.float32))
  with pytest.raises(ValueError): q.scaled_dot_product_attention(q, q, attn_mask=Tensor(np.ones((4, 4), bool)), is_causal=True)  # as torch


def test_sdpa_dropout_in_training(monkeypatch):
  rng = np.random.default_rng(10)
  q, k, v = (Tensor(rng.standard_normal((2, 4, 8)).astype(np.float32)) for _ in range(3))
  plain = q.scaled_dot_product_attention(k, v).numpy()
  np.testing.assert_allclose(q.scaled_dot_product_attention(k, v, dropout_p=0.5).numpy(), plain, rtol=1e-6)  # not training: no dropout
  monkeypatch.setattr(Tensor, "training", True)
  np.testing.assert_allclose(q.scaled_dot_product_attention(k, v, dropout_p=1.0).numpy(), 0, atol=0)


# ---- losses -------------------------------------------------------------------------------------------------------------
RED = ["mean", "sum", "none"]


@pytest.mark.parametrize("reduction", RED)
@pytest.mark.parametrize("ls", [0.0, 0.1, 0.5])
@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2)], ids=str)
def test_cross_entropy_indices(shape, ls, reduction):
  rng = _rng()
  y = rng.integers(0, shape[1], size=(shape[0],) + shape[2:]).astype(np.int64)
  hto([shape], lambda x: F.cross_entropy(x, torch.tensor(y), reduction=reduction, label_smoothing=ls),
      lambda x: x.cross_entropy(Tensor(y.astype(np.int32)), reduction=reduction, label_smoothing=ls))


@pytest.mark.parametrize("reduction", RED)
@pytest.mark.parametrize("ls", [0.0, 0.2])
def test_cross_entropy_probabilities(ls, reduction):
  p = _rng().dirichlet(np.ones(4), size=5).astype(np.float32)
  hto([(5, 4)], lambda x: F.cross_entropy(x, torch.tensor(p), reduction=reduction, label_smoothing=ls),
      lambda x: x.cross_entropy(Tensor(p), reduction=reduction, label_smoothing=ls))


@pytest.mark.parametrize("reduction", RED)
@pytest.mark.parametrize("ls", [0.0, 0.1])
@pytest.mark.parametrize("ignore", [-1, 2, None])
@pytest.mark.parametrize("shape", [(6, 5), (2, 3, 5)], ids=str)
def test_sparse_categorical_crossentropy(shape, ignore, ls, reduction):
  rng = _rng()
  y = rng.integers(0, shape[-1], size=shape[:-1]).astype(np.int64)
  ii = -1 if ignore is None else ignore
  if ignore is not None: y.reshape(-1)[:2] = ignore  # some labels are skipped
  tf = lambda x: F.cross_entropy(x.reshape(-1, shape[-1]), torch.tensor(y.reshape(-1)), ignore_index=ii, label_smoothing=ls,
                                 reduction=reduction).reshape(shape[:-1] if reduction == "none" else ())
  if ignore == -1:
    # tinygrad's default ignore_index -1 ignores nothing: a -1 label's one-hot is zeros (no log-likelihood term), but its
    # smoothing term stays and it counts in the mean (torch would skip it)
    def tf(x):
      lp, yt = F.log_softmax(x, -1), torch.tensor(y)
      picked = torch.where(yt >= 0, lp.gather(-1, yt.clamp(min=0).unsqueeze(-1)).squeeze(-1), torch.zeros(()))
      per = -((1 - ls) * picked + ls * lp.mean(-1))
      return {"none": per, "sum": per.sum(), "mean": per.mean()}[reduction]
  gf = lambda x: x.sparse_categorical_crossentropy(Tensor(y.astype(np.int32)), ignore_index=ii, label_smoothing=ls, reduction=reduction)
  hto([shape], tf, gf)


@pytest.mark.parametrize("reduction", RED)
@pytest.mark.parametrize("shape", [(5, 4), (2, 4, 3)], ids=str)
def test_nll_loss(shape, reduction):
  y = _rng().integers(0, shape[1], size=(shape[0],) + shape[2:]).astype(np.int64)
  hto([shape], lambda x: F.nll_loss(F.log_softmax(x, 1), torch.tensor(y), reduction=reduction),
      lambda x: x.log_softmax(1).nll_loss(Tensor(y.astype(np.int32)), reduction=reduction))
  w = _rng().uniform(0.5, 2, shape[1]).astype(np.float32)  # weight and ignore_index (issue 33), as torch
  hto([shape], lambda x: F.nll_loss(F.log_softmax(x, 1), torch.tensor(y), torch.tensor(w), ignore_index=0, reduction=reduction),
      lambda x: x.log_softmax(1).nll_loss(Tensor(y.astype(np.int32)), Tensor(w), ignore_index=0, reduction=reduction))


@pytest.mark.parametrize("reduction", RED)
@pytest.mark.parametrize("shape", [(6,), (3, 4)], ids=str)
def test_binary_crossentropy(shape, reduction):
  hto([shape, shape], lambda p, y: F.binary_cross_entropy(p, y, reduction=reduction),
      lambda p, y: p.binary_crossentropy(y, reduction=reduction), low=[0.05, 0.0], high=[0.95, 1.0])
  hto([shape, shape], lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction=reduction),
      lambda x, y: x.binary_crossentropy_logits(y, reduction=reduction), low=[-4, 0.0], high=[4, 1.0])


def test_loss_argument_errors():
  x, y = Tensor(np.zeros((3, 4), np.float32)), Tensor(np.array([0, 1, 2], np.int32))
  for fn in (lambda: x.cross_entropy(y, reduction="avg"), lambda: x.sparse_categorical_crossentropy(y, reduction="max"),
             lambda: x.nll_loss(y, reduction="bad"), lambda: x.binary_crossentropy(x, reduction="x")):
    with pytest.raises(ValueError): fn()
  with pytest.raises(AssertionError): x.cross_entropy(y, label_smoothing=1.5)  # tinygrad asserts
  with pytest.raises(ValueError): x.cross_entropy(Tensor(np.array([0, 1], np.int32)))  # wrong batch: the library's shape error


# ---- creation, random numbers and initializers --------------------------------------------------------------------------
@pytest.mark.parametrize("start,stop,steps", [(0, 1, 5), (-3, 7, 11), (5, -5, 4), (2, 2, 3), (0, 1, 1), (0, 1, 0), (1e-3, 1e3, 7)], ids=str)
def test_linspace(start, stop, steps):
  got = Tensor.linspace(start, stop, steps)
  assert got.dtype is dtypes.float32 and got.shape == (steps,)
  np.testing.assert_allclose(got.numpy(), np.linspace(start, stop, steps, dtype=np.float32), rtol=1e-6, atol=1e-5)
  np.testing.assert_allclose(Tensor.linspace(start, stop, steps, dtype=dtypes.float64).numpy(), np.linspace(start, stop, steps), rtol=1e-12)


def test_linspace_errors_and_int():
  with pytest.raises(ValueError): Tensor.linspace(0, 1, -1)
  with pytest.raises(ValueError): Tensor.linspace(0, 1, 3, dtype=dtypes.bool)
  with pytest.raises(OverflowError): Tensor.linspace(0, 1, 2**64)
  np.testing.assert_array_equal(Tensor.linspace(0, 10, 6, dtype=dtypes.int32).numpy(), np.linspace(0, 10, 6).astype(np.int32))


@pytest.mark.parametrize("dtype", [None, dtypes.int32, dtypes.float32])
def test_full_zeros_ones_like(dtype):
  x = Tensor(np.arange(6, dtype=np.int64).reshape(2, 3))
  want_dt = dtype or dtypes.int64
  for got, val in ((x.full_like(7, dtype=dtype), 7), (x.zeros_like(dtype=dtype), 0), (x.ones_like(dtype=dtype), 1)):
    assert got.shape == (2, 3) and got.dtype is want_dt
    np.testing.assert_array_equal(got.numpy(), np.full((2, 3), val, want_dt.np))
  f = Tensor(np.zeros((3,), np.float32))
  np.testing.assert_array_equal(f.full_like(2.5).numpy(), np.full(3, 2.5, np.float32))
  with pytest.raises(OverflowError): x.full_like(2**70)
  with pytest.raises(OverflowError): Tensor(np.zeros(2, np.int32)).full_like(2**40)
  assert f.rand_like().shape == (3,) and f.randn_like().dtype is dtypes.float32


@pytest.mark.parametrize("n", [1, 2, 10, 1000])
def test_randperm(n):
  p = Tensor.randperm(n)
  assert p.dtype is dtypes.int32
  np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(n))
  assert Tensor.randperm(n, dtype=dtypes.int64).dtype is dtypes.int64
  if n == 1000: assert (p.numpy() != np.arange(n)).sum() > 900
  with pytest.raises(OverflowError): Tensor.randperm(300, dtype=dtypes.uint8)


def test_multinomial():
  Tensor.manual_seed(3)
  w = np.array([0.1, 0.0, 0.6, 0.3], np.float32)
  n = 20000
  s = Tensor(w).multinomial(n, replacement=True).numpy()
  assert s.shape == (n,) and set(np.unique(s)) <= {0, 2, 3}
  counts = np.bincount(s, minlength=4)
  for i in (0, 2, 3): assert abs(counts[i] - n * w[i]) < 5 * math.sqrt(n * w[i] * (1 - w[i]))
  s2 = Tensor(np.array([[1, 0, 0], [0, 0, 1]], np.float32)).multinomial().numpy()
  np.testing.assert_array_equal(s2, [[0], [2]])
  with pytest.raises(TinygradError): Tensor(w).multinomial(3, replacement=False)


@pytest.mark.parametrize("name", ["scaled_uniform", "glorot_uniform", "kaiming_uniform", "kaiming_normal"])
def test_initializers(name):
  shape = (64, 32, 3)
  x = getattr(Tensor, name)(*shape).numpy()
  assert x.shape == shape and x.dtype == np.float32
  fan_in = 32 * 3
  gain = math.sqrt(2.0 / (1 + 0.01 ** 2))
  bound = {"scaled_uniform": 1 / math.sqrt(x.size), "glorot_uniform": math.sqrt(6 / (64 + fan_in)),
           "kaiming_uniform": gain * math.sqrt(3 / fan_in), "kaiming_normal": None}[name]
  std = bound / math.sqrt(3) if bound else gain / math.sqrt(fan_in)
  if bound: assert np.abs(x).max() <= bound * (1 + 1e-6) and np.abs(x).max() > 0.9 * bound
  assert abs(x.mean()) < 5 * std / math.sqrt(x.size)
  assert abs(x.std() / std - 1) < 0.05
  a1 = getattr(Tensor, name)(4, 4, dtype=dtypes.float64)
  assert a1.dtype is dtypes.float64
  if name.startswith("kaiming"):
    wide = getattr(Tensor, name)(*shape, a=3.0).numpy()  # gain sqrt(2 / (1 + a^2)): the std is gain / sqrt(fan_in) for both
    assert abs(wide.std() / (math.sqrt(2.0 / 10) / math.sqrt(fan_in)) - 1) < 0.05
