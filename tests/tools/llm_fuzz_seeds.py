"""Tiny valid language-model GGUF files: the seed corpus of fuzz/fuzz_llm.cpp (fuzz/corpus/llm/), and the files
tests/python/test_llm_files.py breaks one way at a time. Both architectures (llama; qwen2 with its QKV biases), both
tokenizer kinds (SentencePiece "llama", byte-level BPE "gpt2") with vocabularies of a few hundred tokens, tied and
untied output, F32, F16, BF16, Q8_0 and Q4_0 weights. Weights are seeded random numbers, so the files are the same on
every run; the float ones are small enough that fuzz_llm runs an eval of each.
  python3 tests/tools/llm_fuzz_seeds.py [dir]   writes every seed of SEEDS into dir (default fuzz/corpus/llm)"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_vocab import BYTE, CONTROL, NORMAL, SPACE, UNKNOWN, USER_DEFINED, USER_TOKENS, bpe_tokens, byte_alphabet, learn_bpe  # noqa: E402
from gguf_writer import ARR, BOOL, F32 as F32K, I32, STR, U32, gguf_bytes  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ggml tensor types
F32, F16, Q4_0, Q8_0, BF16 = 0, 1, 2, 8, 30
BLOCK = {Q4_0: (32, 18), Q8_0: (32, 34)}  # elements, bytes

# the text the vocabularies are learned from: a few sentences with the fuzzer's kinds of text in them
TEXT = ("Hello world, this is a test. The quick brown fox jumps over the lazy dog; it's 42 and 1337 times!\n"
        "Hello there, world: tokens and merges, pieces and scores. 日本語のテキスト 日本 😀👍 ünïcödé   spaces\n") * 4


def spm_tokenizer(n_merges=40, add_eos=False, add_space_prefix=None, byte_tokens=True):
  """A SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte tokens (unless not byte_tokens: then what no piece
  covers is <unk>), pieces learned from TEXT (score -rank), its characters, user-defined tokens and <|im_end|> (typed
  normal; llama.cpp makes it control by its text)."""
  words = {}
  for w in TEXT.replace(" ", " " + SPACE).split(" "):
    if w: words[tuple(w)] = words.get(tuple(w), 0) + 1
  nb = 256 if byte_tokens else 0
  tokens, scores, types = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(nb)], [0.0] * (3 + nb), [UNKNOWN, CONTROL, CONTROL] + [BYTE] * nb
  seen = set(tokens)
  pieces = [a + b for a, b in learn_bpe(words, n_merges)] + sorted({ch for w in words for ch in w})
  for i, p in enumerate(pieces):
    if p not in seen: tokens.append(p), scores.append(-float(i)), types.append(NORMAL), seen.add(p)
  for t in USER_TOKENS: tokens.append(t), scores.append(0.0), types.append(USER_DEFINED)
  tokens.append("<|im_end|>"), scores.append(0.0), types.append(NORMAL)
  kv = [("tokenizer.ggml.model", STR, "llama"), ("tokenizer.ggml.tokens", ARR, (STR, tokens)), ("tokenizer.ggml.scores", ARR, (F32K, scores)),
        ("tokenizer.ggml.token_type", ARR, (I32, types)), ("tokenizer.ggml.bos_token_id", U32, 1), ("tokenizer.ggml.eos_token_id", U32, 2),
        ("tokenizer.ggml.unknown_token_id", U32, 0), ("tokenizer.ggml.add_bos_token", BOOL, True)]
  if add_eos: kv.append(("tokenizer.ggml.add_eos_token", BOOL, True))
  if add_space_prefix is not None: kv.append(("tokenizer.ggml.add_space_prefix", BOOL, add_space_prefix))
  return kv, len(tokens)


def bpe_tokenizer(pre, n_merges=40, eos="<|endoftext|>", add_bos=None, chars=None):
  """A byte-level BPE vocabulary: the 256 characters of GPT-2's byte alphabet (or those of the bytes of `chars`: the
  others have no token, and llama.cpp drops them), one token per merge learned from TEXT's words, then control tokens
  and user-defined ones."""
  alpha = byte_alphabet()
  if chars is not None: alpha = {b: c for b, c in alpha.items() if b in chars.encode()}
  words = {}
  for w in TEXT.replace(" ", "\0 ").split("\0"):
    if all(b in alpha for b in w.encode()):
      key = tuple(alpha[b] for b in w.encode())
      if key: words[key] = words.get(key, 0) + 1
  merges = learn_bpe(words, n_merges)
  tokens = bpe_tokens(alpha, merges)
  types = [NORMAL] * len(tokens)
  for t in ["<|begin_of_text|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|fim_prefix|>"]: tokens.append(t), types.append(CONTROL)
  for t in USER_TOKENS: tokens.append(t), types.append(USER_DEFINED)
  kv = [("tokenizer.ggml.model", STR, "gpt2"), ("tokenizer.ggml.pre", STR, pre), ("tokenizer.ggml.tokens", ARR, (STR, tokens)),
        ("tokenizer.ggml.token_type", ARR, (I32, types)), ("tokenizer.ggml.merges", ARR, (STR, [f"{a} {b}" for a, b in merges])),
        ("tokenizer.ggml.bos_token_id", U32, tokens.index("<|begin_of_text|>")), ("tokenizer.ggml.eos_token_id", U32, tokens.index(eos))]
  if add_bos is not None: kv.append(("tokenizer.ggml.add_bos_token", BOOL, add_bos))
  return kv, len(tokens)


def f16_bits(a): return np.asarray(a, dtype=np.float16).view(np.uint8).reshape(-1, 2)


def weight_bytes(rng, rows, cols, typ):
  """(rows, cols) random weights of about 0.05 as ggml type `typ` stores them"""
  w = rng.normal(0, 0.05, (rows, cols)).astype(np.float32)
  if typ == F32: return w.tobytes()
  if typ == F16: return w.astype(np.float16).tobytes()
  if typ == BF16: return (w.view(np.uint32) >> 16).astype(np.uint16).tobytes()
  elems, size = BLOCK[typ]
  b = rng.integers(0, 256, (rows * cols // elems, size), dtype=np.uint8)
  b[:, 0:2] = f16_bits(rng.uniform(-0.05, 0.05, b.shape[0]) / (127 if typ == Q8_0 else 8))
  return b.tobytes()


def model(arch="llama", n_layer=1, dim=8, n_head=2, n_kv_head=1, ffn=16, vocab=32, context=32, typ=F32, tied=False, tokenizer=None,
          extra_kv=(), seed=0):
  """(key/values, tensors) of a model; `tokenizer`: (key/values, vocab size) of one of the above, which sets the vocab.
  Tensors are (name, shape, ggml type, raw bytes) as gguf_writer takes them; norms and biases are F32."""
  tok_kv, vocab = tokenizer if tokenizer else ([], vocab)
  rng = np.random.default_rng(seed)
  hd = dim // n_head
  kv = [("general.architecture", STR, arch), ("general.name", STR, "fuzz seed"), (f"{arch}.block_count", U32, n_layer),
        (f"{arch}.context_length", U32, context), (f"{arch}.embedding_length", U32, dim), (f"{arch}.feed_forward_length", U32, ffn),
        (f"{arch}.attention.head_count", U32, n_head), (f"{arch}.attention.head_count_kv", U32, n_kv_head),
        (f"{arch}.attention.layer_norm_rms_epsilon", F32K, 1e-5), (f"{arch}.rope.freq_base", F32K, 10000.0)] + list(extra_kv) + tok_kv
  tensors = []
  def mat(name, rows, cols): tensors.append((name, (rows, cols), typ, weight_bytes(rng, rows, cols, typ)))
  def vec(name, n, center=1.0): tensors.append((name, (n,), F32, (center + rng.normal(0, 0.1, n)).astype(np.float32).tobytes()))
  mat("token_embd.weight", vocab, dim)
  vec("output_norm.weight", dim)
  if not tied: mat("output.weight", vocab, dim)
  for i in range(n_layer):
    p = f"blk.{i}."
    vec(p + "attn_norm.weight", dim), vec(p + "ffn_norm.weight", dim)
    mat(p + "attn_q.weight", n_head * hd, dim), mat(p + "attn_k.weight", n_kv_head * hd, dim), mat(p + "attn_v.weight", n_kv_head * hd, dim)
    mat(p + "attn_output.weight", dim, n_head * hd)
    mat(p + "ffn_gate.weight", ffn, dim), mat(p + "ffn_up.weight", ffn, dim), mat(p + "ffn_down.weight", dim, ffn)
    if arch == "qwen2":
      for n, rows in (("attn_q.bias", n_head * hd), ("attn_k.bias", n_kv_head * hd), ("attn_v.bias", n_kv_head * hd)): vec(p + n, rows, 0.0)
  return kv, tensors


# name -> (key/values, tensors) of each seed
SEEDS = {
  "llama_spm_f32": lambda: model(tokenizer=spm_tokenizer(), seed=1),
  "llama_spm_q8_0_tied": lambda: model(dim=32, ffn=32, typ=Q8_0, tied=True, tokenizer=spm_tokenizer(add_eos=True, add_space_prefix=False), seed=2),
  "qwen2_bpe_f16": lambda: model(arch="qwen2", typ=F16, tokenizer=bpe_tokenizer("qwen2", eos="<|im_end|>"), seed=3),
  "llama_bpe_q4_0_tied": lambda: model(dim=32, n_head=2, n_kv_head=2, ffn=32, typ=Q4_0, tied=True, tokenizer=bpe_tokenizer("llama-bpe", add_bos=True),
                                       seed=4),
  "llama_bpe_gpt2_bf16": lambda: model(typ=BF16, n_head=1, tokenizer=bpe_tokenizer("gpt-2"), seed=5),
  # no tokenizer; two layers, explicit key length, rope over part of each head, linear rope scaling
  "llama_2layer_partial_rope": lambda: model(n_layer=2, dim=8, n_head=2, n_kv_head=2, ffn=8, vocab=16, seed=6, extra_kv=[
      ("llama.attention.key_length", U32, 4), ("llama.attention.value_length", U32, 4), ("llama.rope.dimension_count", U32, 2),
      ("llama.rope.scaling.type", STR, "linear"), ("llama.rope.scaling.factor", F32K, 2.0)]),
  "qwen2_notok_q8_0": lambda: model(arch="qwen2", dim=32, n_head=4, n_kv_head=2, ffn=32, vocab=8, typ=Q8_0, seed=7),
  # small vocabularies, so that most of a file is metadata: no byte tokens; a part of the byte alphabet
  "llama_spm_small": lambda: model(dim=4, n_head=1, n_kv_head=1, ffn=4, tokenizer=spm_tokenizer(n_merges=12, byte_tokens=False), seed=8),
  "qwen2_bpe_small": lambda: model(arch="qwen2", dim=4, n_head=1, ffn=4, tokenizer=bpe_tokenizer("qwen2", n_merges=12, chars=" Helowrd,it'sTh"),
                                   seed=9),
}


def write_all(d):
  os.makedirs(d, exist_ok=True)
  paths = {}
  for name, build in SEEDS.items():
    kv, tensors = build()
    paths[name] = os.path.join(d, name)
    with open(paths[name], "wb") as f: f.write(gguf_bytes(kv, tensors))
  return paths


if __name__ == "__main__":
  for name, p in write_all(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fuzz", "corpus", "llm")).items(): print(name, os.path.getsize(p))
