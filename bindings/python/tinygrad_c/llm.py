"""Language models from GGUF files (tg_llm_*, docs/llm.md).

  from tinygrad_c.llm import LLM
  m = LLM("model.gguf", context=512)
  logits = m([1, 15043, 3186])   # feeds the tokens at the current position; the last token's logits, a (vocab,) Tensor
  m.position, m.context, m.vocab_size, m.config, m.metadata("general.name")
  m.reset()
"""
from __future__ import annotations

import ctypes
import json
import os
from typing import Any, Optional, Sequence

from . import C, Tensor, _Owned, _capi, _cstr, _made, _ok, _raise_last, dtypes

__all__ = ["LLM"]


class LLM(_Owned):
  """A llama-family model (llama, qwen2) from a GGUF file, its weights kept in the file's quantized blocks."""
  __slots__ = ("_h",)
  _release, _retain = C.llm_release, C.llm_retain
  _no_copy = "the model and its KV cache live in the library; load it again for another"

  def __init__(self, path: str | os.PathLike, device: Optional[str] = None, context: int = 0):
    o = _capi.tg_llm_options(struct_size=ctypes.sizeof(_capi.tg_llm_options), device=_cstr(device, "device"), context=context)
    self._h = _made(C.llm_load(_cstr(os.fspath(path), "path"), ctypes.byref(o)), "llm_load")

  def __call__(self, tokens: Sequence[int] | Tensor) -> Tensor:
    """Feeds `tokens` at the current position (which moves on by their count); the last token's logits."""
    t = tokens if isinstance(tokens, Tensor) else Tensor(list(tokens), dtype=dtypes.int32)
    return Tensor._wrap(C.llm_eval(self._h, t._h), "llm_eval")

  eval = __call__

  def reset(self) -> None:
    _ok(C.llm_reset(self._h), "llm_reset")

  def _count(self, fn, what: str) -> int:
    n = fn(self._h)
    if n < 0: _raise_last(what)
    return n

  @property
  def position(self) -> int: return self._count(C.llm_position, "llm_position")

  @property
  def context(self) -> int: return self._count(C.llm_context, "llm_context")

  @property
  def vocab_size(self) -> int: return self._count(C.llm_vocab_size, "llm_vocab_size")

  def _text(self, fn, *args) -> str:
    n = fn(self._h, *args, None, 0)
    if n < 0: _raise_last(fn.__name__)
    buf = ctypes.create_string_buffer(n + 1)
    if fn(self._h, *args, buf, n + 1) < 0: _raise_last(fn.__name__)
    return buf.raw[:n].decode("utf-8")

  @property
  def config(self) -> dict:
    """The hyperparameters the model was built with: arch, n_layer, dim, n_head, n_kv_head, head_dim, ffn, vocab, ..."""
    return json.loads(self._text(C.llm_config))

  def metadata(self, key: str) -> Any:
    """A GGUF metadata value of the file, as Python data; KeyError when the file has none."""
    n = C.llm_metadata(self._h, _cstr(key, "key"), None, 0)
    if n < 0: raise KeyError(key)
    return json.loads(self._text(C.llm_metadata, _cstr(key, "key")))
