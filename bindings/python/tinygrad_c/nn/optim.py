"""tinygrad's nn.optim over the C optimizers (tg_optim_*, tg_optimizer_*): SGD, Adam, AdamW, LARS, LAMB, Muon and
OptimizerGroup, with tinygrad's arguments and defaults.

The params are tinygrad's parameter lists: `Adam(nn.state.get_parameters(model))` keeps the tensors an optimizer
updates and leaves out the buffers (BatchNorm's running_mean, running_var and num_batches_tracked: tinygrad's
`is_param_(False)` tensors), which schedule_step still returns to be realized with the step, as tinygrad's.

A step needs the option TRAINING=1 (`with Context(TRAINING=1):`, as tinygrad) and a grad on every param, else it raises
and nothing is assigned. `opt.lr` is a shape (1,) float32 Tensor; setting `opt.lr = x` assigns into it, so a step captured
by a TinyJit uses the new value. Realize a step with its loss in one schedule:
`Tensor.realize_many(loss, *opt.schedule_step())`.
"""
from __future__ import annotations

import ctypes
import weakref
from typing import Dict, List, Sequence

from .. import C, Device, Tensor, _capi, _made, _ok, _Owned, _raise_last

__all__ = ["Optimizer", "OptimizerGroup", "SGD", "Adam", "AdamW", "LARS", "LAMB", "Muon"]

_MAX_NS_COEFFICIENTS = _capi.TG_OPTIM_MAX_NS_COEFFICIENTS
_KINDS = {"sgd": 0, "adam": 1, "adamw": 2, "lars": 3, "lamb": 4, "muon": 5}


_Options = _capi.tg_optimizer_options  # struct tg_optimizer_options, generated from the API manifest


_p, _pp = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)


def _defaults(kind: str) -> _Options:
  o = _Options(struct_size=ctypes.sizeof(_Options))
  _ok(C.optimizer_options_default(_KINDS[kind], ctypes.byref(o)), "optimizer_options_default")
  return o


# The Tensor objects that are buffers, not params (tinygrad's is_param False: a module's running statistics), by identity
# as tinygrad's flag is per Tensor object; entries go with their tensors.
_BUFFERS: Dict[int, "weakref.ref[Tensor]"] = {}


def _mark_buffer(t: Tensor, buffer: bool = True) -> None:
  key = id(t)
  if not buffer:
    if _is_buffer(t): del _BUFFERS[key]
    return
  _BUFFERS[key] = weakref.ref(t, lambda _r, key=key: _BUFFERS.pop(key, None))


def _is_buffer(t: Tensor) -> bool:
  r = _BUFFERS.get(id(t))
  return r is not None and r() is t


def _check_device(params: Sequence[Tensor], device) -> None:
  """tinygrad's device= (where the state lives) and fused= (its params concatenated into one buffer: a speed choice; a
  step here is one schedule already) are accepted; the state lives on the params' device, so another device raises."""
  if device is None or not params: return
  if Device.canonicalize(device) != params[0].device:
    raise NotImplementedError(f"optimizer state on {device} with params on {params[0].device}: the state lives with the params")


def _split(params: Sequence[Tensor]):
  """(params, buffers) as tinygrad's Optimizer splits its list: the buffers deduplicated, kept to realize with each step."""
  ps, bufs, seen = [], [], set()
  for i, p in enumerate(params):
    if not isinstance(p, Tensor): raise TypeError(f"params[{i}] is a {type(p).__name__}, not a Tensor")
    if not _is_buffer(p): ps.append(p)
    elif id(p) not in seen: seen.add(id(p)); bufs.append(p)
  return ps, bufs


def _tensors(hs, n: int, what: str) -> List[Tensor]:
  if n < 0: _raise_last(what)
  return [Tensor._wrap(hs[i], what) for i in range(n)]


class Optimizer(_Owned):
  """An optimizer over a tg_optimizer handle; made by SGD, Adam, AdamW, LARS, LAMB or Muon."""
  __slots__ = ("_h", "kind", "buffers")
  _release, _retain = C.optimizer_release, C.optimizer_retain  # copy.copy: the same optimizer; deepcopy, pickle: TypeError
  _no_copy = "its state (momentum, step count) lives in the library; make a new optimizer over the (copied) params"

  def _make(self, kind: str, params: Sequence[Tensor], **opts):
    self._h, self.kind = None, kind
    params, self.buffers = _split(list(params))
    if not params: raise AssertionError("optimizer must have at least one param")
    o = _defaults(kind)
    for name, v in opts.items():
      if name == "ns_coefficients":
        v = tuple(v or ())
        if len(v) > _MAX_NS_COEFFICIENTS: raise ValueError(f"ns_coefficients has {len(v)} entries, at most {_MAX_NS_COEFFICIENTS}")
        o.n_ns_coefficients = len(v)
        o.ns_coefficients[:len(v)] = [float(c) for c in v]
      else: setattr(o, name, int(v) if isinstance(v, bool) else v)
    arr = (ctypes.c_void_p * max(len(params), 1))(*[p._h for p in params])
    self._h = _made(getattr(C, f"optim_{kind}")(arr, len(params), ctypes.byref(o)), f"optim_{kind}")

  @classmethod
  def _new(cls, kind: str, params: Sequence[Tensor], **opts):
    self = object.__new__(cls)
    self._make(kind, params, **opts)
    return self

  def zero_grad(self):
    """Sets every param's grad to None."""
    _ok(C.optimizer_zero_grad(self._h), "optimizer_zero_grad")

  def step(self):
    """One step: schedule_step()'s tensors realized together."""
    if self.buffers: Tensor.realize_many(*self.schedule_step())
    else: _ok(C.optimizer_step(self._h), "optimizer_step")

  def schedule_step(self) -> List[Tensor]:
    """Assigns one step into every param and piece of state, lazily; returns the Tensors to realize (the state, the
    params, then the buffers), best with the loss: loss.realize(*opt.schedule_step())."""
    n = C.optimizer_schedule_step(self._h, None, 0)
    if n < 0: _raise_last("optimizer_schedule_step")
    out = (ctypes.c_void_p * max(n, 1))()
    return _tensors(out, C.optimizer_schedule_step(self._h, out, n), "optimizer_schedule_step") + self.buffers

  @property
  def params(self) -> List[Tensor]:
    """The params as the optimizer holds them (deduplicated, requires_grad set)."""
    n = C.optimizer_params(self._h, None, 0)
    if n < 0: _raise_last("optimizer_params")
    out = (ctypes.c_void_p * max(n, 1))()
    return _tensors(out, C.optimizer_params(self._h, out, n), "optimizer_params")

  @property
  def lr(self) -> Tensor:
    """The learning rate: a shape (1,) float32 Tensor (assign into it, or set opt.lr, to change it)."""
    return Tensor._wrap(C.optimizer_lr(self._h), "optimizer_lr")

  @lr.setter
  def lr(self, value):
    if isinstance(value, Tensor): self.lr.assign(value.reshape(1) if value.shape == () else value).realize()
    else: _ok(C.optimizer_set_lr(self._h, float(value)), "optimizer_set_lr")

  def __repr__(self): return f"<{type(self).__name__} ({self.kind}) lr={self.lr.numpy()[0]:g}>"

  def _state(self, name: str) -> List[Tensor]:
    """The state list tinygrad calls `name` (tg_optimizer_state): the tensors a step assigns into."""
    n = C.optimizer_state(self._h, name.encode(), None, 0)
    if n < 0: _raise_last("optimizer_state")
    out = (ctypes.c_void_p * max(n, 1))()
    return _tensors(out, C.optimizer_state(self._h, name.encode(), out, n), "optimizer_state")

  def _state_dict(self) -> dict:
    """What tinygrad's get_state_dict finds in an optimizer's __dict__, in its order."""
    return {"params": self.params, "buffers": self.buffers, "lr": self.lr}


class LARS(Optimizer):
  """Layer-wise Adaptive Rate Scaling (https://arxiv.org/abs/1708.03888v3); SGD and Muon are LARS settings."""
  __slots__ = ()

  def __init__(self, params: Sequence[Tensor], lr=0.001, momentum=0.9, weight_decay=1e-4, ns_steps=0, ns_coefficients=None, nesterov=False,
               classic=True, pre_wd=True, tcoef=0.001, device=None, fused=None):
    _check_device(params, device)
    self._make("lars", params, lr=lr, momentum=momentum, weight_decay=weight_decay, ns_steps=ns_steps, ns_coefficients=ns_coefficients,
               nesterov=nesterov, classic=classic, pre_wd=pre_wd, tcoef=tcoef)

  @property
  def b(self) -> List[Tensor]:
    """The momentum buffers, one per param (none without momentum), as tinygrad's LARS.b."""
    return self._state("b")

  def _state_dict(self) -> dict: return {**super()._state_dict(), "b": self.b}


class LAMB(Optimizer):
  """LAMB (https://arxiv.org/abs/1904.00962); Adam and AdamW are LAMB with adam=True."""
  __slots__ = ()

  def __init__(self, params: Sequence[Tensor], lr=0.001, b1=0.9, b2=0.999, eps=1e-6, weight_decay=0.0, adam=False, device=None, fused=None):
    _check_device(params, device)
    self._make("lamb", params, lr=lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay, adam=adam)

  # tinygrad's LAMB state: the first and second moments per param, and the bias corrections' products b1^t, b2^t
  m = property(lambda self: self._state("m"), doc="First moments, one per param.")
  v = property(lambda self: self._state("v"), doc="Second moments, one per param.")
  b1_t = property(lambda self: self._state("b1_t")[0], doc="b1 to the power of the steps taken, shape (1,).")
  b2_t = property(lambda self: self._state("b2_t")[0], doc="b2 to the power of the steps taken, shape (1,).")

  def _state_dict(self) -> dict: return {**super()._state_dict(), "b1_t": self.b1_t, "b2_t": self.b2_t, "m": self.m, "v": self.v}


def SGD(params: Sequence[Tensor], lr=0.001, momentum=0.0, weight_decay=0.0, nesterov=False, classic=False, device=None, fused=None) -> LARS:
  """SGD with optional momentum (classic: the lr scales the grad before momentum), Nesterov and weight decay."""
  _check_device(params, device)
  return LARS._new("sgd", params, lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov, classic=classic)


def Muon(params: Sequence[Tensor], lr=0.001, momentum=0.95, weight_decay=0.1, ns_steps=5, ns_coefficients=(3.4445, -4.775, 2.0315),
         nesterov=True, device=None, fused=None) -> LARS:
  """SGD with Newton-Schulz orthogonalized updates and decoupled weight decay (https://kellerjordan.github.io/posts/muon/)."""
  _check_device(params, device)
  return LARS._new("muon", params, lr=lr, momentum=momentum, weight_decay=weight_decay, ns_steps=ns_steps, ns_coefficients=ns_coefficients,
                   nesterov=nesterov)


def AdamW(params: Sequence[Tensor], lr=0.001, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01, device=None, fused=None) -> LAMB:
  """AdamW (https://arxiv.org/abs/1711.05101v3)."""
  _check_device(params, device)
  return LAMB._new("adamw", params, lr=lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay)


def Adam(params: Sequence[Tensor], lr=0.001, b1=0.9, b2=0.999, eps=1e-8, device=None, fused=None) -> LAMB:
  """Adam (https://arxiv.org/abs/1412.6980)."""
  _check_device(params, device)
  return LAMB._new("adam", params, lr=lr, b1=b1, b2=b2, eps=eps)


class OptimizerGroup(Optimizer):
  """Several optimizers stepped as one (tinygrad's OptimizerGroup, an Optimizer): one schedule for all their updates."""
  __slots__ = ("optimizers",)

  def __init__(self, *optimizers: Optimizer):
    self._h, self.kind, self.optimizers = None, "group", optimizers
    self.buffers = [b for o in optimizers for b in o.buffers]
  def __getitem__(self, i: int) -> Optimizer: return self.optimizers[i]
  def _state_dict(self) -> dict: return {"optimizers": list(self.optimizers), "params": self.params, "buffers": self.buffers}
  @property
  def params(self) -> List[Tensor]: return [p for o in self.optimizers for p in o.params]
  @property
  def lr(self): raise AttributeError("'OptimizerGroup' object has no attribute 'lr' (each of its optimizers has one)")
  def zero_grad(self):
    for o in self.optimizers: o.zero_grad()
  def schedule_step(self) -> List[Tensor]: return [t for o in self.optimizers for t in o.schedule_step()]
  def step(self):
    if ts := self.schedule_step(): Tensor.realize_many(*ts)
  def __copy__(self): return OptimizerGroup(*self.optimizers)
  def __repr__(self): return f"<OptimizerGroup of {len(self.optimizers)}>"
