"""llama.cpp's tokenizer as a reference: libllama from the @node-llama-cpp/linux-x64 npm package (installed under
build/llama by scripts/llama_deps.sh), driven through ctypes. A GGUF is loaded with vocab_only, so a vocabulary file
without weights will do. Run as a program it speaks tg_tokenize_probe's protocol (tests/tools/tokenize_probe.cpp), so
a test feeds both the same requests, and a crash in either stays in its own process:
  python3 llama_ref.py <file.gguf>          requests "<add_special> <parse_special> <text as hex>" on stdin, a JSON line
                                            {"ids": [...], "text": "<hex>"} for each (llama_tokenize, then
                                            llama_detokenize with remove_special = add_special, unparse_special = parse_special)
  python3 llama_ref.py <file.gguf> info     n_vocab, bos, eos, add_bos, add_eos, eog, pieces (llama_token_to_piece)
  python3 llama_ref.py <file.gguf> time <file>

The library: llama.cpp build b1-0ad4a86 (llama_build_info() in the package's libllama-common.so; the package names the
release v0.5.0), package version pinned in scripts/llama_deps.sh. Its llama_model_params is 80 bytes with the booleans
from byte 72, vocab_only first: llama_model_default_params() writes exactly that (objdump), and a load with byte 72 set
prints "vocab_only = 1" and reads no tensors. That struct is passed by value as an opaque 80 bytes; every other call
takes pointers, ints and bools (llama.h: llama_tokenize, llama_detokenize, llama_token_to_piece, llama_vocab_*)."""
import ctypes
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB_DIR = os.environ.get("TG_LLAMA_DIR", os.path.join(ROOT, "build", "llama", "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64"))
MODEL_PARAMS_SIZE, VOCAB_ONLY_AT = 80, 72


def available():
  return os.path.isfile(os.path.join(LIB_DIR, "libllama.v0.5.0.so"))


class _ModelParams(ctypes.Structure):
  _fields_ = [("raw", ctypes.c_uint8 * MODEL_PARAMS_SIZE)]


_LOG = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_quiet = _LOG(lambda level, text, user: None)
_lib = None


def lib():
  global _lib
  if _lib is None:
    for dep in ("libggml-base.so", "libggml.v0.5.0.so"):  # its NEEDED libraries, by path
      ctypes.CDLL(os.path.join(LIB_DIR, dep), mode=ctypes.RTLD_GLOBAL)
    L = ctypes.CDLL(os.path.join(LIB_DIR, "libllama.v0.5.0.so"))
    p, i32, b, tok_p = ctypes.c_void_p, ctypes.c_int32, ctypes.c_bool, ctypes.POINTER(ctypes.c_int32)
    sigs = {
      "llama_log_set": (None, [_LOG, p]), "llama_backend_init": (None, []), "llama_model_default_params": (_ModelParams, []),
      "llama_model_load_from_file": (p, [ctypes.c_char_p, _ModelParams]), "llama_model_free": (None, [p]),
      "llama_model_get_vocab": (p, [p]), "llama_vocab_n_tokens": (i32, [p]), "llama_vocab_bos": (i32, [p]), "llama_vocab_eos": (i32, [p]),
      "llama_vocab_get_add_bos": (b, [p]), "llama_vocab_get_add_eos": (b, [p]), "llama_vocab_is_eog": (b, [p, i32]),
      "llama_tokenize": (i32, [p, ctypes.c_char_p, i32, tok_p, i32, b, b]),
      "llama_detokenize": (i32, [p, tok_p, i32, ctypes.c_char_p, i32, b, b]),
      "llama_token_to_piece": (i32, [p, i32, ctypes.c_char_p, i32, i32, b]),
    }
    for name, (res, args) in sigs.items():
      f = getattr(L, name)
      f.restype, f.argtypes = res, args
    L.llama_log_set(_quiet, None)
    L.llama_backend_init()
    _lib = L
  return _lib


class Vocab:
  def __init__(self, path):
    L = lib()
    params = L.llama_model_default_params()
    params.raw[VOCAB_ONLY_AT] = 1
    self.model = L.llama_model_load_from_file(os.fsencode(path), params)
    if not self.model: raise RuntimeError(f"llama.cpp could not load {path}")
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


def main(argv):
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
