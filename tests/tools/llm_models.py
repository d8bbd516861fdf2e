"""GGUF language-model files for the llama.cpp comparisons (tests/python/test_llm_llamacpp.py, bench/bench_llm.py),
without torch: a SentencePiece tokenizer llama.cpp accepts, padded to any vocabulary size, and a streaming writer for
model files too large to build in memory (a TinyLlama-1.1B-sized model with random quantized weights).
  python3 llm_models.py <out.gguf> <q4_0|q8_0|q4_k>   writes a TinyLlama-sized file, prints its sizes"""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_vocab  # noqa: E402
from gguf_writer import ARR, BOOL, F32, I32, STR, U32, gstr, gval  # noqa: E402

# ggml type ids, and (elements, bytes) per block (as tests/python/test_state.py BLOCK)
GGML_F32, Q4_0, Q8_0, Q4_K = 0, 2, 8, 12
BLOCK = {Q4_0: (32, 18), Q8_0: (32, 34), Q4_K: (256, 144)}
TYPE_NAMES = {"q4_0": Q4_0, "q8_0": Q8_0, "q4_k": Q4_K}
# the f16 scales of each block and their size, so weights are about 0.02 at most: d * largest |quant| (Q4_K: d and
# dmin, times 6-bit sub-scales up to 63 and quants up to 15)
SCALES = {Q4_0: ([0], 0.02 / 8), Q8_0: ([0], 0.02 / 127), Q4_K: ([0, 2], 0.02 / (63 * 15))}
TINYLLAMA = dict(n_layer=22, dim=2048, ffn=5632, n_head=32, n_kv_head=4, vocab=32000, context=2048)


def spm_tokenizer(n_merges=3000, n_vocab=None):
  """The tokenizer.* key/values of gguf_vocab's SentencePiece vocabulary (fewer merges learn faster), padded with
  made-up normal tokens, scored below every learned piece, to n_vocab tokens. BOS 1, EOS 2, UNK 0."""
  tokens, scores, types = (list(x) for x in gguf_vocab.spm_vocab(n_merges))
  if n_vocab is not None:
    assert n_vocab >= len(tokens), (n_vocab, len(tokens))
    low = min(scores) - 1.0
    for i in range(n_vocab - len(tokens)): tokens.append(f"{gguf_vocab.SPACE}pad{i}"), scores.append(low - i), types.append(gguf_vocab.NORMAL)
  return [("tokenizer.ggml.model", STR, "llama"), ("tokenizer.ggml.tokens", ARR, (STR, tokens)), ("tokenizer.ggml.scores", ARR, (F32, scores)),
          ("tokenizer.ggml.token_type", ARR, (I32, types)), ("tokenizer.ggml.bos_token_id", U32, 1),
          ("tokenizer.ggml.eos_token_id", U32, 2), ("tokenizer.ggml.unknown_token_id", U32, 0),
          ("tokenizer.ggml.add_bos_token", BOOL, True)]


def write_gguf_stream(path, kv, tensors, alignment=32):
  """As gguf_writer.write_gguf, but each tensor is (name, shape, ggml type, byte count, make) and make() gives its
  bytes when they are written, so no more than one tensor is in memory."""
  with open(path, "wb") as f:
    f.write(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)))
    for k, typ, v in kv: f.write(gstr(k) + struct.pack("<I", typ) + gval(typ, v))
    off = 0
    for name, shape, typ, n, _ in tensors:
      f.write(gstr(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in reversed(shape)) + struct.pack("<IQ", typ, off))
      off += n + (-n) % alignment
    f.write(b"\0" * ((-f.tell()) % alignment))
    for _, _, _, n, make in tensors:
      raw = make()
      assert len(raw) == n
      f.write(raw)
      f.write(b"\0" * ((-n) % alignment))


def random_blocks(rng, typ, rows, cols):
  """Random quant blocks of a (rows, cols) weight, each block's scales set to SCALES (random sign, size 0.5..1x)."""
  elems, size = BLOCK[typ]
  nb = rows * cols // elems
  b = np.frombuffer(rng.bytes(nb * size), np.uint8).reshape(nb, size).copy()
  at, amp = SCALES[typ]
  for a in at: b[:, a:a + 2] = (rng.uniform(0.5, 1.0, nb) * rng.choice([-1, 1], nb) * amp).astype(np.float16).view(np.uint8).reshape(nb, 2)
  return b.tobytes()


def tinyllama(path, typ, seed=0, tokenizer=None, config=TINYLLAMA):
  """Writes a llama of config's sizes (TINYLLAMA's) with random `typ` weights (norms F32 ones) and a SentencePiece
  vocabulary of config's size (`tokenizer`: spm_tokenizer's key/values, made here when None); returns (bytes of all
  weights, bytes a decode step reads: all but the token embedding, of which one row)."""
  c, a = config, "llama"
  hd, (elems, size) = c["dim"] // c["n_head"], BLOCK[typ]
  kv = [("general.architecture", STR, a), ("general.name", STR, "tinyllama-sized random weights"), (f"{a}.block_count", U32, c["n_layer"]),
        (f"{a}.embedding_length", U32, c["dim"]), (f"{a}.feed_forward_length", U32, c["ffn"]),
        (f"{a}.attention.head_count", U32, c["n_head"]), (f"{a}.attention.head_count_kv", U32, c["n_kv_head"]),
        (f"{a}.context_length", U32, c["context"]), (f"{a}.rope.dimension_count", U32, hd),
        (f"{a}.attention.layer_norm_rms_epsilon", F32, 1e-5), (f"{a}.rope.freq_base", F32, 10000.0)]
  kv += tokenizer if tokenizer is not None else spm_tokenizer(n_vocab=c["vocab"])
  rng, tensors = np.random.default_rng(seed), []
  def w(name, rows, cols): tensors.append((name, (rows, cols), typ, rows * cols // elems * size, lambda: random_blocks(rng, typ, rows, cols)))
  def ones(name, n): tensors.append((name, (n,), GGML_F32, 4 * n, lambda: np.ones(n, np.float32).tobytes()))
  w("token_embd.weight", c["vocab"], c["dim"]), ones("output_norm.weight", c["dim"]), w("output.weight", c["vocab"], c["dim"])
  for i in range(c["n_layer"]):
    p = f"blk.{i}."
    ones(p + "attn_norm.weight", c["dim"]), ones(p + "ffn_norm.weight", c["dim"])
    w(p + "attn_q.weight", c["dim"], c["dim"]), w(p + "attn_k.weight", c["n_kv_head"] * hd, c["dim"])
    w(p + "attn_v.weight", c["n_kv_head"] * hd, c["dim"]), w(p + "attn_output.weight", c["dim"], c["dim"])
    w(p + "ffn_gate.weight", c["ffn"], c["dim"]), w(p + "ffn_up.weight", c["ffn"], c["dim"]), w(p + "ffn_down.weight", c["dim"], c["ffn"])
  write_gguf_stream(path, kv, tensors)
  total = sum(t[3] for t in tensors)
  embd = tensors[0][3]
  return total, total - embd + embd // c["vocab"]


if __name__ == "__main__":
  total, per_token = tinyllama(sys.argv[1], TYPE_NAMES[sys.argv[2]])
  print(f"{sys.argv[1]}: {total / 1e6:.0f} MB of weights, {per_token / 1e6:.0f} MB read per decoded token")
