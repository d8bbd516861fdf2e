// Language models from GGUF files: the llama family (llama: Llama 2/3, TinyLlama, Mistral; qwen2) as tinygrad's
// llm/model.py builds them, with the weights kept in the file's quantized blocks. Each matmul dequantizes its blocks
// inside its kernel (the dequantization is a lazy expression the scheduler fuses into the reduce), so a quantized weight
// never exists as float32 in memory. The KV cache is realized per layer and written by assign at the position.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/state.h"
#include "nn/tokenizer.h"
#include "tensor/jit.h"

namespace tg::nn {

struct LlmConfig {
  std::string arch;  // "llama" or "qwen2"
  int64_t n_layer = 0, dim = 0, n_head = 0, n_kv_head = 0, head_dim = 0, ffn = 0, vocab = 0, context = 0, rope_dim = 0;
  double eps = 1e-5, rope_base = 10000.0;
  bool rope_neox = false;  // rotate the two halves of a head (qwen2) instead of adjacent pairs (llama)
  // how a prompt's products (16 rows or more) of Q4_0, Q8_0 and Q4_K weights are computed on this device: "int8",
  // "bfloat16" or "float32" (docs/llm.md)
  std::string prompt_products;
};

// A weight as the file holds it: quantized blocks (rows, blocks of a row, bytes of a block) uint8 or a native tensor.
struct QWeight {
  Tensor raw;
  uint32_t type;
  int64_t rows, cols;
  // the same memory as uint16 (rows * blocks, bytes / 2), for the types with an integer form: their float16 scales
  // are read as one 16-bit load each (two byte loads put together cost a decode GEMV 4 of its 20 instructions a step)
  std::optional<Tensor> halves;
  Tensor dense() const;                // (rows, cols) float32, lazy
  Tensor rows_of(const Tensor& idx) const;  // rows `idx` (int, any shape) dequantized: (..., cols) float32
};

// How a token is picked from logits (llama.cpp's common defaults). temperature <= 0 is greedy (argmax); otherwise the
// `top_k` most likely tokens (0: 1024) are kept, of those the smallest set whose probability reaches `top_p`, and one is
// drawn from them at `temperature` (Gumbel-max on the device). repeat_penalty != 1 scales the logits of the last
// `repeat_last_n` tokens of the history (divided when positive, multiplied when negative, as llama.cpp).
struct Sampling {
  double temperature = 0.8;
  int64_t top_k = 40;
  double top_p = 0.95;
  double repeat_penalty = 1.0;
  int64_t repeat_last_n = 64;
  uint64_t seed = 0;
};

struct LlmOptions {
  std::string device;
  int64_t context = 0;  // 0: the file's context length (capped at 4096)
  int64_t threads = 0;  // CPU threads its kernels run on; 0: every one (NUM_CPU_THREADS)
  int64_t beam = 0;     // BEAM width for the kernels it compiles; 0: the BEAM setting
};

class LlmModel {
 public:
  static std::shared_ptr<LlmModel> load(const std::string& path, const LlmOptions& opts);
  const LlmConfig& config() const { return cfg_; }
  const Metadata& metadata() const { return meta_; }
  const std::string& device() const { return device_; }
  int64_t position() const { return pos_; }
  // Feeds `tokens` at the current position (which advances by their count) and returns the last token's logits
  // (vocab,) float32, realized.
  Tensor eval(const std::vector<int32_t>& tokens);
  void reset() { pos_ = 0; }
  // One token from `logits` (vocab,), computed on the device; `history` feeds the repetition penalty.
  int32_t sample(const Tensor& logits, const Sampling& s, const std::vector<int32_t>& history) const;
  // Feeds `prompt`, then samples up to max_tokens tokens, feeding each back; stops at an end-of-generation token (not
  // passed on), when `on_token` returns false, or when the context is full. Seeds the random numbers with s.seed first.
  // Returns the tokens generated (those passed to on_token).
  std::vector<int32_t> generate(const std::vector<int32_t>& prompt, int64_t max_tokens, const Sampling& s,
                                const std::function<bool(int32_t)>& on_token);
  // the file's tokenizer; TG_ERROR_UNSUPPORTED naming the file when it has none
  const Tokenizer& tokenizer() const;
  bool has_tokenizer() const { return tok_.has_value(); }

 private:
  struct Layer {
    QWeight q, k, v, o, gate, up, down;
    Tensor attn_norm, ffn_norm;
    Tensor k_cache, v_cache;                          // (1, kv heads, context, head dim) float32
    std::optional<Tensor> q_bias, k_bias, v_bias;  // qwen2's
  };
  // `sym`: the position as the bound Variable start_pos (a decode step under the JIT), else a plain number
  Tensor forward(const Tensor& tokens, int64_t start_pos, bool sym);
  Tensor attention(Layer& l, const Tensor& x, int64_t start_pos, bool sym);
  Tensor rope(const Tensor& x, int64_t start_pos, bool sym) const;  // (1, heads, T, head dim)
  Tensor window(const Tensor& t, int64_t axis, int64_t start, int64_t size, bool sym) const;  // t[..., start:start+size, ...]
  Tensor prefix(const Tensor& t, int64_t axis, int64_t size, bool sym) const;  // t[..., :start+size, ...]

  LlmConfig cfg_;
  Metadata meta_;
  std::string device_;
  std::optional<QWeight> embed_, output_;
  std::optional<Tensor> output_norm_, rope_cos_, rope_sin_;  // rope tables (context, rope_dim / 2)
  // adjacent-pair rope's tables (context, rope_dim / 2, 2): a pair's outputs are x0 * a + x1 * b, a = (cos, sin),
  // b = (-sin, cos), so its kernel is plain multiply-adds (the pair stacked from two expressions was a gated load per
  // output: a 512-token prompt's q took 2.0 ms, now 1.2)
  std::optional<Tensor> rope_a_, rope_b_;
  std::vector<Layer> layers_;
  int64_t pos_ = 0;
  int64_t threads_ = 0, beam_ = 0;
  struct Settings;
  UOpRef start_pos_;                  // the Variable start_pos in [0, context - 1]
  std::unique_ptr<TinyJit> decode_;  // one token at a time: one capture serves every position
  std::optional<Tokenizer> tok_;
  std::string file_;
};

}  // namespace tg::nn
