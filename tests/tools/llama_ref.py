"""llama.cpp's tokenizer as a reference: libllama from the @node-llama-cpp/linux-x64 npm package (installed under
build/llama by scripts/llama_deps.sh), driven through ctypes. A GGUF is loaded with vocab_only, so a vocabulary file
without weights will do. Run as a program it speaks tg_tokenize_probe's protocol (tests/tools/tokenize_probe.cpp), so
a test feeds both the same requests, and a crash in either stays in its own process:
  python3 llama_ref.py <file.gguf>          requests "<add_special> <parse_special> <text as hex>" on stdin, a JSON line
                                            {"ids": [...], "text": "<hex>"} for each (llama_tokenize, then
                                            llama_detokenize with remove_special = add_special, unparse_special = parse_special)
  python3 llama_ref.py <file.gguf> info     n_vocab, bos, eos, add_bos, add_eos, eog, pieces (llama_token_to_piece)
  python3 llama_ref.py <file.gguf> time <file>
  python3 llama_ref.py <file.gguf> system   the CPU backend variant, llama_print_system_info() and the context's sizes

The library: llama.cpp build b1-0ad4a86 (llama_build_info() in the package's libllama-common.so; the package names the
release v0.5.0), package version pinned in scripts/llama_deps.sh. Its llama_model_params is 80 bytes with the booleans
from byte 72, vocab_only first: llama_model_default_params() writes exactly that (objdump), and a load with byte 72 set
prints "vocab_only = 1" and reads no tensors. That struct is passed by value as an opaque 80 bytes; every other call
takes pointers, ints and bools (llama.h: llama_tokenize, llama_detokenize, llama_token_to_piece, llama_vocab_*).

Full inference (Model: logits of a GGUF model, the reference of tests/python/test_llm_llamacpp.py and bench/bench_llm.py):
- llama_context_params is 160 bytes: llama_context_default_params() returns it through a hidden pointer and its last
  store is a quadword at 0x98 (objdump). Upstream llama.h has n_threads right after n_seq_max; this build has three
  uint32 fields between them, so the leading fields are n_ctx, n_batch, n_ubatch, n_seq_max (uint32, bytes 0..15;
  defaults 512, 2048, 512, 1), n_rs_seq, n_outputs_max, n_outputs_max_per_seq (uint32, 16..27; 0, 0, 1, as llama.cpp's
  log names each when it is set), n_threads, n_threads_batch (int32, 28..35; 4, 4). Only n_ctx, n_batch, n_ubatch,
  n_seq_max, n_threads and n_threads_batch are set. Model checks they took with llama_n_ctx, llama_n_batch,
  llama_n_ubatch, llama_n_threads and llama_n_threads_batch, and load_log keeps llama.cpp's own "n_ctx = ..." lines.
  llama.cpp rounds n_ctx up to a multiple of 256.
- llama_batch is passed by value: {int32 n_tokens; int32* token; float* embd; int32* pos; int32* n_seq_id;
  int32** seq_id; int8* logits}, 56 bytes; llama_batch_get_one fills it (positions follow the cache, logits of the
  last token only).
- The compute backends are libraries of their own: ggml_backend_load_all_from_path(LIB_DIR) scores each
  libggml-cpu-<x86 level>.so against this CPU and keeps the best (backend_library() names the one mapped; on an
  AVX-512 VNNI Xeon it is icelake). Nothing else is loaded: the package has no GPU backends.
- llama.cpp's log is silent unless TG_LLAMA_LOG=1 (then it goes to stderr); Model keeps its load's lines either way."""
import ctypes
import json
import os
import struct
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB_DIR = os.environ.get("TG_LLAMA_DIR", os.path.join(ROOT, "build", "llama", "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64"))
MODEL_PARAMS_SIZE, VOCAB_ONLY_AT = 80, 72
CONTEXT_PARAMS_SIZE, N_CTX_AT, N_THREADS_AT = 160, 0, 28


def available():
  return os.path.isfile(os.path.join(LIB_DIR, "libllama.v0.5.0.so"))


class _ModelParams(ctypes.Structure):
  _fields_ = [("raw", ctypes.c_uint8 * MODEL_PARAMS_SIZE)]


class _ContextParams(ctypes.Structure):
  _fields_ = [("raw", ctypes.c_uint8 * CONTEXT_PARAMS_SIZE)]


class _Batch(ctypes.Structure):
  _fields_ = [("n_tokens", ctypes.c_int32), ("token", ctypes.POINTER(ctypes.c_int32)), ("embd", ctypes.POINTER(ctypes.c_float)),
              ("pos", ctypes.POINTER(ctypes.c_int32)), ("n_seq_id", ctypes.POINTER(ctypes.c_int32)),
              ("seq_id", ctypes.POINTER(ctypes.POINTER(ctypes.c_int32))), ("logits", ctypes.POINTER(ctypes.c_int8))]


_LOG = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_log_lines = []  # what llama.cpp and ggml logged since the last _take_log()
_echo = os.environ.get("TG_LLAMA_LOG", "") not in ("", "0")


def _on_log(level, text, user):
  t = (text or b"").decode("utf-8", "replace")
  _log_lines.append(t)
  if _echo: sys.stderr.write(t)


def _take_log():
  text = "".join(_log_lines)
  _log_lines.clear()
  return text


_log_fn = _LOG(_on_log)  # referenced for the library's lifetime
_lib = _ggml = None


def lib():
  global _lib
  if _lib is None:
    for dep in ("libggml-base.so", "libggml.v0.5.0.so"):  # its NEEDED libraries, by path
      ctypes.CDLL(os.path.join(LIB_DIR, dep), mode=ctypes.RTLD_GLOBAL)
    L = ctypes.CDLL(os.path.join(LIB_DIR, "libllama.v0.5.0.so"))
    p, i32, u32, b, tok_p = ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint32, ctypes.c_bool, ctypes.POINTER(ctypes.c_int32)
    sigs = {
      "llama_log_set": (None, [_LOG, p]), "llama_backend_init": (None, []), "llama_model_default_params": (_ModelParams, []),
      "llama_model_load_from_file": (p, [ctypes.c_char_p, _ModelParams]), "llama_model_free": (None, [p]),
      "llama_model_get_vocab": (p, [p]), "llama_vocab_n_tokens": (i32, [p]), "llama_vocab_bos": (i32, [p]), "llama_vocab_eos": (i32, [p]),
      "llama_vocab_get_add_bos": (b, [p]), "llama_vocab_get_add_eos": (b, [p]), "llama_vocab_is_eog": (b, [p, i32]),
      "llama_tokenize": (i32, [p, ctypes.c_char_p, i32, tok_p, i32, b, b]),
      "llama_detokenize": (i32, [p, tok_p, i32, ctypes.c_char_p, i32, b, b]),
      "llama_token_to_piece": (i32, [p, i32, ctypes.c_char_p, i32, i32, b]),
      "llama_context_default_params": (_ContextParams, []), "llama_init_from_model": (p, [p, _ContextParams]), "llama_free": (None, [p]),
      "llama_n_ctx": (u32, [p]), "llama_n_batch": (u32, [p]), "llama_n_ubatch": (u32, [p]), "llama_n_threads": (i32, [p]),
      "llama_n_threads_batch": (i32, [p]), "llama_batch_get_one": (_Batch, [tok_p, i32]), "llama_decode": (i32, [p, _Batch]),
      "llama_get_logits_ith": (ctypes.POINTER(ctypes.c_float), [p, i32]), "llama_get_memory": (p, [p]),
      "llama_memory_clear": (None, [p, b]), "llama_print_system_info": (ctypes.c_char_p, []),
    }
    for name, (res, args) in sigs.items():
      f = getattr(L, name)
      f.restype, f.argtypes = res, args
    L.llama_log_set(_log_fn, None)  # ggml's log too
    L.llama_backend_init()
    _lib = L
  return _lib


def _backends():
  """Loads the best CPU backend variant once (libllama finds no backend by itself: without one a model with weights
  fails to load, while vocab_only needs none)."""
  global _ggml
  if _ggml is None:
    lib()
    G = ctypes.CDLL(os.path.join(LIB_DIR, "libggml.v0.5.0.so"))
    G.ggml_backend_load_all_from_path.restype, G.ggml_backend_load_all_from_path.argtypes = None, [ctypes.c_char_p]
    G.ggml_backend_reg_count.restype = ctypes.c_size_t
    if G.ggml_backend_reg_count() == 0: G.ggml_backend_load_all_from_path(os.fsencode(LIB_DIR))
    _ggml = G
    _ggml.log = _take_log()  # "load_backend: loaded CPU backend from .../libggml-cpu-<level>.so"
  return _ggml


# ggml type id -> the name in its dequantize_row_<name> (libggml-base)
QUANT_NAMES = {2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 12: "q4_K", 13: "q5_K", 14: "q6_K", 15: "q8_K"}


def dequantize(typ, raw, n):
  """ggml's own dequantize_row_<type> of n elements of raw blocks: the weights as llama.cpp reads them (float32)."""
  import numpy as np
  lib()
  f = getattr(ctypes.CDLL(os.path.join(LIB_DIR, "libggml-base.so")), "dequantize_row_" + QUANT_NAMES[typ])
  f.restype, f.argtypes = None, [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64]
  out = np.empty(n, np.float32)
  f(bytes(raw), out.ctypes.data, n)
  return out


def quantize_activations(x, typ):
  """x (float32, rows of a multiple of 32 or 256) rounded as ggml rounds a matmul's activations for weights of typ:
  quantize_row_q8_0_ref (Q4_0, Q8_0) or quantize_row_q8_K_ref (the K types), then dequantized."""
  import numpy as np
  lib()
  base = ctypes.CDLL(os.path.join(LIB_DIR, "libggml-base.so"))
  q8, elems, size = ("q8_K", 256, 4 + 256 + 32) if typ in (12, 13, 14) else ("q8_0", 32, 34)
  qf, df = getattr(base, f"quantize_row_{q8}_ref"), getattr(base, f"dequantize_row_{q8}")
  qf.restype = df.restype = None
  qf.argtypes, df.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64], [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
  x = np.ascontiguousarray(x, np.float32)
  blocks, out = np.empty(x.size // elems * size, np.uint8), np.empty_like(x)
  qf(x.ctypes.data, blocks.ctypes.data, x.size), df(blocks.ctypes.data, out.ctypes.data, x.size)
  return out


def backend_library():
  """The libggml-cpu-*.so variant mapped into this process (after a Model loaded), by file name."""
  with open("/proc/self/maps") as f:
    found = {os.path.basename(line.split()[-1]) for line in f if "libggml-cpu-" in line}
  return ", ".join(sorted(found)) or None


class Vocab:
  def __init__(self, path):
    L = lib()
    params = L.llama_model_default_params()
    params.raw[VOCAB_ONLY_AT] = 1
    self.model = L.llama_model_load_from_file(os.fsencode(path), params)
    if not self.model: raise RuntimeError(f"llama.cpp could not load {path}: {_take_log()[-2000:]}")
    _take_log()
    self.vocab = L.llama_model_get_vocab(self.model)
    self.n_vocab = L.llama_vocab_n_tokens(self.vocab)

  def close(self):
    if self.model: lib().llama_model_free(self.model)
    self.model = None

  def tokenize(self, text: bytes, add_special: bool, parse_special: bool):
    n = len(text) + 8
    while True:
      buf = (ctypes.c_int32 * n)()
      got = lib().llama_tokenize(self.vocab, text, len(text), buf, n, add_special, parse_special)
      if got >= 0: return list(buf[:got])
      n = -got

  def detokenize(self, ids, remove_special: bool, unparse_special: bool) -> bytes:
    arr, n = (ctypes.c_int32 * max(len(ids), 1))(*ids), 16 * len(ids) + 16
    while True:
      buf = ctypes.create_string_buffer(n)
      got = lib().llama_detokenize(self.vocab, arr, len(ids), buf, n, remove_special, unparse_special)
      if got >= 0: return buf.raw[:got]
      n = -got

  def piece(self, token, special: bool) -> bytes:
    buf = ctypes.create_string_buffer(256)
    got = lib().llama_token_to_piece(self.vocab, token, buf, 256, 0, special)
    if got < 0:
      buf = ctypes.create_string_buffer(-got)
      got = lib().llama_token_to_piece(self.vocab, token, buf, -got, 0, special)
    return buf.raw[:got]

  def info(self):
    L, v = lib(), self.vocab
    return {"n_vocab": self.n_vocab, "bos": L.llama_vocab_bos(v), "eos": L.llama_vocab_eos(v), "add_bos": L.llama_vocab_get_add_bos(v),
            "add_eos": L.llama_vocab_get_add_eos(v), "eog": [t for t in range(self.n_vocab) if L.llama_vocab_is_eog(v, t)],
            "pieces": [[self.piece(t, False).hex(), self.piece(t, True).hex()] for t in range(self.n_vocab)]}


class Model:
  """A model with its weights (mmap'd) and one context: eval(tokens) feeds tokens at the cache's next position and
  returns the last token's logits (float32 numpy); reset() empties the cache."""
  def __init__(self, path, n_ctx=512, n_threads=1, n_batch=512):
    L = lib()
    _backends()
    _take_log()
    self.model = self.ctx = None
    self.model = L.llama_model_load_from_file(os.fsencode(path), L.llama_model_default_params())
    if not self.model: raise RuntimeError(f"llama.cpp could not load {path}: {_take_log()[-2000:]}")
    self.n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(self.model))
    params = L.llama_context_default_params()
    # n_ubatch = n_batch: a prompt of n_batch tokens is one graph
    struct.pack_into("<IIII", params.raw, N_CTX_AT, n_ctx, n_batch, n_batch, 1)
    struct.pack_into("<ii", params.raw, N_THREADS_AT, n_threads, n_threads)
    self.ctx = L.llama_init_from_model(self.model, params)
    self.load_log = _take_log()
    if not self.ctx: raise RuntimeError(f"llama.cpp could not make a context for {path}: {self.load_log[-2000:]}")
    self.n_ctx = L.llama_n_ctx(self.ctx)
    got = (-(-self.n_ctx // 256) * 256, L.llama_n_batch(self.ctx), L.llama_n_ubatch(self.ctx), L.llama_n_threads(self.ctx),
           L.llama_n_threads_batch(self.ctx))
    if got != (-(-n_ctx // 256) * 256, n_batch, n_batch, n_threads, n_threads) or f"n_ubatch              = {n_batch}\n" not in self.load_log:
      raise RuntimeError(f"llama.cpp's context params did not take: n_ctx, n_batch, n_ubatch, n_threads, n_threads_batch = {got}")
    self.position = 0

  def eval(self, tokens):
    import numpy as np
    L, n = lib(), len(tokens)
    arr = (ctypes.c_int32 * n)(*tokens)
    r = L.llama_decode(self.ctx, L.llama_batch_get_one(arr, n))
    if r != 0: raise RuntimeError(f"llama_decode returned {r}: {_take_log()[-2000:]}")
    self.position += n
    return np.ctypeslib.as_array(L.llama_get_logits_ith(self.ctx, -1), (self.n_vocab,)).copy()

  __call__ = eval

  def reset(self):
    lib().llama_memory_clear(lib().llama_get_memory(self.ctx), True)
    self.position = 0

  def close(self):
    if self.ctx: lib().llama_free(self.ctx)
    if self.model: lib().llama_model_free(self.model)
    self.ctx = self.model = None

  def __enter__(self): return self
  def __exit__(self, *exc): self.close()


def main(argv):
  if len(argv) > 2 and argv[2] == "system":
    m = Model(argv[1], n_ctx=64, n_batch=64)
    print(f"backend: {backend_library()}\n{_ggml.log}{lib().llama_print_system_info().decode()}")
    print("\n".join(line for line in m.load_log.splitlines() if line.startswith("llama_context: n_")))
    print(f"llama_n_threads: {lib().llama_n_threads(m.ctx)}")
    m.close()
    return
  vocab = Vocab(argv[1])
  mode = argv[2] if len(argv) > 2 else ""
  if mode == "info":
    print(json.dumps(vocab.info()))
  elif mode == "time":
    text = open(argv[3], "rb").read()
    t0 = time.perf_counter()
    n = len(vocab.tokenize(text, False, False))
    print(json.dumps({"bytes": len(text), "tokens": n, "ms": (time.perf_counter() - t0) * 1e3}))
  else:
    for line in sys.stdin:
      add, parse, h = (line.split() + [""])[:3]
      ids = vocab.tokenize(bytes.fromhex(h), add == "1", parse == "1")
      print(json.dumps({"ids": ids, "text": vocab.detokenize(ids, add == "1", parse == "1").hex()}), flush=False)
  vocab.close()


if __name__ == "__main__":
  main(sys.argv)
