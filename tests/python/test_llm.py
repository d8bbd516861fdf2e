"""Language models from GGUF files (tg_llm_*) against a float64 numpy forward pass of the same model.

The tests write their own GGUF files with random weights (no model can be downloaded here): a tiny llama (2 layers,
dim 256, 4 heads, 2 KV heads) in F32, F16 and each quantized type, a qwen2 (QKV biases, rope over the halves), a model
with tied embeddings. Quantized models are checked against the float64 forward of their own dequantized weights
(ref_dequant: ggml's dequantize_row_* in numpy)."""
import json
import os

import numpy as np
import pytest

from tinygrad_c import InvalidArgumentError, TinygradError
from tinygrad_c.llm import LLM
from test_state import BF16, F16, F32, Q4_0, Q4_K, Q6_K, Q8_0, BLOCK, make_blocks, ref_dequant, write_gguf, f16s

U32, F32K, STR = 4, 6, 8
SCALE_AT = {Q4_0: [0], Q8_0: [0], Q4_K: [0, 2], Q6_K: [208]}
# the largest |scale| per type that keeps weights about 0.05: scale * largest quant magnitude
AMP = {Q4_0: 0.05 / 8, Q8_0: 0.05 / 127, Q4_K: 0.05 / (63 * 15), Q6_K: 0.05 / (127 * 32)}


def tiny_config(**kw):
  c = dict(arch="llama", n_layer=2, dim=256, n_head=4, n_kv_head=2, ffn=512, vocab=300, context=64, eps=1e-5, rope_base=10000.0)
  c.update(kw)
  return c


def weight(rng, rows, cols, typ):
  """(float64 values the model computes with, raw bytes in the file)"""
  if typ == F32:
    w = rng.normal(0, 0.05, (rows, cols)).astype(np.float32)
    return w.astype(np.float64), w.tobytes()
  if typ == F16:
    w = rng.normal(0, 0.05, (rows, cols)).astype(np.float16)
    return w.astype(np.float64), w.tobytes()
  elems, _ = BLOCK[typ]
  b = make_blocks(typ, rows * cols // elems, rng)
  for a in SCALE_AT[typ]: b[:, a:a + 2] = f16s(rng.uniform(-AMP[typ], AMP[typ], b.shape[0]).astype(np.float16))
  return ref_dequant(typ, b).reshape(rows, cols).astype(np.float64), b.tobytes()


def write_model(path, c, typ=F32, tied=False, seed=0):
  """A GGUF of config c with random weights of type typ (norms F32); returns the float64 weights by name."""
  kv, tensors, W = build_model(c, typ, tied, seed)
  write_gguf(path, kv, tensors)
  return W


def build_model(c, typ=F32, tied=False, seed=0):
  """(GGUF key/values, tensors, float64 weights by name) of config c"""
  rng = np.random.default_rng(seed)
  a, hd = c["arch"], c["dim"] // c["n_head"]
  kv = [("general.architecture", STR, a), (f"{a}.block_count", U32, c["n_layer"]), (f"{a}.embedding_length", U32, c["dim"]),
        (f"{a}.feed_forward_length", U32, c["ffn"]), (f"{a}.attention.head_count", U32, c["n_head"]),
        (f"{a}.attention.head_count_kv", U32, c["n_kv_head"]), (f"{a}.context_length", U32, c["context"]),
        (f"{a}.attention.layer_norm_rms_epsilon", F32K, c["eps"]), (f"{a}.rope.freq_base", F32K, c["rope_base"]),
        ("general.name", STR, "tiny test model")]
  W, tensors = Weights(), []
  W.typ = typ
  def add(name, rows, cols, t):
    W[name], raw = weight(rng, rows, cols, t)
    tensors.append((name, (rows, cols), t, raw))
  def vec(name, n, scale=0.1, center=1.0):
    v = (center + rng.normal(0, scale, n)).astype(np.float32)
    W[name] = v.astype(np.float64)
    tensors.append((name, (n,), F32, v.tobytes()))
  add("token_embd.weight", c["vocab"], c["dim"], typ)
  vec("output_norm.weight", c["dim"])
  if not tied: add("output.weight", c["vocab"], c["dim"], typ)
  for i in range(c["n_layer"]):
    p = f"blk.{i}."
    vec(p + "attn_norm.weight", c["dim"]), vec(p + "ffn_norm.weight", c["dim"])
    add(p + "attn_q.weight", c["n_head"] * hd, c["dim"], typ)
    add(p + "attn_k.weight", c["n_kv_head"] * hd, c["dim"], typ)
    add(p + "attn_v.weight", c["n_kv_head"] * hd, c["dim"], typ)
    add(p + "attn_output.weight", c["dim"], c["n_head"] * hd, typ)
    add(p + "ffn_gate.weight", c["ffn"], c["dim"], typ)
    add(p + "ffn_up.weight", c["ffn"], c["dim"], typ)
    add(p + "ffn_down.weight", c["dim"], c["ffn"], typ)
    if a == "qwen2":
      for n, rows in (("attn_q.bias", c["n_head"] * hd), ("attn_k.bias", c["n_kv_head"] * hd), ("attn_v.bias", c["n_kv_head"] * hd)):
        vec(p + n, rows, scale=0.5, center=0.0)
  return kv, tensors, W


class Weights(dict):
  """float64 weights by name; .typ: the ggml type the file holds them in"""
  typ = F32


def q8_rows(x):
  """x as the library's decode matmuls take it for Q4_0, Q8_0 and Q4_K weights (as llama.cpp does): each block of 32 of a row
  rounded to int8 steps of max|x| / 127, the steps computed in float32"""
  xb = x.astype(np.float32).reshape(x.shape[0], -1, 32)
  amax = np.abs(xb).max(-1, keepdims=True)
  inv = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1), 0).astype(np.float32)
  return (np.round(xb * inv) * (amax / np.float32(127))).astype(np.float64).reshape(x.shape)


def bf16_prompts():
  """Whether the library's prompt products (16 rows or more) of quantized weights round both sides to bfloat: on the
  LLVM CPU device of a host with AVX512-BF16 (docs/llm.md), unless TG_LLM_BF16=0."""
  if os.environ.get("TG_LLM_BF16", "1") == "0" or os.environ.get("DEV", "CPU") != "CPU": return False
  try:
    with open("/proc/cpuinfo") as f: flags = set(f.read().split())
  except OSError:
    return False
  return "avx512_bf16" in flags and "avx512vl" in flags


def bf16(x):
  """x rounded to bfloat (to nearest, ties to even) through float32, as float64"""
  u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
  u = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
  return u.view(np.float32).astype(np.float64)


def tolerance(W, rtol):
  """rtol, or for weights whose decode matmuls round activations to int8, 5 * rtol. Those agree with the reference to
  about 2e-7, except where ours (float32) and the reference (float64) hold an activation on either side of a half
  step: that element rounds one step apart, about 1e-3 of the logits, and in the KV cache it stays for the later steps
  (qwen2's biased keys, Q4_K: up to 4.2e-3 over 4 seeds). Without the int8 rounding the gap is 4e-3 to 2e-2. Where
  prompts round to bfloat too (bf16_prompts), 10 * rtol: the reference rounds the same way, but an activation that
  float32 and float64 hold on either side of a bfloat half step rounds a step (2^-8 of it) apart, and the layers after
  spread it (any one weight's prompt products rounded alone agree to 1e-5 or better; all of them, up to 6.7e-3). The
  bfloat product itself is checked element by element in tests/test_quant_dot.cpp."""
  if getattr(W, "typ", F32) not in (Q4_0, Q8_0, Q4_K, Q6_K): return rtol
  return rtol * (10 if bf16_prompts() else 5)


class RefModel:
  """The forward pass in float64 numpy, with its own KV cache. With Q4_0, Q8_0 and Q4_K weights, a matmul of fewer than 16
  rows (the library's in-kernel path) first rounds its input as q8_rows does. One of 16 rows or more takes the form the
  library reports for its prompts (`prompt`, its config's "prompt_products"): "int8" rounds the input of Q4_0, Q8_0 and
  Q4_K products as q8_rows does; with any other quantized weight, or with "bfloat16", the input and the weight are
  rounded to bfloat where the library does (bf16_prompts); "float32" rounds nothing."""
  def __init__(self, c, W, prompt):
    assert prompt in ("int8", "bfloat16", "float32"), prompt
    self.c, self.W, self.pos = c, W, 0
    typ = getattr(W, "typ", F32)
    self.q8 = typ in (Q4_0, Q8_0, Q4_K, Q6_K)
    self.q8_prompt = prompt == "int8" and typ in (Q4_0, Q8_0, Q4_K)
    self.bf16 = typ not in (F32, F16, BF16) and prompt != "float32" and bf16_prompts()
    self.hd = c["dim"] // c["n_head"]
    self.k = [np.zeros((c["n_kv_head"], c["context"], self.hd)) for _ in range(c["n_layer"])]
    self.v = [np.zeros((c["n_kv_head"], c["context"], self.hd)) for _ in range(c["n_layer"])]

  def norm(self, x, w): return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.c["eps"]) * w

  def rope(self, x, pos):  # x (heads, T, hd)
    half = self.hd // 2
    ang = pos[:, None] * self.c["rope_base"] ** (-2.0 * np.arange(half) / self.hd)
    cos, sin = np.cos(ang), np.sin(ang)
    if self.c["arch"] == "qwen2":
      x1, x2 = x[..., :half], x[..., half:]
      return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = x0 * cos - x1 * sin, x0 * sin + x1 * cos
    return out

  def __call__(self, tokens):
    c, W, hd, T = self.c, self.W, self.hd, len(tokens)
    H, KV, sp = c["n_head"], c["n_kv_head"], self.pos
    pos = np.arange(sp, sp + T, dtype=np.float64)
    x = W["token_embd.weight"][tokens]
    for i in range(c["n_layer"]):
      p = f"blk.{i}."
      h = self.norm(x, W[p + "attn_norm.weight"])
      q, k, v = self.mm(h, p + "attn_q.weight"), self.mm(h, p + "attn_k.weight"), self.mm(h, p + "attn_v.weight")
      if c["arch"] == "qwen2": q, k, v = q + W[p + "attn_q.bias"], k + W[p + "attn_k.bias"], v + W[p + "attn_v.bias"]
      q = self.rope(q.reshape(T, H, hd).transpose(1, 0, 2), pos)
      k = self.rope(k.reshape(T, KV, hd).transpose(1, 0, 2), pos)
      self.k[i][:, sp:sp + T], self.v[i][:, sp:sp + T] = k, v.reshape(T, KV, hd).transpose(1, 0, 2)
      L = sp + T
      out = np.zeros((H, T, hd))
      for hh in range(H):
        kk, vv = self.k[i][hh // (H // KV), :L], self.v[i][hh // (H // KV), :L]
        s = q[hh] @ kk.T / np.sqrt(hd)
        s = s + np.triu(np.full((T, L), -np.inf), sp + 1)
        s = np.exp(s - s.max(-1, keepdims=True))
        out[hh] = (s / s.sum(-1, keepdims=True)) @ vv
      x = x + self.mm(out.transpose(1, 0, 2).reshape(T, H * hd), p + "attn_output.weight")
      f = self.norm(x, W[p + "ffn_norm.weight"])
      g = self.mm(f, p + "ffn_gate.weight")
      x = x + self.mm((g / (1 + np.exp(-g))) * self.mm(f, p + "ffn_up.weight"), p + "ffn_down.weight")
    self.pos += T
    return self.mm(self.norm(x[-1:], W["output_norm.weight"]), "output.weight" if "output.weight" in W else "token_embd.weight")[0]

  def mm(self, x, name):
    if self.q8_prompt and x.shape[0] >= 16: return q8_rows(x) @ self.W[name].T
    if self.bf16 and x.shape[0] >= 16: return bf16(x) @ bf16(self.W[name]).T
    return (q8_rows(x) if self.q8 and x.shape[0] < 16 else x) @ self.W[name].T


def run_both(path, c, W, steps, rtol):
  m = LLM(path)
  ref = RefModel(c, W, m.config["prompt_products"])
  assert m.vocab_size == c["vocab"] and m.context == c["context"] and m.position == 0
  for toks in steps:
    got, want = m(toks).numpy(), ref(np.array(toks))
    assert got.shape == (c["vocab"],)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err < tolerance(W, rtol), (toks, err)
    assert int(got.argmax()) == int(want.argmax()) or np.sort(want)[-1] - np.sort(want)[-2] < 1e-3 * np.abs(want).max()
  assert m.position == sum(len(t) for t in steps)
  return m


# a prompt of 20 rows takes the dequantized-matmul path (16 rows or more), the short ones the in-kernel blocks
STEPS = [[1, 17, 250, 3, 99], [42], [7], [299, 0, 5], [123], [(37 * i + 11) % 300 for i in range(20)], [8]]


@pytest.mark.parametrize("typ", [F32, F16, Q8_0, Q4_0, Q4_K, Q6_K])
def test_llama_logits_match_float64(tmp_path, typ):
  c = tiny_config()
  W = write_model(tmp_path / "m.gguf", c, typ, seed=typ)
  run_both(tmp_path / "m.gguf", c, W, STEPS, 1e-3)


def host_has_vnni():
  try:
    with open("/proc/cpuinfo") as f: flags = set(f.read().split())
  except OSError:
    return False
  return "avx512_vnni" in flags and "avx512bw" in flags


@pytest.mark.parametrize("form", ["int8", "bf16", "f32"])
@pytest.mark.parametrize("typ", [Q8_0, Q4_0, Q4_K, Q6_K])
def test_prompt_forms_match_float64(tmp_path, monkeypatch, form, typ):
  """Each prompt form TG_LLM_PROMPT asks for, whichever the host would pick: the library reports the one it took (int8
  where the LLVM CPU device has VNNI, bfloat16 where it has AVX512-BF16, else float32), and the reference rounds the
  same way. Q6_K (two scales per 32) has no int8 prompt form and takes bfloat16 or float32."""
  monkeypatch.setenv("TG_LLM_PROMPT", form)
  c = tiny_config()
  W = write_model(tmp_path / "m.gguf", c, typ, seed=typ + 100)
  m = run_both(tmp_path / "m.gguf", c, W, STEPS, 1e-3)
  cpu = os.environ.get("DEV", "CPU") == "CPU"
  want = {"int8": "int8" if cpu and host_has_vnni() else "bfloat16" if bf16_prompts() else "float32",
          "bf16": "bfloat16" if bf16_prompts() else "float32", "f32": "float32"}[form]
  assert m.config["prompt_products"] == want


def test_qwen2_biases_and_half_rope(tmp_path):
  c = tiny_config(arch="qwen2", rope_base=1000000.0)
  W = write_model(tmp_path / "q.gguf", c, Q8_0, seed=5)
  run_both(tmp_path / "q.gguf", c, W, STEPS, 1e-3)


def test_tied_embeddings_and_reset(tmp_path):
  c = tiny_config(n_kv_head=4)
  W = write_model(tmp_path / "t.gguf", c, F32, tied=True, seed=7)
  m = run_both(tmp_path / "t.gguf", c, W, STEPS[:2], 1e-3)
  first = m([9, 8]).numpy()
  m.reset()
  assert m.position == 0
  want = RefModel(c, W, m.config["prompt_products"])(np.array([9, 8]))
  np.testing.assert_allclose(m([9, 8]).numpy(), want, rtol=1e-3, atol=1e-3 * np.abs(first).max())


def test_config_and_metadata(tmp_path):
  c = tiny_config()
  write_model(tmp_path / "m.gguf", c)
  m = LLM(tmp_path / "m.gguf", context=32)
  cfg = m.config
  assert cfg["arch"] == "llama" and cfg["n_layer"] == 2 and cfg["n_kv_head"] == 2 and cfg["head_dim"] == 64 and cfg["context"] == 32
  assert m.metadata("general.name") == "tiny test model" and m.metadata("llama.block_count") == 2
  with pytest.raises(KeyError): m.metadata("nope")


def test_bad_tokens_and_context(tmp_path):
  c = tiny_config(context=8)
  write_model(tmp_path / "m.gguf", c)
  m = LLM(tmp_path / "m.gguf")
  with pytest.raises(TinygradError, match="not in the vocabulary"): m([1, 300])
  with pytest.raises(TinygradError, match="not in the vocabulary"): m([-1])
  from tinygrad_c import Tensor
  with pytest.raises(TinygradError, match="not in the vocabulary"): m(Tensor([(1 << 32) + 1], dtype="int64"))  # not token 1
  assert m.position == 0
  m([1] * 6)
  with pytest.raises(TinygradError, match="context"): m([1] * 3)
  assert m.position == 6
  with pytest.raises(TinygradError, match="1-D"): m(__import__("tinygrad_c").Tensor([[1, 2]], dtype="int32"))


@pytest.mark.parametrize("edit, status, problem", [
  (lambda kv, t: ([(k, ty, "gpt-j" if k == "general.architecture" else v) for k, ty, v in kv], t), "TG_ERROR_UNSUPPORTED", "gpt-j"),
  (lambda kv, t: ([x for x in kv if x[0] != "llama.block_count"], t), "TG_ERROR_IO", "llama.block_count"),
  (lambda kv, t: (kv, [x for x in t if x[0] != "blk.1.ffn_up.weight"]), "TG_ERROR_IO", "blk.1.ffn_up.weight"),
  (lambda kv, t: (kv, [(n, (s[0], s[1] // 2), ty, r[:len(r) // 2]) if n == "blk.0.attn_k.weight" else (n, s, ty, r) for n, s, ty, r in t]),
   "TG_ERROR_IO", "blk.0.attn_k.weight"),
  (lambda kv, t: ([(k, ty, 3 if k == "llama.attention.head_count_kv" else v) for k, ty, v in kv], t), "TG_ERROR_IO", "KV heads"),
  (lambda kv, t: (kv + [("llama.rope.scaling.type", STR, "yarn")], t), "TG_ERROR_UNSUPPORTED", "rope.scaling.type"),
])
def test_bad_files_name_the_problem(tmp_path, edit, status, problem):
  kv, t, _ = build_model(tiny_config(dim=64, ffn=128, vocab=40))
  write_gguf(tmp_path / "bad.gguf", *edit(kv, t))
  with pytest.raises(TinygradError, match=problem) as e: LLM(tmp_path / "bad.gguf")
  assert e.value.status == status


def test_decode_replays_one_capture_at_every_position(tmp_path):
  """Decode steps run under TinyJit with start_pos a Variable: after the capture, a step schedules, lowers and compiles
  nothing, and its logits still follow the float64 model position after position."""
  from tinygrad_c import counters
  c = tiny_config(n_layer=1)
  W = write_model(tmp_path / "d.gguf", c, Q8_0, seed=11)
  m = LLM(tmp_path / "d.gguf")
  ref = RefModel(c, W, m.config["prompt_products"])
  rng = np.random.default_rng(3)
  toks = [int(t) for t in rng.integers(0, c["vocab"], 24)]
  np.testing.assert_allclose(m(toks[:4]).numpy(), ref(np.array(toks[:4])), rtol=0, atol=1e-3 * 50)
  for i, t in enumerate(toks[4:]):
    before = counters()
    got, want = m([t]).numpy(), ref(np.array([t]))
    after = counters()
    assert np.abs(got - want).max() < 1e-3 * np.abs(want).max(), i
    if i >= 2:  # the first call runs, the second captures, every later one replays
      assert after["schedule_count"] == before["schedule_count"] and after["compile_count"] == before["compile_count"], i
      assert after["lower_count"] == before["lower_count"], i
  assert m.position == len(toks)


# ---- the tokenizer and generation, on a model whose file carries a SentencePiece vocabulary ----
import os, sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import gguf_vocab  # noqa: E402


def vocab_model(tmp_path, seed=21):
  """A tiny llama with gguf_vocab's SentencePiece vocabulary (its BOS 1, EOS 2)"""
  tok_kv = [e for e in gguf_vocab.spm_kv() if e[0].startswith("tokenizer.")]
  c = tiny_config(vocab=len(gguf_vocab.spm_vocab()[0]), n_layer=1, context=128)
  kv, tensors, W = build_model(c, Q8_0, seed=seed)
  write_gguf(tmp_path / "v.gguf", kv + tok_kv, tensors)
  return tmp_path / "v.gguf", c, W


def test_end_to_end_tokenize_generate_detokenize(tmp_path):
  """load, tokenize, generate 32 tokens greedily, detokenize: the tokens are the float64 model's argmax chain"""
  path, c, W = vocab_model(tmp_path)
  m = LLM(path)
  assert m.bos == 1 and m.eos == 2 and m.is_eog(2) and not m.is_eog(5)
  ids = m.tokenize("Hello world, this is a test.")
  assert ids[0] == 1 and len(ids) > 3
  # as llama_detokenize: the vocabulary's space prefix stays when the BOS before it is removed
  assert m.detokenize(ids, remove_special=True).lstrip(" ") == "Hello world, this is a test."
  pieces = []
  out = m.generate(ids, 32, on_token=lambda t, p: pieces.append(p), temperature=0.0)
  ref = RefModel(c, W, m.config["prompt_products"])
  logits, want = ref(np.array(ids)), []
  for _ in range(32):
    t = int(logits.argmax())
    if t == 2: break
    want.append(t)
    logits = ref(np.array([t]))
  assert out == want
  assert "".join(pieces) == "".join(m.token_piece(t) for t in out)
  assert m.position == len(ids) + len(out) - (len(out) == 32)  # the last token is returned, not fed
  assert isinstance(m.detokenize(out), str)


def test_sampling_is_seeded_and_stays_in_top_k(tmp_path):
  path, c, _ = vocab_model(tmp_path, seed=22)
  m = LLM(path)
  ids = m.tokenize("The quick brown fox")
  runs = []
  for seed in (1, 1, 2):
    m.reset()
    runs.append(m.generate(ids, 12, temperature=1.5, top_k=5, top_p=1.0, seed=seed))
  assert runs[0] == runs[1] and len(runs[0]) > 0
  m.reset()
  logits = m(ids)
  top5 = set(np.argsort(logits.numpy())[-5:].tolist())
  for s in range(20): assert m.sample(logits, temperature=2.0, top_k=5, top_p=1.0, seed=s) in top5
  assert m.sample(logits, temperature=0.0) == int(logits.numpy().argmax())
  assert m.sample(logits, temperature=1.0, top_k=1) == int(logits.numpy().argmax())
  # a penalty on the best token makes the greedy pick another when it was positive
  best = int(logits.numpy().argmax())
  if logits.numpy()[best] > 0: assert m.sample(logits, [best], temperature=0.0, repeat_penalty=1e6) != best
  with pytest.raises(TinygradError, match="out of range"): m.sample(logits, temperature=float("nan"))


def test_generation_stops_when_asked(tmp_path):
  path, _, _ = vocab_model(tmp_path, seed=23)
  m = LLM(path)
  seen = []
  def stop_at_five(t, p):
    seen.append(t)
    return len(seen) >= 5
  got = m.generate(m.tokenize("abc"), 50, on_token=stop_at_five, temperature=0.0)
  assert len(got) == 5 and got == seen
  with pytest.raises(ZeroDivisionError): m.generate(m.tokenize("abc"), 5, on_token=lambda t, p: 1 / 0)


def test_a_model_without_a_tokenizer_says_so(tmp_path):
  write_model(tmp_path / "n.gguf", tiny_config(dim=64, ffn=128, vocab=40))
  m = LLM(tmp_path / "n.gguf")
  with pytest.raises(TinygradError, match="no tokenizer") as e: m.tokenize("x")
  assert e.value.status == "TG_ERROR_UNSUPPORTED"
  assert len(m.generate([1, 2], 3, temperature=0.0)) == 3  # generation needs no tokenizer


def test_example_llm_c_streams_the_same_tokens(tmp_path):
  """examples/c/llm.c, greedy: it prints the prompt, the same text the binding's generate gives, and its speeds"""
  import subprocess
  import tinygrad_c
  exe = os.path.join(os.path.dirname(tinygrad_c.library_path), "example_llm")
  assert os.path.isfile(exe), f"{exe} is missing (the example_llm target)"
  path, _, _ = vocab_model(tmp_path, seed=24)
  m = LLM(path)
  pieces = []
  m.generate(m.tokenize("Once upon a time"), 12, on_token=lambda t, p: pieces.append(m.token_piece(t)), temperature=0.0)
  r = subprocess.run([exe, "--model", str(path), "--prompt", "Once upon a time", "-n", "12", "--temp", "0"], capture_output=True, timeout=300)
  assert r.returncode == 0, r.stderr
  out = r.stdout.decode("utf-8", "replace")
  assert out.startswith("Once upon a time" + "".join(pieces) + "\n\nllm: loaded in"), out
  assert "tokens/s" in out
  bad = subprocess.run([exe, "--model", str(tmp_path / "missing.gguf"), "--prompt", "x"], capture_output=True, timeout=60)
  assert bad.returncode == 1 and b"missing.gguf" in bad.stderr


def test_threads_and_beam_options(tmp_path):
  """threads=1 runs every kernel on the calling thread, beam=1 compiles with BEAM: the same logits; bad values are
  named errors"""
  c = tiny_config(n_layer=1)
  path = tmp_path / "o.gguf"
  write_model(path, c, Q4_0, seed=3)
  models = [LLM(path), LLM(path, threads=1), LLM(path, beam=1, threads=2)]
  for toks in [[1, 2, 3], [4], [5]]:
    outs = [m(toks).numpy() for m in models]
    for o in outs[1:]: np.testing.assert_allclose(o, outs[0], rtol=0, atol=1e-5 * np.abs(outs[0]).max())
  for bad, what in [(dict(threads=-1), "threads"), (dict(threads=1025), "threads"), (dict(beam=65), "beam"), (dict(beam=-2), "beam")]:
    with pytest.raises(InvalidArgumentError, match=what):
      LLM(path, **bad)
