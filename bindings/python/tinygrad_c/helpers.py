"""tinygrad's `tinygrad.helpers` names that programs written for tinygrad import (getenv, colored, trange, tqdm, Timing,
prod, Context, GlobalCounters, DEBUG, ...), so that `from tinygrad_c.helpers import ...` works as it does there.

The option objects (DEBUG, BEAM, NOOPT, JIT, TRAINING, ...) read the library's setting each time they are compared or
converted, so `if DEBUG >= 2:` sees `with Context(DEBUG=2):` as tinygrad's ContextVar does."""
from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import operator
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar

from . import Context, GlobalCounters, get_option

__all__ = ["getenv", "colored", "ansistrip", "ansilen", "tqdm", "trange", "Timing", "prod", "dedup", "argfix", "argsort", "all_same",
           "all_int", "flatten", "fully_flatten", "make_tuple", "round_up", "ceildiv", "partition", "unwrap", "merge_dicts",
           "Context", "ContextVar", "GlobalCounters", "fetch", "DEBUG", "BEAM", "NOOPT", "JIT", "TRAINING", "WINO", "CI", "OSX", "WIN"]

T = TypeVar("T")

OSX, WIN = sys.platform == "darwin", sys.platform == "win32"
CI = os.getenv("CI", "") != ""


def getenv(key: str, default: Any = 0) -> Any:
  """The environment variable `key` converted to the type of `default` (an int by default), as tinygrad's getenv."""
  return type(default)(os.getenv(key, default))


def prod(x: Iterable[T]) -> Any: return functools.reduce(operator.mul, x, 1)
def dedup(x: Iterable[T]) -> List[T]: return list(dict.fromkeys(x))  # keeps the first occurrence's order
def argsort(x): return type(x)(sorted(range(len(x)), key=x.__getitem__))
def all_same(items: Sequence) -> bool: return all(x == items[0] for x in items)
def all_int(t: Sequence[Any]) -> bool: return all(isinstance(s, int) for s in t)
def flatten(l: Iterable[Iterable[T]]) -> List[T]: return [item for sub in l for item in sub]
def make_tuple(x, cnt: int) -> Tuple[int, ...]: return (x,) * cnt if isinstance(x, int) else tuple(x)
def round_up(num: int, amt: int) -> int: return (num + amt - 1) // amt * amt
def merge_dicts(ds: Iterable[dict]) -> dict: return {k: v for d in ds for k, v in d.items()}


def argfix(*x):
  """f(1, 2) and f((1, 2)) alike: one tuple or list argument is the arguments."""
  if x and isinstance(x[0], (tuple, list)):
    if len(x) != 1: raise ValueError(f"bad arg {x}")
    return tuple(x[0])
  return x


def fully_flatten(l) -> list:
  """Nested lists/tuples (and numpy arrays) to one flat list, iteratively (no recursion limit)."""
  out, stack = [], [iter([l])]
  while stack:
    try: x = next(stack[-1])
    except StopIteration: stack.pop(); continue
    if hasattr(x, "tolist") and hasattr(x, "shape"): x = x.tolist()
    if isinstance(x, (list, tuple)): stack.append(iter(x))
    else: out.append(x)
  return out


def ceildiv(num, amt): return -(num // -amt)


def partition(itr: Iterable[T], fxn: Callable[[T], bool]) -> Tuple[List[T], List[T]]:
  yes, no = [], []
  for x in itr: (yes if fxn(x) else no).append(x)
  return yes, no


def unwrap(x: Optional[T]) -> T:
  assert x is not None
  return x


_COLORS = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"]


def colored(st, color: Optional[str], background: bool = False) -> str:
  """st in an ANSI color ("red", "GREEN" for the bright one, ...); None leaves it plain."""
  if color is None: return st
  code = 10 * background + 60 * color.isupper() + 30 + _COLORS.index(color.lower())
  return f"\u001b[{code}m{st}\u001b[0m"


def ansistrip(s: str) -> str: return re.sub("\x1b\\[(K|.*?m)", "", s)
def ansilen(s: str) -> int: return len(ansistrip(s))


class ContextVar:
  """One of the library's options by name, read live: `DEBUG >= 2`, `bool(BEAM)`, `JIT.value`."""
  def __init__(self, key: str): self.key = key
  @property
  def value(self): return get_option(self.key)
  def __bool__(self): return bool(self.value)
  def __int__(self): return int(self.value)
  def __index__(self): return int(self.value)
  def __eq__(self, x): return self.value == x
  def __ne__(self, x): return self.value != x
  def __ge__(self, x): return self.value >= x
  def __gt__(self, x): return self.value > x
  def __le__(self, x): return self.value <= x
  def __lt__(self, x): return self.value < x
  __hash__ = object.__hash__
  def __repr__(self): return f"ContextVar({self.key}={self.value})"


DEBUG, BEAM, NOOPT, JIT, TRAINING, WINO = (ContextVar(k) for k in ("DEBUG", "BEAM", "NOOPT", "JIT", "TRAINING", "WINO"))


class Timing(contextlib.ContextDecorator):
  """`with Timing("step "):` prints the block's wall time in ms (enabled=False: prints nothing)."""
  def __init__(self, prefix: str = "", on_exit: Optional[Callable[[int], str]] = None, enabled: bool = True):
    self.prefix, self.on_exit, self.enabled = prefix, on_exit, enabled
  def __enter__(self): self.st = time.perf_counter_ns()
  def __exit__(self, *exc):
    self.et = time.perf_counter_ns() - self.st
    if self.enabled: print(f"{self.prefix}{self.et * 1e-6:6.2f} ms" + (self.on_exit(self.et) if self.on_exit else ""))


def _hms(t: float) -> str:
  parts = [int(t) // 3600, int(t) % 3600 // 60, int(t) % 60]
  return ":".join(f"{x:02d}" if i else str(x) for i, x in enumerate(parts) if i or x)


class tqdm:
  """A progress bar on stderr, as tinygrad's own tqdm: iterate over it, set_description(), update(n), write(s).
  disable=None disables it when stderr is not a terminal."""
  def __init__(self, iterable: Optional[Iterable] = None, desc: str = "", disable: Optional[bool] = False, unit: str = "it",
               unit_scale: bool = False, total: Optional[int] = None, rate: int = 100):
    self.disable = not sys.stderr.isatty() if disable is None else disable
    self.iterable, self.unit, self.unit_scale, self.rate = iterable, unit, unit_scale, rate
    self.total = (len(iterable) if hasattr(iterable, "__len__") else 0) if total is None else total
    self.st, self.i, self.n, self.skip = time.perf_counter(), -1, 0, 1
    self.set_description(desc)
    self.update(0)

  def __iter__(self) -> Iterator:
    if self.iterable is None: raise TypeError("tqdm needs an iterable to iterate")
    for item in self.iterable:
      yield item
      self.update(1)
    self.update(close=True)

  def __enter__(self): return self
  def __exit__(self, *_): self.update(close=True)
  def set_description(self, desc: str): self.desc = f"{desc}: " if desc else ""

  def update(self, n: int = 0, close: bool = False):
    self.n, self.i = self.n + n, self.i + 1
    if self.disable or (not close and self.i % self.skip != 0): return
    elapsed = time.perf_counter() - self.st
    if elapsed and self.i and self.i / elapsed > self.rate: self.skip = max(int(self.i / elapsed) // self.rate, 1)  # redraw ~rate/s
    frac = self.n / self.total if self.total else 0
    count = f"{self.n}/{self.total}" if self.total else f"{self.n}{self.unit}"
    eta = f"<{_hms(elapsed / frac - elapsed) if self.n else '?'}" if self.total else ""
    speed = f"{self.n / elapsed:5.2f}" if self.n and elapsed else "?"
    suffix = f"{count} [{_hms(elapsed)}{eta}, {speed}{self.unit}/s]"
    line = "\r" + self.desc
    if self.total:
      width = max(shutil.get_terminal_size().columns - ansilen(self.desc) - len(suffix) - 9, 1)
      filled = int(width * min(frac, 1.0))
      line += f"{100 * frac:3.0f}%|{'#' * filled}{' ' * (width - filled)}| "
    print(line + suffix, flush=True, end="\n" if close else "", file=sys.stderr)

  @classmethod
  def write(cls, s: str): print(f"\r\033[K{s}", flush=True, file=sys.stderr)


def trange(n: int, **kwargs) -> tqdm: return tqdm(range(n), total=n, **kwargs)


def _downloads_dir() -> pathlib.Path:
  base = os.getenv("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return pathlib.Path(base) / "tinygrad_c" / "downloads"


def fetch(url: str, name=None, subdir: Optional[str] = None, gunzip: bool = False, allow_caching: Optional[bool] = None,
          headers: Optional[dict] = None, sha256: Optional[str] = None) -> pathlib.Path:
  """tinygrad's fetch: the file at `url` downloaded once into $XDG_CACHE_HOME/tinygrad_c/downloads (or to `name` when it
  is a path), its Path returned; a local path ("/..." or "./...") is returned as it is. gunzip inflates it on the way;
  sha256 checks it (RuntimeError on a mismatch); DISABLE_HTTP_CACHE=1 or allow_caching=False downloads again. Written
  to a temporary file and renamed, so an interrupted download never leaves a partial file under the final name."""
  import urllib.request
  if url.startswith(("/", ".")): return pathlib.Path(url)
  if allow_caching is None: allow_caching = not getenv("DISABLE_HTTP_CACHE")
  headers = dict(headers or {})
  if name is not None and (isinstance(name, pathlib.Path) or "/" in name): fp = pathlib.Path(name)
  else:
    hh = "_" + hashlib.md5("\n".join(f"{k.strip()}:{v.strip()}" for k, v in sorted(headers.items())).encode()).hexdigest() if headers else ""
    fp = _downloads_dir() / (subdir or "") / ((name or hashlib.md5(url.encode()).hexdigest()) + hh + (".gunzip" if gunzip else ""))
  def digest_ok(p: pathlib.Path) -> bool: return sha256 is None or hashlib.sha256(p.read_bytes()).hexdigest() == sha256
  if fp.is_file() and allow_caching and digest_ok(fp): return fp
  fp.parent.mkdir(parents=True, exist_ok=True)
  with urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": "tinygrad_c", **headers}), timeout=10) as r:
    status = getattr(r, "status", 200)
    if status not in (200, 206): raise RuntimeError(f"fetch {url}: HTTP status {status}")
    length = None if gunzip else int(r.headers.get("content-length", 0) or 0)
    src = gzip.GzipFile(fileobj=r) if gunzip else r
    h = hashlib.sha256() if sha256 else None
    bar = tqdm(total=length or 0, unit="B", desc=url, disable=None)
    with tempfile.NamedTemporaryFile(dir=fp.parent, delete=False) as f:
      try:
        while chunk := src.read(1 << 16):
          if h: h.update(chunk)
          bar.update(f.write(chunk))
        f.close()
        if h and h.hexdigest() != sha256: raise RuntimeError(f"fetch {url}: sha256 mismatch, expected {sha256} but got {h.hexdigest()}")
        if length and os.stat(f.name).st_size < length: raise RuntimeError(f"fetch {url}: incomplete, {os.stat(f.name).st_size} < {length} bytes")
        pathlib.Path(f.name).rename(fp)
      except BaseException:
        pathlib.Path(f.name).unlink(missing_ok=True)
        raise
    bar.update(close=True)
  return fp
