"""tinygrad's nn.state over the C state API (tg_state_*): safetensors load/save, GGUF load, and state dicts of Python
objects (get_state_dict, get_parameters, load_state_dict walk objects as tinygrad's do)."""
from __future__ import annotations

import ctypes
import json
import os
import struct
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

from .. import C, Tensor, _Owned, _made, _ok

_i64 = ctypes.c_int64  # (tinygrad_c's _i64 is its int-checking helper, not the ctype)

__all__ = ["safe_load", "safe_save", "safe_load_metadata", "gguf_load", "get_state_dict", "get_parameters", "load_state_dict"]



def _enc(s: str, what: str) -> bytes:
  if "\0" in s: raise ValueError(f"{what} {s!r} contains a NUL character")
  return s.encode()


class _State(_Owned):
  """One tg_state handle: named tensors in order, and the file's metadata."""
  __slots__ = ("_h",)
  _release, _retain = C.state_release, C.state_retain
  _no_copy = "its tensors live in the library; copy the dict of tensors() instead"

  def __init__(self, handle: int, what: str): self._h = _made(handle, what)

  @staticmethod
  def load(path) -> "_State":
    return _State(C.state_load(_enc(os.fspath(path), "path"), None), "state_load")

  def tensors(self) -> Dict[str, Tensor]:
    n = C.state_count(self._h)
    if n < 0: _made(None, "state_count")
    names = [C.state_name(self._h, i) for i in range(n)]
    return {k.decode(): Tensor._wrap(C.state_get(self._h, k), "state_get") for k in names}

  def metadata(self, as_json: bool) -> Dict[str, Any]:
    n = C.state_metadata_count(self._h)
    if n < 0: _made(None, "state_metadata_count")
    get = C.state_metadata_json if as_json else C.state_metadata_value
    return {C.state_metadata_key(self._h, i).decode(): (json.loads if as_json else bytes.decode)(get(self._h, i)) for i in range(n)}


def safe_load(fn) -> Dict[str, Tensor]:
  """Loads a .safetensors file, returning the state_dict (name -> Tensor, in the file's order). A malformed file raises
  TinygradError (TG_ERROR_IO) naming the file and the problem."""
  return _State.load(fn).tensors()


def safe_load_metadata(fn) -> Tuple[str, int, Dict[str, Any]]:
  """(fn, the data's start, the JSON header) of a .safetensors file, as tinygrad's (fn for its source Tensor). Reads the
  header only; safe_load checks the whole file."""
  with open(fn, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    if n > os.fstat(f.fileno()).st_size - 8: raise ValueError(f"{fn}: safetensors header length {n} is past the end of the file")
    return os.fspath(fn), 8 + n, json.loads(f.read(n))


def safe_save(tensors: Dict[str, Tensor], fn, metadata: Optional[Dict[str, Any]] = None):
  """Saves a state_dict to a .safetensors file (atomically: written beside fn, then renamed; a fn that isn't a regular
  file, /dev/null or a FIFO, is written in place) with optional metadata;
  metadata values that are not str are written as their JSON text (the format's metadata is str -> str)."""
  st = _State(C.state_create(), "state_create")
  for k, v in tensors.items():
    if not isinstance(v, Tensor): raise TypeError(f"safe_save: {k!r} is a {type(v).__name__}, not a Tensor")
    _ok(C.state_set(st._h, _enc(k, "tensor name"), v._h), "state_set")
  for k, v in (metadata or {}).items():
    _ok(C.state_metadata_set(st._h, _enc(str(k), "metadata key"), _enc(v if isinstance(v, str) else json.dumps(v), "metadata value")),
        "state_metadata_set")
  _ok(C.state_save(st._h, _enc(os.fspath(fn), "path")), "state_save")


def gguf_load(fn) -> Tuple[Dict[str, Any], Dict[str, Tensor]]:
  """Loads a .gguf file (versions 2 and 3), returning (kv_data, state_dict). Quantized tensors (Q4_0, Q4_1, Q5_0, Q5_1,
  Q8_0, Q4_K, Q5_K, Q6_K) dequantize to float32 in generated kernels when realized; F16 stays float16, as tinygrad's."""
  st = _State.load(fn)
  return st.metadata(as_json=True), st.tensors()


def get_state_dict(obj, prefix: str = "", tensor_type=Tensor) -> Dict[str, Tensor]:
  """The named tensors reachable from obj, as tinygrad's: Tensor attributes by name, lists and tuples by index, dicts by
  key, namedtuples by field, other objects through their __dict__."""
  if isinstance(obj, tensor_type): return {prefix.strip("."): obj}
  if hasattr(obj, "_state_dict"): return get_state_dict(obj._state_dict(), prefix, tensor_type)  # optimizers: state lives in C
  if hasattr(obj, "_asdict"): return get_state_dict(obj._asdict(), prefix, tensor_type)
  if isinstance(obj, OrderedDict): return get_state_dict(dict(obj), prefix, tensor_type)
  if hasattr(obj, "__dict__"): return get_state_dict(obj.__dict__, prefix, tensor_type)
  state_dict: Dict[str, Tensor] = {}
  if isinstance(obj, (list, tuple)):
    for i, x in enumerate(obj): state_dict.update(get_state_dict(x, f"{prefix}{i}.", tensor_type))
  elif isinstance(obj, dict):
    for k, v in obj.items(): state_dict.update(get_state_dict(v, f"{prefix}{k}.", tensor_type))
  return state_dict


def get_parameters(obj) -> List[Tensor]:
  """Every tensor of get_state_dict(obj), in its order."""
  return list(get_state_dict(obj).values())


def load_state_dict(model, state_dict: Dict[str, Tensor], strict: bool = True, verbose: bool = True, consume: bool = False,
                    realize: bool = True) -> List[Tensor]:
  """Assigns every state_dict entry into the model's tensor of that name and realizes them together; returns the loaded
  tensors. strict: a model tensor missing from state_dict, or an entry the model lacks, raises KeyError naming them all
  (not strict: those are skipped). A shape mismatch always raises ValueError naming the entry ((1,) and () are
  interchangeable, as in tinygrad). consume: loaded entries are deleted from state_dict. verbose: a line with the count."""
  model_sd = get_state_dict(model)
  missing = [k for k in model_sd if k not in state_dict]
  unexpected = [k for k in state_dict if k not in model_sd]
  if strict and (missing or unexpected):
    raise KeyError(f"load_state_dict: missing {missing}, unexpected {unexpected}")
  ret = []
  for k, v in model_sd.items():
    if k not in state_dict: continue
    src = state_dict[k]
    if v.shape != src.shape:
      if {(), (1,)} == {v.shape, src.shape}: src = src.reshape(v.shape)
      else: raise ValueError(f"Shape mismatch in layer `{k}`: Expected shape {v.shape}, but found {src.shape} in state dict.")
    v.assign(src.to(v.device) if src.device != v.device else src)
    ret.append(v)
    if consume: del state_dict[k]
  if realize and ret: Tensor.realize_many(*ret)
  if verbose: print(f"loaded {len(ret)} tensors")
  return ret
