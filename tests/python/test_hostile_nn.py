"""Hostile input against the binding's indexing, nn modules and optimizers (issue 26): index lists out of range in
setitem and getitem, index tensors out of range, conv modules with sizes that can never run, Muon's step count."""
import numpy as np
import pytest

from tinygrad_c import Tensor, TinygradError, dtypes, nn


# ---- t = [1, 2, 3]; t[[5, 1]] = 9 gave [9, 9, 3] ---------------------------------------------------------------------
@pytest.mark.parametrize("index", [[5, 1], [1, 3], [-4], np.array([0, 7]), ([0, 1], [3, 0])])
def test_setitem_index_list_out_of_range_raises(index):
  t = Tensor([[1, 2, 3], [4, 5, 6]] if isinstance(index, tuple) else [1, 2, 3])
  before = t.numpy().copy()
  with pytest.raises(IndexError, match="is out of bounds for dimension"):
    t[index] = 9
  np.testing.assert_array_equal(t.numpy(), before)


def test_index_list_out_of_range_message_is_numpys():
  t = Tensor([1, 2, 3])
  with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
    t[[5, 1]] = 9
  with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
    t[[-4]]
  with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 1 with size 2"):
    Tensor([[1, 2], [3, 4]])[:, [0, 2]]


def test_index_list_in_range_still_works():
  t = Tensor([1, 2, 3])
  t[[-1, 1]] = 9  # negative wraps, as numpy
  assert t.tolist() == [1, 9, 9]
  assert Tensor([1, 2, 3])[[-3, 2]].tolist() == [1, 3]
  m = Tensor([[1, 2, 3], [4, 5, 6]])
  m[[1, 0], [2, -3]] = 0
  assert m.tolist() == [[0, 2, 3], [4, 5, 0]]


def test_index_tensor_out_of_range_writes_nothing():
  """An index held in a Tensor is data: as tinygrad, an out-of-range entry selects nothing (getitem reads 0)."""
  t = Tensor([1, 2, 3])
  t[Tensor([5, 1])] = 9
  assert t.tolist() == [1, 9, 3]
  t = Tensor([1, 2, 3])
  t[Tensor([-4, -1], dtype=dtypes.int32)] = 7
  assert t.tolist() == [1, 2, 7]
  m = Tensor([[1, 2, 3], [4, 5, 6]])
  m[Tensor([0, 2]), Tensor([1, 1])] = 0
  assert m.tolist() == [[1, 0, 3], [4, 5, 6]]
  assert Tensor([1, 2, 3])[Tensor([5, 1])].tolist() == [0, 2]


# ---- conv modules: refused at construction, not at the first call --------------------------------------------------
# (a negative padding is not refused: it crops, as tinygrad's; tests/python/test_tg_conv.py covers it)
@pytest.mark.parametrize("make,name", [
  (lambda: nn.Conv2d(2, 2, 3, stride=0), "stride"),
  (lambda: nn.Conv2d(2, 2, 3, dilation=0), "dilation"),
  (lambda: nn.Conv1d(2, 2, 3, stride=0), "stride"),
  (lambda: nn.ConvTranspose2d(2, 2, 3, stride=2, output_padding=2), "output_padding"),
  (lambda: nn.BatchNorm(2, eps=float("nan")), "eps"),
])
def test_conv_and_norm_arguments_refused_at_construction(make, name):
  with pytest.raises(TinygradError, match=name):
    make()


# ---- Muon: ns_steps is bounded ------------------------------------------------------------------------------------
def test_muon_too_many_newton_schulz_steps_refused():
  w = Tensor.ones(2, 2, requires_grad=True)
  with pytest.raises(TinygradError, match="ns_steps 101 is more than 100"):
    nn.optim.Muon([w], ns_steps=101)
