"""tinygrad's nn.onnx over the C ONNX API (tg_onnx_*): OnnxRunner(path) loads a model, runner({name: value}) runs it and
returns {output name: Tensor}, as tinygrad's OnnxRunner does. Every node lowers to tensor ops inside the library."""
from __future__ import annotations

import ctypes
import os
import pathlib
import warnings
from typing import Any, Dict, Optional, Tuple

from .. import C, Tensor, _Owned, _made, _ok, _BY_VALUE, _capi, to_dtype

__all__ = ["OnnxRunner"]


class _Model(_Owned):
  """One tg_onnx_model handle."""
  __slots__ = ("_h",)
  _release, _retain = C.onnx_model_release, C.onnx_model_retain
  _no_copy = "the model lives in the library; load it again for another"

  def __init__(self, handle: int): self._h = _made(handle, "onnx_load")


def _info(h, i: int, output: bool) -> Tuple[Any, Tuple[Any, ...]]:
  """(DType, shape with the names of symbolic dims as str) of input or output i."""
  info = C.onnx_output_info if output else C.onnx_input_info
  dt, nd = ctypes.c_int(0), ctypes.c_int64(0)
  _ok(info(h, i, ctypes.byref(dt), None, 0, ctypes.byref(nd)), "onnx_input_info")
  if nd.value < 0: return _BY_VALUE[dt.value], ()
  dims = (ctypes.c_int64 * max(nd.value, 1))()
  _ok(info(h, i, None, dims, nd.value, ctypes.byref(nd)), "onnx_input_info")
  dim_name = C.onnx_output_dim_name if output else C.onnx_input_dim_name
  shape = tuple(d if d >= 0 else (dim_name(h, i, k) or b"").decode() or None for k, d in enumerate(dims[:nd.value]))
  return _BY_VALUE[dt.value], shape


class OnnxRunner:
  """Runs an ONNX model with the library (tinygrad's nn.onnx.OnnxRunner).

  Args:
    model_path: the model, as a path (str or Path) or its bytes.
    device: the device to run on (default: the default device).
    dims: symbolic dims fixed to sizes ({"batch": 1}); inputs are checked against them.
  """

  def __init__(self, model_path, device: Optional[str] = None, dims: Optional[Dict[str, int]] = None):
    o = _capi.tg_onnx_options(struct_size=ctypes.sizeof(_capi.tg_onnx_options))
    if device is not None: o.device = device.encode()
    if dims: o.dims = ",".join(f"{k}={int(v)}" for k, v in dims.items()).encode()
    if isinstance(model_path, (bytes, bytearray, memoryview)):
      data = bytes(model_path)
      self._m = _Model(C.onnx_load_buffer(data, len(data), ctypes.byref(o)))
    else:
      self._m = _Model(C.onnx_load(os.fsencode(pathlib.Path(model_path)), ctypes.byref(o)))
    h = self._m._h
    n_in, n_out = C.onnx_input_count(h), C.onnx_output_count(h)
    if n_in < 0 or n_out < 0: _made(None, "onnx_input_count")
    self.graph_inputs = {C.onnx_input_name(h, i).decode(): _info(h, i, False) for i in range(n_in)}
    self.graph_outputs = tuple(C.onnx_output_name(h, i).decode() for i in range(n_out))
    self.opset = C.onnx_opset(h)
    self.producer = C.onnx_producer(h).decode()

  def __call__(self, inputs: Dict[str, Any], debug=None) -> Dict[str, Tensor]:
    unknown = set(inputs) - set(self.graph_inputs)
    if unknown: raise RuntimeError(f"the model has no input {sorted(unknown)[0]!r} (its inputs: {list(self.graph_inputs)})")
    ts = []
    for name, (dt, _) in self.graph_inputs.items():
      if name not in inputs: raise RuntimeError(f"input {name!r} is missing")
      v = inputs[name]
      t = v if isinstance(v, Tensor) else Tensor(v, dtype=dt)
      if t.dtype != dt:
        warnings.warn(f"input {name} has mismatch on dtype. Expected {dt}, received {t.dtype}.")
        t = t.cast(dt)
      ts.append(t)
    n_out = len(self.graph_outputs)
    ins = (ctypes.c_void_p * max(len(ts), 1))(*[t._h for t in ts])
    outs = (ctypes.c_void_p * max(n_out, 1))()
    _ok(C.onnx_run(self._m._h, ins, len(ts), outs, n_out), "onnx_run")
    return {name: Tensor._wrap(outs[i], "onnx_run") for i, name in enumerate(self.graph_outputs)}
