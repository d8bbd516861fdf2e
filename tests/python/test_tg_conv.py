"""N-d convolution, pooling and padding written as a tinygrad user writes them (Tensor.conv2d over 1-3 spatial dims,
conv_transpose2d, avg_pool2d/max_pool2d with ceil_mode and return_indices, max_unpool2d, pad modes with negative
padding, nn.Conv1d/Conv2d/ConvTranspose1d/ConvTranspose2d with tuples and padding='same'), checked element by element
against torch (float32: atol 1e-4, rtol 1e-4) or against tinygrad's documented results."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tinygrad_c import Tensor, dtypes, nn

TOL = dict(atol=1e-4, rtol=1e-4)


def rnd(*shape, seed=0):
  return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close(ours, theirs, **kw):
  np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **(kw or TOL))


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_conv2d_any_spatial_dims_with_per_dim_tuples(nsp):
  x, w, b = rnd(2, 4, *[7 - i for i in range(nsp)], seed=1), rnd(6, 2, *[3 - (i % 2) for i in range(nsp)], seed=2), rnd(6, seed=3)
  stride, dilation, padding = tuple(range(1, nsp + 1)), (2,) + (1,) * (nsp - 1), tuple(i % 2 + 1 for i in range(nsp))
  torch_conv = [F.conv1d, F.conv2d, F.conv3d][nsp - 1]
  want = torch_conv(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride, padding, dilation, 2)
  close(Tensor(x).conv2d(Tensor(w), Tensor(b), groups=2, stride=stride, dilation=dilation, padding=padding), want)


def test_conv2d_asymmetric_and_negative_padding():
  x, w = rnd(1, 2, 6, 7, seed=4), rnd(3, 2, 3, 2, seed=5)
  # tinygrad's flat order: (left, right, top, bottom); negative entries crop
  want = F.conv2d(F.pad(torch.tensor(x), (1, -1, 2, 0)), torch.tensor(w))
  close(Tensor(x).conv2d(Tensor(w), padding=(1, -1, 2, 0)), want)
  x1, w1 = rnd(2, 3, 9, seed=6), rnd(4, 3, 3, seed=7)
  close(Tensor(x1).conv2d(Tensor(w1), padding=(2, 0), stride=2), F.conv1d(F.pad(torch.tensor(x1), (2, 0)), torch.tensor(w1), stride=2))
  with pytest.raises(ValueError): Tensor(x).conv2d(Tensor(w), padding=(1, 2, 3))
  with pytest.raises(AssertionError): Tensor(x).conv2d(Tensor(rnd(3, 3, 3, 3)))


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_conv_transpose2d_any_spatial_dims(nsp):
  x, w = rnd(1, 4, *[4] * nsp, seed=8), rnd(4, 3, *[3] * nsp, seed=9)
  stride, padding, output_padding = (2,) * nsp, (1,) * nsp, (1,) * nsp
  torch_ct = [F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][nsp - 1]
  want = torch_ct(torch.tensor(x), torch.tensor(w), None, stride, padding, output_padding, 2, 1)
  close(Tensor(x).conv_transpose2d(Tensor(w), groups=2, stride=stride, padding=padding, output_padding=output_padding), want)


def test_conv2d_gradients_3d():
  x, w = rnd(1, 2, 4, 5, 3, seed=10), rnd(2, 2, 2, 3, 2, seed=11)
  tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
  F.conv3d(tx, tw, padding=1).square().sum().backward()
  ox, ow = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
  ox.conv2d(ow, padding=1).square().sum().backward()
  close(ox.grad, tx.grad, atol=1e-3, rtol=1e-4), close(ow.grad, tw.grad, atol=1e-3, rtol=1e-4)


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool_ceil_mode_1d_2d_3d(count_include_pad):
  x = rnd(1, 2, 7, 8, 9, seed=12)
  t = torch.tensor(x)
  close(Tensor(x[:, :, 0, 0]).avg_pool2d((3,), 2, padding=1, ceil_mode=True, count_include_pad=count_include_pad),
        F.avg_pool1d(t[:, :, 0, 0], 3, 2, 1, ceil_mode=True, count_include_pad=count_include_pad))
  close(Tensor(x[:, :, 0]).avg_pool2d((3, 3), 2, padding=1, ceil_mode=True, count_include_pad=count_include_pad),
        F.avg_pool2d(t[:, :, 0], 3, 2, 1, ceil_mode=True, count_include_pad=count_include_pad))
  close(Tensor(x).avg_pool2d((2, 3, 2), (2, 2, 3), padding=(1, 1, 0), ceil_mode=True, count_include_pad=count_include_pad),
        F.avg_pool3d(t, (2, 3, 2), (2, 2, 3), (1, 1, 0), ceil_mode=True, count_include_pad=count_include_pad))


def test_max_pool_ceil_dilation_and_defaults():
  x = rnd(2, 3, 9, 10, seed=13)
  t = torch.tensor(x)
  close(Tensor(x).max_pool2d(), F.max_pool2d(t, (2, 2)))  # tinygrad's default kernel (2, 2)
  close(Tensor(x).max_pool2d((3, 2), stride=(2, 3), dilation=(2, 1), padding=1, ceil_mode=True),
        F.max_pool2d(t, (3, 2), (2, 3), 1, (2, 1), ceil_mode=True))
  close(Tensor(x[:, :, 0]).max_pool2d((3,), 2, ceil_mode=True), F.max_pool1d(t[:, :, 0], 3, 2, ceil_mode=True))
  x3 = rnd(1, 1, 5, 6, 7, seed=14)
  close(Tensor(x3).max_pool2d((2, 2, 3), padding=1), F.max_pool3d(torch.tensor(x3), (2, 2, 3), padding=1))


def test_max_pool_int_dtype_pads_with_the_lowest_value():
  # torch 1.13 has no integer max_pool: tinygrad's result is the float one, in int32
  x = (rnd(1, 2, 5, 6, seed=15) * 10).astype(np.int32)
  want = F.max_pool2d(torch.tensor(x, dtype=torch.float64) - 1000, 2, padding=1) + 1000
  got = Tensor(x).max_pool2d((2, 2), padding=1)
  assert got.dtype == dtypes.int32
  np.testing.assert_array_equal(got.numpy(), want.numpy().astype(np.int32))


def test_max_pool_return_indices_and_max_unpool():
  x = rnd(2, 3, 7, 7, seed=16)
  t = torch.tensor(x)
  for kw in (dict(kernel_size=(2, 2)), dict(kernel_size=(3, 3), padding=1), dict(kernel_size=(2, 2), stride=(2, 2), ceil_mode=True),
             dict(kernel_size=(3, 2), dilation=(2, 1))):
    v, i = Tensor(x).max_pool2d(return_indices=True, **kw)
    tv, ti = F.max_pool2d(t, return_indices=True, **kw)
    close(v, tv)
    assert i.dtype == dtypes.int32
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
  args = dict(kernel_size=(3, 3), stride=(3, 4), padding=1)  # windows that overlap would sum a repeated index, as tinygrad
  v, i = Tensor(x).max_pool2d(return_indices=True, **args)
  tv, ti = F.max_pool2d(t, return_indices=True, **args)
  close(Tensor.max_unpool2d(v, i, **args, output_size=(7, 7)), F.max_unpool2d(tv, ti, **args, output_size=(7, 7)))
  v, i = Tensor(x[:, :, :6, :6]).max_pool2d(return_indices=True)
  tv, ti = F.max_pool2d(t[:, :, :6, :6], 2, return_indices=True)
  close(v.max_unpool2d(i), F.max_unpool2d(tv, ti, 2))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_modes_every_rank_and_forms(mode):
  for shape, flat in (((5,), (2, 1)), ((3, 4), (1, 2, 2, 0)), ((2, 3, 4), (0, 3, 1, 1)), ((2, 2, 3, 4), (2, 1, 0, 2))):
    x = rnd(*shape, seed=17)
    ours = Tensor(x).pad(flat, mode=mode)
    # torch's non-constant modes take (N, C, padded dims...): fold the leading dims into N
    k, tx = len(flat) // 2, torch.tensor(x)
    want = F.pad(tx, flat) if mode == "constant" else F.pad(tx.reshape((-1, 1) + shape[len(shape) - k:]), flat, mode=mode).reshape(ours.shape)
    close(ours, want)
    grouped = ((0, 0),) * (len(shape) - k) + tuple(zip(flat[-2::-2], flat[::-2]))
    close(Tensor(x).pad(tuple(None if p == (0, 0) else p for p in grouped), mode=mode), want)


def test_pad_negative_crops_as_tinygrad():
  t = Tensor.arange(9).reshape(1, 1, 3, 3)  # tinygrad's pad docstring
  assert t.pad((1, 2, 0, -1)).tolist() == [[[[0, 0, 1, 2, 0, 0], [0, 3, 4, 5, 0, 0]]]]
  assert t.pad(((None, None, (0, -1), (1, 2)))).tolist() == [[[[0, 0, 1, 2, 0, 0], [0, 3, 4, 5, 0, 0]]]]
  x = rnd(1, 1, 4, 5, seed=18)
  tx = torch.tensor(x)
  # reflect and replicate pad from the whole dim, then crop; circular crops first, then wraps what is left
  for mode in ("reflect", "replicate"): close(Tensor(x).pad((2, -1, 1, 1), mode=mode), F.pad(tx, (2, 0, 1, 1), mode=mode)[..., :-1])
  close(Tensor(x).pad((2, -1, 1, 1), mode="circular"), F.pad(tx[..., :-1], (2, 0, 1, 1), mode="circular"))
  np.testing.assert_array_equal(Tensor(x).pad((0, -2, -1, 0)).numpy(), x[:, :, 1:, :3])


def test_pad_errors_as_tinygrad():
  x = Tensor(rnd(3, 3))
  with pytest.raises(ValueError): x.pad((2, 0, 2))  # odd flat padding
  with pytest.raises(ValueError): x.pad((0, 0, 0, 0, 1, 0, 3, 0))  # more dims than the tensor
  with pytest.raises(ValueError): x.pad((None, (0, 1), (3, 0)))
  with pytest.raises(NotImplementedError): x.pad((3, 0), mode="typo")
  with pytest.raises(ValueError): x.pad((3, 0), mode="reflect")  # reflect padding must be smaller than the dim
  with pytest.raises(ValueError): x.pad((4, 0), mode="circular")  # wraps around more than once


def test_unfold_large_step_and_errors():
  x = rnd(3, 3, 3, seed=19)
  np.testing.assert_array_equal(Tensor(x).unfold(2, 2, 8).numpy(), torch.tensor(x).unfold(2, 2, 8).numpy())
  np.testing.assert_array_equal(Tensor(x).unfold(-1, 1, 2).numpy(), torch.tensor(x).unfold(-1, 1, 2).numpy())
  with pytest.raises(RuntimeError): Tensor(rnd(8)).unfold(0, 9, 3)
  with pytest.raises(IndexError): Tensor(rnd(8)).unfold(1, 8, 3)
  with pytest.raises(RuntimeError): Tensor(rnd(8)).unfold(0, 1, -1)


def test_nn_conv_modules_tuples_same_and_attributes():
  Tensor.manual_seed(3)
  c = nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
  assert c.weight.shape == (6, 2, 3, 2) and c.bias.shape == (6,)
  assert (c.kernel_size, c.stride, c.padding, c.dilation, c.groups) == ((3, 2), (2, 1), (1, 0), (1, 2), 2)
  scale = 1 / np.sqrt(4 * 3 * 2)  # tinygrad's init: uniform(-scale, scale), scale = 1/sqrt(in * prod(kernel))
  assert np.abs(c.weight.numpy()).max() <= scale
  x = rnd(2, 4, 9, 8, seed=20)
  want = F.conv2d(torch.tensor(x), torch.tensor(c.weight.numpy()), torch.tensor(c.bias.numpy()), (2, 1), (1, 0), (1, 2), 2)
  close(c(Tensor(x)), want)
  same = nn.Conv2d(4, 4, (4, 3), padding="same", dilation=2)
  want = F.conv2d(torch.tensor(x), torch.tensor(same.weight.numpy()), torch.tensor(same.bias.numpy()), padding="same", dilation=2)
  close(same(Tensor(x)), want)
  assert nn.Conv2d(4, 4, 3, padding="valid")(Tensor(x)).shape == (2, 4, 7, 6)
  with pytest.raises(ValueError): nn.Conv2d(4, 4, 3, padding="same", stride=2)
  c1 = nn.Conv1d(3, 5, 3, padding="same")
  x1 = rnd(2, 3, 10, seed=21)
  close(c1(Tensor(x1)), F.conv1d(torch.tensor(x1), torch.tensor(c1.weight.numpy()), torch.tensor(c1.bias.numpy()), padding="same"))
  c3 = nn.Conv2d(2, 3, (2, 3, 2), padding=1)  # tinygrad's Conv2d is N-d
  x3 = rnd(1, 2, 4, 5, 3, seed=22)
  close(c3(Tensor(x3)), F.conv3d(torch.tensor(x3), torch.tensor(c3.weight.numpy()), torch.tensor(c3.bias.numpy()), padding=1))
  ct = nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2)
  assert ct.weight.shape == (4, 3, 3, 2)
  close(ct(Tensor(x)), F.conv_transpose2d(torch.tensor(x), torch.tensor(ct.weight.numpy()), torch.tensor(ct.bias.numpy()), (2, 3), (1, 0), (1, 2), 2))
  ct1 = nn.ConvTranspose1d(3, 2, 4, stride=2, bias=False)
  assert ct1.bias is None
  close(ct1(Tensor(x1)), F.conv_transpose1d(torch.tensor(x1), torch.tensor(ct1.weight.numpy()), stride=2))
