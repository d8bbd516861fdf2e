// C API: TinyJit (tg_jit_*) and plans (tg_plan_*), what a realize runs as data.
#include <atomic>
#include <cstring>
#include <mutex>

#include "api/handles.h"
#include "tensor/jit.h"

using namespace tg;

struct tg_jit {
  static constexpr const char* kind = "tg_jit";
  tg_jit_fn fn;
  void* userdata;
  size_t n_outputs = 0;  // the count the capture was made with (under mu)
  std::mutex mu;         // an outermost call at a time (the output count is checked and set with the call); taken
                         // before jit.mu_ and under the rule of src/tensor/jit.h (no JIT lock waited for while one is held)
  TinyJit jit;
  tg_jit(tg_jit_fn f, void* u) : fn(f), userdata(u), jit([this](const std::vector<Tensor>& ins) { return call_fn(ins); }) {}
  std::vector<Tensor> call_fn(const std::vector<Tensor>& ins);
};

struct tg_plan {
  static constexpr const char* kind = "tg_plan";
  std::vector<Tensor> tensors;
  Lowered lowered;
  bool ran = false, from_jit = false;
  std::vector<std::vector<int64_t>> nbytes;  // per kernel, per buffer
};

namespace {
// the output count of the call whose function is about to run on this thread (a nested call runs another JIT's
// function without that JIT's lock, so the count can't live in the shared tg_jit)
thread_local size_t t_n_outputs = 0;
using Jits = api::Handles<tg_jit>;
using Plans = api::Handles<tg_plan>;
tg_jit* get_jit(const tg_jit* j, const char* fn) { return &Jits::get(j, fn); }
tg_plan* get_plan(const tg_plan* p, const char* fn) { return &Plans::get(p, fn); }
// handles passed to a callback are released when it returns, whatever happens
struct HandleList {
  std::vector<tg_tensor*> hs;
  ~HandleList() {
    for (auto* h : hs) tg_tensor_release(h);
  }
};
tg_plan* make_plan(std::vector<Tensor> tensors, Lowered l, bool from_jit) {
  auto* p = new tg_plan{std::move(tensors), std::move(l), false, from_jit, {}};
  for (auto& e : p->lowered.items) {
    p->nbytes.emplace_back();
    for (auto& b : e.bufs) p->nbytes.back().push_back(int64_t(b->nbytes()));
  }
  return Plans::add(p);
}
}  // namespace

std::vector<Tensor> tg_jit::call_fn(const std::vector<Tensor>& ins) {
  HandleList in, out;
  for (auto& t : ins) in.hs.push_back(api::wrap(t));
  out.hs.assign(t_n_outputs, nullptr);
  tg_status st = fn(userdata, in.hs.data(), in.hs.size(), out.hs.data(), out.hs.size());
  if (st != TG_OK) {
    const char* msg = tg_last_error() == st ? tg_last_error_message() : "";
    throw Error(st, strformat("jit: the function returned %s%s%s", tg_status_name(st), *msg ? ": " : "", msg));
  }
  std::vector<Tensor> outs;
  for (size_t i = 0; i < out.hs.size(); i++) outs.push_back(api::get(out.hs[i], "tg_jit_call", strformat("the function's output %zu", i).c_str()));
  return outs;
}

extern "C" {

tg_jit* tg_jit_create(tg_jit_fn fn, void* userdata) {
  return api::make([&] {
    TG_ARG(fn, "jit_create: fn is NULL");
    return Jits::add(new tg_jit(fn, userdata));
  });
}

// Holds a call. A reference first, taken atomically with the handle's check (the function may release the handle, and
// another thread may release it at any time). Then the JIT's lock, by the rule of src/tensor/jit.h: an outermost call
// waits for it; a call nested in some JIT's function takes no lock at all (tg_jit_call: it runs the function
// unlocked) or only tries it (reset, plan: busy is an error, since waiting while this thread holds another JIT's lock
// could close a cycle).
struct CallGuard {
  tg_jit* jit;
  const char* fn;
  std::unique_lock<std::mutex> lk;
  CallGuard(tg_jit* j, const char* f, bool lock_when_nested) : jit(Jits::retain(j, f)), fn(f) {
    try {
      TG_ARG(!jit->jit.in_own_function(), std::string(fn) + ": called from inside the jit's own function");
      lk = std::unique_lock<std::mutex>(jit->mu, std::defer_lock);
      if (!TinyJit::in_function()) lk.lock();
      else if (lock_when_nested)
        TG_ARG(lk.try_lock(), std::string(fn) + ": called from inside another jit's function while this jit runs a call on another thread");
    } catch (...) {
      Jits::release(jit, fn);
      throw;
    }
  }
  bool nested() const { return !lk.owns_lock(); }
  ~CallGuard() {
    if (lk.owns_lock()) lk.unlock();
    Jits::release(jit, fn);
  }
};

tg_status tg_jit_call(tg_jit* j, tg_tensor* const* inputs, size_t n_inputs, tg_tensor** outputs, size_t n_outputs) {
  return tg_jit_call_vars(j, inputs, n_inputs, nullptr, nullptr, 0, outputs, n_outputs);
}
tg_status tg_jit_call_vars(tg_jit* j, tg_tensor* const* inputs, size_t n_inputs, const char* const* var_names, const int64_t* var_values,
                           size_t n_vars, tg_tensor** outputs, size_t n_outputs) {
  return api::call([&] {
    CallGuard guard(j, "tg_jit_call", false);
    tg_jit* jit = guard.jit;
    TG_ARG(inputs || n_inputs == 0, "jit_call: inputs is NULL with a nonzero count");
    TG_ARG(outputs || n_outputs == 0, "jit_call: outputs is NULL with a nonzero count");
    TG_ARG((var_names && var_values) || n_vars == 0, "jit_call_vars: var_names/var_values is NULL with a nonzero count");
    TG_ARG(n_vars <= 4096, strformat("jit_call_vars: %zu variables (at most 4096)", n_vars));
    TinyJit::Vars vars;
    for (size_t i = 0; i < n_vars; i++) {
      TG_ARG(var_names[i] && *var_names[i], strformat("jit_call_vars: var_names[%zu] is NULL or empty", i));
      auto [it, fresh] = vars.emplace(var_names[i], var_values[i]);
      TG_ARG(fresh || it->second == var_values[i], strformat("jit_call_vars: Variable '%s' given twice with different values", var_names[i]));
    }
    std::vector<Tensor> ins;
    for (size_t i = 0; i < n_inputs; i++) ins.push_back(api::get(inputs[i], "jit_call", strformat("inputs[%zu]", i).c_str()));
    struct Count {  // this call's output count for call_fn, put back after (a nested call's outer may still read it)
      size_t keep;
      explicit Count(size_t n) : keep(t_n_outputs) { t_n_outputs = n; }
      ~Count() { t_n_outputs = keep; }
    } count(n_outputs);
    std::vector<Tensor> outs;
    if (guard.nested()) {
      outs = jit->jit(ins, vars);  // runs the function, touches nothing of the JIT's
    } else {
      if (jit->jit.calls() >= 1 && JIT != 0)  // the capture and every replay keep the count of the capture
        TG_ARG(jit->jit.calls() == 1 || n_outputs == jit->n_outputs,
               strformat("jit_call: %zu outputs asked, the function was captured with %zu", n_outputs, jit->n_outputs));
      size_t keep = jit->n_outputs;
      jit->n_outputs = n_outputs;
      try {
        outs = jit->jit(ins, vars);
      } catch (...) {
        if (jit->jit.calls() >= 2) jit->n_outputs = keep;
        throw;
      }
    }
    TG_CHECK(outs.size() == n_outputs, TG_ERROR_INTERNAL, "jit_call: output count changed");
    for (size_t i = 0; i < n_outputs; i++) outputs[i] = api::wrap(outs[i]);
  });
}

int64_t tg_jit_call_count(const tg_jit* j) {
  int64_t n = -1;
  api::call([&] { n = get_jit(j, "jit_call_count")->jit.calls(); });
  return n;
}

tg_status tg_jit_reset(tg_jit* j) {
  return api::call([&] {
    CallGuard guard(j, "tg_jit_reset", true);
    guard.jit->jit.reset();
  });
}

tg_plan* tg_jit_plan(tg_jit* j) {
  return api::make([&]() -> tg_plan* {
    CallGuard guard(j, "tg_jit_plan", true);
    tg_jit* jit = guard.jit;
    TG_ARG(jit->jit.captured(), "jit_plan: the jit has not captured yet (it captures at its second call)");
    Lowered l;
    l.items = jit->jit.items();
    l.mem = jit->jit.memory();
    return make_plan({}, std::move(l), true);
  });
}

void tg_jit_release(tg_jit* j) { Jits::release(j, "tg_jit_release"); }

tg_status tg_jit_export(tg_jit* j, const tg_export_options* opts) {
  return api::call([&] {
    CallGuard guard(j, "tg_jit_export", true);
    TG_ARG(opts, "tg_jit_export: opts is NULL");
    TG_ARG(opts->struct_size >= offsetof(tg_export_options, target) + sizeof(const char*) && opts->struct_size <= sizeof(tg_export_options),
           strformat("tg_jit_export: opts->struct_size %zu is not sizeof(tg_export_options) (%zu)", opts->struct_size, sizeof(tg_export_options)));
    TG_ARG(opts->dir && opts->name, "tg_jit_export: opts->dir and opts->name must not be NULL");
    TinyJit::ExportOptions o;
    o.dir = opts->dir, o.name = opts->name, o.target = opts->target ? opts->target : "native";
    if (opts->struct_size >= offsetof(tg_export_options, threads) + sizeof(int)) o.threads = opts->threads;
    guard.jit->jit.export_c(o);
  });
}

tg_plan* tg_plan_create(tg_tensor* const* tensors, size_t n) {
  return api::make([&] {
    TG_ARG(tensors || n == 0, "plan_create: tensors is NULL with a nonzero count");
    std::vector<Tensor> ts;
    std::vector<UOpRef> roots;
    for (size_t i = 0; i < n; i++) {
      ts.push_back(api::get(tensors[i], "plan_create", strformat("tensors[%zu]", i).c_str()));
      roots.push_back(ts.back().uop());
    }
    for (auto& t : ts) TG_ARG(t.device() == ts[0].device(), "plan_create: tensors are on different devices");
    Lowered l = lower_realize(roots, ts.empty() ? canonical_device(nullptr) : ts[0].device());
    return make_plan(std::move(ts), std::move(l), false);
  });
}

tg_status tg_plan_run(tg_plan* p) {
  return api::call([&] {
    tg_plan* plan = get_plan(p, "plan_run");
    TG_ARG(!plan->from_jit, "plan_run: a jit's plan only describes it; call the jit to run its kernels");
    TG_ARG(!plan->ran, "plan_run: this plan already ran (make a new one)");
    plan->ran = true;
    run_lowered(plan->lowered);
    for (size_t i = 0; i < plan->tensors.size(); i++) plan->tensors[i].became(plan->lowered.outputs[i]);
  });
}

size_t tg_plan_kernel_count(const tg_plan* p) {
  size_t n = 0;
  api::call([&] { n = get_plan(p, "plan_kernel_count")->lowered.items.size(); });
  return n;
}

tg_status tg_plan_kernel(const tg_plan* p, size_t i, tg_kernel_info* out) {
  return api::call([&] {
    tg_plan* plan = get_plan(p, "plan_kernel");
    TG_ARG(out, "plan_kernel: out is NULL");
    TG_ARG(out->struct_size >= offsetof(tg_kernel_info, name) + sizeof(const char*), "plan_kernel: out->struct_size is not set");
    TG_ARG(i < plan->lowered.items.size(), strformat("plan_kernel: kernel %zu of %zu", i, plan->lowered.items.size()));
    const ExecItem& e = plan->lowered.items[i];
    tg_kernel_info k{};
    k.struct_size = sizeof k;
    k.name = e.prg->name.c_str(), k.source = e.prg->src.c_str();
    k.n_buffers = plan->nbytes[i].size(), k.buffer_nbytes = plan->nbytes[i].data();
    k.time_s = e.time_s, k.threads = e.prg->threads, k.ops = e.prg->ops, k.mem = e.prg->mem;
    size_t n = std::min(out->struct_size, sizeof k);
    std::memcpy(out, &k, n);
    out->struct_size = n;
  });
}

tg_status tg_plan_memory(const tg_plan* p, int64_t* intermediate_bytes, int64_t* peak_bytes) {
  return api::call([&] {
    tg_plan* plan = get_plan(p, "plan_memory");
    if (intermediate_bytes) *intermediate_bytes = int64_t(plan->lowered.mem.total_bytes);
    if (peak_bytes) *peak_bytes = int64_t(plan->lowered.mem.peak_bytes);
  });
}

void tg_plan_release(tg_plan* p) { Plans::release(p, "tg_plan_release"); }

}  // extern "C"
