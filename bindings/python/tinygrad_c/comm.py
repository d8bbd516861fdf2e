"""Collectives and messages on tensors between the processes of an MPI job (tg_comm_*, docs/distributed.md).

  from tinygrad_c.comm import Comm
  comm = Comm.world()                       # every process of `mpirun -np N python3 train.py`
  total = comm.allreduce(t)                 # op: "sum", "prod", "max", "min", "avg"
  rows = comm.allgather(t)                  # every rank's t, concatenated along dim 0
  w = comm.broadcast(t, root=0)
  comm.send(t, dest=1, tag=0); t = comm.recv((4, 4), dtypes.float32, src=0, tag=0)
  loss, = comm.average_gradients(params, also=[loss])   # data parallel: after backward, before the optimizer step

Each call realizes its input and returns a new realized tensor; inside a TinyJit it is captured with the kernels and
replays in order. Open MPI's libmpi.so.40 is loaded at run time: without it Comm.world() raises TG_ERROR_UNSUPPORTED.

Between the devices of one process (no MPI): allreduce_devices([a, b, c, d], "sum") -> one result per input's device.
"""
from __future__ import annotations

import ctypes
from typing import Optional, Sequence

from . import C, Tensor, _Owned, _enc, _i64, _i64s, _made, _ok, _raise_last, to_dtype

__all__ = ["Comm", "allreduce_devices"]

_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4, "mean": 4}


def _handles(ts: Sequence[Tensor], what: str):
  ts = list(ts)
  for i, t in enumerate(ts):
    if not isinstance(t, Tensor): raise TypeError(f"{what}[{i}] must be a Tensor, got {type(t).__name__}")
  return (ctypes.c_void_p * max(len(ts), 1))(*[t._h for t in ts]), len(ts)


class Comm(_Owned):
  """A communicator: the ranks of an MPI job (Comm.world()) or a group of them (split). One thread at a time."""
  __slots__ = ("_h",)
  _release, _retain = C.comm_release, C.comm_retain

  def __init__(self, handle: int):
    self._h = handle

  @classmethod
  def world(cls) -> "Comm":
    """Every process of the job (MPI_COMM_WORLD); MPI is initialized on first use. Without mpirun: a job of one."""
    return cls(_made(C.comm_world(), "comm_world"))

  def split(self, color: int, key: int = 0) -> "Comm":
    """The ranks passing the same color (>= 0), ordered by key then rank; every rank must call it."""
    return Comm(_made(C.comm_split(self._h, _i64(color, "color"), _i64(key, "key")), "comm_split"))

  def _count(self, fn, what: str) -> int:
    n = fn(self._h)
    if n < 0: _raise_last(what)
    return n

  @property
  def rank(self) -> int: return self._count(C.comm_rank, "comm_rank")

  @property
  def size(self) -> int: return self._count(C.comm_size, "comm_size")

  def allreduce(self, t: Tensor, op: str = "sum") -> Tensor:
    if op not in _OPS: raise ValueError(f"allreduce: op must be one of {', '.join(_OPS)}, got {op!r}")
    return Tensor._wrap(C.comm_allreduce(self._h, t._h, _OPS[op]), "comm_allreduce")

  def allgather(self, t: Tensor) -> Tensor:
    return Tensor._wrap(C.comm_allgather(self._h, t._h), "comm_allgather")

  def broadcast(self, t: Tensor, root: int = 0) -> Tensor:
    return Tensor._wrap(C.comm_broadcast(self._h, t._h, _i64(root, "root")), "comm_broadcast")

  def send(self, t: Tensor, dest: int, tag: int = 0) -> None:
    _ok(C.comm_send(self._h, t._h, _i64(dest, "dest"), _i64(tag, "tag")), "comm_send")

  def recv(self, shape, dtype, src: int, tag: int = 0, device: Optional[str] = None) -> Tensor:
    shape = tuple(_i64(d, "shape dim") for d in ((shape,) if isinstance(shape, int) else shape))
    return Tensor._wrap(C.comm_recv(self._h, _i64s(shape, "shape dim"), len(shape), to_dtype(dtype).value, _i64(src, "src"),
                                    _i64(tag, "tag"), _enc(device)), "comm_recv")

  def average_gradients(self, params: Sequence[Tensor], also: Sequence[Tensor] = ()) -> list:
    """Each parameter's .grad replaced by its average over the ranks, in one step; `also` (a loss) is computed with the
    gradients (the forward pass once) and averaged in the same step: its averages are returned."""
    arr, n = _handles(params, "params")
    also_arr, n_also = _handles(also, "also")
    out = (ctypes.c_void_p * max(n_also, 1))()
    _ok(C.comm_average_gradients(self._h, arr, n, also_arr, n_also, out), "comm_average_gradients")
    return [Tensor._wrap(out[i], "comm_average_gradients") for i in range(n_also)]

  def broadcast_tensors(self, tensors: Sequence[Tensor], root: int = 0) -> None:
    """Each tensor assigned rank root's values (the same initial weights everywhere), realized."""
    arr, n = _handles(tensors, "tensors")
    _ok(C.comm_broadcast_tensors(self._h, arr, n, _i64(root, "root")), "comm_broadcast_tensors")

  def __repr__(self) -> str: return f"<Comm rank {self.rank} of {self.size}>"


def allreduce_devices(tensors: Sequence[Tensor], op: str = "sum") -> list:
  """`tensors` (one shape and dtype, each on a different device of this process: "CPU", "CPU:1", "CL", ...) combined
  elementwise; one result per input, on its device, the same bits on each (tg_tensor_allreduce). A ring allreduce for
  more than 2 devices and more than RING_ALLREDUCE_THRESHOLD elements (or Context(RING=2)), else each device copies
  the others' tensors (RING=0: always). Copies and kernels run now; inside a TinyJit they replay."""
  if op not in _OPS: raise ValueError(f"allreduce_devices: op must be one of {', '.join(_OPS)}, got {op!r}")
  arr, n = _handles(tensors, "tensors")
  out = (ctypes.c_void_p * max(n, 1))()
  _ok(C.tensor_allreduce(arr, n, _OPS[op], out), "tensor_allreduce")
  return [Tensor._wrap(out[i], "tensor_allreduce") for i in range(n)]
