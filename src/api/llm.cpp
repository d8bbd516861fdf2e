// C API: language models from GGUF files (tg_llm_*).
#include <algorithm>
#include <cstddef>

#include "api/handles.h"
#include "runtime/device.h"

using namespace tg;

namespace {
using Llms = api::Handles<tg_llm>;
nn::LlmModel& model(const tg_llm* m, const char* fn) { return *Llms::get(m, fn).m; }

nn::LlmOptions options(const tg_llm_options* o) {
  nn::LlmOptions r;
  const char* dev = nullptr;
  if (o) {
    TG_ARG(o->struct_size >= offsetof(tg_llm_options, context) + sizeof(int64_t), strformat("llm_load: opts->struct_size %zu is too small", o->struct_size));
    TG_ARG(o->context >= 0 && o->context <= (int64_t(1) << 24), strformat("llm_load: opts->context %lld is not in [0, 2^24]", (long long)o->context));
    dev = o->device, r.context = o->context;
    // fields a caller's older, shorter struct lacks keep their defaults
    if (o->struct_size >= offsetof(tg_llm_options, threads) + sizeof(int64_t)) {
      TG_ARG(o->threads >= 0 && o->threads <= 1024, strformat("llm_load: opts->threads %lld is not in [0, 1024]", (long long)o->threads));
      r.threads = o->threads;
    }
    if (o->struct_size >= offsetof(tg_llm_options, beam) + sizeof(int64_t)) {
      TG_ARG(o->beam >= 0 && o->beam <= 64, strformat("llm_load: opts->beam %lld is not in [0, 64]", (long long)o->beam));
      r.beam = o->beam;
    }
  }
  r.device = canonical_device(dev);
  return r;
}
std::vector<int32_t> ids_of(const tg_tensor* h, const char* fn, const char* what, int64_t vocab) {
  const Tensor& t = api::get(h, fn, what);
  TG_ARG(t.ndim() == 1 && (t.dtype() == dtypes::int32 || t.dtype() == dtypes::int64),
         std::string(fn) + ": " + what + " must be a 1-D int32 or int64 tensor, not " + t.dtype().name() + " of rank " + std::to_string(t.ndim()));
  TG_ARG(t.numel() <= (int64_t(1) << 26), std::string(fn) + ": " + what + " has too many tokens");
  // copied out in the tensor's own dtype: a cast would be a kernel at every decode step
  std::vector<int64_t> v(size_t(t.numel()));
  if (!v.empty() && t.dtype() == dtypes::int64) Tensor(t).to("CPU").to_data(v.data(), v.size() * sizeof(int64_t));
  if (!v.empty() && t.dtype() == dtypes::int32) {
    std::vector<int32_t> w(v.size());
    Tensor(t).to("CPU").to_data(w.data(), w.size() * sizeof(int32_t));
    std::copy(w.begin(), w.end(), v.begin());
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < v.size(); i++) {
    TG_ARG(v[i] >= 0 && v[i] < vocab, strformat("%s: %s[%zu] = %lld is not in the vocabulary [0, %lld)", fn, what, i, (long long)v[i], (long long)vocab));
    ids.push_back(int32_t(v[i]));
  }
  return ids;
}
nn::Sampling sampling(const tg_llm_sampling* s, const char* fn) {
  nn::Sampling r;
  if (!s) return r;
  TG_ARG(s->struct_size >= offsetof(tg_llm_sampling, seed) + sizeof(uint64_t), strformat("%s: s->struct_size %zu is too small", fn, s->struct_size));
  r.temperature = s->temperature, r.top_k = s->top_k, r.top_p = s->top_p, r.repeat_penalty = s->repeat_penalty, r.repeat_last_n = s->repeat_last_n;
  r.seed = s->seed;
  return r;
}
}  // namespace

extern "C" {

tg_llm* tg_llm_load(const char* path, const tg_llm_options* opts) {
  return api::make([&] {
    TG_ARG(path, "llm_load: path is NULL");
    return Llms::add(new tg_llm{nn::LlmModel::load(path, options(opts))});
  });
}
tg_tensor* tg_llm_eval(tg_llm* m, const tg_tensor* tokens) {
  return api::make([&] {
    nn::LlmModel& md = model(m, "llm_eval");
    int64_t n = api::get(tokens, "llm_eval", "tokens").numel();
    TG_ARG(n >= 1 && n <= md.config().context, strformat("llm_eval: %lld tokens (1 to the context, %lld)", (long long)n, (long long)md.config().context));
    // checked as int64 before narrowing: a huge id is an error, not another token
    return api::wrap(md.eval(ids_of(tokens, "llm_eval", "tokens", md.config().vocab)));
  });
}
tg_status tg_llm_reset(tg_llm* m) {
  return api::call([&] { model(m, "llm_reset").reset(); });
}
int64_t tg_llm_position(const tg_llm* m) {
  int64_t r = -1;
  return api::call([&] { r = model(m, "llm_position").position(); }) == TG_OK ? r : -1;
}
int64_t tg_llm_context(const tg_llm* m) {
  int64_t r = -1;
  return api::call([&] { r = model(m, "llm_context").config().context; }) == TG_OK ? r : -1;
}
int64_t tg_llm_vocab_size(const tg_llm* m) {
  int64_t r = -1;
  return api::call([&] { r = model(m, "llm_vocab_size").config().vocab; }) == TG_OK ? r : -1;
}
int64_t tg_llm_config(const tg_llm* m, char* buf, size_t size) {
  return api::text_result(buf, size, "llm_config", [&] {
    const nn::LlmConfig& c = model(m, "llm_config").config();
    return strformat("{\"arch\": \"%s\", \"n_layer\": %lld, \"dim\": %lld, \"n_head\": %lld, \"n_kv_head\": %lld, \"head_dim\": %lld, \"ffn\": %lld, "
                     "\"vocab\": %lld, \"context\": %lld, \"rope_dim\": %lld, \"rope_base\": %.17g, \"rope_neox\": %s, \"eps\": %.17g, "
                     "\"prompt_products\": \"%s\"}",
                     c.arch.c_str(), (long long)c.n_layer, (long long)c.dim, (long long)c.n_head, (long long)c.n_kv_head, (long long)c.head_dim,
                     (long long)c.ffn, (long long)c.vocab, (long long)c.context, (long long)c.rope_dim, c.rope_base, c.rope_neox ? "true" : "false",
                     c.eps, c.prompt_products.c_str());
  });
}
int64_t tg_llm_metadata(const tg_llm* m, const char* key, char* buf, size_t size) {
  return api::text_result(buf, size, "llm_metadata", [&] {
    const nn::LlmModel& md = model(m, "llm_metadata");
    TG_ARG(key, "llm_metadata: key is NULL");
    for (auto& e : md.metadata())
      if (e.key == key) return e.json;
    fail(TG_ERROR_INVALID_ARGUMENT, std::string("llm_metadata: the file has no key '") + std::string(key).substr(0, 80) + "'");
  });
}
tg_tensor* tg_llm_tokenize(const tg_llm* m, const char* text, int add_special, int parse_special) {
  return api::make([&] {
    const nn::LlmModel& md = model(m, "llm_tokenize");
    TG_ARG(text, "llm_tokenize: text is NULL");
    std::vector<int32_t> ids = md.tokenizer().encode(text, add_special != 0, parse_special != 0);
    return api::wrap(Tensor::from_data(ids.data(), ids.size() * sizeof(int32_t), dtypes::int32, {int64_t(ids.size())}, md.device()));
  });
}
int64_t tg_llm_detokenize(const tg_llm* m, const tg_tensor* tokens, int remove_special, int unparse_special, char* buf, size_t size) {
  return api::text_result(buf, size, "llm_detokenize", [&] {
    const nn::LlmModel& md = model(m, "llm_detokenize");
    const nn::Tokenizer& tk = md.tokenizer();
    return tk.decode(ids_of(tokens, "llm_detokenize", "tokens", tk.n_vocab()), remove_special != 0, unparse_special != 0);
  });
}
int64_t tg_llm_token_piece(const tg_llm* m, int64_t token, char* buf, size_t size) {
  return api::text_result(buf, size, "llm_token_piece", [&] {
    const nn::Tokenizer& tk = model(m, "llm_token_piece").tokenizer();
    TG_ARG(token >= 0 && token < tk.n_vocab(), strformat("llm_token_piece: token %lld is not in the vocabulary", (long long)token));
    return tk.decode(int32_t(token));
  });
}
int64_t tg_llm_bos(const tg_llm* m) {
  int64_t r = -1;
  return api::call([&] { r = model(m, "llm_bos").tokenizer().bos(); }) == TG_OK ? r : -1;
}
int64_t tg_llm_eos(const tg_llm* m) {
  int64_t r = -1;
  return api::call([&] { r = model(m, "llm_eos").tokenizer().eos(); }) == TG_OK ? r : -1;
}
int tg_llm_is_eog(const tg_llm* m, int64_t token) {
  int r = -1;
  return api::call([&] {
           const nn::Tokenizer& tk = model(m, "llm_is_eog").tokenizer();
           TG_ARG(token >= 0 && token < tk.n_vocab(), strformat("llm_is_eog: token %lld is not in the vocabulary", (long long)token));
           r = tk.is_eog(int32_t(token)) ? 1 : 0;
         }) == TG_OK
             ? r
             : -1;
}
tg_status tg_llm_sampling_default(tg_llm_sampling* out) {
  return api::call([&] {
    TG_ARG(out, "llm_sampling_default: out is NULL");
    TG_ARG(out->struct_size >= offsetof(tg_llm_sampling, seed) + sizeof(uint64_t), strformat("llm_sampling_default: out->struct_size %zu is too small",
                                                                                          out->struct_size));
    nn::Sampling d;
    out->temperature = d.temperature, out->top_k = d.top_k, out->top_p = d.top_p, out->repeat_penalty = d.repeat_penalty;
    out->repeat_last_n = d.repeat_last_n, out->seed = d.seed;
  });
}
int64_t tg_llm_sample(tg_llm* m, const tg_tensor* logits, const tg_tensor* history, const tg_llm_sampling* s) {
  int64_t r = -1;
  return api::call([&] {
           nn::LlmModel& md = model(m, "llm_sample");
           std::vector<int32_t> hist = history ? ids_of(history, "llm_sample", "history", md.config().vocab) : std::vector<int32_t>{};
           r = md.sample(api::get(logits, "llm_sample", "logits"), sampling(s, "llm_sample"), hist);
         }) == TG_OK
             ? r
             : -1;
}
int64_t tg_llm_generate(tg_llm* m, const tg_tensor* prompt, int64_t max_tokens, const tg_llm_sampling* s, tg_llm_token_fn fn, void* userdata) {
  int64_t r = -1;
  return api::call([&] {
           nn::LlmModel& md = model(m, "llm_generate");
           std::vector<int32_t> ids = ids_of(prompt, "llm_generate", "prompt", md.config().vocab);
           TG_ARG(!ids.empty(), "llm_generate: the prompt is empty");
           nn::Sampling sm = sampling(s, "llm_generate");
           std::string piece;
           auto out = md.generate(ids, max_tokens, sm, [&](int32_t tok) {
             if (!fn) return true;
             piece = md.has_tokenizer() ? md.tokenizer().decode(tok) : std::string();
             return fn(userdata, tok, piece.c_str()) == 0;
           });
           r = int64_t(out.size());
         }) == TG_OK
             ? r
             : -1;
}
tg_llm* tg_llm_retain(tg_llm* m) {
  return api::make([&] { return Llms::retain(m, "llm_retain"); });
}
void tg_llm_release(tg_llm* m) { Llms::release(m, "llm_release"); }

}  // extern "C"
