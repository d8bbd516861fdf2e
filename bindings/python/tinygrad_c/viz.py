"""VIZ: see how graphs became kernels (tg_viz_*, docs/viz.md).

As in tinygrad, `VIZ=1 python3 script.py` records everything the script realizes and, when it exits, serves the viewer at
http://127.0.0.1:8000/ (VIZ_PORT) until Ctrl-C. From code:

  from tinygrad_c import viz
  viz.enable()                 # start recording
  ...                          # realize tensors, run a TinyJit
  port = viz.serve(0)          # serve now, on a free port (the server runs on a thread of the library)
  viz.dump("viz_out")          # or write a folder whose index.html opens from disk
  data = viz.data("/api/index")  # the recorded data as the viewer gets it (a dict)
"""
from __future__ import annotations

import ctypes
import json
import os
from typing import Any

from . import C, _cstr, _ok, _raise_last

__all__ = ["enable", "disable", "enabled", "clear", "set_capacity", "serve", "stop", "dump", "data"]


def enable(on: bool = True) -> None:
  """Start (or with on=False stop) recording. What was recorded stays until clear()."""
  _ok(C.viz_enable(1 if on else 0), "viz_enable")


def disable() -> None:
  enable(False)


def enabled() -> bool:
  return bool(C.viz_enabled())


def clear() -> None:
  """Forget everything recorded."""
  _ok(C.viz_clear(), "viz_clear")


def set_capacity(realizes: int) -> None:
  """Keep the last `realizes` realizes (default 64, or VIZ_CAPACITY)."""
  _ok(C.viz_set_capacity(realizes), "viz_set_capacity")


def serve(port: int = 8000) -> int:
  """Serve the viewer at http://127.0.0.1:port/ (0: a free port) until stop() or the process ends; the port bound."""
  bound = ctypes.c_int(0)
  _ok(C.viz_serve(port, ctypes.byref(bound)), "viz_serve")
  return bound.value


def stop() -> None:
  _ok(C.viz_stop(), "viz_stop")


def dump(dir: str | os.PathLike) -> None:
  """Write the viewer and everything recorded into the folder `dir`: open dir/index.html in a browser."""
  _ok(C.viz_dump(_cstr(os.fspath(dir), "dir")), "viz_dump")


def data(route: str = "/api/index") -> Any:
  """What the server answers for `route` ("/api/index", "/api/kernel/ID", "/api/realize/ID", "/api/timeline"), parsed."""
  r = _cstr(route, "route")
  n = C.viz_json(r, None, 0)
  while True:  # a realize on another thread may add data between the two calls: ask again until it fits
    if n < 0: _raise_last("viz_json")
    buf = ctypes.create_string_buffer(n + 1)
    m = C.viz_json(r, buf, n + 1)
    if m < 0: _raise_last("viz_json")
    if m <= n: return json.loads(buf.raw[:m].decode("utf-8"))
    n = m
