"""Hostile language-model files through the binding (tinygrad_c.llm.LLM). Each test takes a tiny valid model
(tests/tools/llm_fuzz_seeds.py: the fuzzer's seeds), breaks it one way (a tensor whose shape doesn't fit the metadata, a
vocabulary whose arrays disagree, merges naming tokens the vocabulary lacks, numbers no model has) and loads it: the
load must raise TinygradError with TG_ERROR_IO (a broken file) or TG_ERROR_UNSUPPORTED, its message naming the file and
the key or tensor at fault; never a crash or a hang. What llama.cpp tolerates with a warning (an empty token, a token
type it doesn't know, a special-token id outside the vocabulary) loads here too, the same way."""
import os
import struct
import sys

import pytest

from tinygrad_c import TinygradError
from tinygrad_c.llm import LLM

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import llm_fuzz_seeds as seeds  # noqa: E402
from gguf_writer import ARR, BOOL, F32 as F32K, I32, STR, U32, U64, gstr, write_gguf  # noqa: E402

IO, UNSUPPORTED = "TG_ERROR_IO", "TG_ERROR_UNSUPPORTED"


# ---- editing a file's key/values and tensors ----
def kv_get(kv, key): return next(v for k, _, v in kv if k == key)
def kv_set(kv, key, typ, value): return [e for e in kv if e[0] != key] + [(key, typ, value)]
def kv_drop(kv, key): return [e for e in kv if e[0] != key]
def kv_array(kv, key, fn):
  """the array at `key` with its items replaced by fn(items)"""
  return [(k, t, (v[0], fn(list(v[1]))) if k == key else v) for k, t, v in kv]


def t_shape(tensors, name, shape):
  """tensor `name` remade with `shape` (F32 zeros of the right size; a quantized one keeps its type)"""
  out = []
  for n, s, typ, raw in tensors:
    if n == name:
      elems, size = seeds.BLOCK.get(typ, (1, {seeds.F32: 4, seeds.F16: 2, seeds.BF16: 2}.get(typ, 4)))
      count = 1
      for d in shape: count *= d
      s, raw = shape, bytes(count // elems * size)
    out.append((n, s, typ, raw))
  return out
def t_type(tensors, name, typ, itemsize):
  return [(n, s, typ, bytes(len(raw) // 4 * itemsize)) if n == name else (n, s, t, raw) for n, s, t, raw in tensors]
def t_drop(tensors, name): return [t for t in tensors if t[0] != name]
def t_last(tensors, name): return t_drop(tensors, name) + [t for t in tensors if t[0] == name]


def spm(): return seeds.model(n_layer=2, tokenizer=seeds.spm_tokenizer())
def bpe(): return seeds.model(n_layer=1, tokenizer=seeds.bpe_tokenizer("llama-bpe"))


def load(tmp_path, kv, tensors, **kw):
  p = tmp_path / "m.gguf"
  write_gguf(p, kv, tensors)
  return LLM(p, context=16, **kw)


def refused(tmp_path, kv, tensors, status, *names):
  with pytest.raises(TinygradError) as e: load(tmp_path, kv, tensors)
  msg = str(e.value)
  assert e.value.status == status, msg
  assert "m.gguf" in msg, msg
  for n in names: assert n in msg, (n, msg)
  return msg


def test_the_base_files_load(tmp_path):
  """the files every test below breaks: a two-layer llama with a SentencePiece vocabulary, one with byte-level BPE"""
  for base in (spm, bpe):
    kv, tensors = base()
    m = load(tmp_path, kv, tensors)
    ids = m.tokenize("Hello world, it's 42! 日本語 😀", parse_special=True)
    assert m.detokenize(ids, remove_special=True).lstrip(" ") == "Hello world, it's 42! 日本語 😀"
    assert m.vocab_size == len(kv_get(kv, "tokenizer.ggml.tokens")[1])


# ---- tensors whose shapes don't fit the metadata (dim 8, 2 heads of 4, 1 KV head, FFN 16, 2 layers) ----
@pytest.mark.parametrize("edit, names", [
  (lambda t: t_shape(t, "blk.0.attn_q.weight", (9, 8)), ["blk.0.attn_q.weight", "is (9, 8)", "should be (8, 8)"]),
  (lambda t: t_shape(t, "blk.1.attn_q.weight", (8, 16)), ["blk.1.attn_q.weight"]),
  (lambda t: t_shape(t, "blk.0.attn_k.weight", (8, 8)), ["blk.0.attn_k.weight", "should be (4, 8)"]),
  (lambda t: t_shape(t, "blk.0.attn_output.weight", (8, 4)), ["blk.0.attn_output.weight"]),
  (lambda t: t_shape(t, "blk.1.ffn_gate.weight", (17, 8)), ["blk.1.ffn_gate.weight", "should be (16, 8)"]),
  (lambda t: t_shape(t, "blk.0.ffn_down.weight", (8, 32)), ["blk.0.ffn_down.weight", "should be (8, 16)"]),
  (lambda t: t_shape(t, "blk.0.ffn_up.weight", (16, 8, 1)), ["blk.0.ffn_up.weight"]),
  (lambda t: t_shape(t, "token_embd.weight", (8,)), ["token_embd.weight"]),
  # an empty tensor last (the GGUF reader takes one at the next tensor's offset as overlapping it)
  (lambda t: t_last(t_shape(t, "token_embd.weight", (0, 8)), "token_embd.weight"), ["token_embd.weight", "no rows"]),
  (lambda t: t_shape(t, "output.weight", (5, 8)), ["output.weight"]),
  (lambda t: t_shape(t, "blk.0.attn_norm.weight", (7,)), ["blk.0.attn_norm.weight", "should be (8,)"]),
  (lambda t: t_shape(t, "output_norm.weight", (8, 1)), ["output_norm.weight"]),
  (lambda t: t_type(t, "blk.1.ffn_norm.weight", 26, 4), ["blk.1.ffn_norm.weight", "float32 or float16"]),  # I32
  (lambda t: t_drop(t, "blk.1.attn_v.weight"), ["no tensor 'blk.1.attn_v.weight'"]),
  (lambda t: t_drop(t, "blk.0.ffn_norm.weight"), ["no tensor 'blk.0.ffn_norm.weight'"]),
  (lambda t: t_drop(t, "token_embd.weight"), ["no tensor 'token_embd.weight'"]),
  (lambda t: t_drop(t, "output_norm.weight"), ["no tensor 'output_norm.weight'"]),
])
def test_tensor_shapes_that_dont_fit(tmp_path, edit, names):
  kv, tensors = spm()
  refused(tmp_path, kv, edit(tensors), IO, *names)


def test_embedding_rows_must_be_the_vocabulary(tmp_path):
  """token_embd.weight's rows are the tokenizer's ids: one row fewer, or more, than tokenizer.ggml.tokens is refused"""
  kv, tensors = spm()
  n = len(kv_get(kv, "tokenizer.ggml.tokens")[1])
  for rows in (n - 1, n + 1):
    t = t_shape(t_shape(tensors, "token_embd.weight", (rows, 8)), "output.weight", (rows, 8))
    refused(tmp_path, kv, t, IO, "token_embd.weight", f"{rows} rows", f"{n} tokens", "tokenizer.ggml.tokens")


def test_quantized_rows_that_dont_fit(tmp_path):
  kv, tensors = seeds.model(dim=32, ffn=32, typ=seeds.Q8_0, tokenizer=seeds.spm_tokenizer())
  refused(tmp_path, kv, t_shape(tensors, "blk.0.ffn_up.weight", (64, 32)), IO, "blk.0.ffn_up.weight", "should be (32, 32)")
  # a type no weight is read as: F64 is read; an unknown type number is the GGUF reader's error, naming the tensor
  bad = [(n, s, 99 if n == "blk.0.attn_q.weight" else t, r) for n, s, t, r in tensors]
  refused(tmp_path, kv, bad, IO, "blk.0.attn_q.weight", "type 99")


# ---- head counts ----
@pytest.mark.parametrize("edits, status, names", [
  ([("llama.attention.head_count", 4), ("llama.attention.head_count_kv", 3)], IO, ["llama.attention.head_count_kv", "KV heads"]),
  ([("llama.attention.head_count_kv", 3)], IO, ["llama.attention.head_count_kv", "[1, 2]"]),  # more KV heads than heads
  ([("llama.attention.head_count_kv", 0)], IO, ["llama.attention.head_count_kv"]),
  ([("llama.attention.head_count", 0)], IO, ["llama.attention.head_count"]),
  ([("llama.attention.head_count", 3)], IO, ["llama.embedding_length", "llama.attention.head_count"]),  # 8 / 3
  ([("llama.attention.head_count", 16)], IO, ["llama.embedding_length", "llama.attention.head_count"]),  # wider than dim
  ([("llama.attention.head_count", 5000)], IO, ["llama.attention.head_count"]),
  ([("llama.attention.key_length", 8)], IO, ["blk.0.attn_q.weight"]),  # heads of 8: the tensors are of heads of 4
  ([("llama.attention.key_length", 0)], IO, ["llama.attention.key_length"]),
  ([("llama.attention.value_length", 2)], UNSUPPORTED, ["llama.attention.value_length"]),
  ([("llama.rope.dimension_count", 3)], IO, ["llama.rope.dimension_count"]),
  ([("llama.rope.dimension_count", 6)], IO, ["llama.rope.dimension_count"]),  # wider than a head
])
def test_head_counts(tmp_path, edits, status, names):
  kv, tensors = spm()
  for k, v in edits: kv = kv_set(kv, k, U32, v)
  refused(tmp_path, kv, tensors, status, *names)


# ---- hostile numbers ----
@pytest.mark.parametrize("key, typ, value", [
  ("llama.block_count", U32, 10 ** 9),
  ("llama.block_count", U64, 1 << 40),
  ("llama.block_count", I32, -1),
  ("llama.block_count", U32, 0),
  ("llama.block_count", STR, "two"),
  ("llama.block_count", ARR, (U32, [2, 2])),
  ("llama.block_count", F32K, 1.5),
  ("llama.context_length", U32, 0),
  ("llama.context_length", U64, 1 << 40),
  ("llama.embedding_length", U32, 0),
  ("llama.embedding_length", U64, (1 << 64) - 1),
  ("llama.feed_forward_length", U32, 10 ** 9),
  ("llama.feed_forward_length", U32, 0),
  ("llama.attention.layer_norm_rms_epsilon", F32K, float("nan")),
  ("llama.attention.layer_norm_rms_epsilon", F32K, 0.0),
  ("llama.attention.layer_norm_rms_epsilon", F32K, float("inf")),
  ("llama.rope.freq_base", F32K, -1.0),
  ("llama.rope.freq_base", F32K, float("nan")),
])
def test_hostile_numbers(tmp_path, key, typ, value):
  kv, tensors = spm()
  refused(tmp_path, kv_set(kv, key, typ, value), tensors, IO, key)


def test_more_blocks_than_the_file_has(tmp_path):
  kv, tensors = spm()
  refused(tmp_path, kv_set(kv, "llama.block_count", U32, 3), tensors, IO, "no tensor 'blk.2.")


@pytest.mark.parametrize("edit, status, names", [
  (lambda kv: kv_drop(kv, "general.architecture"), IO, ["general.architecture"]),
  (lambda kv: kv_set(kv, "general.architecture", STR, "gpt-neox"), UNSUPPORTED, ["general.architecture", "gpt-neox"]),
  (lambda kv: kv_drop(kv, "llama.embedding_length"), IO, ["llama.embedding_length"]),
  (lambda kv: kv_drop(kv, "llama.attention.layer_norm_rms_epsilon"), IO, ["llama.attention.layer_norm_rms_epsilon"]),
  (lambda kv: kv_set(kv, "llama.rope.scaling.type", STR, "yarn"), UNSUPPORTED, ["llama.rope.scaling.type"]),
  (lambda kv: kv_set(kv_set(kv, "llama.rope.scaling.type", STR, "linear"), "llama.rope.scaling.factor", F32K, 0.0), IO,
   ["llama.rope.scaling.factor"]),
  (lambda kv: kv_set(kv, "llama.rope.scaling.type", STR, "linear"), IO, ["llama.rope.scaling.factor"]),  # linear needs a factor
])
def test_missing_and_unsupported_keys(tmp_path, edit, status, names):
  kv, tensors = spm()
  refused(tmp_path, edit(kv), tensors, status, *names)


# ---- vocabularies ----
@pytest.mark.parametrize("edit, status, names", [
  (lambda kv: kv_array(kv, "tokenizer.ggml.scores", lambda a: a[:-1]), IO, ["tokenizer.ggml.scores", "entries"]),
  (lambda kv: kv_array(kv, "tokenizer.ggml.scores", lambda a: a + [0.0]), IO, ["tokenizer.ggml.scores", "entries"]),
  (lambda kv: kv_array(kv, "tokenizer.ggml.token_type", lambda a: a[:10]), IO, ["tokenizer.ggml.token_type", "entries"]),
  (lambda kv: kv_array(kv, "tokenizer.ggml.tokens", lambda a: a[:-1]), IO, ["tokenizer.ggml.scores", "entries"]),
  (lambda kv: kv_array(kv, "tokenizer.ggml.tokens", lambda a: []), IO, ["tokenizer.ggml.tokens", "0 tokens"]),
  (lambda kv: kv_array(kv, "tokenizer.ggml.tokens", lambda a: a[:300] + ["<s>"] + a[301:]), IO, ["tokenizer.ggml.tokens", "'<s>'"]),
  (lambda kv: kv_array(kv, "tokenizer.ggml.tokens", lambda a: a[:300] + ["", "[EMPTY_300]"] + a[302:]), IO, ["tokenizer.ggml.tokens", "[EMPTY_300]"]),
  (lambda kv: kv_array(kv, "tokenizer.ggml.tokens", lambda a: a[:3] + ["<0xZZ>"] + a[4:]), IO, ["tokenizer.ggml.token_type", "<0xZZ>"]),
  (lambda kv: kv_array(kv, "tokenizer.ggml.scores", lambda a: a[:7] + [float("nan")] + a[8:]), IO, ["tokenizer.ggml.scores[7]", "NaN"]),
  (lambda kv: kv_set(kv, "tokenizer.ggml.scores", ARR, (STR, ["x"])), IO, ["tokenizer.ggml.scores"]),
  (lambda kv: kv_set(kv, "tokenizer.ggml.tokens", ARR, (I32, [1, 2])), IO, ["tokenizer.ggml.tokens", "array of strings"]),
  (lambda kv: kv_set(kv, "tokenizer.ggml.token_type", ARR, (F32K, [1.0])), IO, ["tokenizer.ggml.token_type", "int32"]),
  (lambda kv: kv_drop(kv, "tokenizer.ggml.tokens"), IO, ["tokenizer.ggml.tokens"]),
  (lambda kv: kv_set(kv, "tokenizer.ggml.model", STR, "bert"), UNSUPPORTED, ["tokenizer.ggml.model", "'bert'"]),
  (lambda kv: kv_set(kv, "tokenizer.ggml.model", U32, 1), IO, ["tokenizer.ggml.model", "a string"]),
  (lambda kv: kv_set(kv, "tokenizer.ggml.bos_token_id", STR, "1"), IO, ["tokenizer.ggml.bos_token_id", "uint32"]),
  (lambda kv: kv_set(kv, "tokenizer.ggml.add_bos_token", U32, 1), IO, ["tokenizer.ggml.add_bos_token", "bool"]),
])
def test_bad_vocabularies(tmp_path, edit, status, names):
  kv, tensors = spm()
  refused(tmp_path, edit(kv), tensors, status, *names)


@pytest.mark.parametrize("merge, names", [
  ("zz q", ["tokenizer.ggml.merges[", "'zz q'", "'zz' is not a token"]),       # the left token is unknown
  ("H zz", ["tokenizer.ggml.merges[", "'zz' is not a token"]),                 # the right one
  ("Q Z", ["tokenizer.ggml.merges[", "'QZ' is not a token"]),                  # both known, their join not
  ("hello", ["tokenizer.ggml.merges[", "'hello' is not two tokens"]),          # no space
  ("", ["tokenizer.ggml.merges[", "is not two tokens"]),
  (" H", ["tokenizer.ggml.merges[", "is not two tokens"]),                     # a space first only
  ("H e l", ["tokenizer.ggml.merges[", "is not a token"]),                     # three
])
def test_merges_naming_unknown_tokens(tmp_path, merge, names):
  kv, tensors = bpe()
  n = len(kv_get(kv, "tokenizer.ggml.merges")[1])
  refused(tmp_path, kv_array(kv, "tokenizer.ggml.merges", lambda a: a + [merge]), tensors, IO, f"tokenizer.ggml.merges[{n}]", *names[1:])


@pytest.mark.parametrize("edit, status, names", [
  (lambda kv: kv_drop(kv, "tokenizer.ggml.merges"), IO, ["tokenizer.ggml.merges"]),
  (lambda kv: kv_set(kv, "tokenizer.ggml.merges", ARR, (U32, [1])), IO, ["tokenizer.ggml.merges", "array of strings"]),
  (lambda kv: kv_set(kv, "tokenizer.ggml.pre", STR, "gpt-9"), UNSUPPORTED, ["tokenizer.ggml.pre", "'gpt-9'"]),
])
def test_bad_bpe_metadata(tmp_path, edit, status, names):
  kv, tensors = bpe()
  refused(tmp_path, edit(kv), tensors, status, *names)


def test_special_ids_outside_the_vocabulary(tmp_path):
  """As llama.cpp: a BOS or EOS id outside the vocabulary leaves the default id (SentencePiece's <s> 1, </s> 2); with no
  default in the vocabulary either, a vocabulary that adds the token is refused, naming the key."""
  kv, tensors = spm()
  m = load(tmp_path, kv_set(kv_set(kv, "tokenizer.ggml.bos_token_id", U32, 10 ** 6), "tokenizer.ggml.eos_token_id", U32, (1 << 32) - 1), tensors)
  assert m.bos == 1 and m.eos == 2 and m.tokenize("a")[0] == 1
  # a one-token vocabulary: the default BOS 1 is outside it too
  one = [("tokenizer.ggml.model", STR, "llama"), ("tokenizer.ggml.tokens", ARR, (STR, ["<unk>"])), ("tokenizer.ggml.scores", ARR, (F32K, [0.0])),
         ("tokenizer.ggml.token_type", ARR, (I32, [2])), ("tokenizer.ggml.bos_token_id", U32, 7)]
  kv1, t1 = seeds.model(vocab=1, tokenizer=(one, 1))
  refused(tmp_path, kv1, t1, IO, "tokenizer.ggml.add_bos_token is true", "tokenizer.ggml.bos_token_id")
  kv1 = kv_set(kv_set(kv1, "tokenizer.ggml.add_bos_token", BOOL, False), "tokenizer.ggml.add_eos_token", BOOL, True)
  refused(tmp_path, kv1, t1, IO, "tokenizer.ggml.add_eos_token is true", "tokenizer.ggml.eos_token_id")
  m = load(tmp_path, kv_set(kv1, "tokenizer.ggml.add_eos_token", BOOL, False), t1)
  assert m.bos is None and m.eos is None and m.tokenize("") == [] and m.tokenize("<unk>", parse_special=True) == [0]


def test_what_llama_cpp_tolerates_loads(tmp_path):
  """an empty token is named [EMPTY_<id>]; a token type outside 0..6 gives the token no attributes, so it decodes to
  nothing (llama.cpp's LLAMA_TOKEN_ATTR_UNDEFINED)"""
  kv, tensors = spm()
  kv = kv_array(kv, "tokenizer.ggml.tokens", lambda a: a[:300] + [""] + a[301:])
  kv = kv_array(kv, "tokenizer.ggml.token_type", lambda a: a[:301] + [99, -1] + a[303:])
  m = load(tmp_path, kv, tensors)
  assert m.token_piece(300) == "[EMPTY_300]" and m.token_piece(301) == "" and m.token_piece(302) == ""
  assert m.detokenize([300, 301, 302, 300]) == "[EMPTY_300][EMPTY_300]"
  ids = m.tokenize("Hello [EMPTY_300]", add_special=False)
  assert ids and all(0 <= i < m.vocab_size for i in ids)


def test_gguf_lengths_past_the_end(tmp_path):
  """string and array lengths the file can't hold are the GGUF reader's errors, before the vocabulary is built"""
  kv, tensors = spm()
  p = tmp_path / "m.gguf"
  write_gguf(p, kv, tensors)
  raw = p.read_bytes()
  at = raw.index(gstr("<tool>"))
  p.write_bytes(raw[:at] + struct.pack("<Q", 1 << 40) + raw[at + 8:])  # a token's length
  with pytest.raises(TinygradError, match="runs past the end") as e: LLM(p)
  assert e.value.status == IO and "m.gguf" in str(e.value)
  tok = raw.index(gstr("tokenizer.ggml.tokens")) + len(gstr("tokenizer.ggml.tokens")) + 8  # after the key, the types
  p.write_bytes(raw[:tok] + struct.pack("<Q", 1 << 40) + raw[tok + 8:])  # the token count
  with pytest.raises(TinygradError, match="needs more than") as e: LLM(p)
  assert e.value.status == IO


# ---- every input the fuzzer crashed on once (fuzz/regressions/llm): an error now, or a model, never a crash ----
REGRESSIONS = os.path.join(ROOT, "fuzz", "regressions", "llm")


@pytest.mark.parametrize("name", sorted(os.listdir(REGRESSIONS)) if os.path.isdir(REGRESSIONS) else [])
def test_fuzz_regressions(name):
  try:
    m = LLM(os.path.join(REGRESSIONS, name), context=8)
  except TinygradError as e:
    assert e.status in (IO, UNSUPPORTED), str(e)
    return
  m.tokenize("Hello 日本 😀", parse_special=True)
  m([0])
