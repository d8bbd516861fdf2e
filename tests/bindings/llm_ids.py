"""The Python side of compare_llm.sh.
  llm_ids.py write <model.gguf>            a tiny llama (2 layers, Q8_0 weights, gguf_vocab's SentencePiece vocabulary,
                                           context 256) with random weights, the same bytes on every run
  llm_ids.py run <model.gguf> <prompt> <n> greedy generation through tinygrad_c.llm, printed as examples/c/llm.c --ids
                                           prints its id lines"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "bindings", "python"), os.path.join(ROOT, "tests", "python"), os.path.join(ROOT, "tests", "tools")]


def write(path):
  import gguf_vocab
  from gguf_writer import write_gguf
  from test_llm import Q8_0, build_model, tiny_config
  tok_kv = [e for e in gguf_vocab.spm_kv() if e[0].startswith("tokenizer.")]
  kv, tensors, _ = build_model(tiny_config(vocab=len(gguf_vocab.spm_vocab()[0]), context=256), Q8_0, seed=5)
  write_gguf(path, kv + tok_kv, tensors)


def run(path, prompt, n):
  from tinygrad_c.llm import LLM
  m = LLM(path)
  ids = m.tokenize(prompt)
  out = m.generate(ids, n, temperature=0.0)
  print("prompt:" + "".join(f" {t}" for t in ids))
  print("tokens:" + "".join(f" {t}" for t in out))


if __name__ == "__main__":
  if sys.argv[1] == "write": write(sys.argv[2])
  else: run(sys.argv[2], sys.argv[3], int(sys.argv[4]))
