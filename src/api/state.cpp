// C API: nn.state (tg_state_*): state dicts, safetensors and GGUF files.
#include <algorithm>
#include <cstring>

#include "api/handles.h"
#include "runtime/device.h"

using namespace tg;

namespace {
using States = api::Handles<tg_state>;
tg_state* new_state(nn::StateDict sd) { return States::add(new tg_state{std::move(sd), {}}); }
std::string str_arg(const char* s, const char* fn, const char* arg) {
  TG_ARG(s, strformat("%s: %s is NULL", fn, arg));
  return s;
}
// the entry named `name`, or end()
template <class V>
auto find(V& v, const std::string& name) {
  return std::find_if(v.begin(), v.end(), [&](auto& e) { return e.first == name; });
}
const Tensor& entry(const tg_state* s, const char* name, const char* fn) {
  auto& sd = States::get(s, fn).sd;
  auto it = find(sd, str_arg(name, fn, "name"));
  TG_ARG(it != sd.end(), strformat("%s: no tensor named '%s'", fn, name));
  return it->second;
}
tg_state* from_loaded(nn::Loaded l) {
  tg_state* s = new_state(std::move(l.tensors));
  s->meta = std::move(l.metadata);
  return s;
}
// metadata entry i's field, or NULL with the error set
const char* meta_field(const tg_state* s, size_t i, std::string nn::MetaEntry::*field, const char* fn) {
  return api::make([&]() -> const char* {
    auto& m = States::get(s, fn).meta;
    TG_ARG(i < m.size(), strformat("%s: index %zu is past the %zu metadata entries", fn, i, m.size()));
    return (m[i].*field).c_str();
  });
}
}  // namespace

extern "C" {

tg_state* tg_state_load(const char* path, const char* device) {
  return api::make([&] { return from_loaded(nn::load(str_arg(path, "state_load", "path"), canonical_device(device))); });
}
tg_state* tg_state_load_memory(const void* data, size_t nbytes, const char* name, const char* device) {
  return api::make([&] {
    TG_ARG(data || nbytes == 0, "state_load_memory: data is NULL with a nonzero size");
    nn::Bytes b{static_cast<const uint8_t*>(data), nbytes, name ? name : "<memory>"};
    std::string dev = canonical_device(device);
    return from_loaded(nbytes >= 4 && !std::memcmp(data, "GGUF", 4) ? nn::gguf_load(b, dev) : nn::safe_load(b, dev));
  });
}
tg_state* tg_state_create(void) {
  return api::make([&] { return new_state({}); });
}
int64_t tg_state_count(const tg_state* s) {
  int64_t n = -1;
  api::call([&] { n = int64_t(States::get(s, "state_count").sd.size()); });
  return n;
}
const char* tg_state_name(const tg_state* s, size_t i) {
  return api::make([&]() -> const char* {
    auto& sd = States::get(s, "state_name").sd;
    TG_ARG(i < sd.size(), strformat("state_name: index %zu is past the %zu entries", i, sd.size()));
    return sd[i].first.c_str();
  });
}
tg_status tg_state_info(const tg_state* s, const char* name, tg_dtype* dtype, int64_t* shape, size_t capacity, int64_t* ndim) {
  return api::call([&] {
    const Tensor& t = entry(s, name, "state_info");
    const Shape& sh = t.shape();
    if (ndim) *ndim = int64_t(sh.size());
    if (dtype) *dtype = tg_dtype(int(t.dtype().scalar));
    TG_ARG(shape || capacity == 0, "state_info: shape is NULL with a nonzero capacity");
    if (!shape) return;
    TG_ARG(capacity >= sh.size(), strformat("state_info: capacity %zu is less than the %zu dims of '%s'", capacity, sh.size(), name));
    std::copy(sh.begin(), sh.end(), shape);
  });
}
tg_tensor* tg_state_get(const tg_state* s, const char* name) {
  return api::make([&] { return api::wrap(entry(s, name, "state_get")); });
}
tg_status tg_state_set(tg_state* s, const char* name, tg_tensor* tensor) {
  return api::call([&] {
    auto& sd = States::get(s, "state_set").sd;
    std::string n = str_arg(name, "state_set", "name");
    TG_ARG(!n.empty(), "state_set: name is empty");
    const Tensor& t = api::get(tensor, "state_set");
    if (auto it = find(sd, n); it != sd.end()) it->second = t;
    else sd.emplace_back(std::move(n), t);
  });
}
tg_status tg_state_save(const tg_state* s, const char* path) {
  return api::call([&] {
    tg_state& st = States::get(s, "state_save");
    nn::safe_save(st.sd, str_arg(path, "state_save", "path"), st.meta);
  });
}
int64_t tg_state_metadata_count(const tg_state* s) {
  int64_t n = -1;
  api::call([&] { n = int64_t(States::get(s, "state_metadata_count").meta.size()); });
  return n;
}
const char* tg_state_metadata_key(const tg_state* s, size_t i) { return meta_field(s, i, &nn::MetaEntry::key, "state_metadata_key"); }
const char* tg_state_metadata_value(const tg_state* s, size_t i) { return meta_field(s, i, &nn::MetaEntry::value, "state_metadata_value"); }
const char* tg_state_metadata_json(const tg_state* s, size_t i) { return meta_field(s, i, &nn::MetaEntry::json, "state_metadata_json"); }
tg_status tg_state_metadata_set(tg_state* s, const char* key, const char* value) {
  return api::call([&] {
    auto& m = States::get(s, "state_metadata_set").meta;
    nn::MetaEntry e{str_arg(key, "state_metadata_set", "key"), str_arg(value, "state_metadata_set", "value"), ""};
    e.json = nn::json_quote(e.value, "state_metadata_set: value");
    nn::json_quote(e.key, "state_metadata_set: key");
    auto it = std::find_if(m.begin(), m.end(), [&](auto& x) { return x.key == e.key; });
    if (it != m.end()) *it = std::move(e);
    else m.push_back(std::move(e));
  });
}
tg_state* tg_state_retain(tg_state* s) {
  return api::make([&] { return States::retain(s, "tg_state_retain"); });
}
void tg_state_release(tg_state* s) { States::release(s, "tg_state_release"); }

}  // extern "C"
