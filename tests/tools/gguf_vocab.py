"""GGUF vocabulary files of both tokenizer kinds llama.cpp reads, learned here from text (no model file can be downloaded
in the tests): a SentencePiece-style vocab ("llama": scored pieces, 256 byte-fallback tokens, <unk>, <s>, </s>) and a
GPT-2-style byte-level BPE vocab ("gpt2": merges, special tokens), each with the hyperparameters llama.cpp wants to load
a file with vocab_only. Both are learned by plain BPE over words (pairs counted incrementally) from the tokenizer corpus
and sentences of made-up words from a seeded generator, so the files are the same on every run.
  python3 tests/tools/gguf_vocab.py <dir>   writes every file of FILES into <dir>"""
import functools
import os
import random
import re
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import ARR, BOOL, F32, I32, STR, U32, write_gguf  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "data", "tokenizer_corpus.txt")
SPACE = "\u2581"
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE = 1, 2, 3, 4, 6
USER_TOKENS = ["<tool>", "</tool>", "<sep>"]
# control tokens of Llama 3 and Qwen2 (the EOG and fill-in-the-middle ones llama.cpp knows by text among them);
# <|im_end|> is typed normal, as some converted files have it: llama.cpp makes it control by its text
BPE_SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|im_start|>",
               "<|im_end|>", "<|endoftext|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>", "<|repo_name|>",
               "<|file_sep|>"] + [f"<|reserved_special_token_{i}|>" for i in range(8)]


@functools.lru_cache(maxsize=None)
def training_text(seed=0, sentences=3000):
  """The corpus three times, then sentences of words made of syllables (Latin, accented, Cyrillic and a few CJK)."""
  corpus = open(CORPUS, encoding="utf-8", newline="").read()
  rng = random.Random(seed)
  on = ["", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "st", "tr", "pl", "ch", "sh", "th"]
  nu = ["a", "e", "i", "o", "u", "ea", "ou", "io", "é", "ü", "ø"]
  co = ["", "", "n", "r", "s", "t", "l", "ng", "ck", "rd"]
  cyr = ["ка", "ло", "ми", "ре", "то", "ны", "да", "ст"]
  cjk = "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年"
  words = []
  for _ in range(600):
    k = rng.random()
    if k < 0.8: words.append("".join(rng.choice(on) + rng.choice(nu) + rng.choice(co) for _ in range(rng.randint(1, 4))))
    elif k < 0.9: words.append("".join(rng.choice(cyr) for _ in range(rng.randint(1, 3))))
    else: words.append("".join(rng.choice(cjk) for _ in range(rng.randint(1, 3))))
  weights = [1 / (i + 1) for i in range(len(words))]  # Zipf-like: a few words are common
  out = []
  for _ in range(sentences):
    s = " ".join(rng.choices(words, weights, k=rng.randint(3, 14)))
    s = s[0].upper() + s[1:] + rng.choice([".", ".", ",", "!", "?", ":", ";"])
    if rng.random() < 0.2: s += f" {rng.randint(0, 10 ** rng.randint(1, 7))}"
    out.append(s)
  return corpus * 3 + "\n".join(out) + "\n"


def learn_bpe(word_counts, n_merges, min_pair=2):
  """BPE over words (tuples of symbols) with counts: the most frequent adjacent pair merged, n_merges times (ties to the
  pair first in order), pair counts kept up to date for the words a merge touches. Returns the merges in order."""
  words = [list(w) for w in word_counts]
  counts = list(word_counts.values())
  pairs, where = Counter(), defaultdict(set)
  for i, w in enumerate(words):
    for a, b in zip(w, w[1:]):
      pairs[a, b] += counts[i]
      where[a, b].add(i)
  merges = []
  for _ in range(n_merges):
    if not pairs: break
    (a, b), c = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
    if c < min_pair: break
    merges.append((a, b))
    for i in list(where[a, b]):
      w, n = words[i], counts[i]
      for x, y in zip(w, w[1:]):
        pairs[x, y] -= n
        if pairs[x, y] <= 0: del pairs[x, y]
      j, nw = 0, []
      while j < len(w):
        if j + 1 < len(w) and w[j] == a and w[j + 1] == b: nw.append(a + b); j += 2
        else: nw.append(w[j]); j += 1
      words[i] = nw
      for x, y in zip(nw, nw[1:]):
        pairs[x, y] += n
        where[x, y].add(i)
    where.pop((a, b), None)
  return merges


def hparams(arch):
  return [("general.architecture", STR, arch), ("general.name", STR, "tokenizer test vocab"), (f"{arch}.context_length", U32, 256),
          (f"{arch}.embedding_length", U32, 64), (f"{arch}.block_count", U32, 2), (f"{arch}.feed_forward_length", U32, 128),
          (f"{arch}.attention.head_count", U32, 4), (f"{arch}.attention.head_count_kv", U32, 4),
          (f"{arch}.attention.layer_norm_rms_epsilon", F32, 1e-5)]


@functools.lru_cache(maxsize=None)
def spm_vocab(n_merges=3000):
  """(tokens, scores, types): <unk>, <s>, </s>, <0x00>..<0xFF>, the learned pieces (score -rank), the characters seen
  at least twice (scored below every piece), user-defined tokens, and <|im_end|> typed normal."""
  text = training_text()
  words = Counter()
  for line in text.split("\n"):
    for w in re.findall(r" ?[^ ]+| +", line): words[tuple((SPACE + w[1:]) if w.startswith(" ") else w)] += 1
  chars = Counter()
  for w, c in words.items():
    for ch in w: chars[ch] += c
  base = sorted(ch for ch, c in chars.items() if c >= 2 and ch not in "\r")
  kept = Counter({tuple(ch if ch in base else "\0" for ch in w): c for w, c in words.items()})  # \0: a rare char, never merged
  merges = [m for m in learn_bpe(kept, n_merges) if "\0" not in m[0] + m[1]]
  tokens, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [UNKNOWN, CONTROL, CONTROL]
  tokens += [f"<0x{i:02X}>" for i in range(256)]
  scores += [0.0] * 256
  types += [BYTE] * 256
  seen = set(tokens)
  for i, (a, b) in enumerate(merges):
    if a + b in seen: continue
    tokens.append(a + b), scores.append(-float(i)), types.append(NORMAL), seen.add(a + b)
  for j, ch in enumerate(base):
    if ch in seen: continue
    tokens.append(ch), scores.append(-float(len(merges) + j)), types.append(NORMAL), seen.add(ch)
  for t in USER_TOKENS: tokens.append(t), scores.append(0.0), types.append(USER_DEFINED)
  tokens.append("<|im_end|>"), scores.append(0.0), types.append(NORMAL)
  return tokens, scores, types


def byte_alphabet():
  bs = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
  cs, n = bs[:], 0
  for b in range(256):
    if b not in bs: bs.append(b), cs.append(256 + n); n += 1
  return {b: chr(c) for b, c in zip(bs, cs)}


GPT2_SPLIT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")


def bpe_tokens(alpha, merges):
  """A byte-level BPE vocabulary's normal tokens: the alphabet's characters in code point order, then each merge's
  join the first time it appears."""
  tokens = [alpha[b] for b in sorted(alpha, key=lambda b: ord(alpha[b]))]
  seen = set(tokens)
  for a, b in merges:
    if a + b not in seen: tokens.append(a + b), seen.add(a + b)
  return tokens


@functools.lru_cache(maxsize=None)
def bpe_vocab(n_merges=2000):
  """(tokens, types, merges): the 256 byte-level characters, one token per learned merge, the special tokens."""
  alpha = byte_alphabet()
  words = Counter()
  for w in GPT2_SPLIT.findall(training_text(seed=1)): words[tuple(alpha[b] for b in w.encode())] += 1
  merges = learn_bpe(words, n_merges)
  tokens = bpe_tokens(alpha, merges)
  types = [NORMAL] * len(tokens)
  for t in BPE_SPECIAL: tokens.append(t), types.append(NORMAL if t == "<|im_end|>" else CONTROL)
  for t in USER_TOKENS: tokens.append(t), types.append(USER_DEFINED)
  return tokens, types, [f"{a} {b}" for a, b in merges]


def spm_kv(add_space_prefix=None, add_eos=None):
  tokens, scores, types = spm_vocab()
  kv = hparams("llama") + [("tokenizer.ggml.model", STR, "llama"), ("tokenizer.ggml.tokens", ARR, (STR, tokens)),
                           ("tokenizer.ggml.scores", ARR, (F32, scores)), ("tokenizer.ggml.token_type", ARR, (I32, types)),
                           ("tokenizer.ggml.bos_token_id", U32, 1), ("tokenizer.ggml.eos_token_id", U32, 2),
                           ("tokenizer.ggml.unknown_token_id", U32, 0), ("tokenizer.ggml.add_bos_token", BOOL, True)]
  if add_space_prefix is not None: kv.append(("tokenizer.ggml.add_space_prefix", BOOL, add_space_prefix))
  if add_eos is not None: kv.append(("tokenizer.ggml.add_eos_token", BOOL, add_eos))
  return kv


def bpe_kv(pre, arch="llama", add_bos=None, eos="<|eot_id|>"):
  tokens, types, merges = bpe_vocab()
  kv = hparams(arch) + [("tokenizer.ggml.model", STR, "gpt2"), ("tokenizer.ggml.tokens", ARR, (STR, tokens)),
                        ("tokenizer.ggml.token_type", ARR, (I32, types)), ("tokenizer.ggml.merges", ARR, (STR, merges)),
                        ("tokenizer.ggml.bos_token_id", U32, tokens.index("<|begin_of_text|>")),
                        ("tokenizer.ggml.eos_token_id", U32, tokens.index(eos)),
                        ("tokenizer.ggml.padding_token_id", U32, len(tokens) + 5)]  # outside the vocab: llama.cpp ignores it
  if pre is not None: kv.append(("tokenizer.ggml.pre", STR, pre))
  if add_bos is not None: kv.append(("tokenizer.ggml.add_bos_token", BOOL, add_bos))
  return kv


# name -> metadata of each file the tokenizer tests compare on
FILES = {
  "spm": lambda: spm_kv(),
  "spm_noprefix_eos": lambda: spm_kv(add_space_prefix=False, add_eos=True),
  "bpe_llama3": lambda: bpe_kv("llama-bpe", add_bos=True),
  "bpe_qwen2": lambda: bpe_kv("qwen2", arch="qwen2", add_bos=False, eos="<|im_end|>"),
  "bpe_gpt2": lambda: bpe_kv("gpt-2"),
  "bpe_default": lambda: bpe_kv(None),  # no tokenizer.ggml.pre: llama.cpp's default regexes
  "bpe_smollm": lambda: bpe_kv("smollm", eos="<|endoftext|>"),
}


def write_all(d):
  os.makedirs(d, exist_ok=True)
  paths = {}
  for name, kv in FILES.items():
    paths[name] = os.path.join(d, name + ".gguf")
    write_gguf(paths[name], kv())
  return paths


if __name__ == "__main__":
  for name, p in write_all(sys.argv[1] if len(sys.argv) > 1 else ".").items(): print(name, p, os.path.getsize(p))
