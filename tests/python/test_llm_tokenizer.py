"""nn::Tokenizer (src/nn/tokenizer.cpp) against llama.cpp's tokenizer, on GGUF vocabularies learned here
(tests/tools/gguf_vocab.py) and the corpus tests/data/tokenizer_corpus.txt: token ids and decoded text equal for every
line and for the whole corpus, with and without add_special and parse_special; every token's piece, BOS/EOS and the
end-of-generation set equal; the pre-tokenizers' word boundaries equal. Ours runs in tg_tokenize_probe
(tests/tools/tokenize_probe.cpp), llama.cpp in tests/tools/llama_ref.py, each in its own process on the same requests."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import gguf_vocab  # noqa: E402
import llama_ref  # noqa: E402
from gguf_writer import ARR, I32, STR, write_gguf  # noqa: E402

BUILD = os.path.dirname(os.path.abspath(os.environ.get("TINYGRAD_LIB", os.path.join(ROOT, "build", "libtinygrad.so"))))
PROBE = os.environ.get("TG_TOKENIZE_PROBE", os.path.join(BUILD, "tg_tokenize_probe"))
LLAMA_REF = os.path.join(ROOT, "tests", "tools", "llama_ref.py")


@pytest.fixture(autouse=True, scope="module")
def _needs():  # make test-build builds the probe and installs llama.cpp (scripts/llama_deps.sh): neither may be missing
  assert os.path.isfile(PROBE), f"no tokenizer probe at {PROBE} (build the tg_tokenize_probe target)"
  assert llama_ref.available(), "no llama.cpp (scripts/llama_deps.sh build/llama)"

CORPUS = open(gguf_vocab.CORPUS, "rb").read()
# invalid UTF-8 llama.cpp reads without throwing (a codepoint above U+10FFFF would make it throw): stray continuation
# bytes, cut sequences, an overlong NUL, a surrogate, a 5-byte lead
INVALID = [b"\x80", b"a\xffb", b"\xc3", b"\xc3(", b"\xe2\x82", b"x\xed\xa0\x80y", b"\xc0\x80", b"\xf8\x88\x80\x80\x80", b"\xf0\x9f\x98 ok",
           b"\xfe\xfe  \xff"]
TEXTS = CORPUS.split(b"\n") + [CORPUS, b"", b" ", b"  ", b"\n", b"a\xe3\x80\x80\xe3\x80\x80b"] + INVALID
FLAGS = [(0, 0), (0, 1), (1, 0), (1, 1)]


def run(cmd, requests=None):
  r = subprocess.run(cmd, input=requests.encode() if requests is not None else None, capture_output=True, timeout=600)
  assert r.returncode == 0, f"{cmd[0]} failed: {r.stdout[-2000:]} {r.stderr[-2000:]}"
  return [json.loads(line) for line in r.stdout.decode().splitlines()]


def both(path, texts, flags=FLAGS):
  """(ours, llama.cpp's, the requests' (text, add_special, parse_special)) for every text under every flag pair."""
  keys = [(t, a, p) for t in texts for a, p in flags]
  reqs = "".join(f"{a} {p} {t.hex()}\n" for t, a, p in keys)
  return run([PROBE, path], reqs), run([sys.executable, LLAMA_REF, path], reqs), keys


@pytest.fixture(scope="module")
def vocabs(tmp_path_factory):
  return gguf_vocab.write_all(str(tmp_path_factory.mktemp("vocabs")))


@pytest.mark.parametrize("name", list(gguf_vocab.FILES))
def test_corpus_encodes_and_decodes_as_llama_cpp(vocabs, name):
  ours, ref, keys = both(vocabs[name], TEXTS)
  bad = [(k[0][:60], k[1:], o["ids"][:20], r["ids"][:20]) for k, o, r in zip(keys, ours, ref) if o["ids"] != r["ids"]]
  assert not bad, f"{len(bad)} of {len(keys)} token id lists differ: {bad[:3]}"
  bad = [(k[0][:60], k[1:], bytes.fromhex(o["text"])[:60], bytes.fromhex(r["text"])[:60])
         for k, o, r in zip(keys, ours, ref) if o["text"] != r["text"]]
  assert not bad, f"{len(bad)} of {len(keys)} decoded texts differ: {bad[:3]}"
  # decode(encode(x)) == x wherever llama.cpp's round-trips (most texts; not: gpt-2's clean-up of " ." and " 's", a
  # text starting with a space after SentencePiece's prefix space, bad UTF-8)
  trips = [k[0] for k, r in zip(keys, ref) if k[1:] == (0, 0) and bytes.fromhex(r["text"]) == k[0]]
  assert len(trips) > len(TEXTS) * 3 // 4, f"only {len(trips)} of {len(TEXTS)} texts round-trip in llama.cpp"
  assert all(bytes.fromhex(o["text"]) == k[0] for k, o in zip(keys, ours) if k[0] in trips and k[1:] == (0, 0))


@pytest.mark.parametrize("name", list(gguf_vocab.FILES))
def test_pieces_and_special_tokens_as_llama_cpp(vocabs, name):
  ours, ref = run([PROBE, vocabs[name], "info"])[0], run([sys.executable, LLAMA_REF, vocabs[name], "info"])[0]
  for k in ("n_vocab", "bos", "eos", "add_bos", "add_eos", "eog"): assert ours[k] == ref[k], k
  bad = [(i, o, r) for i, (o, r) in enumerate(zip(ours["pieces"], ref["pieces"])) if o != r]
  assert not bad, f"{len(bad)} pieces differ: {bad[:5]}"


SPLIT_TEXTS = ["Hello world's", "I'M 'Re 'lL 'VE 'd", "x  y   z", "a\t\tb ", "  lead", "trail  ", "a\n\nb", " \r\n\r\n x", "!!!?? ..",
               " !!\n\n", "12345 678", "x1y22z333", "½⅔ Ⅻ ①", "١٢٣٤٥", "$+<=>^~|`", "a$b+c", "e\u0301x", "中文 字", "😀👍🏽", "a\u3000\u3000b",
               "a\u00a0 b", "a\u2028b", "a\u0085 b", "\x01\x1f x", "'s's", "don't", "3.14", "a--b", "  \n  \n", "x\r\ry", "a \u200b b", "A1 b"]


def split_vocab(texts):
  """A byte-level vocab in which every word any pre-tokenizer could cut from `texts` is one token: every substring of
  each text is a token, and every split of it a merge, so BPE joins each word whole and the ids are the words."""
  alpha = gguf_vocab.byte_alphabet()
  tokens = [alpha[b] for b in range(256)]
  merges, seen = [], set(tokens)
  for t in texts:
    s = "".join(alpha[b] for b in t.encode())
    subs = sorted({s[i:j] for i in range(len(s)) for j in range(i + 2, len(s) + 1)}, key=lambda x: (len(x), x))
    for w in subs:
      if w in seen: continue
      seen.add(w), tokens.append(w)
      merges += [f"{w[:k]} {w[k:]}" for k in range(1, len(w))]
  return tokens, merges


@pytest.mark.parametrize("pre", ["llama-bpe", "qwen2", "gpt-2", None, "smollm"])
def test_pre_tokenizer_words_as_llama_cpp(tmp_path, pre):
  tokens, merges = split_vocab(SPLIT_TEXTS)
  kv = gguf_vocab.hparams("llama") + [("tokenizer.ggml.model", STR, "gpt2"), ("tokenizer.ggml.tokens", ARR, (STR, tokens)),
                                      ("tokenizer.ggml.token_type", ARR, (I32, [1] * len(tokens))), ("tokenizer.ggml.merges", ARR, (STR, merges))]
  if pre: kv.append(("tokenizer.ggml.pre", STR, pre))
  path = str(tmp_path / "split.gguf")
  write_gguf(path, kv)
  ours, ref, keys = both(path, [t.encode() for t in SPLIT_TEXTS], flags=[(0, 0)])
  for k, o, r in zip(keys, ours, ref):
    assert o["ids"] == r["ids"], f"{pre}: {k[0]!r}: words {[tokens[i] for i in o['ids']]} != llama.cpp's {[tokens[i] for i in r['ids']]}"
