"""tg_llm's logits against llama.cpp's (tests/tools/llama_ref.py: libllama through ctypes) on the same GGUF files: a
tiny llama and a tiny qwen2 (QKV biases, rope over the halves), 2 layers, with a SentencePiece vocabulary from
gguf_vocab so that llama.cpp accepts them, in F32, F16, Q8_0, Q4_0, Q4_K and Q6_K. A prompt of 6 tokens, then 4
single-token steps, then all again after a reset; every element of every logits vector is compared.

The weights mean the same to both: ggml's own dequantize_row_* gives every quantized weight bit for bit as our
float64 reference (test_llm's RefModel) holds it. Our logits are within 1e-3 of that float64 forward (measured: 1e-6).
llama.cpp computes in lower precision, so TOL, the bound on max|ours - llama.cpp| / max|llama.cpp's logits|, is per
type, about twice the largest measured over 5 seeds of each model:
- F32 and F16 (measured 9e-4): its KV cache and attention are F16, and for F16 weights the activations are rounded
  to F16 before each matmul (ggml's vec_dot_type);
- Q8_0, Q4_0 (1.2e-2), Q6_K (2.2e-2), Q4_K (3.1e-2): the activations are quantized to 8 bits before each matmul, with
  a scale per 32 elements (Q8_0) or per 256 (Q8_K, the K types). llama.cpp on an F32 file of the same weights stays
  within 4e-4 of float64, so the error is its quantized matmul path, not the weights.
llama.cpp must be within TOL of the float64 model as well, and the argmax must match wherever llama.cpp's top two
logits are further apart than twice the bound."""
import os
import sys

import numpy as np
import pytest

from test_llm import RefModel, build_model, tiny_config, tolerance
from test_state import F16, F32, Q4_0, Q4_K, Q6_K, Q8_0, write_gguf
from tinygrad_c.llm import LLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import gguf_vocab  # noqa: E402
import llama_ref  # noqa: E402
import llm_models  # noqa: E402

TYPES = {"f32": F32, "f16": F16, "q8_0": Q8_0, "q4_0": Q4_0, "q4_k": Q4_K, "q6_k": Q6_K}
# largest measured over 5 seeds, llama / qwen2: f32 8.8e-4 / 6.0e-4, f16 9.2e-4 / 7.4e-4, q8_0 1.1e-2 / 8.9e-3,
# q4_0 1.2e-2 / 1.1e-2, q4_k 3.1e-2 / 2.6e-2, q6_k 2.2e-2 / 1.5e-2
TOL = {F32: 2e-3, F16: 2e-3, Q8_0: 2.5e-2, Q4_0: 2.5e-2, Q4_K: 6e-2, Q6_K: 5e-2}
OURS_TOL = 1e-3  # against float64, as test_llm
PROMPT, DECODE = [1, 17, 250, 3, 99, 1200], [42, 7, 1000, 123]


def model(tmp_path, arch, typ, seed=0):
  """A 2-layer model with gguf_vocab's SentencePiece vocabulary (400 merges: 1273 tokens, learned in 0.4 s), 64 wide,
  or 256 for the K types (their blocks are 256 along a row)."""
  wide = typ in (Q4_K, Q6_K)
  c = tiny_config(arch=arch, vocab=len(gguf_vocab.spm_vocab(400)[0]), dim=256 if wide else 64, ffn=512 if wide else 128, context=64,
                  rope_base=1000000.0 if arch == "qwen2" else 10000.0)
  kv, tensors, W = build_model(c, typ, seed=seed + typ + (100 if arch == "qwen2" else 0))
  path = tmp_path / f"{arch}_{typ}.gguf"
  write_gguf(path, kv + llm_models.spm_tokenizer(n_merges=400), tensors)
  return path, c, W, tensors


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("name", list(TYPES))
def test_logits_match_llama_cpp(tmp_path, arch, name):
  assert llama_ref.available(), "no llama.cpp (scripts/llama_deps.sh build/llama)"
  typ = TYPES[name]
  path, c, W, tensors = model(tmp_path, arch, typ)
  for n, shape, t, raw in tensors:
    if t == typ and t not in (F32, F16):
      assert np.array_equal(llama_ref.dequantize(t, raw, shape[0] * shape[1]), W[n].astype(np.float32).ravel()), n
  ours, ref = LLM(path), llama_ref.Model(path, n_ctx=c["context"], n_threads=1, n_batch=len(PROMPT))
  assert ours.vocab_size == ref.n_vocab == c["vocab"]
  worst, argmax_checked = [], 0
  try:
    for _ in range(2):  # the second pass after a reset: the cache must forget
      f64 = RefModel(c, W, ours.config["prompt_products"])
      for toks in [PROMPT] + [[t] for t in DECODE]:
        got, want, exact = ours(toks).numpy(), ref(toks), f64(np.array(toks))
        assert got.shape == want.shape == (c["vocab"],)
        scale = np.abs(want).max()
        err, ours_err, ref_err = (np.abs(got - want).max() / scale, np.abs(got - exact).max() / np.abs(exact).max(),
                                  np.abs(want - exact).max() / np.abs(exact).max())
        worst.append(err)
        assert ours_err < tolerance(W, OURS_TOL), (toks, ours_err)
        assert err < TOL[typ] and ref_err < TOL[typ], (toks, err, ref_err)
        top2 = np.sort(want)[-2:]
        if top2[1] - top2[0] > 2 * TOL[typ] * scale:
          assert int(got.argmax()) == int(want.argmax()), toks
          argmax_checked += 1
      ours.reset(), ref.reset()
  finally:
    ref.close()
  print(f"{arch} {name}: max |ours - llama.cpp| / max|logits| = {max(worst):.2e} (bound {TOL[typ]:.1e}), argmax compared {argmax_checked}/10")
