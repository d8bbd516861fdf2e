"""tinygrad_c: a ctypes binding over libtinygrad.so with tinygrad's Tensor names.

The library is found by $TINYGRAD_LIB (a path to the .so), else a libtinygrad.so next to this file (inside the installed
package), else the repository's build/libtinygrad.so, else ctypes.util.find_library("tinygrad"). Every failing C call raises TinygradError (a RuntimeError; shape and argument
errors are also ValueErrors, allocation failures MemoryErrors, as in tinygrad).

No Python int is wrapped silently on its way into C: shape dims, axes, pads, counts and dtype codes are range-checked
(OverflowError for ints that don't fit the C parameter, TypeError for non-integers), and integer fill values and data
must fit the tensor's dtype.
"""
from __future__ import annotations

import contextlib
import copy
import ctypes
import ctypes.util
import functools
import math
import operator
import os
import pickle
import threading
import time
import weakref
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _capi

__all__ = ["Tensor", "Device", "GlobalCounters", "TinygradError", "ShapeError", "InvalidArgumentError", "OutOfMemoryError", "JitError", "DType", "dtypes",
           "least_upper_dtype", "Expr", "Variable", "version",
           "version_number", "counters", "reset_counters", "library_path", "has_tensor_api", "TinyJit", "Plan", "plan",
           "Kernel", "MemoryPlan", "UOp", "Ops", "ScheduleItem", "set_option", "get_option", "Context", "function", "getenv", "fetch"]


# ---- library ---------------------------------------------------------------------------------------------------------
def _find_library() -> str:
  if env := os.environ.get("TINYGRAD_LIB"):
    if not os.path.exists(env): raise OSError(f"TINYGRAD_LIB={env!r} does not exist")
    return env
  here = Path(__file__).resolve().parent
  beside = here / "libtinygrad.so"  # an installed package carries (or is given) its own copy or symlink
  if beside.exists(): return str(beside)
  if len(here.parents) > 2:
    repo_build = here.parents[2] / "build" / "libtinygrad.so"  # bindings/python/tinygrad_c -> the repository root
    if repo_build.exists() and (here.parents[2] / "include" / "tinygrad.h").exists(): return str(repo_build)
  if found := ctypes.util.find_library("tinygrad"): return found
  raise OSError("libtinygrad.so not found: set TINYGRAD_LIB to its path, or build the repository into build/")


library_path = _find_library()
_dll = ctypes.CDLL(library_path)

_p, _i64, _u64, _sz, _int, _dbl, _str = ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, \
  ctypes.c_double, ctypes.c_char_p
_i64p, _status, _dtype_t = ctypes.POINTER(ctypes.c_int64), ctypes.c_int, ctypes.c_int


# the C structs and the callback type, generated from the API manifest (scripts/bindgen/python.py)
_Counters, _KernelInfo, _TgIndex, _JIT_FN = _capi.tg_counters, _capi.tg_kernel_info, _capi.tg_index, _capi.tg_jit_fn
_IDX_INT, _IDX_SLICE, _IDX_NEWAXIS, _IDX_ELLIPSIS, _IDX_TENSOR = range(5)


def _checked_int(ctype, lo: int, hi: int):
  """An argtypes entry for an integer parameter that refuses what ctypes would wrap: an int outside [lo, hi] is an
  OverflowError, a non-integer (float, str) a TypeError (ctypes reports both as ctypes.ArgumentError naming them)."""
  name = ctype.__name__
  def from_param(cls, v):
    if isinstance(v, ctype): return v
    try: i = operator.index(v)
    except TypeError: raise TypeError(f"{name} argument must be an int, got {type(v).__name__}") from None
    if not lo <= i <= hi: raise OverflowError(f"{i} doesn't fit in {name} [{lo}, {hi}]")
    return ctype(i)
  return type(f"_checked_{name}", (), {"from_param": classmethod(from_param)})


# every scalar int parameter is range-checked: ctypes itself would silently keep the low bits of a big int
_CHECKED = {ctypes.c_int64: _checked_int(ctypes.c_int64, -(1 << 63), (1 << 63) - 1),
            ctypes.c_size_t: _checked_int(ctypes.c_size_t, 0, (1 << (8 * ctypes.sizeof(ctypes.c_size_t))) - 1),
            ctypes.c_uint64: _checked_int(ctypes.c_uint64, 0, (1 << 64) - 1),
            ctypes.c_int: _checked_int(ctypes.c_int, -(1 << 31), (1 << 31) - 1)}


class _Lib:
  """The C functions by name, without the tg_ prefix. A function the loaded library lacks raises TG_ERROR_UNSUPPORTED."""


C = _Lib()
_missing = set()


def _bind(signatures: dict) -> None:
  """Declares each C function's result and argument types and sets it on C by its name without tg_."""
  for name, (res, args) in signatures.items():
    try:
      fn = getattr(_dll, name)
      fn.restype, fn.argtypes = res, [_CHECKED.get(a, a) for a in args]
    except AttributeError:
      _missing.add(name)
      def fn(*a, _name=name):
        raise TinygradError("TG_ERROR_UNSUPPORTED", f"{_name} is not exported by {library_path}")
    setattr(C, name[3:], fn)


_bind(_capi.SIGNATURES)  # every function of include/tinygrad.h, as the manifest describes it


def has_tensor_api() -> bool:
  """True when the loaded library exports the tensor functions."""
  return "tg_tensor_from_data" not in _missing


# ---- devices ---------------------------------------------------------------------------------------------------------
_DEVICE_KINDS = ("CPU", "CLANG", "CUDA", "CL", "GPU", "NV", "AMD", "METAL", "LLVM", "DISK", "PYTHON", "NULL", "WEBGPU", "QCOM")


def _is_device_name(s: str) -> bool:
  """A device's spelling ("CUDA", "CL:1", "cpu") as opposed to a dtype's name ("float32")."""
  return s.split(":")[0].upper() in _DEVICE_KINDS


class _OpenDevice:
  """What tinygrad's Device[name] gives: the opened device, here its canonical name and synchronize()."""
  __slots__ = ("device",)
  def __init__(self, name: str): self.device = name
  def synchronize(self) -> None:
    """Waits for the kernels and copies queued on the device (a TinyJit replay queues GPU kernels without waiting)."""
    _ok(C.device_synchronize(self.device.encode()), "device_synchronize")
  def __repr__(self): return f"<Device {self.device}>"


class _DeviceMeta(type):
  def __getitem__(cls, name: str) -> _OpenDevice:
    """Device["CUDA"]: opens it (raising why it can't be used, as Device.open) and gives its handle."""
    name = cls.canonicalize(name)
    cls.open(name)
    return _OpenDevice(name)


class Device(metaclass=_DeviceMeta):
  """tinygrad's Device: Device.DEFAULT names the device used when none is given ($DEV, else $DEVICE, else "CPU");
  Device.canonicalize(name) is the library's spelling of a device name (an unknown device raises); Device[name] opens
  one (Device[Device.DEFAULT].synchronize())."""
  DEFAULT: str = ""

  @staticmethod
  def canonicalize(device: Optional[str]) -> str: return Tensor.empty(0, device=device).device

  @staticmethod
  def available() -> List[Tuple[str, str]]:
    """Every device that opens on this machine, as (name, driver's description), CPUs first."""
    n = C.device_count()
    if n < 0: _raise_last("device_count")
    return [(C.device_name(i).decode(), C.device_description(i).decode()) for i in range(n)]

  @staticmethod
  def open(name: str) -> None:
    """Raises TinygradError saying why when `name` can't be used here (no driver, no such device)."""
    _ok(C.device_open(name.encode()), "device_open")


# ---- errors ----------------------------------------------------------------------------------------------------------
class TinygradError(RuntimeError):
  """A failing C call. .status is the code's name ("TG_ERROR_SHAPE", ...), .message the library's text.

  TinygradError(status, message) makes the subclass for the status, so each is also the builtin exception tinygrad raises
  for that kind of mistake: TG_ERROR_SHAPE -> ShapeError (a ValueError), TG_ERROR_INVALID_ARGUMENT -> InvalidArgumentError
  (a ValueError), TG_ERROR_OUT_OF_MEMORY -> OutOfMemoryError (a MemoryError). Every one is a TinygradError and a
  RuntimeError."""
  def __new__(cls, status: str = "TG_ERROR_INTERNAL", message: str = ""):
    if cls is TinygradError: cls = _ERROR_CLASSES.get(status, TinygradError)
    return super().__new__(cls, status, message)
  def __init__(self, status: str = "TG_ERROR_INTERNAL", message: str = ""):
    super().__init__(f"{status}: {message}")
    self.status, self.message = status, message
  def __reduce__(self): return (TinygradError, (self.status, self.message))


class ShapeError(TinygradError, ValueError):
  """TG_ERROR_SHAPE: shapes that don't match or broadcast, a bad axis or reshape, a shape too large for int64."""


class AxisError(ShapeError, IndexError):
  """TG_ERROR_SHAPE for an axis/dim out of range: also the IndexError tinygrad raises there (like numpy's AxisError)."""


class InvalidArgumentError(TinygradError, ValueError):
  """TG_ERROR_INVALID_ARGUMENT: a bad argument value (NaN into an int dtype, unknown name, released handle, ...)."""


class OutOfMemoryError(TinygradError, MemoryError):
  """TG_ERROR_OUT_OF_MEMORY: an allocation failed."""


_ERROR_CLASSES = {"TG_ERROR_SHAPE": ShapeError, "TG_ERROR_INVALID_ARGUMENT": InvalidArgumentError,
                  "TG_ERROR_OUT_OF_MEMORY": OutOfMemoryError}


class JitError(TinygradError):
  """tinygrad's JitError (tinygrad_c.engine.jit.JitError): a TinyJit call whose arguments don't match its capture (count,
  shape, dtype, device). JitError(status, message) is also the status's class, so a shape mismatch is a ShapeError too."""
  def __new__(cls, status: str = "TG_ERROR_INTERNAL", message: str = ""):
    if cls is JitError: cls = _JIT_ERROR_CLASSES.get(status, JitError)
    return Exception.__new__(cls, status, message)
  def __reduce__(self): return (JitError, (self.status, self.message))


_JIT_ERROR_CLASSES = {s: type("Jit" + c.__name__, (JitError, c), {"__module__": __name__, "__doc__": f"JitError and {c.__name__}."})
                      for s, c in _ERROR_CLASSES.items()}


def _raise_last(what: str):
  code = C.last_error()
  msg = (C.last_error_message() or b"").decode("utf-8", "replace")
  C.clear_error()
  if code == 0: raise TinygradError("TG_ERROR_INTERNAL", f"{what} failed without recording an error")
  raise TinygradError(C.status_name(code).decode(), msg)


def _ok(status: int, what: str):
  if status != 0: _raise_last(what)


def _made(handle: Optional[int], what: str) -> int:
  if not handle: _raise_last(what)
  return handle


_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_I64_MIN, _I64_MAX, _U64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1
_EXACT = 1 << 53  # ints up to this size survive the C API's double parameters exactly


def _index(v, what: str = "value") -> int:
  """operator.index(v): ints and numpy ints, never a float that would be truncated."""
  try: return operator.index(v)
  except TypeError: raise TypeError(f"{what} must be an int, got {type(v).__name__} {v!r}") from None


def _i64(v, what: str = "value") -> int:
  """A Python int for an int64_t parameter; ctypes would silently wrap one that doesn't fit."""
  i = _index(v, what)
  if not _I64_MIN <= i <= _I64_MAX: raise OverflowError(f"{what} {i} doesn't fit in int64")
  return i


def _i32(v, what: str = "value") -> int:
  i = _index(v, what)
  if not -2**31 <= i < 2**31: raise OverflowError(f"{what} {i} doesn't fit in int32")
  return i


def _i64s(vals: Sequence[int], what: str = "value"):
  return (ctypes.c_int64 * len(vals))(*[_i64(v, what) for v in vals])


def _bindings(values: Dict[str, int]):
  """{Variable name: value} as the (names, values, n) a const char* const* / const int64_t* pair takes."""
  return (ctypes.c_char_p * max(len(values), 1))(*[_cstr(k, "name") for k in values]), _i64s(list(values.values())), len(values)


def _c_text(fn, h, what: str) -> str:
  """A text result of the library (tg_expr_render, tg_uop_print, ...): asked once for its length, then whole."""
  n = fn(h, None, 0)
  if n < 0: _raise_last(what)
  buf = ctypes.create_string_buffer(n + 1)
  if fn(h, buf, n + 1) < 0: _raise_last(what)
  return buf.value.decode("utf-8", "replace")


def _cstr(s: Optional[str], what: str) -> Optional[bytes]:
  """A str for a const char* parameter; an embedded NUL would silently cut it short."""
  if s is None: return None
  if not isinstance(s, str): raise TypeError(f"{what} must be a str, got {type(s).__name__}")
  if "\0" in s: raise ValueError(f"{what} {s!r} contains a NUL character")
  return s.encode()


# ---- dtypes ----------------------------------------------------------------------------------------------------------
class DType:
  """A tinygrad dtype: .name ("float32"), .itemsize, .bitsize, .fmt (the struct format char, None for bfloat16), .min and
  .max (the dtype's range: ints exact, floats -inf/inf, bool False/True), .value (the tg_dtype code), .np (the numpy
  dtype of .numpy())."""
  __slots__ = ("value", "name", "itemsize", "np")
  _FMT = {0: "?", 1: "b", 2: "B", 3: "h", 4: "H", 5: "i", 6: "I", 7: "q", 8: "Q", 9: "e", 10: None, 11: "f", 12: "d"}
  def __init__(self, value: int, np_dtype):
    self.value, self.np = value, np.dtype(np_dtype)
    self.name, self.itemsize = C.dtype_name(value).decode(), C.dtype_size(value)
  def __repr__(self): return f"dtypes.{self.name}"
  def __reduce__(self): return (getattr, (dtypes, self.name))
  def __lt__(self, o: "DType"): return (self.value, self.itemsize) < (o.value, o.itemsize)
  @property
  def is_float(self) -> bool: return self.value >= 9
  @property
  def is_int(self) -> bool: return 1 <= self.value <= 8
  @property
  def is_unsigned(self) -> bool: return self.value in (2, 4, 6, 8)
  @property
  def bitsize(self) -> int: return 1 if self.value == 0 else self.itemsize * 8
  @property
  def fmt(self) -> Optional[str]: return DType._FMT[self.value]
  @property
  def min(self):
    """tinygrad's DType.min: the smallest value (an int for ints, -inf for floats, False for bool)."""
    if self.is_int: return 0 if self.is_unsigned else -2 ** (self.bitsize - 1)
    return -math.inf if self.is_float else False
  @property
  def max(self):
    """tinygrad's DType.max: the largest value (an int for ints, inf for floats, True for bool)."""
    if self.is_int: return 2 ** self.bitsize - 1 + self.min
    return math.inf if self.is_float else True


class _DTypesMeta(type):
  """dtypes.default_float is settable, as tinygrad's (its DEFAULT_FLOAT): a float DType or its name ("half", "HALF",
  "bfloat16"); every creation that defaults to a float reads it. DEFAULT_FLOAT in the environment sets it at import."""
  _default_float = None
  _local = threading.local()  # Context(DEFAULT_FLOAT=...) overrides, per thread, innermost last
  @property
  def default_float(cls) -> DType:
    over = getattr(cls._local, "stack", None)
    return over[-1] if over else cls._default_float
  @default_float.setter
  def default_float(cls, d):
    d = to_dtype(d) if not isinstance(d, str) else _dtype_from_name(d)
    if not d.is_float: raise ValueError(f"default_float must be a float dtype, got {d}")
    cls._default_float = d


class dtypes(metaclass=_DTypesMeta):
  bool = DType(0, np.bool_)
  int8, uint8, int16, uint16 = DType(1, np.int8), DType(2, np.uint8), DType(3, np.int16), DType(4, np.uint16)
  int32, uint32, int64, uint64 = DType(5, np.int32), DType(6, np.uint32), DType(7, np.int64), DType(8, np.uint64)
  float16, bfloat16, float32, float64 = DType(9, np.float16), DType(10, np.float32), DType(11, np.float32), DType(12, np.float64)
  half, float, double, int, uint = float16, float32, float64, int32, uint32
  char, uchar, short, ushort, long, ulong = int8, uint8, int16, uint16, int64, uint64
  default_int = int32
  all = (bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, bfloat16, float32, float64)
  floats = (float16, bfloat16, float32, float64)
  uints, sints = (uint8, uint16, uint32, uint64), (int8, int16, int32, int64)
  ints = uints + sints

  @staticmethod
  def from_np(d) -> DType:
    d = np.dtype(d)
    for dt in dtypes.all:
      if dt.np == d and dt is not dtypes.bfloat16: return dt
    raise TypeError(f"numpy dtype {d} has no tinygrad dtype")

  @staticmethod
  def from_py(x) -> DType:
    """tinygrad's dtype for a Python scalar: bool, default_float, or default_int -- int64 when the int doesn't fit
    int32 (uint64 past int64, like numpy); an int past uint64 is an OverflowError."""
    if isinstance(x, (bool, np.bool_)): return dtypes.bool
    if isinstance(x, (int, np.integer)): return _int_dtype_for(int(x), int(x))
    if isinstance(x, (float, np.floating)): return dtypes.default_float
    raise TypeError(f"no dtype for {type(x).__name__}")

  @staticmethod
  def is_float(d: DType) -> bool: return to_dtype(d).is_float

  @staticmethod
  def is_int(d: DType) -> bool: return to_dtype(d).is_int

  @staticmethod
  def is_unsigned(d: DType) -> bool: return to_dtype(d).is_unsigned

  @staticmethod
  def is_bool(d: DType) -> bool: return to_dtype(d) is dtypes.bool

  @staticmethod
  def finfo(d: DType) -> Tuple[int, int]:
    """(exponent bits, mantissa bits) of a float dtype, as tinygrad's dtypes.finfo."""
    d = to_dtype(d)
    if not d.is_float: raise ValueError(f"{d} is not a floating point type")
    return {9: (5, 10), 10: (8, 7), 11: (8, 23), 12: (11, 52)}[d.value]


_BY_VALUE = {d.value: d for d in dtypes.all}
_BY_NAME = {d.name: d for d in dtypes.all}


def _int_dtype_for(lo: int, hi: int) -> DType:
  """The dtype Python ints in [lo, hi] get: default_int (int32) when they fit, else int64, else uint64 (numpy's rule)."""
  if _I32_MIN <= lo and hi <= _I32_MAX: return dtypes.default_int
  if _I64_MIN <= lo and hi <= _I64_MAX: return dtypes.int64
  if 0 <= lo and hi <= _U64_MAX: return dtypes.uint64
  if lo < _I64_MIN or hi > _U64_MAX: raise OverflowError(f"int {lo if lo < _I64_MIN else hi} doesn't fit in int64 or uint64")
  raise OverflowError(f"ints {lo} and {hi} don't fit one integer dtype (int64 holds the first, uint64 the second)")


def _int_range(dt: "DType") -> Tuple[int, int]:
  info = np.iinfo(dt.np)
  return int(info.min), int(info.max)


def _check_int_fits(lo: int, hi: int, dt: "DType", what: str):
  """OverflowError unless every int in [lo, hi] fits dt (an int dtype): nothing wraps silently."""
  dmin, dmax = _int_range(dt)
  if lo < dmin or hi > dmax: raise OverflowError(f"{what} {lo if lo < dmin else hi} doesn't fit in {dt.name} [{dmin}, {dmax}]")


def _py_int(v, what: str) -> int:
  """int(v) as tinygrad's int() would do it: bools and ints as they are, floats truncated, NaN a ValueError, +-inf an
  OverflowError."""
  if isinstance(v, (bool, np.bool_)): return int(v)
  if isinstance(v, (int, np.integer)): return int(v)
  f = float(v)
  if math.isnan(f): raise ValueError(f"cannot convert float NaN to integer ({what})")
  if math.isinf(f): raise OverflowError(f"cannot convert float infinity to integer ({what})")
  return int(f)


def _dtype_from_name(name: str) -> DType:
  """A DType by its name or tinygrad alias, any case ("float32", "HALF", "int"); anything else is an AttributeError, as
  tinygrad's getattr(dtypes, name.lower())."""
  d = _BY_NAME.get(name) or getattr(dtypes, name.lower(), None) if name and not name.startswith("_") else None
  if not isinstance(d, DType): raise AttributeError(f"type object 'dtypes' has no attribute {name.lower()!r}")
  return d


def to_dtype(d) -> DType:
  """A DType from a DType, its name, a numpy dtype or a Python type (float, int, bool)."""
  if isinstance(d, DType): return d
  if isinstance(d, str): return _dtype_from_name(d)
  if d is float: return dtypes.default_float
  if d is int: return dtypes.default_int
  if d is bool: return dtypes.bool
  return dtypes.from_np(d)


def least_upper_dtype(a, b) -> DType:
  out = ctypes.c_int()
  _ok(C.dtype_promote(to_dtype(a).value, to_dtype(b).value, ctypes.byref(out)), "dtype_promote")
  return _BY_VALUE[out.value]


dtypes.default_float = os.getenv("DEFAULT_FLOAT") or dtypes.float32


# ---- tensors ---------------------------------------------------------------------------------------------------------
Scalar = Union[int, float, bool]
# a tuple of devices (a sharded tensor's, or a whole copy on each) crosses the C API as the names joined by ','
_enc = lambda device: _cstr(",".join(device) if isinstance(device, (tuple, list)) else device, "device")


def _shape_args(shape) -> Tuple[int, ...]:
  """tinygrad's argfix: (2, 3) or ((2, 3),) -> (2, 3); a tuple next to more arguments is a ValueError."""
  if shape and isinstance(shape[0], (tuple, list)):
    if len(shape) != 1: raise ValueError(f"bad arg {shape}")
    return tuple(shape[0])
  return tuple(shape)


def _to_bf16_bits(a: np.ndarray) -> np.ndarray:
  """float32 -> bfloat16 bit patterns, rounding to nearest even (NaN stays NaN)."""
  f = np.asarray(a, dtype=np.float32).reshape(-1)  # 1-d: numpy scalars would promote the uint32 math to float
  u, k16 = f.view(np.uint32), np.uint32(16)
  r = ((u + np.uint32(0x7FFF) + ((u >> k16) & np.uint32(1))) >> k16).astype(np.uint16)  # no overflow below the NaNs
  return np.where(np.isnan(f), np.uint16(0x7FC0), r).reshape(np.shape(a))


_NUMBER = (bool, int, float, np.bool_, np.integer, np.floating)


def _from_objects(obj: np.ndarray, dt: Optional[DType]) -> np.ndarray:
  """Python numbers numpy couldn't type (ints past 64 bits, or ints that fit only int64 and uint64 together): floats if
  there is one or dt is a float, else exact ints checked against dt (or the dtype inferred for them)."""
  flat = obj.reshape(-1).tolist()
  if not all(isinstance(x, _NUMBER) for x in flat): raise TypeError(f"can't make a Tensor from {obj.dtype} data")
  if (dt is not None and dt.is_float) or any(isinstance(x, (float, np.floating)) for x in flat):
    return np.array([float(x) for x in flat], dtype=np.float64).reshape(obj.shape)  # float(): OverflowError past double
  if dt is dtypes.bool: return np.array([bool(x) for x in flat], dtype=np.bool_).reshape(obj.shape)
  ints = [int(x) for x in flat]
  lo, hi = min(ints), max(ints)
  if dt is None: dt = _int_dtype_for(lo, hi)
  else: _check_int_fits(lo, hi, dt, "int")
  return np.array(ints, dtype=dt.np).reshape(obj.shape)


def _from_py(data, dt: Optional[DType]) -> Tuple[np.ndarray, DType]:
  """Python scalars and (nested) lists as tinygrad types them: floats -> float32, bools -> bool, ints -> int32, or int64
  when a value doesn't fit int32 (uint64 for values past int64, as numpy), never a silent wrap: ints past that are an
  OverflowError. With dt given, the values must fit it: ints out of its range are an OverflowError, and floats into an
  int dtype convert like int() (truncated; NaN a ValueError, inf an OverflowError). Returns the array and its dtype."""
  try: arr = np.array(data)
  except OverflowError: arr = np.array(data, dtype=object)  # numpy 2 refuses ints past 64 bits
  if arr.dtype == object: arr = _from_objects(arr, dt)
  elif arr.dtype.kind == "f" and arr.size and np.abs(arr).max() >= 2.0 ** 63:
    arr = _from_objects(np.array(data, dtype=object), dt)  # numpy makes [-1, 2**63] float64: were they all ints?
  if arr.dtype.kind not in "biuf": raise TypeError(f"can't make a Tensor from {arr.dtype} data")
  if dt is None:
    if arr.dtype.kind == "f": return arr.astype(np.float32), dtypes.default_float
    if arr.dtype.kind == "b": return arr, dtypes.bool
    dt = _int_dtype_for(int(arr.min()), int(arr.max())) if arr.size else dtypes.default_int
    return arr.astype(dt.np), dt
  if dt.is_int and arr.size:
    if arr.dtype.kind in "iu": _check_int_fits(int(arr.min()), int(arr.max()), dt, "int")
    elif arr.dtype.kind == "f":
      if np.isnan(arr).any(): raise ValueError(f"cannot convert float NaN to integer ({dt.name})")
      if np.isinf(arr).any(): raise OverflowError(f"cannot convert float infinity to integer ({dt.name})")
      _check_int_fits(math.trunc(float(arr.min())), math.trunc(float(arr.max())), dt, "value")
  return arr, dt  # still float64 for floats: converted once, to dt


def _attrs(obj) -> dict:
  """obj's attributes other than its handle: its __dict__ and the slots of its classes."""
  out = dict(getattr(obj, "__dict__", {}))
  for cls in type(obj).__mro__:
    for k in cls.__dict__.get("__slots__", ()):
      if k not in ("_h", "__dict__", "__weakref__") and hasattr(obj, k): out[k] = getattr(obj, k)
  out.pop("_h", None)
  return out


class _Owned:
  """One reference to a library handle in `_h`, dropped with the class's `_release` when the object is collected (a
  class attribute, so it is still found at interpreter shutdown).

  Copies never share a reference: copy.copy gives a new object holding its own reference to the same library object
  (the class's `_retain`), and a class without one raises TypeError, as deepcopy and pickle do unless the class says
  how to copy its contents (Tensor, the nn modules)."""
  __slots__ = ()
  _retain = None  # the tg_*_retain of the handle's type, where copy.copy may share the library object
  _no_copy = "its state lives in the library"  # why deepcopy and pickle (and copy.copy without _retain) are refused

  def __copy__(self):
    retain = type(self)._retain
    if retain is None: raise TypeError(f"cannot copy {type(self).__name__} objects: {self._no_copy}")
    new = object.__new__(type(self))
    for k, v in _attrs(self).items(): object.__setattr__(new, k, v)
    object.__setattr__(new, "_h", _made(retain(self._h), f"{type(self).__name__} copy"))
    return new

  def __deepcopy__(self, memo): raise TypeError(f"cannot deepcopy {type(self).__name__} objects: {self._no_copy}")
  def __reduce_ex__(self, protocol): raise TypeError(f"cannot pickle {type(self).__name__} objects: {self._no_copy}")

  def _deepcopy_by_reduce(self, memo):
    """deepcopy as pickle would rebuild self, its parts deep-copied (tensors get their own data)."""
    fn, args, *rest = self.__reduce_ex__(4)
    new = fn(*copy.deepcopy(args, memo))
    memo[id(self)] = new
    if rest and rest[0]:
      for k, v in copy.deepcopy(rest[0], memo).items(): object.__setattr__(new, k, v)
    return new

  def __del__(self):
    h = getattr(self, "_h", None)
    if h:
      self._h = None
      try: type(self)._release(h)
      except Exception: pass


class _TensorMeta(type):
  """Tensor.training is the library's TRAINING option (tinygrad's Tensor.training): dropout, BatchNorm's batch statistics
  and running updates, and optimizer steps act only while it is True, in Python and C alike."""
  @property
  def training(cls) -> bool: return bool(get_option("TRAINING"))
  @training.setter
  def training(cls, on: bool) -> None: set_option("TRAINING", 1 if on else 0)
  @training.deleter
  def training(cls) -> None: set_option("TRAINING", None)  # back to the environment's value (what pytest's monkeypatch undo does)


class _Train(contextlib.ContextDecorator):
  """Tensor.train(mode=True): a context manager and decorator setting Tensor.training for a block, as tinygrad's. The
  value holds for the calling thread only (tg_option_push), so threads training and evaluating at once don't mix."""
  def __init__(self, mode: bool = True): self.mode = mode
  def __enter__(self): _ok(C.option_push(b"TRAINING", b"1" if self.mode else b"0"), "option_push")
  def __exit__(self, *exc): _ok(C.option_pop(), "option_pop")


# Every live Tensor object by id (tinygrad's all_tensors): backward gives each float one the loss depends on a grad, as
# current tinygrad does, unless its requires_grad was set False (_NO_GRAD).
_LIVE: Dict[int, "weakref.ref"] = {}
_NO_GRAD: Dict[int, "weakref.ref"] = {}


def _live(t) -> None:
  key = id(t)
  _LIVE[key] = weakref.ref(t, lambda _r, key=key: _LIVE.pop(key, None))


class Tensor(_Owned, metaclass=_TensorMeta):
  """A lazy tensor over a tg_tensor handle. Nothing runs until .realize() / .numpy()."""
  __slots__ = ("_h", "__weakref__")
  _release, _retain = C.tensor_release, C.tensor_retain
  train = staticmethod(_Train)

  # copy.copy: the same tensor (another reference: it shares data, requires_grad and grad, as a shallow copy of a
  # tinygrad Tensor shares its uop). deepcopy and pickle: the realized data, dtype, shape, device, requires_grad and grad,
  # rebuilt as a new tensor with its own buffer (tinygrad pickles a realized Buffer's bytes the same way).
  def __reduce_ex__(self, protocol):
    dt, shape = self.dtype, self.shape
    raw = bytearray(self.numel() * dt.itemsize)
    if raw: _ok(C.tensor_to_data(self._h, (ctypes.c_char * len(raw)).from_buffer(raw), len(raw)), "tensor_to_data")
    data = pickle.PickleBuffer(raw) if protocol >= 5 else bytes(raw)
    return _tensor_unpickle, (data, dt.name, shape, self.device, self.requires_grad, self.grad)

  def __deepcopy__(self, memo): return self._deepcopy_by_reduce(memo)

  def __init__(self, data, dtype=None, device: Optional[str] = None, requires_grad: Optional[bool] = None):
    # tinygrad's order is Tensor(data, device, dtype): a device name (or a DType) in the other's place is taken as meant
    if isinstance(device, DType) or (isinstance(dtype, str) and _is_device_name(dtype)): dtype, device = device, dtype
    if isinstance(data, Tensor):
      self._h = _made(C.tensor_retain(data._h), "tensor_retain")
      _live(self)
      if dtype is not None and to_dtype(dtype) is not data.dtype: self._swap(C.tensor_cast(data._h, to_dtype(dtype).value))
      if requires_grad is not None: self.requires_grad = requires_grad
      return
    if isinstance(data, Expr) and not isinstance(data, BoundExpr):  # tinygrad fails when such a tensor is read
      raise TinygradError("TG_ERROR_INVALID_ARGUMENT", f"Tensor({data}): the Variable is unbound; bind it (v.bind(n)) to make a tensor of its value")
    if isinstance(data, BoundExpr) and getattr(data, "_binds", None):
      # symbolic: kernels read the Variables' values, so a TinyJit replays it at each call's binding
      self._h = _made(C.tensor_from_expr(data._e._h, *_bindings(data._binds),
                                         (to_dtype(dtype) if dtype is not None else dtypes.default_int
                                          if -2**31 <= data.vmin and data.vmax < 2**31 else dtypes.int64).value, _enc(device)),
                      "tensor_from_expr")
      _live(self)
      if requires_grad is not None: self.requires_grad = requires_grad
      return
    if isinstance(data, Path): data = data.read_bytes()  # tinygrad maps the file (a DISK tensor); here it is read
    if isinstance(data, (bytes, bytearray, memoryview)): data = np.frombuffer(bytes(data), np.uint8)  # uint8, as tinygrad
    if isinstance(data, np.ndarray): arr, dt = data, to_dtype(dtype) if dtype is not None else dtypes.from_np(data.dtype)
    else: arr, dt = _from_py(data, to_dtype(dtype) if dtype is not None else None)
    if dt is dtypes.bfloat16: buf = _to_bf16_bits(arr.astype(np.float32))
    else: buf = np.asarray(arr, dtype=dt.np, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    shape = _i64s(buf.shape)
    self._h = _made(C.tensor_from_data(buf.ctypes.data, buf.nbytes, dt.value, shape, buf.ndim, _enc(device)),
                    "tensor_from_data")
    _live(self)
    if requires_grad is not None: self.requires_grad = requires_grad

  @classmethod
  def _wrap(cls, handle: Optional[int], what: str) -> "Tensor":
    t = object.__new__(cls)
    t._h = _made(handle, what)
    _live(t)
    return t

  def _swap(self, handle):
    new = _made(handle, "tensor")
    old, self._h = self._h, new
    C.tensor_release(old)

  # -- creation
  @staticmethod
  def _make(name: str, shape, dtype, device, *extra, requires_grad: Optional[bool] = None):
    shape = shape_in = _shape_args(shape)
    _unbound_check(shape, name)
    # a symbolic dim (Tensor.zeros(v.bind(3), 4), Tensor.full((t, p + t), x)): made at its largest size, then shrunk to
    # it (shrink_var; shrink_expr binding an expression's Variables)
    sym = [i for i, d in enumerate(shape) if _symbolic_size(d)]
    shape = tuple(d.vmax if i in sym else d for i, d in enumerate(shape))
    fn = getattr(C, f"tensor_{name}")
    t = Tensor._wrap(fn(_i64s(shape, "shape dim"), len(shape), *extra, to_dtype(dtype).value, _enc(device)), f"tensor_{name}")
    for i in sym:
      t = t._shrink_bound(i, shape_in[i])
    return t._rg(requires_grad)

  def _rg(self, requires_grad: Optional[bool]) -> "Tensor":
    if requires_grad is not None: self.requires_grad = requires_grad
    return self

  @staticmethod
  def empty(*shape, dtype=None, device=None, requires_grad=None) -> "Tensor":
    return Tensor._make("empty", shape, dtype or dtypes.default_float, device, requires_grad=requires_grad)

  @staticmethod
  def invalids(*shape, device=None, dtype=None) -> "Tensor":
    """tinygrad's anonymous buffer whose contents are not to be read before written: here an empty tensor."""
    return Tensor.empty(*shape, dtype=dtype, device=device)

  @staticmethod
  def zeros(*shape, dtype=None, device=None, requires_grad=None) -> "Tensor":
    return Tensor._make("zeros", shape, dtype or dtypes.default_float, device, requires_grad=requires_grad)

  @staticmethod
  def ones(*shape, dtype=None, device=None, requires_grad=None) -> "Tensor":
    return Tensor._make("ones", shape, dtype or dtypes.default_float, device, requires_grad=requires_grad)

  @staticmethod
  def full(shape, fill_value: Scalar, dtype=None, device=None, buffer=True, requires_grad=None) -> "Tensor":
    """Filled with fill_value. buffer: tinygrad's choice between a buffer and a broadcast constant; either way this is a
    lazy constant that takes memory only when realized, so the values are the same."""
    return Tensor._full(shape, fill_value, dtype, device)._rg(requires_grad)

  @staticmethod
  def _full(shape, fill_value: Scalar, dtype=None, device=None) -> "Tensor":
    """Filled with fill_value. Without dtype it is the value's (from_py: an int past int32 makes int64). Into an int
    dtype the value converts like int() (NaN: ValueError, inf: OverflowError) and must fit the dtype (OverflowError)."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    dt = to_dtype(dtype) if dtype is not None else dtypes.from_py(fill_value)
    if dt.is_int:
      v = _py_int(fill_value, f"fill value for {dt.name}")
      _check_int_fits(v, v, dt, "fill value")
      if abs(v) > _EXACT:  # tg_tensor_full takes a double: go through an exact 0-d tensor instead
        return Tensor._make("zeros", shape, dt, device).add(Tensor(np.array(v, dtype=dt.np), device=device))
      value = float(v)
    elif dt is dtypes.bool: value = 1.0 if fill_value else 0.0
    else: value = float(fill_value)  # an int past double's range: OverflowError
    return Tensor._make("full", shape, dt, device, value)

  @staticmethod
  def arange(start, stop=None, step=1, dtype=None, device=None, requires_grad=None) -> "Tensor":
    return Tensor._arange(start, stop, step, dtype, device)._rg(requires_grad)

  @staticmethod
  def _arange(start, stop=None, step=1, dtype=None, device=None) -> "Tensor":
    """[start, stop) by step. All-int arguments make default_int, or int64 when a value doesn't fit int32; into an int
    dtype every value must fit it (OverflowError). Ints past 2**53 are exact (not rounded through a double)."""
    if stop is None: start, stop = 0, start
    dt = to_dtype(dtype) if dtype is not None else None
    if all(isinstance(x, (int, np.integer)) for x in (start, stop, step)):
      start, stop, step = int(start), int(stop), int(step)
      n = max(0, -((start - stop) // step)) if step else 0  # ceil((stop - start) / step); step 0 is the library's error
      last = start + (n - 1) * step if n else start
      if dt is None: dt = _int_dtype_for(min(start, last), max(start, last))
      elif dt.is_int and n: _check_int_fits(min(start, last), max(start, last), dt, "arange value")
      if dt.is_int and n and max(abs(start), abs(stop), abs(step), n) > _EXACT: return Tensor._arange_exact(start, step, n, dt, device)
    elif dt is None: dt = dtypes.default_float
    return Tensor._wrap(C.tensor_arange(float(start), float(stop), float(step), dt.value, _enc(device)), "tensor_arange")

  @staticmethod
  def _arange_exact(start: int, step: int, n: int, dt: DType, device) -> "Tensor":
    """start + i*step for i < n, exactly: computed in the unsigned dtype of dt's width (wrapping arithmetic is exact
    modulo 2**bits, and every result fits dt), then cast."""
    udt = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[dt.itemsize]
    mask = (1 << (8 * dt.itemsize)) - 1
    n = _i64(n, "arange length")
    if n <= _EXACT: idx = Tensor.arange(0, n, 1, dtype=udt, device=device)
    else:  # i = hi * 2**26 + lo, each part an exact double
      b = 1 << 26
      a = -(-n // b)
      hi = Tensor.arange(0, a, 1, dtype=udt, device=device).reshape(a, 1) * b
      idx = (hi + Tensor.arange(0, b, 1, dtype=udt, device=device).reshape(1, b)).reshape(a * b).shrink(((0, n),))
    return (idx * (step & mask) + (start & mask)).cast(dt)

  @staticmethod
  def eye(n: int, m: Optional[int] = None, dtype=None, device=None, requires_grad=None) -> "Tensor":
    if m is not None: m = _i64(m, "m")
    t = Tensor._wrap(C.tensor_eye(_i64(n, "n"), to_dtype(dtype or dtypes.default_float).value, _enc(device)), "tensor_eye")
    if m is not None and m != n: t = t.shrink(((0, n), (0, m))) if m < n else t.pad(((0, 0), (0, m - n)))
    return t._rg(requires_grad)

  # -- random numbers (threefry: the numbers depend on the seed and on how many random tensors were made since)
  @staticmethod
  def manual_seed(seed: int = 0) -> None:
    """Seed every later random tensor (process-wide). seed must fit uint64."""
    seed = _index(seed, "seed")
    if not 0 <= seed <= _U64_MAX: raise OverflowError(f"seed {seed} doesn't fit in uint64")
    C.manual_seed(seed)

  @staticmethod
  def rand(*shape, dtype=None, device=None, contiguous=True, requires_grad=None) -> "Tensor":
    """Uniform in [0, 1). contiguous: tinygrad's choice to realize its random bits into a buffer; ours always are."""
    return Tensor._make("rand", shape, dtype or dtypes.default_float, device, requires_grad=requires_grad)

  @staticmethod
  def randn(*shape, dtype=None, device=None, requires_grad=None) -> "Tensor":
    """Standard normal."""
    return Tensor._make("randn", shape, dtype or dtypes.default_float, device, requires_grad=requires_grad)

  @staticmethod
  def uniform(*shape, low=0.0, high=1.0, dtype=None, device=None, requires_grad=None) -> "Tensor":
    """Uniform in [low, high)."""
    if not low < high: raise ValueError(f"Tensor.uniform requires low < high, got low={low}, high={high}")
    return Tensor._make("uniform", shape, dtype or dtypes.default_float, device, float(low), float(high), requires_grad=requires_grad)

  @staticmethod
  def normal(*shape, mean=0.0, std=1.0, dtype=None, device=None, requires_grad=None) -> "Tensor":
    """mean + std * randn."""
    if std < 0: raise ValueError(f"Tensor.normal requires std >= 0, got std={std}")
    return Tensor._make("normal", shape, dtype or dtypes.default_float, device, float(mean), float(std), requires_grad=requires_grad)

  @staticmethod
  def randint(*shape, low=0, high=10, dtype=dtypes.int32, device=None) -> "Tensor":
    """Ints uniform in [low, high); every value must fit dtype (an int dtype)."""
    low, high, dt = _i64(low, "low"), _i64(high, "high"), to_dtype(dtype)
    if not dt.is_int: raise TypeError(f"dtype={dt} must be int")
    if low >= high: raise ValueError(f"Tensor.randint requires low < high, got low={low}, high={high}")
    _check_int_fits(low, high - 1, dt, "randint bound")
    return Tensor._make("randint", shape, dt, device, low, high)

  def rand_like(self, dtype=None, device=None, requires_grad=None) -> "Tensor":
    if dtype is None and device is None: return Tensor._wrap(C.tensor_rand_like(self._h), "tensor_rand_like")._rg(requires_grad)
    return Tensor.rand(*self.shape, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

  def randn_like(self, dtype=None, device=None, requires_grad=None) -> "Tensor":
    if dtype is None and device is None: return Tensor._wrap(C.tensor_randn_like(self._h), "tensor_randn_like")._rg(requires_grad)
    return Tensor.randn(*self.shape, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

  # -- autograd
  @property
  def requires_grad(self) -> bool:
    r = C.tensor_requires_grad(self._h)
    if r < 0: _raise_last("tensor_requires_grad")
    return bool(r)

  @requires_grad.setter
  def requires_grad(self, value: Optional[bool]):
    """True: takes part in every backward. None (the default): as tinygrad's tensors, it takes a grad from a backward
    that depends on it. False: never takes a grad from backward (gradient() still gives one)."""
    _ok(C.tensor_set_requires_grad(self._h, int(bool(value))), "tensor_set_requires_grad")
    if value is False: _NO_GRAD[id(self)] = weakref.ref(self, lambda _r, key=id(self): _NO_GRAD.pop(key, None))
    else: _NO_GRAD.pop(id(self), None)

  def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
    self.requires_grad = requires_grad
    return self

  @property
  def grad(self) -> Optional["Tensor"]:
    """The accumulated gradient (a lazy Tensor), or None when there is none."""
    h = C.tensor_grad(self._h)
    if h: return Tensor._wrap(h, "tensor_grad")
    if C.last_error() != 1: _raise_last("tensor_grad")  # TG_ERROR_INVALID_ARGUMENT is "no gradient"
    C.clear_error()
    return None

  @grad.setter
  def grad(self, g: Optional["Tensor"]):
    _ok(C.tensor_set_grad(self._h, None if g is None else g._h), "tensor_set_grad")

  def _seeded_loss(self, gradient: Optional["Tensor"]) -> "Tensor":
    # with an upstream gradient g, d(sum(self * g))/dx is the vector-Jacobian product the C API computes for scalar losses
    return self if gradient is None else (self * Tensor(gradient).detach()).sum()

  def backward(self, gradient: Optional["Tensor"] = None) -> "Tensor":
    """Add d self / d t to t.grad for every float tensor t that self depends on, as current tinygrad (requires_grad=True ones
    and every live Tensor object, except those whose requires_grad was set False); self must be a scalar unless gradient
    is given. Returns self."""
    loss = self._seeded_loss(gradient)  # kept alive across the call: a temporary's handle would be released first
    also = [t for r in list(_LIVE.values()) if (t := r()) is not None and id(t) not in _NO_GRAD]
    arr = (ctypes.c_void_p * max(len(also), 1))(*[t._h for t in also])
    _ok(C.tensor_backward_also(loss._h, arr, len(also)), "tensor_backward_also")
    return self

  def gradient(self, *targets: "Tensor", gradient: Optional["Tensor"] = None) -> list:
    """[d self / d t for t in targets] (self a scalar unless gradient is given), whatever the requires_grad flags."""
    loss = self._seeded_loss(gradient)
    n = len(targets)
    wrt, out = (ctypes.c_void_p * max(n, 1))(*[t._h for t in targets]), (ctypes.c_void_p * max(n, 1))()
    _ok(C.tensor_gradient(loss._h, wrt, n, out), "tensor_gradient")
    return [Tensor._wrap(out[i], "tensor_gradient") for i in range(n)]

  def detach(self) -> "Tensor": return Tensor._wrap(C.tensor_detach(self._h), "tensor_detach")

  def clone(self, device: Optional[str] = None) -> "Tensor":
    """A copy in a buffer of its own (on `device` if given), as tinygrad: gradients flow through to self; a grad comes
    along (cloned)."""
    ret = Tensor._wrap(C.tensor_clone(self._h), "tensor_clone")
    if device is not None and device != ret.device: ret = ret.to(device)
    if self.grad is not None: ret.grad = self.grad.clone(device)
    return ret

  def replace(self, x: "Tensor") -> "Tensor":
    """This tensor takes x's data (and graph); only the shapes must match (dtype and device may differ), as tinygrad.
    In place: every reference to this tensor sees it, a module's parameter included."""
    if not isinstance(x, Tensor): raise TypeError(f"replace takes a Tensor, got {type(x).__name__}")
    if self.shape != x.shape: raise AssertionError(f"replace shape mismatch {self.shape} != {x.shape}")
    _ok(C.tensor_replace(self._h, x._h), "tensor_replace")
    return self

  # -- properties
  @property
  def shape(self) -> Tuple[int, ...]:
    n = C.tensor_ndim(self._h)
    if n < 0: _raise_last("tensor_ndim")
    out = (ctypes.c_int64 * max(n, 1))()
    _ok(C.tensor_shape(self._h, out, n), "tensor_shape")
    vs = (ctypes.c_void_p * max(n, 1))()
    _ok(C.tensor_shape_vars(self._h, vs, n), "tensor_shape_vars")
    if not any(vs[:n]): return tuple(out[:n])
    # a dim bound to a Variable: the bound Variable, as tinygrad's shape holds it
    return tuple(BoundExpr(Expr._wrap(vs[i], "tensor_shape_vars"), out[i]) if vs[i] else out[i] for i in range(n))

  @property
  def ndim(self) -> int: return len(self.shape)

  def numel(self) -> int:
    n = C.tensor_numel(self._h)
    if n < 0: _raise_last("tensor_numel")
    return n

  def __len__(self):
    if not (s := self.shape): raise TypeError("len() of a 0-d tensor")
    return s[0]

  @property
  def dtype(self) -> DType:
    out = ctypes.c_int()
    _ok(C.tensor_dtype(self._h, ctypes.byref(out)), "tensor_dtype")
    return _BY_VALUE[out.value]

  @property
  def device(self) -> Union[str, Tuple[str, ...]]:
    """The device's name; a tensor sharded over several devices gives the tuple of their names, as tinygrad."""
    d = C.tensor_device(self._h)
    if d is None: _raise_last("tensor_device")
    d = d.decode()
    return tuple(d.split(",")) if "," in d else d

  def to(self, device: Union[str, Tuple[str, ...]]) -> "Tensor":
    """A copy on `device` ("CL", "CUDA", "CPU", ...), realized now; gradients don't flow back across it. A sharded
    tensor is gathered whole on `device`; a tuple of devices puts a whole copy on each."""
    return Tensor._wrap(C.tensor_to(self._h, _enc(device)), "tensor_to")

  def shard(self, devices: Tuple[str, ...], axis: Optional[int] = None) -> "Tensor":
    """This tensor spread over `devices`: split along `axis` (ceil(size / n) per device, the last ones smaller), or a
    whole copy on each (axis None). Ops between tensors sharded alike run on each device; see docs/distributed.md."""
    devs = (devices,) if isinstance(devices, str) else tuple(devices)
    if axis is not None and not isinstance(axis, int): raise TypeError(f"shard: axis must be an int or None, got {type(axis).__name__}")
    if axis is not None and axis < 0: axis += self.ndim  # -1 is the last dim here, as tinygrad; the C API's -1 copies whole
    if axis is not None and not 0 <= axis < max(self.ndim, 1):
      raise IndexError(f"shard: axis {axis} is out of range for shape {self.shape}")
    arr = (ctypes.c_char_p * max(len(devs), 1))(*[_cstr(d, "device") for d in devs])
    return Tensor._wrap(C.tensor_shard(self._h, arr, len(devs), -1 if axis is None else axis), "tensor_shard")

  def shard_(self, devices: Tuple[str, ...], axis: Optional[int] = None) -> "Tensor":
    """shard in place: this tensor (every reference to it, a module's parameter too) is now the sharded one."""
    return self.replace(self.shard(devices, axis))

  def shard_like(self, like: "Tensor") -> "Tensor":
    """This tensor split as `like` is (its devices, axis and bounds)."""
    return Tensor._wrap(C.tensor_shard_like(self._h, like._h), "tensor_shard_like")

  def __repr__(self): return f"<Tensor shape={self.shape} dtype={self.dtype} device={self.device!r}>"
  def __bool__(self): raise TypeError("__bool__ on Tensor is not defined")
  __hash__ = object.__hash__
  __array_ufunc__ = None  # ndarray <op> Tensor defers to Tensor's reflected operators

  # -- realization and data
  def realize(self, *lst: "Tensor", do_update_stats: bool = True) -> "Tensor":
    """Runs what self (and lst, scheduled together for the fewest kernels) needs; returns self, as tinygrad."""
    if lst: Tensor.realize_many(self, *lst)
    else: _ok(C.tensor_realize(self._h), "tensor_realize")
    return self

  @staticmethod
  def realize_many(*ts: "Tensor"):
    arr = (ctypes.c_void_p * len(ts))(*[t._h for t in ts])
    _ok(C.tensor_realize_many(arr, len(ts)), "tensor_realize_many")

  def sequential(self, ll) -> "Tensor":
    """Each callable of ll applied in turn: x.sequential([f, g]) is g(f(x)), as tinygrad."""
    return functools.reduce(lambda x, f: f(x), ll, self)

  # -- tinygrad's smaller conveniences
  def allclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan=False) -> "Tensor":
    """A 0-d bool tensor: isclose everywhere (tinygrad returns a Tensor here, not a Python bool)."""
    return self.isclose(other, rtol=rtol, atol=atol, equal_nan=equal_nan).all()

  def double(self) -> "Tensor": return self.cast(dtypes.float64)
  def bfloat16(self) -> "Tensor": return self.cast(dtypes.bfloat16)
  def long(self) -> "Tensor": return self.cast(dtypes.int64)
  def short(self) -> "Tensor": return self.cast(dtypes.int16)
  def element_size(self) -> int: return self.dtype.itemsize
  @property
  def max_shape(self) -> Tuple[int, ...]:
    """The shape with each symbolic dim at its Variable's largest value, as tinygrad."""
    return tuple(d.vmax if isinstance(d, BoundExpr) else d for d in self.shape)
  def max_numel(self) -> int: return math.prod(self.max_shape)

  @staticmethod
  def const(b, dtype=None) -> "Tensor":
    """A 0-d tensor of the Python scalar b (tinygrad's Tensor.const; dtype from the value when not given)."""
    return Tensor._full((), b, dtype)
  def ufix(self, x) -> "Tensor":
    """x as a Tensor: a Tensor as is, a scalar as a 0-d tensor of self's dtype (a float into an int self: default_float)."""
    if isinstance(x, Tensor): return x
    dt = dtypes.default_float if isinstance(x, float) and not self.dtype.is_float else self.dtype
    return Tensor._full((), x, dt, self.device)
  def usum(self, *xs) -> "Tensor":
    """self + each of xs (or of one list); `|` for bool, as tinygrad."""
    return functools.reduce(operator.or_ if self.dtype is dtypes.bool else operator.add, xs[0] if len(xs) == 1 and isinstance(xs[0], (list, tuple)) else xs, self)
  def uprod(self, *xs) -> "Tensor":
    """self * each of xs (or of one list); `&` for bool, as tinygrad."""
    return functools.reduce(operator.and_ if self.dtype is dtypes.bool else operator.mul, xs[0] if len(xs) == 1 and isinstance(xs[0], (list, tuple)) else xs, self)

  @property
  def is_param(self) -> bool:
    """tinygrad's flag: False for the tensors an optimizer leaves alone (a module's running statistics, or any marked by
    is_param_(False)); True otherwise."""
    from .nn.optim import _is_buffer
    return not _is_buffer(self)
  def is_param_(self, is_param: bool = True) -> "Tensor":
    """Marks self a param or (False) a buffer that optimizers keep out of their params; returns self, as tinygrad."""
    from .nn.optim import _mark_buffer
    _mark_buffer(self, not is_param)
    return self
  def nbytes(self) -> int: return self.numel() * self.dtype.itemsize
  def is_floating_point(self) -> bool: return self.dtype.is_float
  def eq(self, x) -> "Tensor": return self == x
  def ne(self, x) -> "Tensor": return self != x

  def size(self, dim: Optional[int] = None):
    """The shape, or its size along dim (negative counts from the end)."""
    if dim is None: return self.shape
    if not -self.ndim <= dim < max(self.ndim, 1): raise IndexError(f"dim {dim} is out of range for {self.ndim} dims")
    return self.shape[dim]

  def empty_like(self, dtype=None, device=None) -> "Tensor":
    return Tensor.empty(self.shape, dtype=self.dtype if dtype is None else dtype, device=self.device if device is None else device)

  def const_like(self, b, dtype=None) -> "Tensor": return self.full_like(b, dtype=dtype)

  def shrink_to(self, shape, *args) -> "Tensor":
    """The first shape[i] elements along each dim (None keeps a dim)."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape, *args)
    return self.shrink(tuple(None if n is None else (0, n) for n in shape))

  def pad_to(self, shape, *args, value=0) -> "Tensor":
    """Padded at the end of each dim up to shape (None keeps a dim) with value."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape, *args)
    if len(shape) != self.ndim: raise ValueError(f"pad_to: {len(shape)} sizes for {self.ndim} dims")
    pads = tuple((0, 0 if n is None else n - s) for s, n in zip(self.shape, shape))
    return self if all(p == (0, 0) for p in pads) else self.pad(pads, value=value)

  def to_(self, device: str) -> "Tensor":
    """Moves this tensor (and its grad) to device in place: every reference to it sees the move (tinygrad's to_)."""
    g = self.grad
    self.replace(self.to(device))
    if g is not None: self.grad = g.to(device)
    return self

  def data(self) -> memoryview:
    """The realized values as a memoryview of this tensor's shape (bfloat16 as its raw 16-bit words)."""
    return memoryview(np.ascontiguousarray(self.numpy()))

  @staticmethod
  def from_blob(ptr: int, shape, dtype=None, device=None, requires_grad=None) -> "Tensor":
    """A tensor of the values at host address ptr. Unlike tinygrad (which wraps the memory), the values are copied when
    this is called: the memory need not outlive the tensor, and later writes to it are not seen."""
    dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
    shape = _shape_args(shape)
    n = math.prod(shape) * dt.itemsize
    raw = (ctypes.c_char * n).from_address(ptr) if n else b""
    arr = np.frombuffer(bytes(raw), dtype=np.uint16 if dt is dtypes.bfloat16 else dt.np).reshape(shape)
    if dt is dtypes.bfloat16: return Tensor(arr, device=device, requires_grad=requires_grad).bitcast(dtypes.bfloat16)
    return Tensor(arr, dtype=dt, device=device, requires_grad=requires_grad)

  @staticmethod
  def from_url(url: str, gunzip: bool = False, **kwargs) -> "Tensor":
    """The bytes at url (fetched once into the download cache, see tinygrad_c.helpers.fetch) as a uint8 tensor."""
    from .helpers import fetch
    return Tensor(np.fromfile(fetch(url, gunzip=gunzip), dtype=np.uint8), **kwargs)

  def _linalg_input(self, fn: str) -> "Tensor":
    if self.ndim < 2: raise AssertionError(f"expected two or more dimensions, got {self.ndim}")  # tinygrad asserts
    # tinygrad computes an int or bool matrix in its default float (the reflectors promote it); the C call wants a float
    return self if dtypes.is_float(self.dtype) else self.cast(dtypes.default_float)

  def qr(self) -> Tuple["Tensor", "Tensor"]:
    """(Q, R) of the last two dims (m, n), batched: Q (m, m) orthogonal, R (m, n) upper triangular, Q @ R == self
    (Householder, tinygrad's signs)."""
    x, out = self._linalg_input("qr"), (ctypes.c_void_p * 2)()  # x held: a cast is a temporary the call borrows
    _ok(C.tensor_qr(x._h, out), "tensor_qr")
    return Tensor._wrap(out[0], "tensor_qr"), Tensor._wrap(out[1], "tensor_qr")

  def svd(self, full_matrices: bool = True) -> Tuple["Tensor", "Tensor", "Tensor"]:
    """(U, S, Vh) of the last two dims (m, n), batched, k = min(m, n): S (k,) descending, U @ diag(S) @ Vh == self;
    U (m, m) and Vh (n, n), or (m, k) and (k, n) when full_matrices is False (QR, then one-sided Jacobi)."""
    x, out = self._linalg_input("svd"), (ctypes.c_void_p * 3)()
    _ok(C.tensor_svd(x._h, int(bool(full_matrices)), out), "tensor_svd")
    return tuple(Tensor._wrap(out[i], "tensor_svd") for i in range(3))

  def newton_schulz(self, steps: int, params, eps: float = 1.0e-7) -> "Tensor":
    """tinygrad's Newton-Schulz iteration with the odd polynomial sum(params[i] * X (X^T X)^i) over the last two dims, on
    X normalized by its Frobenius norm (+ eps)."""
    if self.ndim < 2: raise AssertionError("NS only works for two or more dims")
    if self.shape[-2] > self.shape[-1]: return self.transpose(-2, -1).newton_schulz(steps, params, eps).transpose(-2, -1)
    g = self / (self.square().sum(axis=(-2, -1), keepdim=True).sqrt() + eps)
    for _ in range(steps):
      gram, term, acc = g @ g.transpose(-2, -1), g, None
      for i, c in enumerate(params):
        if i: term = gram @ term
        acc = term * c if acc is None else acc + term * c
      g = acc
    return g

  def rearrange(self, formula: str, **sizes) -> "Tensor":
    """einops-style "b c (h w) -> b (c h) w" with sizes for split groups (h=4), "..." for the dims not named and "1" or
    "()" for a unit dim; AssertionError on a bad formula, as tinygrad."""
    def side(txt: str):
      # each dim of the side: (names, bracketed); a bare "..." stands for several dims, a bracketed one is flattened
      dims, cur = [], None
      for tok in txt.replace("\u2026", "...").replace("(", " ( ").replace(")", " ) ").split():
        if tok == "(":
          assert cur is None, f"nested brackets in {formula}"
          cur = []
        elif tok == ")":
          assert cur is not None, f"bracket mismatch in {formula}"
          dims.append((cur, True)); cur = None
        elif tok == "1":  # a unit dim
          if cur is None: dims.append(([], True))
        else:
          assert tok == "..." or (tok.isidentifier() and "_" not in (tok[0], tok[-1])), f"invalid axis name {tok}"
          if cur is not None: cur.append(tok)
          else: dims.append(([tok], False))
      assert cur is None, f"bracket mismatch in {formula}"
      return dims
    assert formula.count("->") == 1, 'need exactly one "->" in formula'
    lhs, rhs = (side(x) for x in formula.split("->"))
    ln, rn = [n for g, _ in lhs for n in g], [n for g, _ in rhs for n in g]
    assert sorted(ln) == sorted(rn) and len(ln) == len(set(ln)), f"name mismatch in {formula}"
    for name in sizes: assert name in ln, f"axis {name} is not used in transform"
    assert all(not br or "..." not in g for g, br in lhs), f"cannot have collapsed ellipsis (...) in lhs of {formula}"
    if "..." in ln:  # expand "..." to the dims it stands for
      ell = [f"...{i}" for i in range(self.ndim - (len(lhs) - 1))]
      assert len(lhs) - 1 <= self.ndim, f"{formula}: the tensor has only {self.ndim} dims"
      def expand(dims):
        out = []
        for g, br in dims:
          if g == ["..."] and not br: out += [([e], False) for e in ell]
          else: out.append((sum((ell if n == "..." else [n] for n in g), []), br))
        return out
      lhs, rhs = expand(lhs), expand(rhs)
      ln, rn = [n for g, _ in lhs for n in g], [n for g, _ in rhs for n in g]
    if len(lhs) != self.ndim: raise RuntimeError(f"{formula}: the left side names {len(lhs)} dims, the tensor has {self.ndim}")
    size = {}
    for (g, _), n in zip(lhs, self.shape):
      unknown, known = [x for x in g if x not in sizes], math.prod(sizes[x] for x in g if x in sizes)
      assert len(unknown) <= 1, f"{formula}: can't infer the sizes of {unknown}"
      if unknown:
        assert known and n % known == 0, f"{formula}: a dim of size {n} does not split by {known}"
        size[unknown[0]] = n // known
      else: assert known == n, f"size provided for dimension {g} incorrect"
      size.update({x: sizes[x] for x in g if x in sizes})
    t = self.reshape(tuple(size[x] for x in ln))
    if rn: t = t.permute(tuple(ln.index(x) for x in rn))
    return t.reshape(tuple(math.prod(size[x] for x in g) for g, _ in rhs))

  def plan(self, *lst: "Tensor") -> "Plan":
    """What realizing self (and lst) would run, scheduled and compiled but not run: see Plan."""
    return Plan(self, *lst)

  def contiguous(self, **kwargs) -> "Tensor":
    """A contiguous copy, lazily. tinygrad's keyword options (tags for its scheduler) have no meaning here and are ignored."""
    return Tensor._wrap(C.tensor_contiguous(self._h), "tensor_contiguous")
  def contiguous_backward(self) -> "Tensor":
    """self, whose gradient is made contiguous (realized into its own buffer) on the way back."""
    return Tensor._wrap(C.tensor_contiguous_backward(self._h), "tensor_contiguous_backward")

  def numpy(self) -> np.ndarray:
    dt, shape = self.dtype, self.shape
    out = np.empty(shape, dtype=np.uint16 if dt is dtypes.bfloat16 else dt.np)
    _ok(C.tensor_to_data(self._h, out.ctypes.data, out.nbytes), "tensor_to_data")
    if dt is dtypes.bfloat16: return (out.reshape(-1).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    return out

  def item(self): return self.numpy().item()
  def tolist(self): return self.numpy().tolist()

  # -- broadcasting helpers
  def _const(self, y: Scalar) -> "Tensor":
    """A 0-d tensor for scalar y next to self, typed by tinygrad's rule for Python scalars."""
    dt = self.dtype
    if not (dt.is_float or (dt.is_int and isinstance(y, (int, np.integer)) and not isinstance(y, (bool, np.bool_)))):
      dt = dtypes.from_py(y)
    return Tensor.full((), y, dtype=dt, device=self.device)

  def _tensor(self, y) -> "Tensor":
    """y as a Tensor next to self: Tensors as they are, arrays and lists through Tensor(), scalars through _const."""
    return y if isinstance(y, Tensor) else Tensor(y, device=self.device) if isinstance(y, (np.ndarray, list, tuple)) else self._const(y)

  def _bin(self, name: str, y, reverse=False) -> "Tensor":
    y = self._tensor(y)
    a, b = (y, self) if reverse else (self, y)
    return Tensor._wrap(getattr(C, f"tensor_{name}")(a._h, b._h), f"tensor_{name}")

  def _scalar_op(self, name: str, y, reverse=False) -> "Tensor":
    # the C *_scalar functions give the scalar self's dtype (through a double); everything else goes through _bin and
    # _const: bool tensors/scalars, a float scalar next to an int tensor (tinygrad makes that float32), and int scalars
    # past 2**53 (exact as a 0-d tensor). An int scalar must fit an int tensor's dtype: OverflowError, never a wrap.
    if isinstance(y, Tensor) or reverse or isinstance(y, (bool, np.bool_)) or self.dtype is dtypes.bool:
      return self._bin(name, y, reverse)
    if not isinstance(y, (int, float, np.integer, np.floating)): return self._bin(name, y)
    dt = self.dtype
    if dt.is_int:
      if not isinstance(y, (int, np.integer)): return self._bin(name, y)
      _check_int_fits(int(y), int(y), dt, "scalar")
      if abs(int(y)) > _EXACT: return self._bin(name, y)
    return Tensor._wrap(getattr(C, f"tensor_{name}_scalar")(self._h, float(y)), f"tensor_{name}_scalar")

  # -- elementwise binary
  def add(self, x, reverse=False): return self._scalar_op("add", x, reverse)
  def sub(self, x, reverse=False): return self._scalar_op("sub", x, reverse)
  def mul(self, x, reverse=False): return self._scalar_op("mul", x, reverse)
  def div(self, x, reverse=False, rounding_mode: Optional[str] = None) -> "Tensor":
    """True division; rounding_mode "trunc" or "floor" rounds the quotient, exactly for ints (which stay ints)."""
    if rounding_mode is None: return self._scalar_op("div", x, reverse)
    if rounding_mode not in ("trunc", "floor"): raise RuntimeError(f"rounding_mode={rounding_mode!r} is not supported")  # tinygrad's error
    a, b = (self, x) if not reverse else (x, self)
    a = a if isinstance(a, Tensor) else self._const(a)
    b = b if isinstance(b, Tensor) else self._const(b)
    if least_upper_dtype(a.dtype, b.dtype).is_float:
      q = a.div(b)
      return q.trunc() if rounding_mode == "trunc" else q.floor()
    q = a.idiv(b)  # truncating; floor moves it down where the remainder and the divisor differ in sign
    if rounding_mode == "trunc": return q
    r = a - q * b
    return q - ((r != 0) & ((r < 0) != (b < 0))).cast(q.dtype)
  def pow(self, x, reverse=False):
    """self ** x. As tinygrad: an int tensor to a Python scalar power stays int only for an int exponent >= 0 (else RuntimeError,
    "base needs to be float"); an int or float scalar base (2 ** t) takes t's dtype by the usual promotion."""
    if not isinstance(x, Tensor) and not isinstance(x, (list, tuple, np.ndarray)) and not reverse:
      xd = dtypes.from_py(x) if isinstance(x, (bool, int, float, np.integer, np.floating, np.bool_)) else None
      if xd is not None and not least_upper_dtype(self.dtype, xd).is_float and not (isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 0):
        raise RuntimeError("base needs to be float")
    return self._scalar_op("pow", x, reverse)
  def idiv(self, x, reverse=False): return self._bin("idiv", x, reverse)
  def mod(self, x, reverse=False) -> "Tensor":
    """self % x: Python's, torch's and tinygrad's % for ints and floats (tg_tensor_mod: the result takes the divisor's sign)."""
    a, b = (self._tensor(x), self) if reverse else (self, self._tensor(x))
    return Tensor._wrap(C.tensor_mod(a._h, b._h), "tensor_mod")  # ints and floats: the divisor's sign, as tinygrad's floor mod
  def fmod(self, x) -> "Tensor": return self._bin("fmod", x)  # C's fmod: the result takes the dividend's sign
  def maximum(self, x): return self._bin("maximum", x)
  def minimum(self, x): return self._bin("minimum", x)
  def _bit_const(self, x):
    """A Python int next to an int tensor takes the tensor's dtype with its bits wrapped, as tinygrad's constants do:
    int32 | 0xFFFFFFFF is -1 (int32), not an int64."""
    dt = self.dtype
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)) and dt.is_int:
      bits = 8 * dt.itemsize
      v = int(x) & ((1 << bits) - 1)
      if not dt.is_unsigned and v >= 1 << (bits - 1): v -= 1 << bits
      return Tensor.full((), v, dtype=dt, device=self.device)
    return x
  def bitwise_and(self, x, reverse=False): return self._bin("bitwise_and", self._bit_const(x), reverse)
  def bitwise_or(self, x, reverse=False): return self._bin("bitwise_or", self._bit_const(x), reverse)
  def bitwise_xor(self, x, reverse=False): return self._bin("bitwise_xor", self._bit_const(x), reverse)
  def bitwise_not(self): return self._un("bitwise_not")
  def _shift(self, name: str, x, reverse: bool) -> "Tensor":
    # an int count goes through the scalar C call (checked 0..bits-1); a Tensor, a reversed or a non-int scalar through the
    # elementwise one (a float raises RuntimeError, as tinygrad)
    if not reverse and isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
      return Tensor._wrap(getattr(C, f"tensor_{name}")(self._h, _i64(x, "shift")), f"tensor_{name}")
    x = x if isinstance(x, Tensor) else self._bit_const(x) if isinstance(x, (int, np.integer)) else self._tensor(x)
    a, b = (x, self) if reverse else (self, x)
    return Tensor._wrap(getattr(C, f"tensor_{name}_tensor")(a._h, b._h), f"tensor_{name}_tensor")
  def lshift(self, x, reverse=False): return self._shift("lshift", x, reverse)
  def rshift(self, x, reverse=False): return self._shift("rshift", x, reverse)
  def copysign(self, other): return self._bin("copysign", other)
  def logaddexp(self, other): return self._bin("logaddexp", other)
  def lerp(self, end, weight) -> "Tensor":
    """self + (end - self) * weight."""
    end, weight = self._tensor(end), self._tensor(weight)
    return Tensor._wrap(C.tensor_lerp(self._h, end._h, weight._h), "tensor_lerp")
  def isclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan=False) -> "Tensor":
    """|self - other| <= atol + rtol * |other| (bool)."""
    other = self._tensor(other)
    return Tensor._wrap(C.tensor_isclose(self._h, other._h, float(rtol), float(atol), int(bool(equal_nan))), "tensor_isclose")

  def __add__(self, x): return self.add(x)
  def __radd__(self, x): return self.add(x)  # commutative: keeps the scalar path
  def __sub__(self, x): return self.sub(x)
  def __rsub__(self, x): return self.sub(x, reverse=True)
  def __mul__(self, x): return self.mul(x)
  def __rmul__(self, x): return self.mul(x)
  def __truediv__(self, x): return self.div(x)
  def __rtruediv__(self, x): return self.div(x, reverse=True)
  def __floordiv__(self, x): return self.div(x, rounding_mode="floor")  # floor division, as tinygrad and Python
  def __rfloordiv__(self, x): return self.div(x, reverse=True, rounding_mode="floor")
  def __mod__(self, x): return self.mod(x)
  def __rmod__(self, x): return self.mod(x, reverse=True)
  def __pow__(self, x): return self.pow(x)
  def __rpow__(self, x): return self.pow(x, reverse=True)
  def __matmul__(self, x): return self.matmul(x)
  def __rmatmul__(self, x): return self.matmul(x, reverse=True)
  def __neg__(self): return self.neg()
  def __pos__(self): return self
  def __and__(self, x): return self.bitwise_and(x)
  def __rand__(self, x): return self.bitwise_and(x, reverse=True)
  def __or__(self, x): return self.bitwise_or(x)
  def __ror__(self, x): return self.bitwise_or(x, reverse=True)
  def __xor__(self, x): return self.bitwise_xor(x)
  def __rxor__(self, x): return self.bitwise_xor(x, reverse=True)
  def __invert__(self): return self.bitwise_not()
  def __lshift__(self, x): return self.lshift(x)
  def __rshift__(self, x): return self.rshift(x)
  def __rlshift__(self, x): return self.lshift(x, reverse=True)
  def __rrshift__(self, x): return self.rshift(x, reverse=True)

  def __lt__(self, x): return self._bin("lt", x)
  def __le__(self, x): return self._bin("le", x)
  def __gt__(self, x): return self._bin("gt", x)
  def __ge__(self, x): return self._bin("ge", x)
  def __eq__(self, x): return self._bin("eq", x)  # like tinygrad: a Tensor, not a bool
  def __ne__(self, x): return self._bin("ne", x)

  def where(self, x, y) -> "Tensor":
    """self ? x : y, with self as the condition (tinygrad's cond.where(x, y)); x and y may be Python scalars."""
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
      dt = least_upper_dtype(dtypes.from_py(x), dtypes.from_py(y))
      x, y = Tensor.full((), x, dtype=dt, device=self.device), Tensor.full((), y, dtype=dt, device=self.device)
    elif not isinstance(x, Tensor): x = y._const(x)
    elif not isinstance(y, Tensor): y = x._const(y)
    return Tensor._wrap(C.tensor_where(self._h, x._h, y._h), "tensor_where")

  def cast(self, dtype) -> "Tensor": return Tensor._wrap(C.tensor_cast(self._h, to_dtype(dtype).value), "tensor_cast")
  def float(self) -> "Tensor": return self.cast(dtypes.float32)
  def half(self) -> "Tensor": return self.cast(dtypes.float16)
  def int(self) -> "Tensor": return self.cast(dtypes.int32)
  def bool(self) -> "Tensor": return self.cast(dtypes.bool)

  # -- elementwise unary
  def _un(self, name: str) -> "Tensor": return Tensor._wrap(getattr(C, f"tensor_{name}")(self._h), f"tensor_{name}")
  def neg(self): return self._un("neg")
  def exp(self): return self._un("exp")
  def exp2(self): return self._un("exp2")
  def log(self): return self._un("log")
  def log2(self): return self._un("log2")
  def log10(self): return self.log2() * math.log10(2)  # tinygrad's formula
  def sqrt(self): return self._un("sqrt")
  def reciprocal(self): return self._un("reciprocal")
  def sin(self): return self._un("sin")
  def cos(self): return self._un("cos")
  def abs(self): return self._un("abs")
  def relu(self): return self._un("relu")
  def sigmoid(self): return self._un("sigmoid")
  def tanh(self): return self._un("tanh")
  def __abs__(self): return self.abs()
  def rsqrt(self): return self._un("rsqrt")
  def square(self): return self._un("square")
  def tan(self): return self._un("tan")
  def asin(self): return self._un("asin")
  def acos(self): return self._un("acos")
  def atan(self): return self._un("atan")
  def sinh(self): return self._un("sinh")
  def cosh(self): return self._un("cosh")
  def asinh(self): return self._un("asinh")
  def acosh(self): return self._un("acosh")
  def atanh(self): return self._un("atanh")
  def erf(self): return self._un("erf")
  def sign(self): return self._un("sign")
  def trunc(self): return self._un("trunc")
  def floor(self): return self._un("floor")
  def ceil(self): return self._un("ceil")
  def round(self): return self._un("round")  # half to even
  def isnan(self): return self._un("isnan")
  def isinf(self, detect_positive: bool = True, detect_negative: bool = True):
    if detect_positive and detect_negative: return self._un("isinf")
    if not detect_positive and not detect_negative: return Tensor.zeros(self.shape, dtype=dtypes.bool, device=self.device)
    return self == (math.inf if detect_positive else -math.inf)
  def isfinite(self): return self._un("isfinite")
  def logical_not(self): return self._un("logical_not")

  # -- activations (tinygrad's formulas and defaults)
  def relu6(self): return self._un("relu6")
  def leaky_relu(self, neg_slope=0.01): return Tensor._wrap(C.tensor_leaky_relu(self._h, float(neg_slope)), "tensor_leaky_relu")
  def elu(self, alpha=1.0): return Tensor._wrap(C.tensor_elu(self._h, float(alpha)), "tensor_elu")
  def celu(self, alpha=1.0): return Tensor._wrap(C.tensor_celu(self._h, float(alpha)), "tensor_celu")
  def selu(self, alpha=1.67326, gamma=1.0507):
    if (alpha, gamma) == (1.67326, 1.0507): return self._un("selu")
    return gamma * (self >= 0).where(self, alpha * (self.exp() - 1))
  def gelu(self, approximate: str = "tanh"):
    """tinygrad's default is the tanh approximation; approximate="none" is the exact erf form."""
    if approximate == "tanh": return self._un("gelu")
    if approximate == "none": return self * 0.5 * (1.0 + (self / math.sqrt(2)).erf())
    raise RuntimeError(f"approximate={approximate!r} is not supported")
  def quick_gelu(self): return self._un("quick_gelu")
  def silu(self): return self._un("silu")
  swish = silu
  def mish(self): return self._un("mish")
  def hardsigmoid(self, alpha: float = 1/6, beta: float = 0.5):
    if (alpha, beta) == (1/6, 0.5): return self._un("hardsigmoid")
    return (alpha * self + beta).relu() - (alpha * self + beta - 1).relu()
  def logsigmoid(self): return self._un("logsigmoid")
  def softplus(self, beta=1.0): return Tensor._wrap(C.tensor_softplus(self._h, float(beta)), "tensor_softplus")
  def softsign(self): return self._un("softsign")
  def hardswish(self): return self._un("hardswish")
  def hardtanh(self, min_val=-1, max_val=1):
    return Tensor._wrap(C.tensor_hardtanh(self._h, float(min_val), float(max_val)), "tensor_hardtanh")
  def clamp(self, min_=None, max_=None) -> "Tensor":
    """Clip to [min_, max_]; a None bound is open. As tinygrad: the gradient at a bound is 1, min_ > max_ gives max_."""
    if min_ is None and max_ is None: raise RuntimeError("at least one of 'min_' or 'max_' must not be None")
    # one side, a Tensor bound or a huge int: tinygrad's two wheres (the gradient at a bound is 1, as torch's)
    if min_ is None or max_ is None or isinstance(min_, Tensor) or isinstance(max_, Tensor) or self.dtype.is_int and max(abs(min_), abs(max_)) > _EXACT:
      ret = (self < min_).where(min_, self) if min_ is not None else self
      return (ret > max_).where(max_, ret) if max_ is not None else ret
    return Tensor._wrap(C.tensor_clamp(self._h, float(min_), float(max_)), "tensor_clamp")
  def clip(self, min_=None, max_=None) -> "Tensor": return self.clamp(min_, max_)

  # -- reductions
  def _check_axis(self, axis, what: str, extra: bool = False) -> int:
    """axis resolved against ndim (+1 with extra: a new dim's position) as tinygrad's _resolve_dim (0-d takes 0 and
    -1); out of range is AxisError: TG_ERROR_SHAPE, and the IndexError tinygrad raises."""
    a, n = _i64(axis, "axis"), self.ndim + int(extra)
    if not -max(n, 1) <= a < max(n, 1):
      raise AxisError("TG_ERROR_SHAPE", f"{what}: axis {a} is out of range for shape {self.shape} [{-max(n, 1)}, {max(n, 1) - 1}]")
    return a + n if a < 0 else a

  def _axes(self, axis, what: str) -> Tuple[int, ...]:
    """axis (None, an int or a sequence) as tinygrad reads it: each one in range (else AxisError, an IndexError)."""
    axes = () if axis is None else tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    for a in axes: self._check_axis(a, what)
    return axes

  def _reduce(self, name: str, axis, keepdim: bool, *extra) -> "Tensor":
    axes = self._axes(axis, name)
    if axis is not None and not axes:
      # axis=() reduces nothing, but the C API reads naxes == 0 as "every axis": reduce a new size-1 axis instead
      r = self.reshape(*self.shape, 1)._reduce(name, -1, False, *extra)
      return r.reshape(self.shape)
    fn = getattr(C, f"tensor_{name}")
    return Tensor._wrap(fn(self._h, _i64s(axes, "axis"), len(axes), int(bool(keepdim)), *extra), f"tensor_{name}")

  def _reduce2(self, name: str, axis, keepdim: bool, correction) -> Tuple["Tensor", "Tensor"]:
    axes = self._axes(axis, name)
    if axis is not None and not axes:
      r = self.reshape(*self.shape, 1)._reduce2(name, -1, False, correction)
      return r[0].reshape(self.shape), r[1].reshape(self.shape)
    out = (ctypes.c_void_p * 2)()
    _ok(getattr(C, f"tensor_{name}")(self._h, _i64s(axes, "axis"), len(axes), int(bool(keepdim)), float(correction), out), f"tensor_{name}")
    return Tensor._wrap(out[0], f"tensor_{name}"), Tensor._wrap(out[1], f"tensor_{name}")

  def sum(self, axis=None, keepdim=False, dtype=None) -> "Tensor":
    """Sum over axis (None: all); dtype= accumulates (and returns) in that dtype, as tinygrad."""
    if dtype is None: return self._reduce("sum", axis, keepdim)
    dt = to_dtype(dtype)
    return self.cast(dt)._reduce("sum", axis, keepdim).cast(dt)  # the C sum widens small ints; tinygrad keeps dtype
  def prod(self, axis=None, keepdim=False, dtype=None) -> "Tensor":
    if dtype is None: return self._reduce("prod", axis, keepdim)
    dt = to_dtype(dtype)
    return self.cast(dt)._reduce("prod", axis, keepdim).cast(dt)
  def max(self, axis=None, keepdim=False): return self._reduce("max", axis, keepdim)
  def min(self, axis=None, keepdim=False): return self._reduce("min", axis, keepdim)
  def mean(self, axis=None, keepdim=False): return self._reduce("mean", axis, keepdim)
  def std(self, axis=None, keepdim=False, correction=1): return self._reduce("std", axis, keepdim, float(correction))
  def var(self, axis=None, keepdim=False, correction=1): return self._reduce("var", axis, keepdim, float(correction))
  def std_mean(self, axis=None, keepdim=False, correction=1): return self._reduce2("std_mean", axis, keepdim, correction)
  def var_mean(self, axis=None, keepdim=False, correction=1): return self._reduce2("var_mean", axis, keepdim, correction)
  def all(self, axis=None, keepdim=False): return self._reduce("all", axis, keepdim)
  def any(self, axis=None, keepdim=False): return self._reduce("any", axis, keepdim)
  def logsumexp(self, axis=None, keepdim=False): return self._reduce("logsumexp", axis, keepdim)
  def normalize(self, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> "Tensor":
    """Lp normalization along dim: self / max(||self||_p, eps), ||.||_0 counting the nonzeros (torch's F.normalize)."""
    den = (self != 0).sum(dim, keepdim=True) if p == 0 else self.abs().pow(p).sum(dim, keepdim=True).pow(1 / p)
    return self / den.maximum(eps)
  def argmax(self, axis=None, keepdim=False):
    """int32 index of the first max along axis (axis=None: of the flattened tensor)."""
    ax = 0 if axis is None else _i64(axis, "axis")
    return Tensor._wrap(C.tensor_argmax(self._h, ax, int(bool(keepdim)), int(axis is None)), "tensor_argmax")
  def argmin(self, axis=None, keepdim=False):
    ax = 0 if axis is None else _i64(axis, "axis")
    return Tensor._wrap(C.tensor_argmin(self._h, ax, int(bool(keepdim)), int(axis is None)), "tensor_argmin")
  def _scan(self, name: str, axis) -> "Tensor":
    self._check_axis(axis, name)
    return Tensor._wrap(getattr(C, f"tensor_{name}")(self._h, _i64(axis, "axis")), f"tensor_{name}")
  def cumsum(self, axis=0): return self._scan("cumsum", axis)
  def cumprod(self, axis=0): return self._scan("cumprod", axis)
  def cummax(self, axis=0) -> Tuple["Tensor", "Tensor"]:
    """(values, indices) as tinygrad: indices (int32) of the first element equal to the running max."""
    return self._cum_indexed("cummax", axis)
  def cummin(self, axis=0) -> Tuple["Tensor", "Tensor"]:
    return self._cum_indexed("cummin", axis)
  def logcumsumexp(self, axis=0) -> "Tensor":
    """log(cumsum(exp(x))) along axis, stable for large values: each prefix is shifted by its running max."""
    if self.ndim == 0: return self  # as tinygrad: any axis
    x = self.transpose(axis, -1)
    n = x.shape[-1]
    m = x.cummax(-1)[0].detach()  # (..., n): the running max at each position j
    # [..., j, i] = x_i - m_j for i <= j, else -inf; logsumexp over i
    d = x.unsqueeze(-2) - m.unsqueeze(-1)
    keep = Tensor.ones(n, n, dtype=dtypes.bool, device=self.device).tril()
    r = keep.where(d, -math.inf).exp().sum(-1).log() + m
    return r.transpose(-1, axis)
  def _cum_indexed(self, name: str, axis) -> Tuple["Tensor", "Tensor"]:
    values = self._scan(name, axis)
    if self.ndim == 0: return values, Tensor.zeros((), dtype=dtypes.int32, device=self.device)
    n = self.shape[_i64(axis, "axis") % self.ndim]
    x, v = self.transpose(axis, -1), values.transpose(axis, -1)
    # match[..., j, i]: x[j] equals the running value at i, for j <= i; the index is the smallest such j
    ar = Tensor.arange(n, device=self.device)
    match = (x.reshape(*x.shape, 1) == v.reshape(*v.shape[:-1], 1, n)).where(ar.reshape(n, 1) <= ar.reshape(1, n), False)
    idx = n - match.where(Tensor.arange(n, 0, -1, device=self.device).reshape(n, 1), 0).max(axis=-2)
    return values, idx.cast(dtypes.int32).transpose(-1, axis)
  def _softmax_input(self, axis, dtype) -> "Tensor":
    # dtype= as tinygrad: the max is taken and subtracted in self's dtype, the rest computed in dtype
    if dtype is None: return self
    return (self - self.max(axis=axis, keepdim=True).detach()).cast(to_dtype(dtype))
  def softmax(self, axis=-1, dtype=None) -> "Tensor":
    x = self._softmax_input(axis, dtype)  # held: its handle must live through the call
    return Tensor._wrap(C.tensor_softmax(x._h, _i64(axis, "axis")), "tensor_softmax")
  def log_softmax(self, axis=-1, dtype=None) -> "Tensor":
    x = self._softmax_input(axis, dtype)
    return Tensor._wrap(C.tensor_log_softmax(x._h, _i64(axis, "axis")), "tensor_log_softmax")
  def softmin(self, axis=-1, dtype=None):
    """softmax of -self along axis (in dtype when given), as tinygrad."""
    return (-(self.cast(dtype) if dtype is not None else self)).softmax(axis)

  # -- movement
  def _mv(self, name: str, vals: Sequence[int], *extra) -> "Tensor":
    n = len(vals) // 2 if name in ("pad", "shrink") else len(vals)
    return Tensor._wrap(getattr(C, f"tensor_{name}")(self._h, _i64s(vals, f"{name} argument"), n, *extra), f"tensor_{name}")

  def reshape(self, shape, *args) -> "Tensor":
    """reshape(2, 3) or reshape((2, 3)); None keeps that dim's size and one -1 is inferred, as tinygrad (two -1s or a
    size mismatch: ShapeError, both the RuntimeError and the ValueError tinygrad raises there)."""
    new, old = _shape_args((shape, *args)), self.shape
    if None in new: new = tuple(old[i] if s is None else s for i, s in enumerate(new))
    _unbound_check(new, "reshape")
    if not any(isinstance(d, BoundExpr) for d in (*new, *old)): return self._mv("reshape", new)
    mine = {v.expr for d in old if (v := _bound_var(d)) is not None}
    for d in new:
      if isinstance(d, BoundExpr) and not mine: raise ValueError(f"reshape: a tensor of plain shape {old} can't take the symbolic shape {new}")
    try: return self._mv("reshape", new)
    except TinygradError as e:  # a reshape merging or splitting a bound dim: made at the binding
      if e.status != "TG_ERROR_UNSUPPORTED": raise
      return self.at_binding()._mv("reshape", new)
  @property
  def uop(self) -> "UOp":
    """The node of the engine's graph that is this tensor's value now (tinygrad's Tensor.uop): read-only."""
    return UOp._wrap(C.tensor_uop(self._h))
  def schedule(self, *lst: "Tensor") -> List["ScheduleItem"]:
    """The kernels realizing this tensor (and lst) would run, in order, each with its AST; nothing runs or compiles."""
    ts = (self, *lst)
    for i, t in enumerate(ts):
      if not isinstance(t, Tensor): raise TypeError(f"schedule takes Tensors, argument {i} is {type(t).__name__}")
    arr = (ctypes.c_void_p * len(ts))(*[t._h for t in ts])
    return [ScheduleItem(u) for u in _uop_list(lambda o, n: C.tensor_schedule(arr, len(ts), o, n), "tensor_schedule")]
  def view(self, shape, *args) -> "Tensor": return self.reshape(shape, *args)
  def permute(self, order, *args) -> "Tensor": return self._mv("permute", _shape_args((order, *args)))
  def expand(self, shape, *args) -> "Tensor":
    new = _shape_args((shape, *args))
    _unbound_check(new, "expand")
    old = self.shape
    pad = len(new) - len(old)
    # a size-1 (or new) dim expanded to a bound Variable: expanded to its largest size, then shrink_var to it
    sym = [(i, v, int(d)) for i, d in enumerate(new) if (v := _bound_var(d)) is not None and v.vmin >= 0 and
           (i < pad or (old[i - pad] == 1 and _bound_var(old[i - pad]) is None))]
    if not sym: return self._mv("expand", new)
    t = self._mv("expand", [v.vmax if any(i == j for j, _, _ in sym) else d for i, (d, v) in enumerate(zip(new, map(_bound_var, new)))])
    for i, v, val in sym: t = t.shrink_var(i, v, val)
    return t
  def flip(self, axis, *args) -> "Tensor":
    axes = _shape_args((axis, *args))
    for a in axes: self._check_axis(a, "flip")
    t = self._plain_where(lambda i, d: any(isinstance(a, (int, np.integer)) and a % max(self.ndim, 1) == i for a in axes))
    return t._mv("flip", axes)

  _PAD_MODES = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}

  def pad(self, padding, mode: str = "constant", value: float = 0.0) -> "Tensor":
    """padding, as tinygrad: torch's flat form (left, right, top, bottom, ...: last dim first, an even count, leading dims
    unpadded) or one (before, after) pair (or None) per dim. Negative entries crop. mode: constant (value), reflect,
    replicate or circular (torch's semantics)."""
    if not isinstance(mode, str): mode, value = "constant", mode  # the older pad(padding, value)
    padding, ndim = tuple(padding), len(self.shape)
    if not any(isinstance(p, (tuple, list, type(None))) for p in padding):
      if len(padding) % 2 != 0: raise ValueError("Flat padding must have even number of pads")
      pairs = ((0, 0),) * (ndim - len(padding) // 2) + tuple(zip(padding[-2::-2], padding[::-2]))
    else: pairs = tuple((0, 0) if p is None else tuple(p) for p in padding)
    if len(pairs) != ndim: raise ValueError(f"padding length is improper, padding={padding!r} self.ndim={ndim}")
    if mode not in Tensor._PAD_MODES: raise NotImplementedError(f"mode={mode!r} is not supported")
    if mode == "constant":
      # a bound dim padded to a fixed size ((0, N - x.shape[0]): a plain int once added up): symbolic (tg_tensor_pad_to)
      shape = self.shape
      for i, p in enumerate(pairs):
        if len(p) != 2 or i >= len(shape): continue  # a malformed pair: the library says so below
        b, a = p
        if _bound_var(shape[i]) is not None and not isinstance(b, BoundExpr) and isinstance(a, BoundExpr):
          lo, hi = (shape[i] + a)._e.simplify().bounds()
          if lo == hi and b >= 0:
            self = Tensor._wrap(C.tensor_pad_to(self._h, i, _i64(b, "pad"), _i64(b + lo, "pad"), float(value)), "tensor_pad_to")
            pairs = pairs[:i] + ((0, 0),) + pairs[i + 1:]
    # a symbolic dim padded by plain amounts grows by them (i+2); by symbolic amounts, it is padded at the binding
    self = self._plain_where(lambda i, d: i < len(pairs) and (mode != "constant" or any(isinstance(x, BoundExpr) or x < 0 for x in pairs[i])) and any(pairs[i]))
    flat = _flat_pairs("pad", pairs, "(before, after)")
    if mode == "constant": return self._mv("pad", flat, float(value))
    return Tensor._wrap(C.tensor_pad_mode(self._h, _i64s(flat, "pad argument"), len(flat) // 2, Tensor._PAD_MODES[mode], float(value)),
                        "tensor_pad_mode")

  def shrink(self, arg) -> "Tensor":
    """arg: one (start, end) pair (or None for the whole dim) per dim."""
    shape = self.shape
    pairs = tuple(tuple(p) if p is not None else (0, shape[i] if i < len(shape) else 0) for i, p in enumerate(arg))
    _unbound_check([x for p in pairs for x in p], "shrink")
    # (0, v.bind(n)) or (0, v.bind(n) + 1) on a plain dim: symbolic (shrink_var, shrink_expr); other bounds on a bound dim
    # or with bound values: at the binding
    sym = [(i, p[1]) for i, p in enumerate(pairs) if len(p) == 2 and i < len(shape) and _symbolic_size(p[1]) and
           not isinstance(p[0], BoundExpr) and p[0] == 0 and not isinstance(shape[i], BoundExpr)]
    # (v, v + k) on a plain dim: a window at a symbolic offset (shrink_at), the same graph for every v
    at = [(i, p[0], k) for i, p in enumerate(pairs) if len(p) == 2 and i < len(shape) and not isinstance(shape[i], BoundExpr) and
          (k := _window(p[0], p[1])) is not None]
    t = self._plain_where(lambda i, d: i < len(pairs) and len(pairs[i]) == 2 and (pairs[i][0] != 0 or pairs[i][1] != d))
    for i, b in sym: t, pairs = t._shrink_bound(i, b), pairs[:i] + ((0, int(b)),) + pairs[i + 1:]
    for i, b, k in at: t, pairs = t._shrink_at(i, b, k), pairs[:i] + ((0, k),) + pairs[i + 1:]
    return t._mv("shrink", _flat_pairs("shrink", pairs, "(start, end)"))  # all of them: the library checks the count

  def _shrink_at(self, axis: int, b: "BoundExpr", k: int) -> "Tensor":
    """self[..., b:b+k, ...] along axis, b a bound Variable or an expression of bound ones (tg_tensor_shrink_at)."""
    return Tensor._wrap(C.tensor_shrink_at(self._h, _i64(axis, "axis"), b._e._h, *_bindings(b._binds), _i64(k, "size")), "tensor_shrink_at")

  def _shrink_bound(self, axis: int, b: "BoundExpr") -> "Tensor":
    """self[..., 0:b, ...] along axis, b a bound Variable (shrink_var) or an expression of bound ones (shrink_expr)."""
    if b.var is not None: return self.shrink_var(axis, b.var, int(b))
    return Tensor._wrap(C.tensor_shrink_expr(self._h, _i64(axis, "axis"), b._e._h, *_bindings(b._binds)), "tensor_shrink_expr")

  def shrink_var(self, axis: int, var: "Expr", value: int) -> "Tensor":
    """self[..., 0:var, ...] along axis, that dim's size being the Variable `var` (1 <= min <= max <= the dim) bound to
    `value`: graphs that differ only in the value schedule and compile once, and a TinyJit replays for any binding."""
    if not isinstance(var, Expr): raise TypeError(f"shrink_var: var must be a Variable (Expr), got {type(var).__name__}")
    return Tensor._wrap(C.tensor_shrink_var(self._h, _i64(axis, "axis"), var._h, _i64(value, "value")), "tensor_shrink_var")

  def at_binding(self) -> "Tensor":
    """The same values with every symbolic dim at its value (plain dims): what a shrink or flip of such a dim goes
    through. Inside a TinyJit function it raises (TinygradError, TG_ERROR_UNSUPPORTED): a replay would keep the
    value of the capture."""
    return Tensor._wrap(C.tensor_at_binding(self._h), "tensor_at_binding")

  def _plain_where(self, changes) -> "Tensor":
    """self, or self at its binding if changes(i, size) is true for some dim i bound to a Variable."""
    shape = self.shape
    return self.at_binding() if any(isinstance(d, BoundExpr) and changes(i, d) for i, d in enumerate(shape)) else self

  def rebind(self, var: "Expr", value: int) -> "Tensor":
    """The same graph with `var` bound to `value` instead (its dims follow)."""
    if not isinstance(var, Expr): raise TypeError(f"rebind: var must be a Variable (Expr), got {type(var).__name__}")
    return Tensor._wrap(C.tensor_rebind(self._h, var._h, _i64(value, "value")), "tensor_rebind")

  def transpose(self, dim0: int = 1, dim1: int = 0) -> "Tensor":
    return Tensor._wrap(C.tensor_transpose(self._h, _i64(dim0, "dim"), _i64(dim1, "dim")), "tensor_transpose")

  @property
  def T(self) -> "Tensor": return self.transpose()

  def flatten(self, start_dim=0, end_dim=-1) -> "Tensor":
    return Tensor._wrap(C.tensor_flatten(self._h, _i64(start_dim, "start_dim"), _i64(end_dim, "end_dim")), "tensor_flatten")

  def unflatten(self, dim: int, sizes) -> "Tensor":
    sizes = tuple(sizes)
    return Tensor._wrap(C.tensor_unflatten(self._h, _i64(dim, "dim"), _i64s(sizes, "size"), len(sizes)), "tensor_unflatten")

  def squeeze(self, dim=None) -> "Tensor":
    """Remove dim if its size is 1; dim=None removes every size-1 dim. A 0-d tensor takes dim 0 or -1 (tinygrad)."""
    if dim is None: return Tensor._wrap(C.tensor_squeeze_all(self._h), "tensor_squeeze_all")
    self._check_axis(dim, "squeeze")
    return Tensor._wrap(C.tensor_squeeze(self._h, _i64(dim, "dim")), "tensor_squeeze")

  def unsqueeze(self, dim: int) -> "Tensor":
    self._check_axis(dim, "unsqueeze", extra=True)
    return Tensor._wrap(C.tensor_unsqueeze(self._h, _i64(dim, "dim")), "tensor_unsqueeze")

  def repeat(self, repeats, *args) -> "Tensor": return self._mv("repeat", _shape_args((repeats, *args)))

  def repeat_interleave(self, repeats: int, dim=None) -> "Tensor":
    """Each element repeats times along dim (dim=None: of the flattened tensor)."""
    x, dim = (self.flatten(), 0) if dim is None else (self, dim)
    return Tensor._wrap(C.tensor_repeat_interleave(x._h, _i64(repeats, "repeats"), _i64(dim, "dim")), "tensor_repeat_interleave")

  def roll(self, shifts, dims=None) -> "Tensor":
    """Rotate by shifts along dims (dims=None: the flattened tensor, then the shape back)."""
    if dims is None: return self.flatten().roll(shifts, 0).reshape(self.shape)
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(shifts) != len(dims): raise RuntimeError(f"len(dims)={len(dims)} != len(shifts)={len(shifts)}")
    return Tensor._wrap(C.tensor_roll(self._h, _i64s(shifts, "shift"), _i64s(dims, "dim"), len(dims)), "tensor_roll")

  def cat(self, *args: "Tensor", dim: int = 0) -> "Tensor":
    """Concatenate self and args along dim (also Tensor.cat(a, b, ...)); 0-d tensors have no dim: IndexError, as tinygrad."""
    ts = (*self, *args) if isinstance(self, (list, tuple)) else (self, *args)
    if ts: ts[0]._check_axis(dim, "cat")
    if any(t.ndim == 0 for t in ts): raise AxisError("TG_ERROR_SHAPE", "cat: zero-dimensional tensors can't be concatenated")
    arr = (ctypes.c_void_p * len(ts))(*[t._h for t in ts])
    return Tensor._wrap(C.tensor_cat(arr, len(ts), _i64(dim, "dim")), "tensor_cat")

  def stack(self, *args: "Tensor", dim: int = 0) -> "Tensor":
    """Stack self and args along a new dim (also Tensor.stack(a, b, ...) or Tensor.stack((a, b))); a bad dim is an
    IndexError, a sequence next to more tensors a ValueError, as tinygrad."""
    ts = _shape_args((self, *args))
    if ts: ts[0]._check_axis(dim, "stack", extra=True)
    arr = (ctypes.c_void_p * len(ts))(*[t._h for t in ts])
    return Tensor._wrap(C.tensor_stack(arr, len(ts), _i64(dim, "dim")), "tensor_stack")

  def tril(self, diagonal: int = 0) -> "Tensor":
    """The lower triangle of the last two dims; a bound diagonal (p + 1) stays symbolic (tg_tensor_tril_tensor)."""
    if isinstance(diagonal, BoundExpr) and diagonal._binds:
      k = Tensor(diagonal, device=self.device)  # held across the call
      return Tensor._wrap(C.tensor_tril_tensor(self._h, k._h), "tensor_tril_tensor")
    return Tensor._wrap(C.tensor_tril(self._h, _i64(diagonal, "diagonal")), "tensor_tril")

  def triu(self, diagonal: int = 0) -> "Tensor":
    """The upper triangle of the last two dims; a bound diagonal (p + 1) stays symbolic (tg_tensor_triu_tensor)."""
    if isinstance(diagonal, BoundExpr) and diagonal._binds:
      k = Tensor(diagonal, device=self.device)  # held across the call
      return Tensor._wrap(C.tensor_triu_tensor(self._h, k._h), "tensor_triu_tensor")
    return Tensor._wrap(C.tensor_triu(self._h, _i64(diagonal, "diagonal")), "tensor_triu")

  # -- linear algebra
  # dtype= on the products (tinygrad's mixed precision): the result and the accumulation are in dtype. The operands are
  # cast to dtype before they are multiplied (tinygrad multiplies in their own dtype), so int8 products don't wrap.
  def matmul(self, x, reverse=False, dtype=None) -> "Tensor":
    x = x if isinstance(x, Tensor) else Tensor(x, device=self.device)
    a, b = (x, self) if reverse else (self, x)
    if dtype is not None: a, b = a.cast(dtype), b.cast(dtype)
    return Tensor._wrap(C.tensor_matmul(a._h, b._h), "tensor_matmul")

  def dot(self, w, dtype=None) -> "Tensor":
    """Matrix product (tg_tensor_dot: numpy's rules for 1-D and batched operands)."""
    w, a = self._tensor(w), self
    if dtype is not None: a, w = a.cast(dtype), w.cast(dtype)
    return Tensor._wrap(C.tensor_dot(a._h, w._h), "tensor_dot")

  def linear(self, weight: "Tensor", bias: Optional["Tensor"] = None, dtype=None) -> "Tensor":
    """self @ weight + bias with weight (in, out), as tinygrad's Tensor.linear."""
    if dtype is not None:
      return self.cast(dtype).linear(weight.cast(dtype), None if bias is None else bias.cast(dtype))
    return Tensor._wrap(C.tensor_linear(self._h, weight._h, None if bias is None else bias._h), "tensor_linear")

  @staticmethod
  def einsum(formula: str, *operands, dtype=None) -> "Tensor":
    """Einstein summation ("ij,jk->ik"); operands may also be given as one list."""
    ops = tuple(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else operands
    if dtype is not None: ops = tuple(t.cast(dtype) for t in ops)
    arr = (ctypes.c_void_p * max(len(ops), 1))(*[t._h for t in ops])
    return Tensor._wrap(C.tensor_einsum(_cstr(formula, "formula"), arr, len(ops)), "tensor_einsum")

  # -- indexing
  def _resolve_dim(self, dim, extra: bool = False) -> int:
    n = self.ndim + int(extra)
    d = _index(dim, "dim")
    if not -max(n, 1) <= d < max(n, 1): raise IndexError(f"dim={d} out of range [{-max(n, 1)}, {max(n, 1) - 1}]")
    return d + n if d < 0 else d

  def _index_items(self, indices) -> list:
    """indices as a list of None / Ellipsis / int / (start, stop, step) / Tensor, checked as tinygrad and numpy check them,
    with each slice bound clamped to [-(size+1), size+1] (the same selection; nothing reaches C that int64 can't hold)."""
    if not isinstance(indices, tuple): indices = (indices,)
    items, host = [], {}
    for ix in indices:
      if ix is None or ix is Ellipsis or isinstance(ix, slice): items.append(ix)
      elif isinstance(ix, (bool, np.bool_)): raise IndexError(f"{type(ix).__name__} indexing is not supported")
      elif isinstance(ix, (int, np.integer)): items.append(int(ix))
      elif isinstance(ix, Tensor):
        if not ix.dtype.is_int: raise IndexError(f"index dtype {ix.dtype} is not supported: tensor indices must be ints")
        items.append(ix)
      elif isinstance(ix, (list, tuple, np.ndarray)):
        arr = np.asarray(ix)
        if arr.dtype.kind not in "iu":
          if arr.size == 0 and arr.dtype.kind == "f": arr = arr.astype(np.int32)  # [] is an empty int index, as numpy
          else: raise IndexError(f"index of dtype {arr.dtype} is not supported: index arrays must be ints")
        if arr.ndim == 0: items.append(int(arr))
        else:
          if arr.dtype.kind == "u" and arr.size and int(arr.max()) > _I64_MAX: raise IndexError("index out of range")
          arr = arr.astype(np.int32 if arr.size == 0 or (_I32_MIN <= int(arr.min()) and int(arr.max()) <= _I32_MAX) else np.int64)
          items.append(Tensor(arr, device=self.device))
          host[id(items[-1])] = (int(arr.min()), int(arr.max())) if arr.size else None  # checked against its dim below, as numpy
      else: raise IndexError(f"{type(ix).__name__} indexing is not supported")
    if sum(ix is Ellipsis for ix in items) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
    shape = self.shape
    consuming = sum(not (ix is None or ix is Ellipsis) for ix in items)
    if consuming > len(shape):
      raise IndexError(f"too many indices for tensor of dimension {len(shape)}: {consuming} were indexed")
    dim, out = 0, []
    for ix in items:
      if ix is None: out.append(None)
      elif ix is Ellipsis:
        out.append(Ellipsis)
        dim += len(shape) - consuming
      elif isinstance(ix, int):
        size = shape[dim]
        if not -size <= ix < size: raise IndexError(f"index {ix} is out of bounds for dimension {dim} with size {size}")
        out.append(ix)
        dim += 1
      elif isinstance(ix, slice):
        size = shape[dim]
        vals = [None if v is None else _index(v, "slice index") for v in (ix.start, ix.stop, ix.step)]
        if vals[2] == 0: raise ValueError("slice step cannot be zero")
        out.append(tuple(None if v is None else max(-(size + 1), min(size + 1, v)) for v in vals))
        dim += 1
      else:
        if host.get(id(ix)):
          (lo, hi), size = host[id(ix)], shape[dim]
          if lo < -size or hi >= size: raise IndexError(f"index {hi if hi >= size else lo} is out of bounds for dimension {dim} with size {size}")
        out.append(ix)
        dim += 1
    return out

  @staticmethod
  def _index_entries(items):
    arr = (_TgIndex * max(len(items), 1))()
    for e, ix in zip(arr, items):
      if ix is None: e.kind = _IDX_NEWAXIS
      elif ix is Ellipsis: e.kind = _IDX_ELLIPSIS
      elif isinstance(ix, int): e.kind, e.start = _IDX_INT, ix
      elif isinstance(ix, tuple):
        e.kind = _IDX_SLICE
        for f, v in zip(("start", "stop", "step"), ix):
          if v is not None: setattr(e, f, v); setattr(e, "has_" + f, 1)
      else: e.kind, e.tensor = _IDX_TENSOR, ix._h  # borrowed: `items` keeps the Tensor alive across the call
    return arr

  def __getitem__(self, indices) -> "Tensor":
    """Python/numpy indexing: ints, slices (any step), None, ..., and int Tensors, lists or numpy arrays (numpy's advanced
    indexing; like tinygrad, out-of-range entries of an index tensor give 0). Basic indices make a view."""
    self, indices = self._sym_index(indices)
    items = self._index_items(indices)
    entries = Tensor._index_entries(items)
    return Tensor._wrap(C.tensor_getitem(self._h, entries, len(items)), "tensor_getitem")

  def _sym_index(self, indices):
    """Bound Variables in indexing (tinygrad's x[:, :v.bind(3)]): a slice [:v] (or [0:v:1]) of a plain dim is shrink_var;
    other bound slice ends are their values. An index that changes a dim bound to a Variable (x[:v][-1], x[:v][1:]) reads
    x at its binding. Returns (tensor, indices) for the plain indexing."""
    tup = indices if isinstance(indices, tuple) else (indices,)
    def bounded(ix): return isinstance(ix, slice) and any(isinstance(x, (BoundExpr, Expr)) for x in (ix.start, ix.stop, ix.step))
    shape = self.shape
    if not any(map(bounded, tup)) and not any(isinstance(d, BoundExpr) for d in shape): return self, indices
    for ix in tup:
      if isinstance(ix, slice): _unbound_check((ix.start, ix.stop, ix.step), "getitem")
    if any(isinstance(ix, (Tensor, list, np.ndarray)) for ix in tup): return self.at_binding(), indices
    consumed = sum(1 for ix in tup if ix is not None and ix is not Ellipsis)
    d, new, sym, at, plain = 0, [], [], [], False
    for ix in tup:
      if ix is None or ix is Ellipsis:
        if ix is Ellipsis: d += max(len(shape) - consumed, 0)
        new.append(ix)
        continue
      size = shape[d] if d < len(shape) else None
      if isinstance(ix, slice) and _symbolic_size(ix.stop) and ix.start in (None, 0) and ix.step in (None, 1) and \
         not isinstance(ix.start, BoundExpr) and not isinstance(size, BoundExpr):
        sym.append((d, ix.stop))
        new.append(slice(None))
      elif isinstance(ix, slice) and ix.step in (None, 1) and not isinstance(size, BoundExpr) and \
           (k := _window(ix.start, ix.stop)) is not None:  # [v:v+k]: a window at a symbolic offset
        at.append((d, ix.start, k))
        new.append(slice(None))
      else:
        new.append(ix)
        if isinstance(size, BoundExpr):  # unchanged only by a full slice
          plain |= not (isinstance(ix, slice) and ix.start in (None, 0) and ix.step in (None, 1) and (ix.stop is None or ix.stop == size))
      d += 1
    t = self.at_binding() if plain else self
    for i, b in sym: t = t._shrink_bound(i, b)
    for i, b, k in at: t = t._shrink_at(i, b, k)
    return t, tuple(new) if isinstance(indices, tuple) else new[0]

  def __setitem__(self, indices, v) -> None:
    """self[indices] = v (a scalar, list, array or Tensor, broadcast to the selection and cast to self's dtype); self then
    refers to the result, as assign does. Tensor indices write through scatter (with repeated positions, one of the
    values written there wins)."""
    items = self._index_items(indices)
    val = v if isinstance(v, Tensor) else Tensor(v, device=self.device) if isinstance(v, (np.ndarray, list, tuple)) else \
      Tensor.full((), v, dtype=self.dtype, device=self.device)
    if any(isinstance(ix, Tensor) for ix in items):
      n = self.numel()
      # positions from 1: an out-of-range index tensor entry selects nothing (0), so -1 here, and the scatter writes nowhere
      pos = Tensor.arange(1, n + 1, dtype=dtypes.int32 if n < _I32_MAX else dtypes.int64, device=self.device).reshape(self.shape)[indices] - 1
      if pos.numel() == 0: return
      vs = val.cast(self.dtype)
      if vs.ndim > pos.ndim: vs = vs.reshape(vs.shape[vs.ndim - pos.ndim:]) if all(s == 1 for s in vs.shape[:vs.ndim - pos.ndim]) else vs
      vs = vs.reshape((1,) * (pos.ndim - vs.ndim) + vs.shape).expand(pos.shape)
      self.assign(self.reshape(n).scatter(0, pos.reshape(-1), vs.reshape(-1)).reshape(self.shape))
      return
    entries = Tensor._index_entries(items)
    _ok(C.tensor_setitem(self._h, entries, len(items), val._h), "tensor_setitem")

  def assign(self, x) -> "Tensor":
    """self takes x's contents (same shape, cast to self's dtype); returns self. On a realized tensor the assign is in place:
    when realized it writes self's own buffer, so a lazy tensor made from self before reads the new contents if it is
    realized after self (realize it first, or together with Tensor.realize_many). On an unrealized tensor, tensors made
    from self before keep the old contents. Inside a TinyJit, an in-place assign is captured and replays at every call."""
    x = x if isinstance(x, Tensor) else Tensor(x, dtype=self.dtype, device=self.device)
    xs, ss = x.shape, self.shape
    if xs != ss and len(xs) <= len(ss) and all(a in (1, b) for a, b in zip(xs[::-1], ss[::-1])):  # broadcast, as tinygrad
      x = x.reshape((1,) * (len(ss) - len(xs)) + tuple(xs)).expand(ss)
    _ok(C.tensor_assign(self._h, x._h), "tensor_assign")
    return self

  def gather(self, dim: int, index: "Tensor") -> "Tensor":
    """out[..i..] = self[.. index[..i..] ..] along dim."""
    self._check_axis(dim, "gather")
    return Tensor._wrap(C.tensor_gather(self._h, _i64(dim, "dim"), index._h), "tensor_gather")

  # -- more shape and index ops
  def split(self, sizes, dim: int = 0) -> tuple:
    """Pieces along dim: sizes is a list of piece sizes (summing to the dim's size), or an int piece size (the last piece
    may be smaller), as tinygrad."""
    d = self._resolve_dim(dim)
    if isinstance(sizes, (int, np.integer)):
      step, size = _index(sizes, "split size"), self.shape[d]
      if step <= 0: raise ValueError(f"split size must be positive, got {step}")
      sizes = [min(step, size - i) for i in range(0, max(1, size), step)]
    sizes = [_i64(s, "split size") for s in sizes]
    out = (ctypes.c_void_p * max(len(sizes), 1))()
    _ok(C.tensor_split(self._h, _i64s(sizes, "split size"), len(sizes), d, out), "tensor_split")
    return tuple(Tensor._wrap(out[i], "tensor_split") for i in range(len(sizes)))

  def chunk(self, chunks: int, dim: int = 0) -> list:
    """At most `chunks` pieces of ceil(size / chunks) along dim (torch's rule)."""
    chunks, d = _i64(chunks, "chunks"), self._resolve_dim(dim)
    if chunks <= 0: raise ValueError(f"chunks must be positive, got {chunks}")
    if isinstance(self.shape[d], BoundExpr): raise AssertionError(f"chunk: dim {d} is symbolic ({self.shape[d]!r}); it can't be split")
    cap = max(1, min(chunks, self.shape[d]))
    out = (ctypes.c_void_p * cap)()
    n = C.tensor_chunk(self._h, chunks, d, out, cap)
    if n < 0: _raise_last("tensor_chunk")
    return [Tensor._wrap(out[i], "tensor_chunk") for i in range(n)]

  def meshgrid(self, *args: "Tensor", indexing: str = "ij") -> tuple:
    """Coordinate grids of self and args (also Tensor.meshgrid(a, b, ...)); indexing "ij" or "xy"."""
    if indexing not in ("ij", "xy"): raise RuntimeError(f'indexing must be in ("ij", "xy"), got {indexing}')
    ts = (*self, *args) if isinstance(self, (list, tuple)) else (self, *args)
    arr, out = (ctypes.c_void_p * max(len(ts), 1))(*[t._h for t in ts]), (ctypes.c_void_p * max(len(ts), 1))()
    _ok(C.tensor_meshgrid(arr, len(ts), int(indexing == "xy"), out), "tensor_meshgrid")
    return tuple(Tensor._wrap(out[i], "tensor_meshgrid") for i in range(len(ts)))

  def diag(self) -> "Tensor": return Tensor._wrap(C.tensor_diag(self._h), "tensor_diag")
  def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> "Tensor":
    """The diagonal of dims dim1 and dim2 (offset > 0 above the main one, < 0 below) as a new last dim, tinygrad's
    signature: the two dims moved last, cut by the offset, then tg_tensor_diagonal (the last two dims' main diagonal)."""
    d1, d2 = self._check_axis(dim1, "diagonal"), self._check_axis(dim2, "diagonal")
    if d1 == d2: raise RuntimeError("dim1 and dim2 cannot be the same dimension")
    offset = _index(offset, "offset")
    x = self.permute(*[i for i in range(self.ndim) if i not in (d1, d2)], d1, d2)
    r, c = x.shape[-2:]
    if offset >= 0: x = x.shrink(((None,) * (x.ndim - 1)) + ((min(offset, c), c),))
    else: x = x.shrink(((None,) * (x.ndim - 2)) + ((min(-offset, r), r), None))
    return Tensor._wrap(C.tensor_diagonal(x._h), "tensor_diagonal")

  def unfold(self, dim: int, size: int, step: int) -> "Tensor":
    """Windows of `size` every `step` along dim, as a new last dim (torch's unfold)."""
    if self.ndim == 0: raise AxisError("TG_ERROR_SHAPE", "unfold: a 0-d tensor has no dim to unfold")
    self._check_axis(dim, "unfold")
    if size < 0: raise RuntimeError(f"size must be >= 0 but got size={size}")
    if step <= 0: raise RuntimeError(f"step must be > 0 but got step={step}")
    if size > self.shape[dim]: raise RuntimeError(f"maximum size for tensor at dimension {dim} is {self.shape[dim]} but size is {size}")
    return Tensor._wrap(C.tensor_unfold(self._h, _i64(dim, "dim"), _i64(size, "size"), _i64(step, "step")), "tensor_unfold")

  def sort(self, dim: int = -1, descending: bool = False) -> Tuple["Tensor", "Tensor"]:
    """(values, int32 indices), a stable sort along dim."""
    out = (ctypes.c_void_p * 2)()
    _ok(C.tensor_sort(self._h, _i64(dim, "dim"), int(bool(descending)), out), "tensor_sort")
    return Tensor._wrap(out[0], "tensor_sort"), Tensor._wrap(out[1], "tensor_sort")

  def argsort(self, dim: int = -1, descending: bool = False) -> "Tensor":
    return Tensor._wrap(C.tensor_argsort(self._h, _i64(dim, "dim"), int(bool(descending))), "tensor_argsort")

  def topk(self, k: int, dim: int = -1, largest: bool = True, sorted_: bool = True) -> Tuple["Tensor", "Tensor"]:
    """(values, int32 indices) of the k largest (smallest) along dim, always sorted."""
    out = (ctypes.c_void_p * 2)()
    _ok(C.tensor_topk(self._h, _i64(k, "k"), _i64(dim, "dim"), int(bool(largest)), out), "tensor_topk")
    return Tensor._wrap(out[0], "tensor_topk"), Tensor._wrap(out[1], "tensor_topk")

  def scatter(self, dim: int, index: "Tensor", src, reduce: Optional[str] = None) -> "Tensor":
    """self with src's elements written at index along dim; src may be a scalar. reduce="add"/"multiply" combine (tinygrad's
    scatter reduce argument)."""
    if reduce not in (None, "add", "multiply"): raise TypeError(f"{reduce=} must be one of None, 'multiply', or 'add'")
    if isinstance(src, Tensor) and reduce: raise TypeError("non-scalar src is not supported with reduce arg. use scatter_reduce")
    if not isinstance(src, Tensor): src = Tensor.full(index.shape, src, dtype=self.dtype, device=self.device)
    if reduce is not None: return self.scatter_reduce(dim, index, src, "sum" if reduce == "add" else "prod")
    self._check_axis(dim, "scatter")
    return Tensor._wrap(C.tensor_scatter(self._h, _i64(dim, "dim"), index._h, src._h), "tensor_scatter")

  def scatter_reduce(self, dim: int, index: "Tensor", src: "Tensor", reduce: str, include_self: bool = True) -> "Tensor":
    """Combine ("sum", "prod", "mean", "amax", "amin") everything sent to one place (and self's value with include_self)."""
    if not isinstance(src, Tensor): src = Tensor.full(index.shape, src, dtype=self.dtype, device=self.device)
    self._check_axis(dim, "scatter_reduce")
    if reduce not in ("sum", "prod", "mean", "amax", "amin"): raise RuntimeError(f"{reduce=} must be one of 'sum', 'prod', 'mean', 'amax', 'amin'")
    return Tensor._wrap(C.tensor_scatter_reduce(self._h, _i64(dim, "dim"), index._h, src._h, _cstr(reduce, "reduce"),
                                                int(bool(include_self))), "tensor_scatter_reduce")

  def masked_fill(self, mask: "Tensor", value) -> "Tensor":
    """mask ? value : self."""
    value = self._tensor(value)
    return Tensor._wrap(C.tensor_masked_fill(self._h, mask._h, value._h), "tensor_masked_fill")

  def nonzero(self, size: Optional[int] = None, fill_value=0) -> "Tensor":
    """(count, ndim) int32 coordinates of the nonzero elements, row-major, as tinygrad. size=None reads the count back
    (realizes); size=N gives N rows (fill_value past the count, the first N if more), lazy and jittable. fill_value is
    truncated to an int: the dtype stays int32."""
    size = -1 if size is None else _i64(size, "size")
    if size < -1: raise ValueError(f"size must be non-negative, got {size}")
    return Tensor._wrap(C.tensor_nonzero_sized(self._h, size, float(fill_value)), "tensor_nonzero_sized")

  def masked_select(self, mask: "Tensor", size: Optional[int] = None, fill_value=0) -> "Tensor":
    """The 1-d elements where mask (a bool tensor, else RuntimeError; broadcast to self's shape) is true. size=None
    reads the count back (realizes); size=N gives N elements (fill_value past the count), lazy and jittable; the dtype
    stays self's."""
    mask = self._tensor(mask)
    if mask.dtype is not dtypes.bool: raise RuntimeError(f"masked_select expects bool mask tensor, got {mask.dtype}")
    size = -1 if size is None else _i64(size, "size")
    if size < -1: raise ValueError(f"size must be non-negative, got {size}")
    return Tensor._wrap(C.tensor_masked_select_sized(self._h, mask._h, size, float(fill_value)), "tensor_masked_select_sized")

  def bitcast(self, dtype) -> "Tensor":
    """The same bits as another dtype of the same size."""
    return Tensor._wrap(C.tensor_bitcast(self._h, to_dtype(dtype).value), "tensor_bitcast")

  # -- nn functional
  def conv2d(self, weight: "Tensor", bias: Optional["Tensor"] = None, groups=1, stride=1, dilation=1, padding=0, dtype=None) -> "Tensor":
    """Convolution of (N, Cin, *spatial) by weight (Cout, Cin/groups, *kernel) over any number of spatial dims, as tinygrad's.
    stride/dilation: an int or one per spatial dim; padding: an int, one per spatial dim, or 2 per dim in torch's flat order
    (last dim first: left, right, top, bottom, ...); negative padding crops. dtype: the accumulation dtype."""
    nsp = len(weight.shape) - 2
    (bs, cin_), (cout, cin) = self.shape[:2], weight.shape[:2]
    pairs = _pool_pairs(padding, nsp)
    assert groups * cin == cin_ and len(self.shape) == len(weight.shape), \
      f"Input Tensor shape {self.shape} does not match the shape of the weights {weight.shape}. ({groups*cin} vs. {cin_})"
    x, w = (self, weight) if dtype is None else (self.cast(dtype), weight.cast(dtype))
    st, dl = _per_dim(stride, nsp, "stride"), _per_dim(dilation, nsp, "dilation")
    return Tensor._wrap(C.tensor_conv(x._h, w._h, None if bias is None else bias._h, _i64(groups, "groups"), _i64s(st, "stride"), len(st),
                                      _i64s(dl, "dilation"), len(dl), _i64s(_flat_pairs("conv2d", pairs, "(before, after)"), "padding"), nsp),
                        "tensor_conv")

  def conv_transpose2d(self, weight: "Tensor", bias: Optional["Tensor"] = None, groups=1, stride=1, dilation=1, padding=0,
                       output_padding=0) -> "Tensor":
    """The transposed convolution over any number of spatial dims, weight (Cin, Cout/groups, *kernel); arguments as conv2d,
    output_padding an int or one per spatial dim."""
    nsp = len(weight.shape) - 2
    pairs = _pool_pairs(padding, nsp)
    st, dl, op = _per_dim(stride, nsp, "stride"), _per_dim(dilation, nsp, "dilation"), _per_dim(output_padding, nsp, "output_padding")
    return Tensor._wrap(C.tensor_conv_transpose(self._h, weight._h, None if bias is None else bias._h, _i64(groups, "groups"), _i64s(st, "stride"),
                                                len(st), _i64s(dl, "dilation"), len(dl),
                                                _i64s(_flat_pairs("conv_transpose2d", pairs, "(before, after)"), "padding"), nsp,
                                                _i64s(op, "output_padding"), len(op)), "tensor_conv_transpose")

  def interpolate(self, size, mode: str = "linear", align_corners: bool = False) -> "Tensor":
    """Resize the last len(size) dims to size: mode "linear", "nearest" or "nearest-exact"."""
    size = tuple(size) if isinstance(size, (tuple, list)) else (size,)
    return Tensor._wrap(C.tensor_interpolate(self._h, _i64s(size, "size"), len(size), _cstr(mode, "mode"), int(bool(align_corners))),
                        "tensor_interpolate")

  def _pool_args(self, kernel_size, stride, dilation, padding):
    k = _per_dim(kernel_size, 2, "kernel_size")  # an int kernel is 2-d, as tinygrad's make_tuple(kernel_size, 2)
    st = k if stride is None else _per_dim(stride, len(k), "stride")
    dl, pairs = _per_dim(dilation, len(k), "dilation"), _pool_pairs(padding, len(k))
    return (_i64s(k, "kernel_size"), len(k), _i64s(st, "stride"), len(st), _i64s(dl, "dilation"), len(dl),
            _i64s(_flat_pairs("pool", pairs, "(before, after)"), "padding"), len(pairs))

  def max_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0, ceil_mode=False, return_indices=False):
    """Max over kernel windows of the last len(kernel_size) dims (any number; an int kernel is 2-d), as tinygrad's. stride
    defaults to kernel_size; padding as conv2d's, filled with the dtype's lowest value. return_indices: also the int32
    row-major index of each max within its spatial plane (for max_unpool2d)."""
    args = self._pool_args(kernel_size, stride, dilation, padding)
    if not return_indices: return Tensor._wrap(C.tensor_pool(self._h, 0, *args, int(bool(ceil_mode)), 1), "tensor_pool")
    out = (ctypes.c_void_p * 2)()
    _ok(C.tensor_max_pool_indices(self._h, *args, int(bool(ceil_mode)), out), "tensor_max_pool_indices")
    return Tensor._wrap(out[0], "tensor_max_pool_indices"), Tensor._wrap(out[1], "tensor_max_pool_indices")

  def avg_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0, ceil_mode=False, count_include_pad=True) -> "Tensor":
    """Mean over kernel windows of the last len(kernel_size) dims (any number; an int kernel is 2-d), as tinygrad's. Zero
    padding as conv2d's, counted in the mean when count_include_pad (the extra padding of ceil_mode never is)."""
    args = self._pool_args(kernel_size, stride, dilation, padding)
    return Tensor._wrap(C.tensor_pool(self._h, 1, *args, int(bool(ceil_mode)), int(bool(count_include_pad))), "tensor_pool")

  def max_unpool2d(self, indices: "Tensor", kernel_size=(2, 2), stride=None, dilation=1, padding=0, output_size=None) -> "Tensor":
    """The partial inverse of max_pool2d: self (N, C, *spatial) put at `indices` (max_pool2d's return_indices) in zeros of
    output_size's last dims, or the size the pool's arguments give."""
    nsp = len(self.shape) - 2
    k = _per_dim(kernel_size, nsp, "kernel_size")
    st = k if stride is None else _per_dim(stride, nsp, "stride")
    dl, pairs = _per_dim(dilation, nsp, "dilation"), _pool_pairs(padding, nsp)
    os_ = () if output_size is None else tuple(output_size)
    return Tensor._wrap(C.tensor_max_unpool(self._h, indices._h, _i64s(k, "kernel_size"), len(k), _i64s(st, "stride"), len(st), _i64s(dl, "dilation"),
                                            len(dl), _i64s(_flat_pairs("max_unpool2d", pairs, "(before, after)"), "padding"), len(pairs),
                                            _i64s(os_, "output_size"), len(os_)), "tensor_max_unpool")

  def layernorm(self, axis=-1, eps: float = 1e-5) -> "Tensor":
    """(x - mean) / sqrt(var + eps) over axis (an int or a tuple), no affine part."""
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if not axes: raise ValueError("layernorm needs at least one axis")
    return Tensor._wrap(C.tensor_layernorm(self._h, _i64s(axes, "axis"), len(axes), float(eps)), "tensor_layernorm")

  def batchnorm(self, weight: Optional["Tensor"], bias: Optional["Tensor"], mean: "Tensor", invstd: "Tensor", axis=1) -> "Tensor":
    """(x - mean) * weight * invstd + bias, the per-channel tensors along axis (an int or a tuple)."""
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(self._resolve_dim(a) for a in axes)
    if axes == (1,):
      return Tensor._wrap(C.tensor_batchnorm(self._h, None if weight is None else weight._h, None if bias is None else bias._h, mean._h,
                                             invstd._h), "tensor_batchnorm")
    shape = tuple(s if i in axes else 1 for i, s in enumerate(self.shape))
    x = self - mean.reshape(shape)
    if weight is not None: x = x * weight.reshape(shape)
    ret = x * (invstd.reshape(shape) if len(invstd.shape) == len(axes) else invstd)
    return (ret + bias.reshape(shape)) if bias is not None else ret

  def dropout(self, p: float = 0.5) -> "Tensor":
    """In training (Tensor.training), zero each element with probability p and scale the rest by 1/(1-p); else self."""
    if not 0 <= p <= 1: raise ValueError(f"{p=} is out of range [0, 1]")
    if not Tensor.training or p == 0: return self
    if p == 1: return self.zeros_like()
    return Tensor._wrap(C.tensor_dropout(self._h, float(p)), "tensor_dropout")

  def scaled_dot_product_attention(self, key: "Tensor", value: "Tensor", attn_mask: Optional["Tensor"] = None, dropout_p: float = 0.0,
                                   is_causal: bool = False, enable_gqa: bool = False) -> "Tensor":
    """softmax(self @ key^T / sqrt(d) + mask) @ value; a bool mask keeps where true, a float mask is added; is_causal masks
    the upper triangle (RuntimeError with a mask too); enable_gqa repeats key/value heads (dim -3) to the query's;
    dropout_p applies to the attention weights in training."""
    if is_causal and attn_mask is not None:  # a RuntimeError as tinygrad's, and a ValueError
      raise InvalidArgumentError("TG_ERROR_INVALID_ARGUMENT", "scaled_dot_product_attention: cannot set attn_mask when is_causal=True")
    if enable_gqa:
      if len(self.shape) < 3 or len(key.shape) < 3 or len(value.shape) < 3 or self.shape[-3] % key.shape[-3] or self.shape[-3] % value.shape[-3]:
        raise RuntimeError(f"enable_gqa: query heads {self.shape[-3:-2]} are not a multiple of key/value heads {key.shape[-3:-2]} {value.shape[-3:-2]}")
      if not (dropout_p and Tensor.training):
        return Tensor._wrap(C.tensor_scaled_dot_product_attention_gqa(self._h, key._h, value._h, None if attn_mask is None else attn_mask._h,
                                                                      int(bool(is_causal)), 1), "tensor_scaled_dot_product_attention_gqa")
      key = key.repeat_interleave(self.shape[-3] // key.shape[-3], dim=-3)
      value = value.repeat_interleave(self.shape[-3] // value.shape[-3], dim=-3)
    if dropout_p and Tensor.training:
      qk = self.matmul(key.transpose(-2, -1)) / math.sqrt(self.shape[-1])
      if is_causal:
        causal = Tensor.ones(qk.shape[-2], qk.shape[-1], dtype=dtypes.bool, device=self.device).tril()
        qk = causal.where(qk, -math.inf)
      if attn_mask is not None: qk = attn_mask.where(qk, -math.inf) if attn_mask.dtype is dtypes.bool else qk + attn_mask
      return qk.softmax(-1).dropout(dropout_p).matmul(value)
    return Tensor._wrap(C.tensor_scaled_dot_product_attention(self._h, key._h, value._h, None if attn_mask is None else attn_mask._h,
                                                              int(bool(is_causal))), "tensor_scaled_dot_product_attention")

  def one_hot(self, num_classes: int) -> "Tensor":
    """int32 one-hot along a new last dim, as tinygrad: an int tensor (else RuntimeError), num_classes >= 0 (else
    ValueError; no torch-style -1)."""
    if not self.dtype.is_int: raise RuntimeError(f"expect integer dtype, getting self.dtype={self.dtype}")
    num_classes = _index(num_classes, "num_classes")
    if num_classes < 0: raise ValueError(f"num_classes must be non-negative, got {num_classes}")
    return Tensor._wrap(C.tensor_one_hot(self._h, _i64(num_classes, "num_classes")), "tensor_one_hot")

  def cross_entropy(self, Y: "Tensor", reduction: str = "mean", label_smoothing: float = 0.0) -> "Tensor":
    """self: logits (N, C, ...); Y: class indices (N, ...) or probabilities (N, C, ...)."""
    if not 0.0 <= label_smoothing <= 1.0: raise AssertionError("label_smoothing must be in [0.0, 1.0]")  # tinygrad asserts
    return Tensor._wrap(C.tensor_cross_entropy(self._h, Y._h, float(label_smoothing), _reduction(reduction)), "tensor_cross_entropy")

  def sparse_categorical_crossentropy(self, Y: "Tensor", ignore_index: int = -1, label_smoothing: float = 0.0,
                                      reduction: str = "mean") -> "Tensor":
    """self: logits (..., C); Y: int labels (...); labels equal to ignore_index are skipped."""
    if not 0.0 <= label_smoothing <= 1.0: raise AssertionError("label_smoothing must be in [0.0, 1.0]")  # tinygrad asserts
    return Tensor._wrap(C.tensor_sparse_categorical_crossentropy(self._h, Y._h, _i64(ignore_index, "ignore_index"), float(label_smoothing),
                                                                 _reduction(reduction)), "tensor_sparse_categorical_crossentropy")

  def nll_loss(self, Y: "Tensor", weight: Optional["Tensor"] = None, ignore_index: Optional[int] = None, reduction: str = "mean") -> "Tensor":
    """self: log-probabilities (N, C, ...); Y: class indices; weight: per class (C,); targets equal to ignore_index are
    skipped. "mean" divides by the total weight of the targets kept, as torch and tinygrad."""
    if weight is None and ignore_index is None: return Tensor._wrap(C.tensor_nll_loss(self._h, Y._h, _reduction(reduction)), "tensor_nll_loss")
    return Tensor._wrap(C.tensor_nll_loss_weighted(self._h, Y._h, None if weight is None else weight._h, int(ignore_index is not None),
                                                   _i64(0 if ignore_index is None else ignore_index, "ignore_index"), _reduction(reduction)),
                        "tensor_nll_loss_weighted")

  def binary_crossentropy(self, Y: "Tensor", reduction: str = "mean") -> "Tensor":
    """self: probabilities; Y: targets."""
    return Tensor._wrap(C.tensor_binary_crossentropy(self._h, Y._h, _reduction(reduction)), "tensor_binary_crossentropy")

  def binary_crossentropy_logits(self, Y: "Tensor", reduction: str = "mean", pos_weight: Optional["Tensor"] = None) -> "Tensor":
    """self: logits; Y: targets; pos_weight scales the positive targets' term (broadcast), as torch and tinygrad."""
    if pos_weight is not None:
      return Tensor._wrap(C.tensor_binary_crossentropy_logits_weighted(self._h, Y._h, self._tensor(pos_weight)._h, _reduction(reduction)),
                          "tensor_binary_crossentropy_logits_weighted")
    return Tensor._wrap(C.tensor_binary_crossentropy_logits(self._h, Y._h, _reduction(reduction)), "tensor_binary_crossentropy_logits")

  # -- creation (more) and initializers
  @staticmethod
  def linspace(start, stop, steps: int, dtype=None, device=None, requires_grad=None) -> "Tensor":
    """steps values from start to stop inclusive, evenly spaced."""
    dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
    if dt is dtypes.bool: raise ValueError("linspace with bool dtype is not supported")
    steps = _i64(steps, "steps")
    if steps < 0: raise ValueError("number of steps must be non-negative")
    return Tensor._wrap(C.tensor_linspace(float(start), float(stop), steps, dt.value, _enc(device)), "tensor_linspace")._rg(requires_grad)

  @staticmethod
  def scaled_uniform(*shape, dtype=None, device=None, requires_grad=None) -> "Tensor":
    """U(-1, 1) / sqrt(numel)."""
    return Tensor._make("scaled_uniform", shape, dtype or dtypes.default_float, device, requires_grad=requires_grad)

  @staticmethod
  def glorot_uniform(*shape, dtype=None, device=None, requires_grad=None) -> "Tensor":
    """U(+-sqrt(6 / (shape[0] + prod(shape[1:]))))."""
    return Tensor._make("glorot_uniform", shape, dtype or dtypes.default_float, device, requires_grad=requires_grad)

  @staticmethod
  def kaiming_uniform(*shape, a: float = 0.01, dtype=None, device=None, requires_grad=None) -> "Tensor":
    return Tensor._make("kaiming_uniform", shape, dtype or dtypes.default_float, device, float(a), requires_grad=requires_grad)

  @staticmethod
  def kaiming_normal(*shape, a: float = 0.01, dtype=None, device=None, requires_grad=None) -> "Tensor":
    return Tensor._make("kaiming_normal", shape, dtype or dtypes.default_float, device, float(a), requires_grad=requires_grad)

  @staticmethod
  def randperm(n: int, device=None, dtype=dtypes.int32, requires_grad=None) -> "Tensor":
    """A random permutation of 0..n-1."""
    n, dt = _i64(n, "n"), to_dtype(dtype)
    if dt.is_int: _check_int_fits(0, max(n - 1, 0), dt, "randperm value")
    return Tensor._wrap(C.tensor_randperm(n, dt.value, _enc(device)), "tensor_randperm")._rg(requires_grad)

  def multinomial(self, num_samples: int = 1, replacement: bool = False) -> "Tensor":
    """Samples of the categorical distribution(s) in the rows of self (1-d or 2-d weights)."""
    return Tensor._wrap(C.tensor_multinomial(self._h, _i64(num_samples, "num_samples"), int(bool(replacement))), "tensor_multinomial")

  def full_like(self, fill_value: Scalar, dtype=None, device=None, buffer=True, requires_grad=None) -> "Tensor":
    """full with self's shape (and dtype and device unless given); fill_value must fit an int dtype. buffer: as full's."""
    dt = to_dtype(dtype) if dtype is not None else self.dtype
    if dt is self.dtype and device is None and dt.is_float:
      return Tensor._wrap(C.tensor_full_like(self._h, float(fill_value)), "tensor_full_like")._rg(requires_grad)
    return Tensor.full(self.shape, fill_value, dtype=dt, device=device or self.device, requires_grad=requires_grad)

  def zeros_like(self, dtype=None, device=None, requires_grad=None) -> "Tensor":
    if dtype is None and device is None: return Tensor._wrap(C.tensor_zeros_like(self._h), "tensor_zeros_like")._rg(requires_grad)
    return Tensor.zeros(self.shape, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

  def ones_like(self, dtype=None, device=None, requires_grad=None) -> "Tensor":
    if dtype is None and device is None: return Tensor._wrap(C.tensor_ones_like(self._h), "tensor_ones_like")._rg(requires_grad)
    return Tensor.ones(self.shape, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction(reduction: str) -> int:
  if reduction not in _REDUCTIONS: raise ValueError(f"{reduction=} must be one of {tuple(_REDUCTIONS)}")
  return _REDUCTIONS[reduction]


def _per_dim(v, n: int, what: str) -> Tuple[int, ...]:
  """tinygrad's make_tuple: an int for every one of n dims, or the given sequence (its length is checked by the library)."""
  if isinstance(v, (tuple, list)): return tuple(_i64(x, what) for x in v)
  return (_i64(v, what),) * n


def _pool_pairs(padding, n: int) -> Tuple[Tuple[int, int], ...]:
  """(before, after) per spatial dim from tinygrad's padding forms: an int, n ints (one per dim), or 2n ints in torch's flat
  order (last dim first)."""
  if isinstance(padding, str) or (isinstance(padding, (tuple, list)) and len(padding) not in (n, 2 * n)):
    raise ValueError(f"Padding must be an int or a sequence of length {n} or {2*n}, but got padding={padding!r} with dims={n}.")
  if not isinstance(padding, (tuple, list)): return ((_i64(padding, "padding"),) * 2,) * n
  p = tuple(_i64(x, "padding") for x in padding)
  if len(p) == 2 * n: return tuple(zip(p[-2::-2], p[::-2]))
  return tuple((x, x) for x in p)


def _flat_pairs(what: str, pairs, kind: str):
  for p in pairs:
    if len(p) != 2: raise ValueError(f"{what}: each dim takes a {kind} pair, got {p!r}")
  return [v for p in pairs for v in p]


def _tensor_unpickle(data, dtype: str, shape, device: str, requires_grad: bool, grad: Optional[Tensor]) -> Tensor:
  """A Tensor from Tensor.__reduce_ex__'s parts (pickle, deepcopy)."""
  dt, buf = to_dtype(dtype), np.frombuffer(data, dtype=np.uint8)  # no copy; from_data copies it
  t = Tensor._wrap(C.tensor_from_data(buf.ctypes.data if buf.size else None, buf.size, dt.value, _i64s(shape, "shape dim"), len(shape),
                                      _enc(device)), "tensor_from_data")
  if requires_grad: t.requires_grad = True
  if grad is not None: t.grad = grad
  return t


# ---- symbolic expressions ----------------------------------------------------------------------------------------------
_ADD, _SUB, _MUL, _IDIV, _MOD, _MAX, _MIN, _LT = range(8)


class Expr(_Owned):
  """An immutable symbolic integer expression (tg_expr). Division and modulo truncate toward zero, like C."""
  __slots__ = ("_h",)
  _release, _retain = C.expr_release, C.expr_retain
  _no_copy = "an expression lives in the library; pickle what it was built from (names, bounds, ints) and build it again"

  def __deepcopy__(self, memo): return copy.copy(self)  # immutable: another reference is an independent copy

  def __init__(self, value: Union[int, "Expr"]):
    h = C.expr_retain(value._h) if isinstance(value, Expr) else C.expr_const(_i64(value))
    self._h = _made(h, "expr")

  @classmethod
  def _wrap(cls, handle, what: str) -> "Expr":
    e = object.__new__(cls)
    e._h = _made(handle, what)
    return e

  @staticmethod
  def variable(name: str, min_val: int, max_val: int) -> "Expr":
    return Expr._wrap(C.expr_variable(_cstr(name, "name"), _i64(min_val, "min"), _i64(max_val, "max")), "expr_variable")

  def _bin(self, op: int, other, reverse=False) -> "Expr":
    if not isinstance(other, Expr):
      if not isinstance(other, (int, np.integer)): return NotImplemented
      other = Expr(other)
    a, b = (other, self) if reverse else (self, other)
    return Expr._wrap(C.expr_binary(op, a._h, b._h), "expr_binary")

  def __add__(self, x): return self._bin(_ADD, x)
  def __radd__(self, x): return self._bin(_ADD, x, True)
  def __sub__(self, x): return self._bin(_SUB, x)
  def __rsub__(self, x): return self._bin(_SUB, x, True)
  def __mul__(self, x): return self._bin(_MUL, x)
  def __rmul__(self, x): return self._bin(_MUL, x, True)
  def __floordiv__(self, x): return self._bin(_IDIV, x)
  def __rfloordiv__(self, x): return self._bin(_IDIV, x, True)
  def __mod__(self, x): return self._bin(_MOD, x)
  def __rmod__(self, x): return self._bin(_MOD, x, True)
  def __neg__(self): return self * -1
  def __lt__(self, x): return self._bin(_LT, x)
  def maximum(self, x): return self._bin(_MAX, x)
  def minimum(self, x): return self._bin(_MIN, x)
  __hash__ = object.__hash__

  def simplify(self) -> "Expr": return Expr._wrap(C.expr_simplify(self._h), "expr_simplify")

  def render(self) -> str: return _c_text(C.expr_render, self._h, "expr_render")

  def __str__(self): return self.render()
  def __repr__(self): return f"Expr({self.render()})"

  def eval(self, **values: int) -> int:
    out = ctypes.c_int64()
    _ok(C.expr_eval(self._h, *_bindings(values), ctypes.byref(out)), "expr_eval")
    return out.value

  def bounds(self) -> Tuple[int, int]:
    lo, hi = ctypes.c_int64(), ctypes.c_int64()
    _ok(C.expr_bounds(self._h, ctypes.byref(lo), ctypes.byref(hi)), "expr_bounds")
    return lo.value, hi.value

  @property
  def vmin(self) -> int: return self.bounds()[0]
  @property
  def vmax(self) -> int: return self.bounds()[1]

  def _is_var(self) -> bool: return self.render().isidentifier()  # a Variable renders as its bare name

  @property
  def expr(self) -> str:
    """A Variable's name (tinygrad's Variable.expr); an expression's text."""
    return self.render()

  @property
  def val(self) -> int:
    """A constant's value (tinygrad's UOp.val, which only a constant has: AssertionError otherwise)."""
    lo, hi = self.bounds()
    if lo != hi: raise AssertionError(f"val is only for a constant, got {self.render()}")
    return lo

  def bind(self, val: int) -> "BoundExpr":
    """tinygrad's Variable.bind: this Variable at the value `val` (vmin <= val <= vmax, else AssertionError), for
    symbolic shapes: x[:v.bind(3)], x.shrink(((0, v.bind(3)),)), Tensor.zeros(v.bind(3), 4)."""
    if not self._is_var(): raise AssertionError(f"bind is only for a Variable, got {self.render()}")
    return BoundExpr(self, val)


class BoundExpr(int):
  """A Variable bound to a value (Variable("i", 1, 10).bind(3)), or integer arithmetic on bound Variables (b + 1, b * 2):
  what tinygrad's Tensor.shape holds for a symbolic dim. It is the int of its value wherever an int goes (comparisons,
  hashing, C calls, numpy), and carries its expression: str() renders it ("i", "(i+1)"), .unbind() gives (Variable,
  value) for a bound Variable, arithmetic with ints and other bound expressions stays symbolic. A dim whose size is a
  bound Variable stays symbolic through tensor ops (Tensor.shrink_var), and so does one that pad or cat grow to an
  expression of it (i+2, i+j); a tensor created with an expression dim (Tensor.zeros(v + 1)) is made at the bound value
  instead."""

  def __new__(cls, e: Expr, val):
    v = _index(val, "bound value")
    lo, hi = e.bounds()
    if not lo <= v <= hi: raise AssertionError(f"bind {v} not in range [{lo}, {hi}]")
    b = super().__new__(cls, v)
    b._e = e
    b._binds = {e.expr: v} if e._is_var() else {}
    return b

  @property
  def var(self) -> Optional[Expr]:
    """The Variable, for a bound Variable; None for an expression of one."""
    return self._e if self._e._is_var() else None

  def unbind(self) -> Tuple[Expr, int]:
    """(Variable, value), as tinygrad's UOp.unbind."""
    if self.var is None: raise AssertionError(f"unbind is only for a bound Variable, got {self._e.render()}")
    return self._e, int(self)

  @property
  def expr(self) -> str: return self._e.expr
  @property
  def vmin(self) -> int: return self._e.vmin
  @property
  def vmax(self) -> int: return self._e.vmax
  def render(self) -> str: return self._e.render()
  def __str__(self): return self._e.render()
  def __repr__(self): return f"{self._e.render()}={int(self)}"
  def __reduce__(self): return (int, (int(self),))  # pickles (and deep-copies) as its value
  def __bool__(self): return int(self) != 0

  def _op(self, other, f, reverse=False):
    if isinstance(other, bool) or not isinstance(other, (int, np.integer)): return f(other, int(self)) if reverse else f(int(self), other)
    oe = other._e if isinstance(other, BoundExpr) else int(other)
    a, b = (oe, self._e) if reverse else (self._e, oe)
    av, bv = (int(other), int(self)) if reverse else (int(self), int(other))
    r = int.__new__(BoundExpr, f(av, bv))
    r._e = f(a if isinstance(a, Expr) else Expr(a), b)
    r._binds = dict(self._binds)
    for k, v in (other._binds.items() if isinstance(other, BoundExpr) else ()):
      if r._binds.setdefault(k, v) != v: raise AssertionError(f"Variable '{k}' is bound to both {r._binds[k]} and {v}")
    return r

  def __add__(self, x): return self._op(x, operator.add)
  def __radd__(self, x): return self._op(x, operator.add, True)
  def __sub__(self, x): return self._op(x, operator.sub)
  def __rsub__(self, x): return self._op(x, operator.sub, True)
  def __mul__(self, x): return self._op(x, operator.mul)
  def __rmul__(self, x): return self._op(x, operator.mul, True)
  def __floordiv__(self, x): return self._op(x, operator.floordiv)
  def __rfloordiv__(self, x): return self._op(x, operator.floordiv, True)
  def __neg__(self): return self._op(-1, operator.mul)
  __hash__ = int.__hash__


def _window(start, stop) -> Optional[int]:
  """The width of start:stop when start is a bound expression and stop - start is the same for every binding (v:v+2),
  else None."""
  if not isinstance(start, BoundExpr) or not isinstance(stop, (int, np.integer)) or isinstance(stop, bool): return None
  w = stop - start
  if not isinstance(w, BoundExpr): return int(w)
  lo, hi = w._e.simplify().bounds()
  return lo if lo == hi else None


def Variable(name: str, min_val: int, max_val: int, dtype=None) -> Expr:
  """A symbolic variable taking integer values in [min_val, max_val]; .bind(value) makes the bound Variable symbolic
  shapes take. dtype (tinygrad's int or long) must be an integer dtype: every Variable here is a 64-bit integer."""
  if dtype is not None and not dtypes.is_int(to_dtype(dtype)): raise ValueError(f"Variable '{name}': dtype {dtype} is not an integer dtype")
  return Expr.variable(name, min_val, max_val)


def sym_infer(e, var_vals: dict) -> int:
  """tinygrad's sym_infer: the value of a shape entry (int, bound expression or Expr) with Variables set by var_vals
  ({name or Variable: value})."""
  if isinstance(e, BoundExpr): e = e._e
  if not isinstance(e, Expr): return int(e)
  return e.eval(**{(k.expr if isinstance(k, (Expr, BoundExpr)) else k): int(v) for k, v in var_vals.items()})


__all__ += ["BoundExpr", "sym_infer"]


def _symbolic_size(d) -> bool:
  """A bound Variable, or an expression whose Variables are all bound (v.bind(3) + 1): a size kept symbolic."""
  return isinstance(d, BoundExpr) and d.vmin >= 0 and (d.var is not None or bool(d._binds))


def _bound_var(d) -> Optional[Expr]:
  """The Variable of a shape entry that is a bound Variable (kept symbolic by shrink_var); None otherwise."""
  return d.var if isinstance(d, BoundExpr) else None


def _unbound_check(vals, what: str):
  for v in vals:
    if isinstance(v, Expr): raise TypeError(f"{what}: the Variable {v.render()} has no value: bind it (Variable(...).bind(n))")


# ---- options ---------------------------------------------------------------------------------------------------------
def set_option(name: str, value) -> None:
  """tg_set_option: the library's setting `name` (DEBUG, BEAM, NOOPT, JIT, ...) to a number (or a decimal string, as the
  environment variable takes it), for the whole process; None
  forgets the value set here so the environment applies again. An unknown name or an out-of-range value raises
  InvalidArgumentError."""
  if value is not None and not isinstance(value, str):
    if isinstance(value, bool): value = int(value)
    if not isinstance(value, (int, float, np.integer, np.floating)): raise TypeError(f"option {name} takes a number or None, got {value!r}")
    value = str(int(value)) if float(value).is_integer() else repr(float(value))
  _ok(C.set_option(_cstr(name, "option name"), _cstr(value, f"option {name}")), "set_option")


def get_option(name: str) -> Union[int, float]:
  """tg_get_option: the value the library uses now for option `name` (set here, else the environment, else its default)."""
  out = ctypes.c_double()
  _ok(C.get_option(_cstr(name, "option name"), ctypes.byref(out)), "get_option")
  return int(out.value) if out.value.is_integer() else out.value


class Context(contextlib.ContextDecorator):
  """tinygrad's Context: `with Context(JIT=0, DEBUG=2): ...` or `@Context(TRAINING=1)` on a function sets options for
  the block (each call, for a decorated function) and restores them on exit. The values hold for the calling thread
  only (tg_option_push / tg_option_pop), over set_option and the environment; blocks nest. An option the library does
  not have raises KeyError, as tinygrad's Context does for a name it does not know."""
  def __init__(self, **options):
    self.options, self.default_float = {}, None
    for k, v in options.items():
      if k == "DEFAULT_FLOAT":  # a dtype (or its name): dtypes.default_float for the block, in this thread
        d = v if isinstance(v, DType) else _dtype_from_name(v) if isinstance(v, str) else to_dtype(v)
        if not d.is_float: raise ValueError(f"DEFAULT_FLOAT must be a float dtype, got {d}")
        self.default_float = d
        continue
      if isinstance(v, bool): v = int(v)
      if isinstance(v, str): self.options[k] = v  # a decimal, as the environment variable takes it
      elif isinstance(v, (int, float, np.integer, np.floating)): self.options[k] = str(int(v)) if float(v).is_integer() else repr(float(v))
      else: raise TypeError(f"Context option {k} takes a number, got {v!r}")
  def __enter__(self):
    n = 0
    try:
      for k, v in self.options.items():
        st = C.option_push(_cstr(k, "option name"), v.encode())
        if st != 0:
          if b"unknown option" in (C.last_error_message() or b""):
            C.clear_error()
            raise KeyError(k)
          _raise_last("option_push")
        n += 1
    except BaseException:
      for _ in range(n): C.option_pop()
      raise
    if self.default_float is not None:
      loc = _DTypesMeta._local
      if not hasattr(loc, "stack"): loc.stack = []
      loc.stack.append(self.default_float)
    return self
  def __exit__(self, *exc):
    if self.default_float is not None: _DTypesMeta._local.stack.pop()
    for _ in self.options: _ok(C.option_pop(), "option_pop")


# ---- plans: what a realize runs, as data -----------------------------------------------------------------------------
class Kernel(NamedTuple):
  """One kernel of a Plan: name, generated source, the byte sizes of its buffers (output first), seconds of its last run
  (None before one), the CPU cores it is split over, and its estimated ops and bytes moved per run."""
  name: str
  source: str
  buffer_nbytes: Tuple[int, ...]
  time_s: Optional[float]
  threads: int
  ops: int
  mem: int


class MemoryPlan(NamedTuple):
  """The memory planner's result: bytes of the intermediate buffers if each had its own memory, and bytes they take
  sharing memory (the peak)."""
  intermediate_bytes: int
  peak_bytes: int


def _uop_list(call, what: str) -> list:
  """The new node references call(out, capacity) writes (tg_uop_srcs, tg_tensor_schedule, ...), as UOps: asked once for
  the count, then for all."""
  n = call(None, 0)
  if n < 0: _raise_last(what)
  arr = (ctypes.c_void_p * max(n, 1))()
  if n and call(arr, n) != n: _raise_last(what)
  return [UOp._wrap(arr[i]) for i in range(n)]


class Op(str):
  """An op of the engine's graph, as tinygrad's Ops enum member: Ops.ADD (its repr), .name "ADD"; the same object for
  the same name, so `u.op is Ops.ADD` holds."""
  __slots__ = ()
  _all: Dict[str, "Op"] = {}
  def __new__(cls, name: str):
    if name not in cls._all: cls._all[name] = str.__new__(cls, name)
    return cls._all[name]
  @property
  def name(self) -> str: return str.__str__(self)
  def __repr__(self): return f"Ops.{str.__str__(self)}"
  __str__ = __repr__
  def __reduce__(self): return (Op, (str.__str__(self),))


class _OpsNamespace:
  """tinygrad's Ops: Ops.ADD, Ops.REDUCE_AXIS, ... (any name: the engine's ops are the ones nodes report)."""
  def __getattr__(self, name: str) -> Op:
    if name.startswith("_") or not name.isupper(): raise AttributeError(name)
    return Op(name)
  def __repr__(self): return "Ops"


Ops = _OpsNamespace()
_VIEW_OPS = tuple(Op(n) for n in ("RESHAPE", "PERMUTE", "EXPAND", "PAD", "SHRINK", "FLIP"))


class UOp(_Owned):
  """A read-only node of the engine's graph (tg_uop), as tinygrad's UOp: t.uop is a tensor's, Tensor.schedule() gives
  the kernels' ASTs. .op (Ops.ADD), .dtype, .arg (a Python value where the arg is a literal, else its text), .src (a
  tuple of UOps), .shape, .toposort() (a dict, sources first, as tinygrad's), print(u) in tinygrad's format. Equal nodes
  compare equal and hash alike; nothing through a UOp changes a graph."""
  __slots__ = ("_h",)
  _release = C.uop_release
  _retain = C.uop_retain

  @classmethod
  def _wrap(cls, handle) -> "UOp":
    u = object.__new__(cls)
    u._h = _made(handle, "uop")
    return u

  @property
  def op(self) -> Op:
    name = C.uop_op(self._h)
    if not name: _raise_last("uop_op")
    return Op(name.decode())
  @property
  def dtype(self):
    """The DType for a plain element type; for a pointer or vector type (kernel ASTs) its text, "float32.ptr(16)"."""
    text = _c_text(C.uop_dtype, self._h, "uop_dtype")
    return getattr(dtypes, text, None) if "." not in text and text != "void" and hasattr(dtypes, text) else text
  @property
  def arg(self):
    """A Python value where the arg is a literal (None, 2.0, (0, 2), 'name'; a reduce's op an Op: (Ops.ADD, (0,))),
    else its text ("<CPU float32[3]>")."""
    import ast, re
    text = _c_text(C.uop_arg, self._h, "uop_arg")
    if text in ("nan", "inf", "-inf"): return float(text)
    def ops(v):
      if isinstance(v, str) and v.startswith("\0"): return Op(v[1:])
      return tuple(ops(x) for x in v) if isinstance(v, tuple) else v
    try: return ops(ast.literal_eval(re.sub(r"\bOps\.([A-Z_0-9]+)", lambda m: repr("\0" + m.group(1)), text)))
    except (ValueError, SyntaxError): return text
  @property
  def src(self) -> Tuple["UOp", ...]: return tuple(_uop_list(lambda o, n: C.uop_srcs(self._h, o, n), "uop_srcs"))
  @property
  def shape(self) -> Optional[Tuple[int, ...]]:
    """The node's shape, None for one without (kernel AST nodes)."""
    n = C.uop_shape(self._h, None, 0)
    if n < 0:
      C.clear_error()
      return None
    arr = (ctypes.c_int64 * max(n, 1))()
    if C.uop_shape(self._h, arr, n) != n: _raise_last("uop_shape")
    return tuple(arr[i] for i in range(n))
  def toposort(self) -> Dict["UOp", None]: return dict.fromkeys(_uop_list(lambda o, n: C.uop_toposort(self._h, o, n), "uop_toposort"))
  @property
  def base(self) -> "UOp":
    """The node under a chain of views (movement ops), as tinygrad's UOp.base: a realized tensor's BUFFER."""
    u = self
    while u.op in _VIEW_OPS: u = u.src[0]
    return u
  @property
  def buffer(self) -> "UOpBuffer":
    """A BUFFER node's device memory: .size (elements), .dtype, .device; as tinygrad's, only a buffer node has one."""
    if self.op is not Ops.BUFFER: raise AssertionError(f"buffer is only for a BUFFER node, got {self.op}")
    dev = str(self.src[0].arg).lstrip("<").split(" ")[0] if self.src else ""
    return UOpBuffer(int(self.arg), self.dtype, dev)
  def __eq__(self, other): return isinstance(other, UOp) and C.uop_id(self._h) == C.uop_id(other._h)
  def __hash__(self): return hash(C.uop_id(self._h))
  def __repr__(self): return _c_text(C.uop_print, self._h, "uop_print")


class UOpBuffer(NamedTuple):
  """The memory behind a BUFFER node (UOp.buffer): its size in elements, dtype and device."""
  size: int
  dtype: object
  device: str


class ScheduleItem:
  """One kernel of Tensor.schedule(): .ast, its AST (a SINK UOp of the stores it makes)."""
  __slots__ = ("ast",)
  def __init__(self, ast: UOp): self.ast = ast
  def __repr__(self): return f"ScheduleItem(ast=<{self.ast.op} with {len(self.ast.toposort())} nodes>)"


class Plan(_Owned):
  """tg_plan: Plan(*tensors) (or t.plan(*more)) schedules the tensors and compiles their kernels without running them;
  .kernels lists them in launch order, .memory is the memory planner's result, .run() realizes the tensors (as
  Tensor.realize_many) and records each kernel's time. A plan runs once. TinyJit.plan() gives a captured JIT's kernels
  (it describes them; .run() refuses)."""
  __slots__ = ("_h",)
  _release = C.plan_release
  _no_copy = "a plan's compiled kernels live in the library and run once; make a new Plan"

  def __init__(self, *tensors: Tensor):
    for i, t in enumerate(tensors):
      if not isinstance(t, Tensor): raise TypeError(f"Plan takes Tensors, argument {i} is {type(t).__name__}")
    arr = (ctypes.c_void_p * max(len(tensors), 1))(*[t._h for t in tensors])
    self._h = _made(C.plan_create(arr, len(tensors)), "plan_create")

  @classmethod
  def _wrap(cls, handle) -> "Plan":
    p = object.__new__(cls)
    p._h = handle
    return p

  def run(self) -> "Plan":
    _ok(C.plan_run(self._h), "plan_run")
    return self

  def __len__(self) -> int: return C.plan_kernel_count(self._h)

  def kernel(self, i: int) -> Kernel:
    k = _KernelInfo(struct_size=ctypes.sizeof(_KernelInfo))
    _ok(C.plan_kernel(self._h, i, ctypes.byref(k)), "plan_kernel")
    return Kernel(k.name.decode(), k.source.decode(), tuple(k.buffer_nbytes[j] for j in range(k.n_buffers)),
                  None if k.time_s < 0 else k.time_s, k.threads, k.ops, k.mem)

  @property
  def kernels(self) -> List[Kernel]: return [self.kernel(i) for i in range(len(self))]

  @property
  def memory(self) -> MemoryPlan:
    total, peak = ctypes.c_int64(), ctypes.c_int64()
    _ok(C.plan_memory(self._h, ctypes.byref(total), ctypes.byref(peak)), "plan_memory")
    return MemoryPlan(total.value, peak.value)

  def __repr__(self): return f"<Plan {len(self)} kernels>"


def plan(*tensors: Tensor) -> Plan:
  """Plan(*tensors): what realizing the tensors would run, as data."""
  return Plan(*tensors)


# ---- TinyJit ---------------------------------------------------------------------------------------------------------
_TG_OK, _TG_ERROR_INVALID_ARGUMENT = 0, 1


class _JitCall:
  """One call of a TinyJit on this thread: its arguments, and what its function returned or raised (the trampoline
  writes it)."""
  __slots__ = ("jit", "realize_stash", "running", "exc", "stash", "kind", "n_out", "args", "kwargs", "tensors", "vars")

  def __init__(self, jit, realize_stash, args, kwargs):
    self.jit, self.realize_stash, self.running = jit, realize_stash, False
    self.exc, self.stash, self.kind, self.n_out = None, None, None, None
    self.args, self.kwargs, self.tensors = args, kwargs, _jit_inputs(args, kwargs)
    # bound Variables among the arguments (as tinygrad's jit takes them): their values go to the kernels at a replay
    self.vars: Dict[str, int] = {}
    for x in (*args, *kwargs.values()):
      for b in (x.values() if type(x) is dict else x if type(x) in (list, tuple) else (x,)):
        for k, v in (b._binds.items() if isinstance(b, BoundExpr) else ()):
          if self.vars.setdefault(k, v) != v: raise AssertionError(f"TinyJit: Variable '{k}' is bound to both {self.vars[k]} and {v}")

  def rebuild(self, ins: List["Tensor"]):
    """The call's arguments with each input tensor replaced by the library's handle for it (the same buffer)."""
    sub = {id(t): i for i, t in enumerate(self.tensors)}
    def put(x):
      if isinstance(x, Tensor): return ins[sub[id(x)]]
      if type(x) in (list, tuple): return type(x)(ins[sub[id(v)]] if isinstance(v, Tensor) else v for v in x)
      if type(x) is dict: return {k: ins[sub[id(v)]] if isinstance(v, Tensor) else v for k, v in x.items()}
      return x
    return tuple(put(a) for a in self.args), {k: put(v) for k, v in self.kwargs.items()}


def _jit_inputs(args, kwargs) -> List["Tensor"]:
  """A TinyJit call's input tensors, as tinygrad picks them: the Tensor arguments (positional, then keyword ones by
  name), then the Tensors directly inside list, tuple and dict arguments (one level: a model object's weights are not
  inputs, they are captured as they are). Each tensor once."""
  direct = [a for a in args if isinstance(a, Tensor)] + [v for _, v in sorted(kwargs.items()) if isinstance(v, Tensor)]
  inner = [t for x in (*args, *kwargs.values()) if type(x) in (list, tuple, dict)
           for t in (x.values() if type(x) is dict else x) if isinstance(t, Tensor)]
  out, seen = [], set()
  for t in direct + inner:
    if id(t) not in seen: seen.add(id(t)); out.append(t)
  return out


_jit_tls = threading.local()


def _jit_calls():
  """This thread's TinyJit calls in progress, outermost first."""
  if not hasattr(_jit_tls, "stack"): _jit_tls.stack = []
  return _jit_tls


class TinyJit(_Owned):
  """tinygrad's TinyJit over tg_jit: `jit = TinyJit(fn)` (or `@TinyJit` on a function or a method) and `jit(...)`.

  The inputs are the Tensor arguments (positional, then keyword by name) and the Tensors directly inside list, tuple
  and dict arguments, as tinygrad picks them; other arguments (a model object, ints) are passed to fn when it runs and
  are not looked at on a replay. fn returns a Tensor, a tuple or list of Tensors, or None. The first call runs fn and
  realizes its outputs; the second runs fn while capturing every kernel its realizes launch; later calls replay those
  kernels on the new inputs' buffers without running fn (no scheduling, lowering or compiling). Every realized tensor fn
  assigns in place (Tensor.assign) is realized with the outputs at each call, so the update replays even if fn does not
  return it. A replay's inputs must have the shapes, dtypes and devices of the capture (else ShapeError / TinygradError
  naming the input). The outputs of a replay are the capture's buffers: the next call overwrites them, so use or copy
  them (.numpy()) before. With the option JIT=0 every call runs fn (set_option("JIT", 0) or Context(JIT=0)). An exception
  raised by fn propagates as itself; a failed capture captures again at the next call. Calls from several threads take
  turns; fn must not call its own jit (RuntimeError). A jit called from inside another jit's function runs its function
  as a plain call (its kernels become part of the outer capture) and keeps no state of its own for it."""

  _release = C.jit_release
  _no_copy = "its capture (compiled kernels, buffers, a callback into Python) lives in the library; make a new TinyJit(fn)"

  def __init__(self, fn):
    if not callable(fn): raise TypeError(f"TinyJit takes a function, got {type(fn).__name__}")
    self.fn, self._h = fn, None
    ref = weakref.ref(self)  # no cycle through the callback: the jit is released as soon as it is unreferenced
    def tramp(ud, inputs, n_inputs, outputs, n_outputs):
      jit = ref()
      return _TG_ERROR_INVALID_ARGUMENT if jit is None else jit._trampoline(ud, inputs, n_inputs, outputs, n_outputs)
    self._tramp = _JIT_FN(tramp)  # C keeps a pointer to it: it lives as long as the jit
    self._n_out: Optional[int] = None  # outputs of fn at the last outermost call that ran it (None: no call yet)
    self._kind = None                  # what it returned: Tensor, tuple, list or None
    self._lock = threading.Lock()      # outermost calls from several threads take turns
    self._h = _made(C.jit_create(self._tramp, None), "jit_create")
    try: functools.update_wrapper(self, fn)
    except AttributeError: pass

  def _trampoline(self, _userdata, inputs, n_inputs, outputs, n_outputs) -> int:
    """Called by tg_jit_call, on the calling thread, inside __call__: runs fn on the borrowed inputs. Nothing may raise
    across the C boundary: a Python exception is kept in the call's record and re-raised once tg_jit_call has returned."""
    call = _jit_calls().stack[-1]
    try:
      ins = [Tensor._wrap(C.tensor_retain(inputs[i]), "tensor_retain") for i in range(n_inputs)]
      args, kwargs = call.rebuild(ins)
      call.running = True
      try: ret = self.fn(*args, **kwargs)
      finally: call.running = False
      if ret is None: kind, outs = None, []
      elif isinstance(ret, Tensor): kind, outs = Tensor, [ret]
      elif isinstance(ret, (tuple, list)): kind, outs = type(ret), list(ret)
      else: raise TypeError(f"a TinyJit function returns a Tensor, a tuple or list of Tensors, or None; got {type(ret).__name__}")
      for i, o in enumerate(outs):
        if not isinstance(o, Tensor): raise TypeError(f"a TinyJit function returns Tensors; its output {i} is {type(o).__name__}")
      if n_outputs == 0:
        # realized here, before tg_jit_call realizes the in-place assigns: an output reads the parameters fn saw
        if call.realize_stash and outs: Tensor.realize_many(*{id(o): o for o in outs}.values())
        call.stash = outs
      elif len(outs) != n_outputs:
        raise ValueError(f"the TinyJit function returned {len(outs)} outputs, it returned {n_outputs} when it was captured")
      else:
        hs = [_made(C.tensor_retain(o._h), "tensor_retain") for o in outs]
        for i, h in enumerate(hs): outputs[i] = h
      call.kind, call.n_out = kind, len(outs)
      return _TG_OK
    except BaseException as e:  # noqa: B036 -- KeyboardInterrupt too: it is re-raised after the C call returns
      call.exc = e
      return _TG_ERROR_INVALID_ARGUMENT

  def __get__(self, obj, objtype=None):
    """On a method: each instance gets its own capture (its own weights are what a replay reads); the jit on the class
    itself is this one. (tinygrad shares one capture between all instances of the class.)"""
    if obj is None: return self
    per = self.__dict__.setdefault("_per_instance", weakref.WeakKeyDictionary())
    try: jit = per.get(obj)
    except TypeError: raise TypeError(f"TinyJit on a method needs instances that can be weakly referenced; {type(obj).__name__} cannot") from None
    if jit is None:
      ref, fn = weakref.ref(obj), self.fn  # weak: the instance keys the map, a strong reference would keep it alive
      def bound(*args, **kwargs):
        o = ref()
        if o is None: raise ReferenceError("the instance of this TinyJit method is gone")
        return fn(o, *args, **kwargs)
      functools.update_wrapper(bound, fn)
      jit = per.setdefault(obj, TinyJit(bound))
    return jit

  def __call__(self, *args, **kwargs):
    stack = _jit_calls().stack
    if any(c.jit is self and c.running for c in stack): raise RuntimeError("TinyJit is not reentrant: its function called the jit itself")
    # nested in another jit's function on this thread: the library runs fn at once and keeps no state for the call (an
    # enclosing capture records its kernels), so neither do we, and no lock is taken: a thread holds at most one jit
    # lock and never waits for another while holding it, so jits whose functions call each other cannot deadlock
    nested = any(c.running for c in stack)
    with contextlib.nullcontext() if nested else self._lock:
      # before the capture any count goes: with n_outputs=0 fn's outputs come back through the stash
      n_out = 0 if nested or self.call_count == 0 or self._n_out is None else self._n_out
      # (JIT=0 too: tg_jit_call realizes fn's assigns at every call)
      call = _JitCall(self, n_out == 0 and not nested, args, kwargs)
      ins = call.tensors
      arr = (ctypes.c_void_p * max(len(ins), 1))(*[a._h for a in ins])
      out = (ctypes.c_void_p * max(n_out, 1))()
      stack.append(call)
      try: st = C.jit_call_vars(self._h, arr, len(ins), *_bindings(call.vars), out, n_out)
      finally: stack.pop()
      if st == 0 and not nested and call.n_out is not None: self._kind, self._n_out = call.kind, call.n_out
      kind = call.kind if call.n_out is not None else self._kind  # a replay does not run fn: what it returned when captured
    if st != 0:
      if call.exc is not None:
        C.clear_error()
        raise call.exc
      msg = (C.last_error_message() or b"").decode("utf-8", "replace")
      if msg.startswith("jit: "):  # the arguments don't match the capture
        code = C.last_error()
        C.clear_error()
        raise JitError(C.status_name(code).decode(), msg)
      _raise_last("jit_call")
    outs = call.stash if n_out == 0 else [Tensor._wrap(out[i], "jit_call") for i in range(n_out)]
    if kind is None: return None
    if kind is Tensor: return outs[0]
    return kind._make(outs) if hasattr(kind, "_make") else kind(outs)  # a namedtuple too

  @property
  def call_count(self) -> int:
    """Calls so far: 0, 1 (warmed up), >= 2 (captured and replaying). Calls under JIT=0 are not counted."""
    n = C.jit_call_count(self._h)
    if n < 0: _raise_last("jit_call_count")
    return n

  cnt = call_count  # tinygrad's name

  @property
  def captured(self) -> Optional["Plan"]:
    """The capture (as a Plan of its kernels) once made, else None: tinygrad's `jit.captured`, a CapturedJit or None."""
    return self.plan()

  def reset(self):
    """Forget the capture: the next call runs fn again as the first call did."""
    _ok(C.jit_reset(self._h), "jit_reset")

  def plan(self) -> Optional[Plan]:
    """The captured kernels as a Plan (kernel list, times of the last replay, memory plan); None before a capture."""
    if self.call_count < 2: return None
    return Plan._wrap(_made(C.jit_plan(self._h), "jit_plan"))

  def export(self, dir: str, name: str = "model", target: Optional[str] = None, threads: int = 0) -> Dict[str, int]:
    """Write the capture as C that needs only a C compiler and libm (tg_jit_export, docs/export.md): `dir`/NAME.c,
    NAME.h and NAME_weights.c, with `int NAME_run(const NAME_inputs*, NAME_outputs*, void* arena)`. target: "native"
    (None), "generic" (ISO C99, no vectors), "x86-64-v3", "x86-64-v4", "aarch64", "armv7". threads > 1: kernels split
    for that many cores, run on a pthread pool in the generated code. Returns the sizes the header states: arena_bytes,
    weight_bytes and threads."""
    import os, re
    o = _capi.tg_export_options(struct_size=ctypes.sizeof(_capi.tg_export_options), dir=os.fsencode(dir), name=name.encode(),
                                target=target.encode() if target is not None else None, threads=_i32(threads, "threads"))
    _ok(C.jit_export(self._h, ctypes.byref(o)), "jit_export")
    with open(os.path.join(dir, name + ".h")) as f: h = f.read()
    return {k: int(re.search(rf"#define {re.escape(name)}_{k.upper()} (\d+)", h).group(1)) for k in ("arena_bytes", "weight_bytes", "threads")}

  def __repr__(self): return f"<TinyJit {getattr(self.fn, '__name__', self.fn)!r} calls={self.call_count}>"


# ---- function: tinygrad's call-level capture -------------------------------------------------------------------------
class _function:
  """What `@function` makes: calling it calls the wrapped function and returns its Tensor or tuple of Tensors."""
  def __init__(self, fxn, precompile: bool, precompile_backward: bool, allow_implicit: bool, grad_fxn):
    if not callable(fxn): raise TypeError(f"function takes a callable, got {type(fxn).__name__}")
    if grad_fxn is not None:
      raise NotImplementedError("function(grad_fxn=...): a custom gradient for a call is not supported by tinygrad_c; gradients of the "
                                "call are the gradients of the ops it records")
    self.fxn, self.precompile, self.precompile_backward, self.allow_implicit = fxn, precompile, precompile_backward, allow_implicit
    functools.update_wrapper(self, fxn)

  def __get__(self, obj, objtype=None): return functools.partial(self.__call__, obj) if obj is not None else self

  def __call__(self, *args, **kwargs):
    ret = self.fxn(*args, **kwargs)
    if isinstance(ret, Tensor) or (isinstance(ret, tuple) and all(isinstance(x, Tensor) for x in ret)): return ret
    raise RuntimeError(f"function return type {type(ret)} not supported")


def function(fxn=None, *, precompile: bool = False, precompile_backward: bool = False, allow_implicit: bool = False, grad_fxn=None):
  """tinygrad's `@function` / `@function(precompile=True)` on a function or method returning a Tensor or a tuple of
  Tensors. Here the call is recorded into the caller's lazy graph where it happens (inline), so values and gradients
  are tinygrad's; the graph-level CALL tinygrad builds to schedule the body once and reuse it is not built: the body's
  ops are scheduled with the rest (under a TinyJit, which schedules once anyway, this costs nothing at replay).
  precompile flags are accepted and have nothing to do; implicit inputs (tensors the body reads that are not in its
  arguments) are not checked; grad_fxn raises NotImplementedError."""
  def make(f): return _function(f, precompile, precompile_backward, allow_implicit, grad_fxn)
  return make if fxn is None else make(fxn)


# ---- DLPack ----------------------------------------------------------------------------------------------------------
# Host memory shared with numpy, PyTorch and other DLPack libraries through "dltensor" capsules holding a DLManagedTensor*.


def _pyapi(name: str, res, *args):
  return ctypes.PYFUNCTYPE(res, *args)((name, ctypes.pythonapi))


_capsule_new = _pyapi("PyCapsule_New", ctypes.py_object, _p, _p, _p)
_capsule_valid = _pyapi("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_capsule_pointer = _pyapi("PyCapsule_GetPointer", _p, ctypes.py_object, ctypes.c_char_p)
_capsule_rename = _pyapi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, _p)


def _immortal(obj):
  """obj, never freed: a capsule keeps the address of its name, and may outlive this module at interpreter exit."""
  ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
  return obj


_DLTENSOR, _USED_DLTENSOR = _immortal(ctypes.create_string_buffer(b"dltensor")), _immortal(ctypes.create_string_buffer(b"used_dltensor"))


@functools.lru_cache(None)
def _capsule_destructor() -> int:
  """The C destructor our capsules get: numpy's, which calls the DLManagedTensor's deleter if the capsule dies unconsumed
  (still named "dltensor"), as DLPack asks of every producer, and keeps an exception in flight. A ctypes callback can't
  serve: a consumer that refuses the tensor (numpy and bool) drops the capsule with its error set, and Python code run
  then loses both the error and the memory."""
  if not hasattr(np.ndarray, "__dlpack__"): raise BufferError("DLPack export needs numpy >= 1.22")
  return _pyapi("PyCapsule_GetDestructor", _p, ctypes.py_object)(np.empty(0).__dlpack__())


def _dlpack(self, stream=None):
  """A "dltensor" capsule sharing this tensor's memory: realized into its own row-major buffer first (the tensor then
  refers to it), so writes through the consumer's view are seen here. CPU tensors only (move others with .to("CPU"))."""
  if stream is not None: raise BufferError("__dlpack__: host memory takes no stream (stream=None)")
  dtor = _capsule_destructor()
  return _capsule_new(_made(C.tensor_to_dlpack(self._h), "tensor_to_dlpack"), ctypes.addressof(_DLTENSOR), dtor)


def from_dlpack(obj) -> Tensor:
  """A Tensor over the memory of `obj`: an object with __dlpack__ (numpy arrays, torch tensors) or an unused "dltensor"
  capsule. Aligned row-major memory is shared, so writes on either side are seen by the other; strided memory (a
  transposed view) is copied. CPU memory only."""
  cap = obj.__dlpack__() if hasattr(obj, "__dlpack__") else obj
  if not _capsule_valid(cap, b"dltensor"):
    raise TypeError(f"from_dlpack: expected an object with __dlpack__ or an unused 'dltensor' capsule, got {type(obj).__name__}")
  h = C.tensor_from_dlpack(_capsule_pointer(cap, b"dltensor"))
  if not h:
    del cap  # still the capsule's: its destructor lets the memory go now, not while the error is in flight
    _raise_last("tensor_from_dlpack")
  _capsule_rename(cap, ctypes.addressof(_USED_DLTENSOR))  # consumed: its destructor leaves the memory to the tensor
  return Tensor._wrap(h, "tensor_from_dlpack")


Tensor.__dlpack__ = _dlpack
Tensor.__dlpack_device__ = lambda self: (1, 0)  # kDLCPU, device 0
Tensor.__dlpack_device__.__doc__ = "(kDLCPU, 0): DLPack's device of the memory __dlpack__ shares."
Tensor.from_dlpack = staticmethod(from_dlpack)
__all__.append("from_dlpack")


# ---- misc ------------------------------------------------------------------------------------------------------------
def version() -> str: return C.version().decode()
def version_number() -> int: return C.version_number()
def live_handles() -> int:
  """Library handles of every type alive in the process (tg_live_handles): tensors, modules, optimizers, ..."""
  return C.live_handles()


def counters() -> dict:
  """tinygrad's GlobalCounters: kernel_count, global_ops, global_mem, time_sum_s, compile_count, schedule_count (schedules
  made, not found in the schedule cache), lower_count (realizes lowered to kernel launches; a JIT replay lowers none),
  copy_count and copy_bytes (copies between devices). A library older than a field leaves it 0."""
  c = _Counters(struct_size=ctypes.sizeof(_Counters))
  _ok(C.counters_get(ctypes.byref(c)), "counters_get")
  return {name: getattr(c, name) for name, _ in _Counters._fields_ if name != "struct_size"}


def reset_counters(): C.counters_reset()


class _GlobalCountersMeta(type):
  def __dir__(cls): return sorted(set(super().__dir__()) | set(counters()))
  def __getattr__(cls, name):
    c = counters()
    if name in c: return c[name]
    raise AttributeError(f"GlobalCounters has no counter {name!r} (it has {', '.join(c)})")


class GlobalCounters(metaclass=_GlobalCountersMeta):
  """tinygrad's GlobalCounters over the library's process-wide counters: GlobalCounters.kernel_count, global_ops,
  global_mem, time_sum_s (and compile_count, schedule_count, lower_count, copy_count, copy_bytes), read live;
  GlobalCounters.reset()."""
  @staticmethod
  def reset() -> None: C.counters_reset()

Device.DEFAULT = Device.canonicalize(None)
# tinygrad seeds its random numbers with the import time (Tensor.manual_seed makes a run repeatable); the C library's own
# default seed is fixed, for C programs that want the same numbers every run
if "tg_manual_seed" not in _missing: C.manual_seed(int(time.time()))


from .helpers import fetch, getenv  # noqa: E402 (tinygrad's top-level names; helpers imports from this module)
from . import device, dtype, engine, helpers, tensor, uop  # noqa: E402,F401 (tinygrad.tensor etc. are attributes after import tinygrad)
