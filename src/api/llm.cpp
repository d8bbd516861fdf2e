// C API: language models from GGUF files (tg_llm_*).
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
  }
  r.device = canonical_device(dev);
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
    const Tensor& t = api::get(tokens, "llm_eval", "tokens");
    TG_ARG(t.ndim() == 1 && (t.dtype() == dtypes::int32 || t.dtype() == dtypes::int64),
           "llm_eval: tokens must be a 1-D int32 or int64 tensor, not " + t.dtype().name() + " of rank " + std::to_string(t.ndim()));
    TG_ARG(t.numel() >= 1 && t.numel() <= md.config().context, strformat("llm_eval: %lld tokens (1 to the context, %lld)", (long long)t.numel(),
                                                                          (long long)md.config().context));
    Tensor host = t.cast(dtypes::int32).to("CPU");
    std::vector<int32_t> ids(size_t(t.numel()));
    host.to_data(ids.data(), ids.size() * sizeof(int32_t));
    return api::wrap(md.eval(ids));
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
                     "\"vocab\": %lld, \"context\": %lld, \"rope_dim\": %lld, \"rope_base\": %.17g, \"rope_neox\": %s, \"eps\": %.17g}",
                     c.arch.c_str(), (long long)c.n_layer, (long long)c.dim, (long long)c.n_head, (long long)c.n_kv_head, (long long)c.head_dim,
                     (long long)c.ffn, (long long)c.vocab, (long long)c.context, (long long)c.rope_dim, c.rope_base, c.rope_neox ? "true" : "false", c.eps);
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
tg_llm* tg_llm_retain(tg_llm* m) {
  return api::make([&] { return Llms::retain(m, "llm_retain"); });
}
void tg_llm_release(tg_llm* m) { Llms::release(m, "llm_release"); }

}  // extern "C"
