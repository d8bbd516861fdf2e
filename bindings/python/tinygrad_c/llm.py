"""Language models from GGUF files (tg_llm_*, docs/llm.md).

  from tinygrad_c.llm import LLM
  m = LLM("model.gguf", context=512)
  logits = m([1, 15043, 3186])   # feeds the tokens at the current position; the last token's logits, a (vocab,) Tensor
  m.position, m.context, m.vocab_size, m.config, m.metadata("general.name")
  m.reset()
  ids = m.tokenize("Hello"); text = m.detokenize(ids)
  for tok in m.generate(ids, 32, temperature=0.0): print(m.token_piece(tok), end="")
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

  def __init__(self, path: str | os.PathLike, device: Optional[str] = None, context: int = 0, threads: int = 0, beam: int = 0):
    """context: KV cache positions (0: the file's, at most 4096); threads: CPU threads its kernels use (0: all); beam: the
    BEAM width its kernels are compiled with (0: the BEAM setting)."""
    o = _capi.tg_llm_options(struct_size=ctypes.sizeof(_capi.tg_llm_options), device=_cstr(device, "device"), context=context, threads=threads,
                             beam=beam)
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
    return buf.raw[:n].decode("utf-8", "replace")  # a token stream may cut a UTF-8 character

  @property
  def config(self) -> dict:
    """The hyperparameters the model was built with: arch, n_layer, dim, n_head, n_kv_head, head_dim, ffn, vocab, ...;
    prompt_products: how its prompts multiply quantized weights here ("int8", "bfloat16" or "float32")."""
    return json.loads(self._text(C.llm_config))

  # ---- the tokenizer ----
  def tokenize(self, text: str, add_special: bool = True, parse_special: bool = False) -> list[int]:
    """The token ids of `text` (the file's tokenizer, equal to llama.cpp's); add_special adds the BOS/EOS it asks for."""
    t = Tensor._wrap(C.llm_tokenize(self._h, _cstr(text, "text"), int(add_special), int(parse_special)), "llm_tokenize")
    return [int(x) for x in t.numpy()] if t.numel() else []

  def detokenize(self, tokens: Sequence[int], remove_special: bool = False, unparse_special: bool = False) -> str:
    t = Tensor(list(tokens), dtype=dtypes.int32)
    return self._text(C.llm_detokenize, t._h, int(remove_special), int(unparse_special))

  def token_piece(self, token: int) -> str:
    """One token's text as a stream prints it (bytes of a partial UTF-8 character come out replaced)."""
    n = C.llm_token_piece(self._h, token, None, 0)
    if n < 0: _raise_last("llm_token_piece")
    buf = ctypes.create_string_buffer(n + 1)
    C.llm_token_piece(self._h, token, buf, n + 1)
    return buf.raw[:n].decode("utf-8", "replace")

  @property
  def bos(self) -> Optional[int]:
    n = C.llm_bos(self._h)
    return None if n < 0 else n

  @property
  def eos(self) -> Optional[int]:
    n = C.llm_eos(self._h)
    return None if n < 0 else n

  def is_eog(self, token: int) -> bool:
    r = C.llm_is_eog(self._h, token)
    if r < 0: _raise_last("llm_is_eog")
    return bool(r)

  # ---- sampling and generation ----
  @staticmethod
  def _sampling(temperature=0.8, top_k=40, top_p=0.95, repeat_penalty=1.0, repeat_last_n=64, seed=0):
    return _capi.tg_llm_sampling(struct_size=ctypes.sizeof(_capi.tg_llm_sampling), temperature=temperature, top_k=top_k, top_p=top_p,
                                 repeat_penalty=repeat_penalty, repeat_last_n=repeat_last_n, seed=seed)

  def sample(self, logits: Tensor, history: Sequence[int] = (), **sampling) -> int:
    """A token drawn from `logits` on the device (temperature, top_k, top_p, repeat_penalty, repeat_last_n, seed)."""
    s = self._sampling(**sampling)
    h = Tensor(list(history), dtype=dtypes.int32) if len(history) else None
    r = C.llm_sample(self._h, logits._h, h._h if h is not None else None, ctypes.byref(s))
    if r < 0: _raise_last("llm_sample")
    return r

  def generate(self, prompt: Sequence[int], max_tokens: int, on_token=None, **sampling) -> list[int]:
    """Feeds `prompt`, then samples up to max_tokens tokens, feeding each back, until an end-of-generation token, a
    full context, or on_token(token, piece) returning True (stop). The tokens generated."""
    s, out, err = self._sampling(**sampling), [], []
    def cb(_ud, tok, piece):
      out.append(tok)
      if on_token is None: return 0
      try: return 1 if on_token(tok, (piece or b"").decode("utf-8", "replace")) else 0
      except BaseException as e:  # never across the C frames: stop, and raise it here after
        err.append(e)
        return 1
    fn = _capi.tg_llm_token_fn(cb)
    p = Tensor(list(prompt), dtype=dtypes.int32)
    n = C.llm_generate(self._h, p._h, max_tokens, ctypes.byref(s), fn, None)
    if err: raise err[0]
    if n < 0: _raise_last("llm_generate")
    return out

  def metadata(self, key: str) -> Any:
    """A GGUF metadata value of the file, as Python data; KeyError when the file has none."""
    n = C.llm_metadata(self._h, _cstr(key, "key"), None, 0)
    if n < 0: raise KeyError(key)
    return json.loads(self._text(C.llm_metadata, _cstr(key, "key")))
