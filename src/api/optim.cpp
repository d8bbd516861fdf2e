// C API: optimizers (tg_optim_*, tg_optimizer_*) over tg::nn's LARS and LAMB rules.
#include <cmath>
#include <cstring>
#include <functional>

#include "api/handles.h"
#include "nn/optim.h"

using namespace tg;

struct tg_optimizer {
  static constexpr const char* kind = "tg_optimizer";
  std::unique_ptr<nn::Optimizer> opt;
};

namespace {
using Optimizers = api::Handles<tg_optimizer>;
nn::Optimizer& get_opt(const tg_optimizer* o, const char* fn) { return *Optimizers::get(o, fn).opt; }

// a bit per kind, in tg_optimizer_kind order
constexpr unsigned SGD = 1, ADAM = 2, ADAMW = 4, LARS = 8, LAMB = 16, MUON = 32, MOMENTUM = SGD | LARS | MUON, BETAS = ADAM | ADAMW | LAMB;
const char* const kNames[] = {"SGD", "Adam", "AdamW", "LARS", "LAMB", "Muon"};

// The fields past lr, with the kinds that read them; for the others the field must keep the kind's default.
struct Field {
  const char* name;
  unsigned reads;
  double (*get)(const tg_optimizer_options&);
};
const Field kFields[] = {
    {"momentum", MOMENTUM, [](const tg_optimizer_options& o) { return o.momentum; }},
    {"weight_decay", SGD | ADAMW | LARS | LAMB | MUON, [](const tg_optimizer_options& o) { return o.weight_decay; }},
    {"nesterov", MOMENTUM, [](const tg_optimizer_options& o) { return double(o.nesterov != 0); }},
    {"classic", SGD | LARS, [](const tg_optimizer_options& o) { return double(o.classic != 0); }},
    {"pre_wd", LARS, [](const tg_optimizer_options& o) { return double(o.pre_wd != 0); }},
    {"tcoef", LARS, [](const tg_optimizer_options& o) { return o.tcoef; }},
    {"b1", BETAS, [](const tg_optimizer_options& o) { return o.b1; }},
    {"b2", BETAS, [](const tg_optimizer_options& o) { return o.b2; }},
    {"eps", BETAS, [](const tg_optimizer_options& o) { return o.eps; }},
    {"adam", LAMB, [](const tg_optimizer_options& o) { return double(o.adam != 0); }},
    {"ns_steps", LARS | MUON, [](const tg_optimizer_options& o) { return double(o.ns_steps); }},
    {"n_ns_coefficients", LARS | MUON, [](const tg_optimizer_options& o) { return double(o.n_ns_coefficients); }},
};

bool is_lamb(tg_optimizer_kind kind) { return (1u << kind) & BETAS; }

// tinygrad's defaults, taken from tg::nn's configs so they are written once
tg_optimizer_options defaults(tg_optimizer_kind kind) {
  tg_optimizer_options o{};
  o.struct_size = sizeof o;
  if (is_lamb(kind)) {
    nn::LAMBConfig c = kind == TG_OPTIM_ADAM ? nn::adam_config() : kind == TG_OPTIM_ADAMW ? nn::adamw_config() : nn::LAMBConfig{};
    o.lr = c.lr, o.b1 = c.b1, o.b2 = c.b2, o.eps = c.eps, o.weight_decay = c.weight_decay, o.adam = c.adam;
  } else {
    nn::LARSConfig c = kind == TG_OPTIM_SGD ? nn::sgd_config() : kind == TG_OPTIM_MUON ? nn::muon_config() : nn::LARSConfig{};
    o.lr = c.lr, o.momentum = c.momentum, o.weight_decay = c.weight_decay, o.nesterov = c.nesterov, o.classic = c.classic;
    o.pre_wd = c.pre_wd, o.tcoef = c.tcoef, o.ns_steps = c.ns_steps, o.n_ns_coefficients = c.ns_coefficients.size();
    std::copy(c.ns_coefficients.begin(), c.ns_coefficients.end(), o.ns_coefficients);
  }
  return o;
}

tg_optimizer* create(tg_optimizer_kind kind, tg_tensor* const* params, size_t n_params, const tg_optimizer_options* opts, const char* fn) {
  TG_ARG(params || n_params == 0, std::string(fn) + ": params is NULL with a nonzero count");
  TG_ARG(n_params <= (size_t(1) << 20), strformat("%s: %zu params is too many", fn, n_params));
  std::vector<Tensor> ps;
  for (size_t i = 0; i < n_params; i++) ps.push_back(api::get(params[i], fn, strformat("params[%zu]", i).c_str()));
  tg_optimizer_options o = defaults(kind), dflt = o;
  if (opts) {
    TG_ARG(opts->struct_size >= offsetof(tg_optimizer_options, lr) + sizeof(double),
           strformat("%s: opts->struct_size %zu is too small (set it to sizeof(tg_optimizer_options))", fn, opts->struct_size));
    TG_ARG(opts->struct_size <= sizeof o, strformat("%s: opts->struct_size %zu is larger than this library's tg_optimizer_options (%zu bytes)", fn,
                                                    opts->struct_size, sizeof o));
    std::memcpy(&o, opts, opts->struct_size);  // an older caller's prefix; the defaults for the rest
  }
  for (const Field& f : kFields) {
    double got = f.get(o), want = f.get(dflt);
    TG_ARG((f.reads >> kind & 1) || got == want || (std::isnan(got) && std::isnan(want)),
           strformat("%s: opts->%s is %g, but %s does not take it (it must stay %g, its value in tg_optimizer_options_default(%s))", fn, f.name,
                     got, kNames[kind], want, kNames[kind]));
  }
  TG_ARG(o.n_ns_coefficients <= TG_OPTIM_MAX_NS_COEFFICIENTS,
         strformat("%s: opts->n_ns_coefficients is %zu, at most %d", fn, o.n_ns_coefficients, TG_OPTIM_MAX_NS_COEFFICIENTS));
  std::unique_ptr<nn::Optimizer> opt =
      is_lamb(kind) ? nn::lamb(std::move(ps), nn::LAMBConfig{kNames[kind], o.lr, o.b1, o.b2, o.eps, o.weight_decay, o.adam != 0})
                    : nn::lars(std::move(ps), nn::LARSConfig{kNames[kind], o.lr, o.momentum, o.weight_decay, o.ns_steps,
                                                             std::vector<double>(o.ns_coefficients, o.ns_coefficients + o.n_ns_coefficients),
                                                             o.nesterov != 0, o.classic != 0, o.pre_wd != 0, o.tcoef});
  return Optimizers::add(new tg_optimizer{std::move(opt)});
}

// An array result: out NULL asks for the count only, a short capacity is an error. Returns the count, or -1.
int64_t write_tensors(const std::function<std::vector<Tensor>()>& make, size_t count, tg_tensor** out, size_t capacity, const char* fn) {
  TG_ARG(!out || capacity >= count, strformat("%s: capacity %zu is below the %zu tensors to write (nothing was done)", fn, capacity, count));
  if (out) {
    std::vector<Tensor> ts = make();
    for (size_t i = 0; i < ts.size(); i++) out[i] = api::wrap(ts[i]);
  }
  return int64_t(count);
}
}  // namespace

extern "C" {

tg_status tg_optimizer_options_default(tg_optimizer_kind kind, tg_optimizer_options* out) {
  return api::call([&] {
    TG_ARG(unsigned(kind) <= TG_OPTIM_MUON, strformat("optimizer_options_default: kind %d is not a tg_optimizer_kind", int(kind)));
    TG_ARG(out, "optimizer_options_default: out is NULL");
    TG_ARG(out->struct_size >= offsetof(tg_optimizer_options, lr) + sizeof(double), "optimizer_options_default: out->struct_size is not set");
    tg_optimizer_options o = defaults(kind);
    size_t n = std::min(out->struct_size, sizeof o);  // a caller built against an older, smaller struct gets its prefix
    std::memcpy(out, &o, n);
    out->struct_size = n;
  });
}

#define TG_OPTIM(name, kind) \
  tg_optimizer* tg_optim_##name(tg_tensor* const* params, size_t n, const tg_optimizer_options* opts) { \
    return api::make([&] { return create(kind, params, n, opts, "optim_" #name); });                    \
  }
TG_OPTIM(sgd, TG_OPTIM_SGD)
TG_OPTIM(adam, TG_OPTIM_ADAM)
TG_OPTIM(adamw, TG_OPTIM_ADAMW)
TG_OPTIM(lars, TG_OPTIM_LARS)
TG_OPTIM(lamb, TG_OPTIM_LAMB)
TG_OPTIM(muon, TG_OPTIM_MUON)
#undef TG_OPTIM

tg_status tg_optimizer_zero_grad(tg_optimizer* opt) {
  return api::call([&] { get_opt(opt, "optimizer_zero_grad").zero_grad(); });
}
tg_status tg_optimizer_step(tg_optimizer* opt) {
  return api::call([&] { get_opt(opt, "optimizer_step").step(); });
}
int64_t tg_optimizer_schedule_step(tg_optimizer* opt, tg_tensor** out, size_t capacity) {
  int64_t n = -1;
  api::call([&] {
    nn::Optimizer& o = get_opt(opt, "optimizer_schedule_step");
    n = write_tensors([&] { return o.schedule_step(); }, o.schedule_size(), out, capacity, "optimizer_schedule_step");
  });
  return n;
}
int64_t tg_optimizer_params(const tg_optimizer* opt, tg_tensor** out, size_t capacity) {
  int64_t n = -1;
  api::call([&] {
    nn::Optimizer& o = get_opt(opt, "optimizer_params");
    n = write_tensors([&] { return o.params(); }, o.params().size(), out, capacity, "optimizer_params");
  });
  return n;
}
int64_t tg_optimizer_state(const tg_optimizer* opt, const char* name, tg_tensor** out, size_t capacity) {
  int64_t n = -1;
  api::call([&] {
    nn::Optimizer& o = get_opt(opt, "optimizer_state");
    TG_ARG(name, "optimizer_state: name is NULL");
    std::string names;
    for (auto& [k, ts] : o.named_state()) {
      if (std::strcmp(k, name) == 0) {
        n = write_tensors([&] { return ts; }, ts.size(), out, capacity, "optimizer_state");
        return;
      }
      names += names.empty() ? k : std::string(", ") + k;
    }
    TG_ARG(false, strformat("optimizer_state: this optimizer has no state '%.80s' (it has %s)", name, names.c_str()));
  });
  return n;
}
tg_tensor* tg_optimizer_lr(tg_optimizer* opt) {
  return api::make([&] { return api::wrap(get_opt(opt, "optimizer_lr").lr()); });
}
tg_status tg_optimizer_set_lr(tg_optimizer* opt, double lr) {
  return api::call([&] { get_opt(opt, "optimizer_set_lr").set_lr(lr); });
}
tg_optimizer* tg_optimizer_retain(tg_optimizer* opt) {
  return api::make([&] { return Optimizers::retain(opt, "tg_optimizer_retain"); });
}
void tg_optimizer_release(tg_optimizer* opt) { Optimizers::release(opt, "tg_optimizer_release"); }

}  // extern "C"
