// libFuzzer target: the language-model builder (nn::LlmModel::load) on arbitrary bytes, read as a user's file: the
// hyperparameters checked against the tensors' shapes, the tokenizer built from tokenizer.ggml.*. A model that loads
// tokenizes and detokenizes a few fixed texts and looks up token pieces; a tiny one also runs a prompt of two tokens and
// a decode step (the JIT's path, start_pos a Variable), so the kernels run on fuzzed weights. The load may fail only
// with a tg::Error; once loaded, the tokenizer may not fail at all (every id it gives is in the vocab, every id it is
// given was checked), and eval only with a tg::Error.
#include <cstdlib>
#include <vector>

#include "fuzz_file.h"
#include "nn/llm.h"

namespace {

// ASCII with contractions and digits, CJK and emoji (one with a skin tone and a ZWJ), special tokens' texts and halves
// of them, invalid UTF-8, and whitespace runs
const char* const kTexts[] = {"Hello world, it's 42!", "日本語のテキスト 😀👍🏽👨‍👩‍👧", "<s>a</s><|im_end|><tool>x<|endoftext|><0x41>",
                              "<|im_e \xff\xfe\xc3 ok\x80", " \n\n\t  x  ", ""};

// weight elements under which a loaded model runs its evals: its kernels are small, and the CPU compiles them quickly
constexpr int64_t kTinyWeights = 1 << 14;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::shared_ptr<tg::nn::LlmModel> m;
  try {
    m = tg::nn::LlmModel::load(fuzz_file(data, size), tg::nn::LlmOptions{"CPU", 8});
  } catch (const tg::Error&) {
    return 0;
  }
  if (m->has_tokenizer()) {
    const tg::nn::Tokenizer& t = m->tokenizer();
    int32_t n = t.n_vocab();
    for (const char* text : kTexts)
      for (bool special : {false, true}) {
        std::vector<int32_t> ids = t.encode(text, special, special);
        for (int32_t id : ids)
          if (id < 0 || id >= n) std::abort();  // encode gave an id outside the vocab
        t.decode(ids, special, special);
      }
    for (int32_t id : {0, 1, n / 2, n - 1, t.bos(), t.eos()})
      if (id >= 0 && id < n) t.decode(id, true), t.decode(id, false), t.text(id), t.attr(id), t.is_eog(id);
  }
  const tg::nn::LlmConfig& c = m->config();
  int64_t qdim = c.n_head * c.head_dim, kvdim = c.n_kv_head * c.head_dim;
  int64_t weights = 2 * c.vocab * c.dim + c.n_layer * (2 * (qdim + kvdim) * c.dim + 3 * c.ffn * c.dim);
  if (weights > kTinyWeights || c.n_layer > 2) return 0;
  try {
    std::vector<float> out(size_t(c.vocab));
    for (const std::vector<int32_t>& toks : {std::vector<int32_t>{0, int32_t(c.vocab - 1)}, std::vector<int32_t>{int32_t(c.vocab / 2)}}) {
      if (m->position() + int64_t(toks.size()) > c.context) continue;
      m->eval(toks).to_data(out.data(), out.size() * sizeof(float));
    }
  } catch (const tg::Error&) {
  }
  return 0;
}
