// C API: nn modules (tg_nn_* constructors, tg_module_*).
#include "api/handles.h"
#include "nn/datasets.h"
#include "nn/modules.h"

using namespace tg;

struct tg_module {
  static constexpr const char* kind = "tg_module";
  nn::ModuleRef m;
};

namespace {
using Modules = api::Handles<tg_module>;
using States = api::Handles<tg_state>;
nn::Module& get_module(const tg_module* m, const char* fn) { return *Modules::get(m, fn).m; }
tg_module* wrap_module(nn::ModuleRef m) { return Modules::add(new tg_module{std::move(m)}); }
std::string dev_of(const char* device) { return canonical_device(device); }  // NULL: the default device (DEV)
// a constructor: builds the module, or NULL with the error set
template <class F>
tg_module* construct(F&& f) {
  return api::make([&] { return wrap_module(f()); });
}
nn::ConvArgs conv_args(int64_t in, int64_t out, tg::Shape kernel, int64_t stride, int64_t padding, int64_t dilation, int64_t groups, int bias) {
  nn::ConvArgs a;
  a.in = in, a.out = out, a.kernel = std::move(kernel), a.stride = {stride}, a.padding = {padding}, a.dilation = {dilation};
  a.groups = groups, a.bias = bias != 0;
  return a;
}
}  // namespace

extern "C" {

TG_API tg_module* tg_nn_linear(int64_t in_features, int64_t out_features, int bias, const char* device) {
  return construct([&] { return nn::linear(in_features, out_features, bias != 0, dev_of(device)); });
}
TG_API tg_module* tg_nn_conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_h, int64_t kernel_w, int64_t stride, int64_t padding,
                               int64_t dilation, int64_t groups, int bias, const char* device) {
  return construct([&] { return nn::conv(conv_args(in_channels, out_channels, {kernel_h, kernel_w}, stride, padding, dilation, groups, bias), dev_of(device)); });
}
TG_API tg_module* tg_nn_conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride, int64_t padding, int64_t dilation,
                               int64_t groups, int bias, const char* device) {
  return construct([&] { return nn::conv(conv_args(in_channels, out_channels, {kernel_size}, stride, padding, dilation, groups, bias), dev_of(device)); });
}
TG_API tg_module* tg_nn_conv_transpose2d(int64_t in_channels, int64_t out_channels, int64_t kernel_h, int64_t kernel_w, int64_t stride,
                                         int64_t padding, int64_t output_padding, int64_t dilation, int64_t groups, int bias, const char* device) {
  return construct([&] {
    nn::ConvArgs a = conv_args(in_channels, out_channels, {kernel_h, kernel_w}, stride, padding, dilation, groups, bias);
    a.output_padding = {output_padding};
    return nn::conv_transpose(a, dev_of(device));
  });
}
TG_API tg_module* tg_nn_conv(int64_t in_channels, int64_t out_channels, const int64_t* kernel_size, size_t nkernel, const int64_t* stride, size_t nstride,
                             const int64_t* padding, size_t npairs, const int64_t* dilation, size_t ndilation, int64_t groups, int bias, int transposed,
                             const int64_t* output_padding, size_t noutput_padding, const char* device) {
  return construct([&] {
    const char* fn = "tg_nn_conv";
    nn::ConvArgs a = conv_args(in_channels, out_channels, api::ints(kernel_size, nkernel, fn, "kernel_size"), 1, 0, 1, groups, bias);
    if (nstride) a.stride = api::ints(stride, nstride, fn, "stride");
    if (ndilation) a.dilation = api::ints(dilation, ndilation, fn, "dilation");
    if (noutput_padding) a.output_padding = api::ints(output_padding, noutput_padding, fn, "output_padding");
    TG_ARG(npairs <= 64, strformat("%s: %zu padding pairs is too many", fn, npairs));
    auto p = api::ints(padding, 2 * npairs, fn, "padding");
    for (size_t i = 0; i < npairs; i++) a.pads.emplace_back(p[2 * i], p[2 * i + 1]);
    return transposed ? nn::conv_transpose(a, dev_of(device)) : nn::conv(a, dev_of(device));
  });
}
TG_API tg_module* tg_nn_conv_transpose1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride, int64_t padding,
                                         int64_t output_padding, int64_t dilation, int64_t groups, int bias, const char* device) {
  return construct([&] {
    nn::ConvArgs a = conv_args(in_channels, out_channels, {kernel_size}, stride, padding, dilation, groups, bias);
    a.output_padding = {output_padding};
    return nn::conv_transpose(a, dev_of(device));
  });
}
TG_API tg_module* tg_nn_batchnorm(int64_t num_features, double eps, double momentum, int affine, int track_running_stats, const char* device) {
  return construct([&] { return nn::batchnorm(num_features, eps, affine != 0, track_running_stats != 0, momentum, dev_of(device)); });
}
TG_API tg_module* tg_nn_layernorm(const int64_t* normalized_shape, size_t ndim, double eps, int elementwise_affine, const char* device) {
  return construct([&] {
    std::vector<int64_t> dims = api::ints(normalized_shape, ndim, "tg_nn_layernorm", "normalized_shape");
    return nn::layernorm(tg::Shape(dims.begin(), dims.end()), eps, elementwise_affine != 0, dev_of(device));
  });
}
TG_API tg_module* tg_nn_rmsnorm(int64_t dim, double eps, int elementwise_affine, const char* device) {
  return construct([&] { return nn::rmsnorm(dim, eps, elementwise_affine != 0, dev_of(device)); });
}
TG_API tg_module* tg_nn_groupnorm(int64_t num_groups, int64_t num_channels, double eps, int affine, const char* device) {
  return construct([&] { return nn::groupnorm(num_groups, num_channels, eps, affine != 0, dev_of(device)); });
}
TG_API tg_module* tg_nn_instancenorm(int64_t num_features, double eps, int affine, const char* device) {
  return construct([&] { return nn::instancenorm(num_features, eps, affine != 0, dev_of(device)); });
}
TG_API tg_module* tg_nn_embedding(int64_t vocab_size, int64_t embed_size, const char* device) {
  return construct([&] { return nn::embedding(vocab_size, embed_size, dev_of(device)); });
}
TG_API tg_module* tg_nn_lstm_cell(int64_t input_size, int64_t hidden_size, int bias, const char* device) {
  return construct([&] { return nn::lstm_cell(input_size, hidden_size, bias != 0, dev_of(device)); });
}
TG_API tg_module* tg_nn_function(const char* name) {
  return construct([&] {
    TG_ARG(name, "tg_nn_function: name is NULL");
    return nn::function(name);
  });
}
TG_API tg_module* tg_nn_sequential(tg_module* const* layers, size_t n) {
  return construct([&] {
    TG_ARG(layers || n == 0, "tg_nn_sequential: layers is NULL");
    std::vector<nn::ModuleRef> ls;
    for (size_t i = 0; i < n; i++) ls.push_back(Modules::get(layers[i], "tg_nn_sequential", strformat("layers[%zu]", i).c_str()).m);
    return nn::sequential(std::move(ls));
  });
}

TG_API tg_tensor* tg_module_call(tg_module* m, tg_tensor* x) {
  return api::make([&] {
    nn::Module& mod = get_module(m, "tg_module_call");
    return api::wrap(mod.forward(api::get(x, "tg_module_call", "x")));
  });
}
TG_API tg_status tg_lstm_cell_step(tg_module* m, tg_tensor* x, tg_tensor* h, tg_tensor* c, tg_tensor** h_out, tg_tensor** c_out) {
  return api::call([&] {
    auto* cell = dynamic_cast<nn::LSTMCell*>(&get_module(m, "tg_lstm_cell_step"));
    TG_ARG(cell, "tg_lstm_cell_step: module is a " + m->m->kind() + ", not an LSTMCell");
    TG_ARG(h_out && c_out, "tg_lstm_cell_step: h_out and c_out must not be NULL");
    TG_ARG((h == nullptr) == (c == nullptr), "tg_lstm_cell_step: give both h and c, or neither");
    std::optional<std::pair<Tensor, Tensor>> hc;
    if (h) hc.emplace(api::get(h, "tg_lstm_cell_step", "h"), api::get(c, "tg_lstm_cell_step", "c"));
    auto [nh, nc] = cell->step(api::get(x, "tg_lstm_cell_step", "x"), hc);
    *h_out = api::wrap(nh), *c_out = api::wrap(nc);
  });
}
TG_API const char* tg_module_kind(const tg_module* m) {
  return api::make([&]() -> const char* {
    get_module(m, "tg_module_kind");
    static thread_local char s[64];  // no destructor to register (api/core.cpp's last_msg)
    std::snprintf(s, sizeof s, "%s", m->m->kind().c_str());
    return static_cast<const char*>(s);
  });
}
TG_API tg_tensor* tg_module_get(tg_module* m, const char* name) {
  return api::make([&] {
    nn::Module& mod = get_module(m, "tg_module_get");
    TG_ARG(name, "tg_module_get: name is NULL");
    for (auto& [k, t] : nn::get_state_dict(mod))
      if (k == name) return api::wrap(t);
    fail(TG_ERROR_INVALID_ARGUMENT, std::string("tg_module_get: the ") + mod.kind() + " has no tensor named '" + name + "'");
  });
}
TG_API tg_status tg_module_set(tg_module* m, const char* name, tg_tensor* t) {
  return api::call([&] {
    nn::Module& mod = get_module(m, "tg_module_set");
    TG_ARG(name, "tg_module_set: name is NULL");
    std::optional<Tensor> v;
    if (t) v = api::get(t, "tg_module_set", "t");
    mod.set(name, v, "tg_module_set");
  });
}
TG_API tg_status tg_module_get_option(const tg_module* m, const char* name, double* value) {
  return api::call([&] {
    nn::Module& mod = get_module(m, "tg_module_get_option");
    TG_ARG(name && value, "tg_module_get_option: name or value is NULL");
    *value = mod.option(name, "tg_module_get_option");
  });
}
TG_API tg_status tg_module_set_option(tg_module* m, const char* name, double value) {
  return api::call([&] {
    nn::Module& mod = get_module(m, "tg_module_set_option");
    TG_ARG(name, "tg_module_set_option: name is NULL");
    mod.set_option(name, value, "tg_module_set_option");
  });
}
TG_API tg_state* tg_module_state(tg_module* m) {
  return api::make([&] { return States::add(new tg_state{nn::get_state_dict(get_module(m, "tg_module_state")), {}}); });
}
TG_API size_t tg_module_parameter_count(const tg_module* m) {
  size_t n = 0;
  api::call([&] { n = nn::get_parameters(get_module(m, "tg_module_parameter_count")).size(); });
  return n;
}
TG_API tg_status tg_module_parameters(tg_module* m, tg_tensor** out, size_t n) {
  return api::call([&] {
    std::vector<Tensor> ps = nn::get_parameters(get_module(m, "tg_module_parameters"));
    TG_ARG(out || n == 0, "tg_module_parameters: out is NULL");
    TG_ARG(n == ps.size(), "tg_module_parameters: out has room for " + std::to_string(n) + " tensors, the module has " + std::to_string(ps.size()));
    for (size_t i = 0; i < n; i++) out[i] = api::wrap(ps[i]);
  });
}
TG_API tg_status tg_module_load_state(tg_module* m, const tg_state* state, int strict) {
  return api::call([&] { nn::load_state_dict(get_module(m, "tg_module_load_state"), States::get(state, "tg_module_load_state").sd, strict != 0); });
}
TG_API tg_module* tg_module_retain(tg_module* m) {
  return api::make([&] { return Modules::retain(m, "tg_module_retain"); });
}
TG_API void tg_module_release(tg_module* m) { Modules::release(m, "tg_module_release"); }

TG_API tg_tensor* tg_tensor_from_idx(const char* path, const char* device) {
  return api::make([&] {
    TG_ARG(path, "tg_tensor_from_idx: path is NULL");
    return api::wrap(nn::load_idx(path, dev_of(device)));
  });
}
TG_API tg_status tg_dataset_mnist(const char* dir, const char* device, tg_tensor** x_train, tg_tensor** y_train, tg_tensor** x_test, tg_tensor** y_test) {
  return api::call([&] {
    TG_ARG(x_train && y_train && x_test && y_test, "tg_dataset_mnist: an output pointer is NULL");
    auto d = nn::mnist(dir ? dir : nn::kFashionMnistDir, dev_of(device));
    *x_train = api::wrap(d[0]), *y_train = api::wrap(d[1]), *x_test = api::wrap(d[2]), *y_test = api::wrap(d[3]);
  });
}

}  // extern "C"
