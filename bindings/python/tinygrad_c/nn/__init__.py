"""tinygrad's nn over the C modules (tg_nn_*): the same classes, constructor arguments, initialisation and attribute
names, so nn.state.get_state_dict(model) gives tinygrad's (and PyTorch's) keys. Modules are plain objects, as
tinygrad's: each tensor is an attribute (weight, bias, running_mean, ...) shared with the C module, so an optimizer step
or load_state_dict changes both, and the module calls with whatever the attribute holds (`layer.weight = t`,
`layer.bias = None`, `del layer.bias`: tg_module_set). Numeric attributes (eps, momentum, track_running_stats,
num_groups) are read and set the same way (tg_module_set_option)."""
from __future__ import annotations

import ctypes
from typing import Optional, Tuple, Union

from .. import C, Tensor, _i64s, _made, _Owned, _ok

_i64 = ctypes.c_int64
from . import datasets, optim, state  # noqa: F401
from .optim import _mark_buffer
from ..helpers import TRAINING  # noqa: F401 (tinygrad.nn has it from helpers: a ContextVar over the TRAINING option)

__all__ = ["Linear", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "BatchNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
           "LayerNorm", "LayerNorm2d", "RMSNorm", "GroupNorm", "InstanceNorm", "Embedding", "LSTMCell", "optim", "state", "datasets"]



def _dev(device: Optional[str]) -> Optional[bytes]: return device.encode() if device else None


def _one(v, what: str, n: int = 1) -> int:
  """A size given as an int or as a tuple of equal ints (the C constructors take one value for every spatial dim)."""
  if isinstance(v, (tuple, list)):
    if len(set(v)) != 1 or len(v) not in (1, n): raise ValueError(f"{what}={v!r}: give one value, or {n} equal ones")
    return int(v[0])
  return int(v)


_DELETED = "deleted"  # a tensor attribute removed with del, in a pickle


def _module_unpickle(cls, args, kwargs, tensors):
  """A module of class cls made with the constructor's arguments, then given the pickled tensors (copies with their own
  data, requires_grad and grad), None for removed ones, and the deleted ones deleted."""
  m = cls(*args, **kwargs)
  for n, src in tensors.items():
    if isinstance(src, str) and src == _DELETED: delattr(m, n)
    else: setattr(m, n, src)
  return m


class _Module(_Owned):
  """One tg_module handle; its named tensors are attributes (Tensors sharing the module's), as tinygrad's.

  Setting a tensor attribute (a Tensor of the module's shape, or None for an optional one) or deleting it puts the
  change in the C module (tg_module_set), so the next call uses it; the attributes in _options go to
  tg_module_set_option. _fixed attributes are sizes the tensors' shapes fix: setting another value raises ValueError.

  copy.copy: another reference to the same module (the same tensors). deepcopy and pickle: the module made again with
  its constructor's arguments and given copies of its tensors' values, as a tinygrad module's tensors are copied."""
  _release, _retain = C.module_release, C.module_retain
  _names: Tuple[str, ...] = ()    # the C module's tensors
  _options: Tuple[str, ...] = ()  # the C module's numeric attributes
  _fixed: Tuple[str, ...] = ()    # sizes set by the constructor
  _absent: Tuple[str, ...] = ()   # tensors left unset (not None) when the module has none, as tinygrad's
  _buffers: Tuple[str, ...] = ()  # tensors an optimizer leaves alone (tinygrad's is_param_(False))

  def __new__(cls, *args, **kwargs):
    self = super().__new__(cls)
    object.__setattr__(self, "_args", (args, kwargs))  # what deepcopy and pickle make the module again from
    return self

  def __reduce_ex__(self, protocol):
    args, kwargs = self._args
    tensors = {n: self.__dict__.get(n, _DELETED) for n in self._names if n in self.__dict__ or n not in self._absent}
    extra = {k: v for k, v in self.__dict__.items() if k not in self._names and k not in ("_h", "_args")}
    return _module_unpickle, (type(self), args, kwargs, tensors), extra or None

  def __setstate__(self, state):
    for k, v in state.items():
      if k in self._options: setattr(self, k, v)  # into the C module too
      else: object.__setattr__(self, k, v)

  def __deepcopy__(self, memo):
    new = self._deepcopy_by_reduce(memo)
    for n in self._options: setattr(new, n, getattr(self, n))  # into the copy's C module (the reduce set only the attribute)
    for n in self._names:  # later references to self's tensors reach the copy's own
      if isinstance(t := self.__dict__.get(n), Tensor): memo[id(t)] = getattr(new, n)
    return new

  def _init(self, handle, what: str, **attrs) -> None:
    """Takes the new C module and sets the attributes: `attrs` (options and sizes, as the constructor was given them,
    in tinygrad's order), then the tensors."""
    object.__setattr__(self, "_h", _made(handle, what))
    for k, v in attrs.items(): object.__setattr__(self, k, v)
    for n in self._names:
      h = C.module_get(self._h, n.encode())
      if h:
        object.__setattr__(self, n, t := Tensor._wrap(h, "module_get"))
        if n in self._buffers: _mark_buffer(t)
      else:
        C.clear_error()
        if n not in self._absent: object.__setattr__(self, n, None)

  def __call__(self, x: Tensor) -> Tensor: return Tensor._wrap(C.module_call(self._h, x._h), "module_call")

  def __setattr__(self, name, value):
    if name in self._names:
      if value is not None and not isinstance(value, Tensor):
        raise TypeError(f"{type(self).__name__}.{name} must be a Tensor or None, not {type(value).__name__}")
      _ok(C.module_set(self._h, name.encode(), value._h if value is not None else None), "module_set")
    elif name in self._options:
      if isinstance(value, Tensor) or not isinstance(value, (int, float)):
        raise TypeError(f"{type(self).__name__}.{name} must be a number, not {type(value).__name__}")
      _ok(C.module_set_option(self._h, name.encode(), float(value)), "module_set_option")
    elif name in self._fixed and name in self.__dict__ and value != self.__dict__[name]:
      raise ValueError(f"{type(self).__name__}.{name} is {self.__dict__[name]!r}, fixed by the module's tensors; make a new module for another")
    object.__setattr__(self, name, value)

  def __delattr__(self, name):
    if name in self._names and name in self.__dict__:
      # the call then runs without it (a required tensor raises here)
      _ok(C.module_set(self._h, name.encode(), None), "module_set")
    elif name in self._options or name in self._fixed:
      raise AttributeError(f"{type(self).__name__}.{name} can be changed, not deleted")
    object.__delattr__(self, name)


class Linear(_Module):
  _names = ("weight", "bias")
  def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Optional[str] = None):
    self._init(C.nn_linear(in_features, out_features, int(bias), _dev(device)), "nn_linear")


def _conv(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, device, transposed, output_padding=0):
  """A tg_nn_conv module over len(kernel_size) spatial dims, with tinygrad's attributes (kernel_size, stride, padding, ...)."""
  from .. import _per_dim, _pool_pairs, _flat_pairs
  k = _per_dim(kernel_size, 2, "kernel_size")
  if isinstance(padding, str):
    if padding.lower() == "valid": padding = 0  # torch's name for no padding (tinygrad knows only 'same')
    elif padding.lower() != "same": raise ValueError(f"Invalid padding string {padding!r}, only 'same' is supported")
    else:
      if stride != 1: raise ValueError("padding='same' is not supported for strided convolutions")
      # torch's split: the odd pixel after; in tinygrad's flat order (last dim first)
      dl = _per_dim(dilation, len(k), "dilation")
      padding = tuple(v for d, kk in zip(dl[::-1], k[::-1]) for v in (d * (kk - 1) // 2, d * (kk - 1) - d * (kk - 1) // 2))
  pairs = _flat_pairs("Conv2d", _pool_pairs(padding, len(k)), "(before, after)")
  st, dl, op = _per_dim(stride, len(k), "stride"), _per_dim(dilation, len(k), "dilation"), _per_dim(output_padding, len(k), "output_padding")
  self._init(C.nn_conv(in_channels, out_channels, _i64s(k, "kernel_size"), len(k), _i64s(st, "stride"), len(st), _i64s(pairs, "padding"),
                       len(pairs) // 2, _i64s(dl, "dilation"), len(dl), groups, int(bias), int(transposed), _i64s(op, "output_padding"), len(op),
                       _dev(device)), "nn_conv")
  attrs = dict(kernel_size=k, stride=stride, dilation=dilation, groups=groups, padding=padding)
  if transposed: attrs["output_padding"] = output_padding
  for n, v in attrs.items(): object.__setattr__(self, n, v)


class Conv2d(_Module):
  """tinygrad's Conv2d, over any number of spatial dims (len(kernel_size); an int kernel is 2-d). stride, dilation: an int or
  one per dim; padding: an int, one per dim, 2 per dim in torch's flat order (last dim first), 'same' (stride 1) or
  'valid'."""
  _names = ("weight", "bias")
  def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, Tuple[int, ...]], stride=1, padding=0, dilation=1,
               groups: int = 1, bias: bool = True, device: Optional[str] = None):
    _conv(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, device, False)


def Conv1d(in_channels: int, out_channels: int, kernel_size: int, stride=1, padding=0, dilation=1, groups=1, bias=True, device=None) -> Conv2d:
  return Conv2d(in_channels, out_channels, (_one(kernel_size, "kernel_size"),), stride, padding, dilation, groups, bias, device)


class ConvTranspose2d(_Module):
  """tinygrad's ConvTranspose2d, over any number of spatial dims as Conv2d; weight (in, out/groups, *kernel)."""
  _names = ("weight", "bias")
  def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, Tuple[int, ...]], stride=1, padding=0, output_padding=0,
               dilation=1, groups: int = 1, bias: bool = True, device: Optional[str] = None):
    _conv(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, device, True, output_padding)


def ConvTranspose1d(in_channels: int, out_channels: int, kernel_size: int, stride=1, padding=0, output_padding=0, dilation=1, groups=1,
                    bias=True, device=None) -> ConvTranspose2d:
  return ConvTranspose2d(in_channels, out_channels, (_one(kernel_size, "kernel_size"),), stride, padding, output_padding, dilation, groups,
                         bias, device)


class BatchNorm(_Module):
  _names = ("weight", "bias", "num_batches_tracked", "running_mean", "running_var")
  _options = ("eps", "track_running_stats", "momentum")
  _absent, _buffers = ("running_mean", "running_var"), ("num_batches_tracked", "running_mean", "running_var")
  def __init__(self, sz: int, eps: float = 1e-5, affine: bool = True, track_running_stats: bool = True, momentum: float = 0.1,
               device: Optional[str] = None):
    self._init(C.nn_batchnorm(sz, eps, momentum, int(affine), int(track_running_stats), _dev(device)), "nn_batchnorm", eps=eps,
               track_running_stats=track_running_stats, momentum=momentum)


BatchNorm1d = BatchNorm2d = BatchNorm3d = BatchNorm


class LayerNorm(_Module):
  _names = ("weight", "bias")
  _options, _fixed = ("eps",), ("normalized_shape", "axis")
  def __init__(self, normalized_shape: Union[int, Tuple[int, ...]], eps: float = 1e-5, elementwise_affine: bool = True,
               device: Optional[str] = None):
    shape = tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else (normalized_shape,)
    self._init(C.nn_layernorm(_i64s(shape), len(shape), eps, int(elementwise_affine), _dev(device)), "nn_layernorm", normalized_shape=shape,
               axis=tuple(-1 - i for i in range(len(shape))), eps=eps)


class LayerNorm2d(LayerNorm):
  """LayerNorm over the channels of (N, C, H, W)."""
  def __call__(self, x: Tensor) -> Tensor: return super().__call__(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class RMSNorm(_Module):
  _names, _options = ("weight",), ("eps",)
  def __init__(self, dim: int, eps: float = 1e-6, elementwise_affine: bool = True, device: Optional[str] = None):
    self._init(C.nn_rmsnorm(dim, eps, int(elementwise_affine), _dev(device)), "nn_rmsnorm", eps=eps)


class GroupNorm(_Module):
  _names = ("weight", "bias")
  _options, _fixed = ("num_groups", "eps"), ("num_channels",)
  def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device: Optional[str] = None):
    self._init(C.nn_groupnorm(num_groups, num_channels, eps, int(affine), _dev(device)), "nn_groupnorm", num_groups=num_groups,
               num_channels=num_channels, eps=eps)


class InstanceNorm(_Module):
  _names = ("weight", "bias")
  _options, _fixed = ("eps",), ("num_features",)
  def __init__(self, num_features: int, eps: float = 1e-5, affine: bool = True, device: Optional[str] = None):
    self._init(C.nn_instancenorm(num_features, eps, int(affine), _dev(device)), "nn_instancenorm", num_features=num_features, eps=eps)


class Embedding(_Module):
  _names = ("weight",)
  def __init__(self, vocab_size: int, embed_size: int, device: Optional[str] = None):
    self._init(C.nn_embedding(vocab_size, embed_size, _dev(device)), "nn_embedding")


class LSTMCell(_Module):
  _names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
  def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Optional[str] = None):
    self._init(C.nn_lstm_cell(input_size, hidden_size, int(bias), _dev(device)), "nn_lstm_cell")

  def __call__(self, x: Tensor, hc: Optional[Tuple[Tensor, Tensor]] = None) -> Tuple[Tensor, Tensor]:
    h, c = ctypes.c_void_p(), ctypes.c_void_p()
    _ok(C.lstm_cell_step(self._h, x._h, hc[0]._h if hc else None, hc[1]._h if hc else None, ctypes.byref(h), ctypes.byref(c)), "lstm_cell_step")
    return Tensor._wrap(h.value, "lstm_cell_step"), Tensor._wrap(c.value, "lstm_cell_step")
