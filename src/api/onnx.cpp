// C API: ONNX models (tg_onnx_*).
#include <algorithm>

#include "api/handles.h"
#include "runtime/device.h"

using namespace tg;

namespace {
using Models = api::Handles<tg_onnx_model>;

// "batch=1,seq=128"
std::vector<std::pair<std::string, int64_t>> parse_dims(const std::string& spec, const char* fn) {
  std::vector<std::pair<std::string, int64_t>> r;
  size_t at = 0;
  while (at <= spec.size() && !spec.empty()) {
    size_t end = std::min(spec.find(',', at), spec.size()), eq = spec.find('=', at);
    TG_ARG(eq < end && eq > at, strformat("%s: opts->dims '%s': each entry is name=size", fn, spec.c_str()));
    std::string name = spec.substr(at, eq - at), num = spec.substr(eq + 1, end - eq - 1);
    TG_ARG(!num.empty() && num.size() <= 18 && std::all_of(num.begin(), num.end(), ::isdigit),
           strformat("%s: opts->dims '%s': '%s' is not a size", fn, spec.c_str(), num.c_str()));
    r.emplace_back(name, std::stoll(num));
    at = end + 1;
  }
  return r;
}
onnx::Options options(const tg_onnx_options* o, const char* fn, std::string* base_dir) {
  onnx::Options r;
  const char* dev = nullptr;
  if (o) {
    TG_ARG(o->struct_size >= offsetof(tg_onnx_options, dims) + sizeof(const char*), strformat("%s: opts->struct_size %zu is too small", fn, o->struct_size));
    dev = o->device;
    if (o->dims) r.dims = parse_dims(o->dims, fn);
    if (base_dir && o->struct_size >= offsetof(tg_onnx_options, base_dir) + sizeof(const char*) && o->base_dir) *base_dir = o->base_dir;
  }
  r.device = canonical_device(dev);
  return r;
}
tg_onnx_model* wrap(std::shared_ptr<onnx::Model> m) {
  auto* h = new tg_onnx_model{std::move(m), {}};
  auto& p = h->m->proto();
  h->producer = p.producer_name + (p.producer_version.empty() ? "" : " " + p.producer_version);
  return Models::add(h);
}
onnx::Model& model(const tg_onnx_model* m, const char* fn) { return *Models::get(m, fn).m; }

// the input or output list
const std::vector<onnx::ValueInfo>& values(const tg_onnx_model* m, bool out, const char* fn) {
  auto& md = model(m, fn);
  return out ? md.outputs() : md.inputs();
}
const char* name_of(const tg_onnx_model* m, size_t i, bool out, const char* fn) {
  return api::make([&]() -> const char* {
    auto& v = values(m, out, fn);
    TG_ARG(i < v.size(), strformat("%s: index %zu is past the %zu %s", fn, i, v.size(), out ? "outputs" : "inputs"));
    return v[i].name.c_str();
  });
}
tg_status info_of(const tg_onnx_model* m, size_t i, bool out, tg_dtype* dtype, int64_t* shape, size_t capacity, int64_t* ndim, const char* fn) {
  return api::call([&] {
    auto& vs = values(m, out, fn);
    TG_ARG(i < vs.size(), strformat("%s: index %zu is past the %zu %s", fn, i, vs.size(), out ? "outputs" : "inputs"));
    auto& v = vs[i];
    TG_CHECK(v.kind == onnx::ValueInfo::Kind::Tensor, TG_ERROR_UNSUPPORTED, strformat("%s: '%s' is not a tensor (a sequence or optional)", fn, v.name.c_str()));
    int64_t n = v.has_shape ? int64_t(v.shape.size()) : -1;
    if (ndim) *ndim = n;
    TG_ARG(shape || capacity == 0, strformat("%s: shape is NULL with capacity %zu", fn, capacity));
    TG_ARG(!shape || n < 0 || capacity >= size_t(n), strformat("%s: shape capacity %zu is below the rank %lld", fn, capacity, (long long)n));
    if (shape)
      for (int64_t d = 0; d < n; d++) shape[d] = v.shape[size_t(d)].value;
    if (dtype) *dtype = tg_dtype(onnx::to_dtype(v.elem_type, strformat("%s: '%s'", fn, v.name.c_str())).scalar);
  });
}
const char* dim_name_of(const tg_onnx_model* m, size_t i, size_t d, bool out, const char* fn) {
  return api::make([&]() -> const char* {
    auto& vs = values(m, out, fn);
    TG_ARG(i < vs.size(), strformat("%s: index %zu is past the %zu %s", fn, i, vs.size(), out ? "outputs" : "inputs"));
    TG_ARG(d < vs[i].shape.size(), strformat("%s: dim %zu is past the rank %zu of '%s'", fn, d, vs[i].shape.size(), vs[i].name.c_str()));
    return vs[i].shape[d].param.c_str();
  });
}
int kind_of(const onnx::ValueInfo& v) {
  using K = onnx::ValueInfo::Kind;
  return v.kind == K::Sequence ? 1 : v.kind == K::Optional ? (v.elem_sequence ? 3 : 2) : v.kind == K::Tensor ? 0 : 4;
}
int kind(const tg_onnx_model* m, size_t i, bool out, const char* fn) {
  int k = -1;
  api::call([&] {
    auto& vs = values(m, out, fn);
    TG_ARG(i < vs.size(), strformat("%s: index %zu is past the %zu %s", fn, i, vs.size(), out ? "outputs" : "inputs"));
    k = kind_of(vs[i]);
    TG_CHECK(k <= 3, TG_ERROR_UNSUPPORTED, strformat("%s: '%s' is a map or sparse tensor", fn, vs[i].name.c_str()));
  });
  return k;
}
// a value's tensors and its count (-1: none) as the C API lays them out
int64_t flatten_value(const onnx::Value& v, std::vector<Tensor>& out) {
  if (v.kind == onnx::Value::Kind::None) return -1;
  if (v.kind == onnx::Value::Kind::Tensor) return out.push_back(*v.t), 1;
  out.insert(out.end(), v.seq.begin(), v.seq.end());
  return int64_t(v.seq.size());
}
// tensors written to a caller's array all or none: new handles, made before any is stored
void write_handles(const std::vector<Tensor>& ts, tg_tensor** out) {
  std::vector<tg_tensor*> made;
  try {
    for (auto& t : ts) made.push_back(api::wrap(t));
  } catch (...) {
    for (auto* h : made) tg_tensor_release(h);
    throw;
  }
  std::copy(made.begin(), made.end(), out);
}
// runs with the inputs in the model's order; outputs written only when all are made
void run(tg_onnx_model* m, std::vector<onnx::Value> in, tg_tensor** outputs, size_t n_outputs, const char* fn) {
  auto& md = model(m, fn);
  TG_ARG(outputs || n_outputs == 0, strformat("%s: outputs is NULL with a nonzero count", fn));
  TG_ARG(n_outputs == md.outputs().size(), strformat("%s: %zu outputs asked, the model has %zu", fn, n_outputs, md.outputs().size()));
  for (auto& v : md.inputs())
    TG_CHECK(v.kind == onnx::ValueInfo::Kind::Tensor, TG_ERROR_UNSUPPORTED,
             strformat("%s: input '%s' is a sequence or optional (tg_onnx_run_values takes those)", fn, v.name.c_str()));
  auto out = md.run(in);
  for (size_t i = 0; i < out.size(); i++)
    TG_CHECK(out[i].kind == onnx::Value::Kind::Tensor, TG_ERROR_UNSUPPORTED,
             strformat("%s: output '%s' is %s, not a tensor (tg_onnx_run_values gives those)", fn, md.outputs()[i].name.c_str(),
                       out[i].kind == onnx::Value::Kind::None ? "empty" : "a sequence"));
  std::vector<Tensor> ts;
  for (auto& v : out) ts.push_back(*v.t);
  write_handles(ts, outputs);
}
}  // namespace

extern "C" {

tg_onnx_model* tg_onnx_load(const char* path, const tg_onnx_options* opts) {
  return api::make([&] {
    TG_ARG(path, "onnx_load: path is NULL");
    return wrap(onnx::Model::load_file(path, options(opts, "onnx_load", nullptr)));
  });
}
tg_onnx_model* tg_onnx_load_buffer(const void* data, size_t nbytes, const tg_onnx_options* opts) {
  return api::make([&] {
    TG_ARG(data || nbytes == 0, "onnx_load_buffer: data is NULL with a nonzero size");
    std::string base;
    auto o = options(opts, "onnx_load_buffer", &base);
    return wrap(onnx::Model::load_bytes(static_cast<const uint8_t*>(data), nbytes, "<memory>", base, o));
  });
}
int64_t tg_onnx_input_count(const tg_onnx_model* m) {
  int64_t n = -1;
  api::call([&] { n = int64_t(model(m, "onnx_input_count").inputs().size()); });
  return n;
}
int64_t tg_onnx_output_count(const tg_onnx_model* m) {
  int64_t n = -1;
  api::call([&] { n = int64_t(model(m, "onnx_output_count").outputs().size()); });
  return n;
}
const char* tg_onnx_input_name(const tg_onnx_model* m, size_t i) { return name_of(m, i, false, "onnx_input_name"); }
const char* tg_onnx_output_name(const tg_onnx_model* m, size_t i) { return name_of(m, i, true, "onnx_output_name"); }
tg_status tg_onnx_input_info(const tg_onnx_model* m, size_t i, tg_dtype* dtype, int64_t* shape, size_t capacity, int64_t* ndim) {
  return info_of(m, i, false, dtype, shape, capacity, ndim, "onnx_input_info");
}
tg_status tg_onnx_output_info(const tg_onnx_model* m, size_t i, tg_dtype* dtype, int64_t* shape, size_t capacity, int64_t* ndim) {
  return info_of(m, i, true, dtype, shape, capacity, ndim, "onnx_output_info");
}
const char* tg_onnx_input_dim_name(const tg_onnx_model* m, size_t i, size_t d) { return dim_name_of(m, i, d, false, "onnx_input_dim_name"); }
const char* tg_onnx_output_dim_name(const tg_onnx_model* m, size_t i, size_t d) { return dim_name_of(m, i, d, true, "onnx_output_dim_name"); }
int64_t tg_onnx_opset(const tg_onnx_model* m) {
  int64_t n = -1;
  api::call([&] { n = model(m, "onnx_opset").opset(); });
  return n;
}
const char* tg_onnx_producer(const tg_onnx_model* m) {
  return api::make([&]() -> const char* { return Models::get(m, "onnx_producer").producer.c_str(); });
}
tg_status tg_onnx_run(tg_onnx_model* m, tg_tensor* const* inputs, size_t n_inputs, tg_tensor** outputs, size_t n_outputs) {
  return api::call([&] {
    TG_ARG(inputs || n_inputs == 0, "onnx_run: inputs is NULL with a nonzero count");
    std::vector<onnx::Value> in;
    for (size_t i = 0; i < n_inputs; i++) in.emplace_back(api::get(inputs[i], "onnx_run", strformat("inputs[%zu]", i).c_str()));
    run(m, std::move(in), outputs, n_outputs, "onnx_run");
  });
}
tg_status tg_onnx_run_named(tg_onnx_model* m, const char* const* names, tg_tensor* const* inputs, size_t n_inputs, tg_tensor** outputs, size_t n_outputs) {
  return api::call([&] {
    TG_ARG((names && inputs) || n_inputs == 0, "onnx_run_named: names/inputs is NULL with a nonzero count");
    auto& ins = model(m, "onnx_run_named").inputs();
    TG_ARG(n_inputs == ins.size(), strformat("onnx_run_named: %zu inputs given, the model takes %zu", n_inputs, ins.size()));
    std::vector<onnx::Value> in(ins.size());
    for (size_t i = 0; i < n_inputs; i++) {
      TG_ARG(names[i], strformat("onnx_run_named: names[%zu] is NULL", i));
      auto it = std::find_if(ins.begin(), ins.end(), [&](auto& v) { return v.name == names[i]; });
      TG_ARG(it != ins.end(), strformat("onnx_run_named: the model has no input '%s'", names[i]));
      auto& slot = in[size_t(it - ins.begin())];
      TG_ARG(slot.kind == onnx::Value::Kind::None, strformat("onnx_run_named: input '%s' is given twice", names[i]));
      slot = api::get(inputs[i], "onnx_run_named", strformat("inputs[%zu]", i).c_str());
    }
    run(m, std::move(in), outputs, n_outputs, "onnx_run_named");
  });
}
tg_tensor* tg_onnx_load_tensor(const char* path, const char* device) {
  return api::make([&] {
    TG_ARG(path, "onnx_load_tensor: path is NULL");
    std::string dev = canonical_device(device);
    auto bytes = onnx::read_file(path);
    auto t = onnx::tensor_from_proto(onnx::parse_tensor(bytes.data(), bytes.size(), path), dev, "");
    return api::wrap(t);
  });
}
int tg_onnx_input_kind(const tg_onnx_model* m, size_t i) { return kind(m, i, false, "onnx_input_kind"); }
int tg_onnx_output_kind(const tg_onnx_model* m, size_t i) { return kind(m, i, true, "onnx_output_kind"); }
tg_status tg_onnx_run_values(tg_onnx_model* m, tg_tensor* const* tensors, size_t n_tensors, const int64_t* in_lengths, size_t n_inputs,
                             tg_tensor** outputs, size_t capacity, int64_t* out_lengths, size_t n_outputs) {
  return api::call([&] {
    const char* fn = "onnx_run_values";
    auto& md = model(m, fn);
    TG_ARG(tensors || n_tensors == 0, "onnx_run_values: tensors is NULL with a nonzero count");
    TG_ARG(in_lengths || n_inputs == 0, "onnx_run_values: in_lengths is NULL with a nonzero count");
    TG_ARG(outputs || capacity == 0, "onnx_run_values: outputs is NULL with a nonzero capacity");
    TG_ARG(out_lengths || n_outputs == 0, "onnx_run_values: out_lengths is NULL with a nonzero count");
    TG_ARG(n_inputs == md.inputs().size(), strformat("onnx_run_values: %zu inputs given, the model takes %zu", n_inputs, md.inputs().size()));
    TG_ARG(n_outputs == md.outputs().size(), strformat("onnx_run_values: %zu outputs asked, the model has %zu", n_outputs, md.outputs().size()));
    std::vector<onnx::Value> in;
    size_t at = 0;
    for (size_t i = 0; i < n_inputs; i++) {
      int k = kind_of(md.inputs()[i]);
      int64_t len = in_lengths[i];
      const char* name = md.inputs()[i].name.c_str();
      TG_ARG(len >= -1 && (len == -1 || uint64_t(len) <= n_tensors - at), strformat("%s: in_lengths[%zu] = %lld does not fit the %zu tensors", fn, i, (long long)len, n_tensors));
      TG_ARG(len != -1 || k >= 2, strformat("%s: input '%s' is not optional, in_lengths[%zu] is -1", fn, name, i));
      TG_ARG(len == -1 || k == 1 || k == 3 || len == 1, strformat("%s: input '%s' is a tensor, in_lengths[%zu] must be 1", fn, name, i));
      std::vector<Tensor> ts;
      for (int64_t j = 0; j < len; j++) ts.push_back(api::get(tensors[at + size_t(j)], fn, strformat("tensors[%zu]", at + size_t(j)).c_str()));
      at += size_t(std::max<int64_t>(len, 0));
      if (len == -1) in.emplace_back();
      else if (k == 1 || k == 3) in.push_back(onnx::Value::sequence(ts, md.inputs()[i].elem_type));
      else in.emplace_back(ts[0]);
    }
    TG_ARG(at == n_tensors, strformat("%s: in_lengths take %zu of the %zu tensors", fn, at, n_tensors));
    auto out = md.run(in);
    std::vector<Tensor> flat;
    std::vector<int64_t> lens;
    for (auto& v : out) lens.push_back(flatten_value(v, flat));
    std::copy(lens.begin(), lens.end(), out_lengths);
    TG_ARG(flat.size() <= capacity, strformat("%s: the outputs are %zu tensors, capacity is %zu", fn, flat.size(), capacity));
    write_handles(flat, outputs);
  });
}
tg_status tg_onnx_load_value(const char* path, const char* device, int kind, tg_tensor** out, size_t capacity, int64_t* n) {
  return api::call([&] {
    TG_ARG(path, "onnx_load_value: path is NULL");
    TG_ARG(n, "onnx_load_value: n is NULL");
    TG_ARG(out || capacity == 0, "onnx_load_value: out is NULL with a nonzero capacity");
    TG_ARG(kind >= 0 && kind <= 3, strformat("onnx_load_value: kind %d (0 tensor, 1 sequence, 2 or 3 optional)", kind));
    using K = onnx::ValueInfo::Kind;
    std::string dev = canonical_device(device);
    auto bytes = onnx::read_file(path);
    auto v = onnx::parse_value_file(bytes.data(), bytes.size(), path, kind == 0 ? K::Tensor : kind == 1 ? K::Sequence : K::Optional, dev);
    std::vector<Tensor> flat;
    *n = flatten_value(v, flat);
    TG_ARG(flat.size() <= capacity, strformat("onnx_load_value: the value holds %zu tensors, capacity is %zu", flat.size(), capacity));
    write_handles(flat, out);
  });
}
tg_onnx_model* tg_onnx_model_retain(tg_onnx_model* m) {
  return api::make([&] { return Models::retain(m, "onnx_model_retain"); });
}
void tg_onnx_model_release(tg_onnx_model* m) { Models::release(m, "onnx_model_release"); }

}  // extern "C"
