#include "tensor/jit.h"

#include "tensor/multi.h"
#include "uop/viz.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace tg {

const UOp* whole_buffer(const UOp* u) {
  if (!u->sym().empty()) {
    if (u->op != Ops::SHRINK) return nullptr;
    for (size_t i = 0; i < u->shape().size(); i++)
      if (u->arg_ints()[2 * i] != 0 || (!u->sym()[i] && u->arg_ints()[2 * i + 1] != u->src[0]->shape()[i])) return nullptr;
    u = u->src[0].get();
    while (u->op == Ops::RESHAPE) u = u->src[0].get();
    return u->op == Ops::BUFFER ? u : nullptr;
  }
  if (!is_buffer_view(u, prod(u->shape()))) return nullptr;
  while (u->op == Ops::RESHAPE) u = u->src[0].get();
  return u;
}
static const UOp* input_buffer(const Tensor& t) { return whole_buffer(t.uop().get()); }
// every input as its own realized buffer: views and lazy graphs are made contiguous and realized together
static std::vector<Tensor> prepare_inputs(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> ins;
  std::vector<Tensor*> todo;
  for (auto& t : inputs) ins.push_back(input_buffer(t) ? t : t.contiguous());
  for (auto& t : ins)
    if (!input_buffer(t)) todo.push_back(&t);
  if (!todo.empty()) Tensor::realize_all(todo);
  for (auto& t : ins) TG_CHECK(input_buffer(t), TG_ERROR_INTERNAL, "jit: an input did not realize to a buffer");
  return ins;
}
// the values of the Variables an input's dims are bound to
static void input_vars(const Tensor& t, std::unordered_map<std::string, int64_t>& vals) {
  for (size_t i = 1; i < t.uop()->src.size(); i++)
    if (const UOp* b = t.uop()->src[i].get(); b->op == Ops::BIND) {
      if (b->src[0]->op == Ops::DEFINE_VAR) vals[b->src[0]->argv<VarArg>().name] = int64_t(b->src[1]->const_value());
      for (size_t k = 2; k < b->src.size(); k++)  // an expression's Variables
        vals[b->src[k]->src[0]->argv<VarArg>().name] = int64_t(b->src[k]->src[1]->const_value());
    }
}

// the JITs whose functions run on this thread, outermost first (jit.h: nesting and locking)
// (a fixed array: a thread_local with a destructor can abort the process when memory runs out; helpers.cpp's ctx_stack)
static constexpr size_t kMaxJitNesting = 64;
static thread_local const TinyJit* t_running[kMaxJitNesting];
static thread_local size_t t_n_running = 0;
bool TinyJit::in_function() { return t_n_running > 0; }
bool TinyJit::in_own_function() const { return std::find(t_running, t_running + t_n_running, this) != t_running + t_n_running; }
namespace {
struct Running {
  explicit Running(const TinyJit* j) {
    TG_CHECK(t_n_running < kMaxJitNesting, TG_ERROR_INVALID_ARGUMENT, "TinyJit: functions nested more than 64 deep");
    t_running[t_n_running++] = j;
  }
  ~Running() { t_n_running--; }
};
}  // namespace

// the function's outputs and every tensor it assigned in place, realized in one schedule
std::vector<Tensor> TinyJit::run_and_realize(const std::vector<Tensor>& inputs, bool capturing, const Layout& layout) {
  AssignLog log;
  std::vector<Tensor> outs;
  {
    Running r(this);
    if (layout.empty()) outs = fn_(inputs);
    else {  // the shards put back together
      std::vector<Tensor> whole;
      for (size_t i = 0, at = 0; i < layout.size(); at += layout[i].n, i++) {
        if (layout[i].device.empty()) {
          whole.push_back(inputs[at]);
          continue;
        }
        UOps parts;
        for (size_t k = 0; k < layout[i].n; k++) parts.push_back(inputs[at + k].uop());
        whole.push_back(multi_tensor(std::move(parts), layout[i].axis, layout[i].device));
      }
      outs = fn_(whole);
    }
  }
  std::vector<Tensor> side;
  std::unordered_set<const TensorState*> seen;
  for (auto& o : outs) seen.insert(o.state().get());
  for (auto& w : log.tensors)
    if (auto s = w.lock(); s && seen.insert(s.get()).second) side.emplace_back(s);
  std::vector<Tensor> all = outs;
  all.insert(all.end(), side.begin(), side.end());
  if (!all.empty()) {
    // an output returned twice, or an input returned as is, is still one buffer: realize_all takes distinct tensors
    std::vector<Tensor*> ptrs;
    for (auto& t : all) ptrs.push_back(&t);
    Tensor::realize_all(ptrs);
  }
  if (DEBUG >= 1 && capturing)
    for (auto& t : side)
      std::fprintf(stderr, "jit: captured the in-place assign to a %s %s tensor the function did not return; it replays with the kernels\n",
                   t.dtype().name().c_str(), shape_str(t.shape()).c_str());
  return std::vector<Tensor>(all.begin(), all.begin() + long(outs.size()));
}

std::vector<Tensor> TinyJit::operator()(const std::vector<Tensor>& inputs) { return (*this)(inputs, {}); }
std::vector<Tensor> TinyJit::operator()(const std::vector<Tensor>& inputs, const Vars& vars) {
  TG_CHECK(!in_own_function(), TG_ERROR_INVALID_ARGUMENT, "jit: called from inside its own function");
  if (std::none_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return is_multi_device(t.device()); })) return call_flat(inputs, vars, {});
  Layout layout;
  std::vector<Tensor> flat;
  for (auto& t : inputs) {
    if (!is_multi_device(t.device())) {
      layout.push_back({}), flat.push_back(t);
      continue;
    }
    std::vector<std::string> devs = split_devices(t.device());
    layout.push_back({t.device(), multi_axis(t), devs.size()});
    for (size_t d = 0; d < devs.size(); d++) flat.push_back(multi_shard(t, d));
  }
  return call_flat(flat, vars, layout);
}
std::vector<Tensor> TinyJit::call_flat(const std::vector<Tensor>& inputs, const Vars& vars, const Layout& layout) {
  // nested in another JIT's function: run ours unlocked, state untouched; an enclosing capture records its kernels
  if (in_function()) return run_and_realize(prepare_inputs(inputs), false, layout);
  std::lock_guard<std::mutex> lk(mu_);
  if (JIT == 0) return run_and_realize(prepare_inputs(inputs), false, layout);  // every call as the first: run, realize outputs and assigns
  if (cnt_ >= 2) {
    TG_CHECK(layout == layout_, TG_ERROR_INVALID_ARGUMENT, "jit: the inputs are sharded otherwise than at the capture (devices or axis)");
    return replay(inputs, vars);
  }
  std::vector<Tensor> ins = prepare_inputs(inputs);
  if (cnt_ == 0) {
    std::vector<Tensor> outs = run_and_realize(ins, false, layout);
    cnt_ = 1;
    return outs;
  }
  // JITBEAM: kernels compiled during the capture are searched with that width
  std::optional<Context> beam;
  if (JITBEAM >= 1) beam.emplace(std::initializer_list<std::pair<const char*, int64_t>>{{"BEAM", int64_t(JITBEAM)}});
  CaptureScope cap;
  std::vector<Tensor> outs = run_and_realize(ins, true, layout);
  finish_capture(ins, outs, cap, vars);
  layout_ = layout;
  cnt_ = 2;
  return outs;
}

void TinyJit::set_constants(const std::vector<Tensor>& constants) {
  TG_CHECK(!in_own_function(), TG_ERROR_INVALID_ARGUMENT, "jit: constants set from inside its own function");
  std::lock_guard<std::mutex> lk(mu_);
  constants_.clear();
  for (auto& t : constants)
    if (const UOp* b = whole_buffer(t.uop().get()); b && b->op == Ops::BUFFER && buffer_of(b)) constants_.push_back(buffer_of(b));
}

// Items whose every input is constant (set_constants, a buffer only the items hold and none writes, or an earlier
// hoisted item's result) and whose result only the items hold leave the replay: the capture ran them, and their
// results keep those values (the memory planner leaves a buffer alone whose first use is a read). A kernel with
// Variables or a host step (a copy, a collective) always stays.
void TinyJit::hoist_constants(const std::function<bool(const Buffer*)>& only_items, const std::unordered_set<const Buffer*>& output_bufs) {
  hoisted_ = 0;
  if (getenv_int("TG_JIT_HOIST", 1) == 0) return;
  std::unordered_map<const Buffer*, int> writes;
  for (auto& e : items_)
    for (size_t j = 0; j < e.bufs.size(); j++)
      if (j == 0 || e.prg->host) writes[e.bufs[j].get()]++;
  auto is_private = [&](const Buffer* b) { return only_items(b) && !b->base(); };
  std::unordered_set<const Buffer*> constant;
  for (auto& b : constants_)
    if (!output_bufs.count(b.get())) constant.insert(b.get());  // one the caller gets back may be written to
  std::vector<ExecItem> kept;
  for (auto& e : items_) {
    const Buffer* out = e.bufs.empty() ? nullptr : e.bufs[0].get();
    bool hoist = out && !e.prg->host && e.prg->vars.size() == (e.prg->core_var >= 0 ? 1u : 0u) && writes[out] == 1 && is_private(out);
    for (size_t j = 1; hoist && j < e.bufs.size(); j++) {
      const Buffer* b = e.bufs[j].get();
      hoist = b != out && (constant.count(b) || (!writes.count(b) && is_private(b)));
    }
    if (hoist) constant.insert(out), hoisted_++;
    else kept.push_back(std::move(e));
  }
  items_ = std::move(kept);
}

void TinyJit::finish_capture(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outs, CaptureScope& cap, const Vars& vars) {
  // every Variable a kernel takes must come from an input's dims or the call's variables: a value bound inside the
  // function would be replayed as captured
  std::unordered_set<std::string> from_inputs;
  std::set<std::string> from_call;  // sorted: an error names the first
  for (auto& t : inputs)
    for (const UOp* v : t.uop()->sym())
      if (v)
        for (const UOp* x : sym_vars(v)) from_inputs.insert(x->argv<VarArg>().name);
  for (auto& e : cap.items)
    for (size_t i = 0; i < e.prg->vars.size(); i++) {
      const std::string& nm = e.prg->vars[i]->argv<VarArg>().name;
      if (int(i) == e.prg->core_var || from_inputs.count(nm)) continue;
      TG_CHECK(vars.count(nm), TG_ERROR_UNSUPPORTED,
               "jit: kernel " + e.prg->name + " takes Variable '" + nm +
                   "', which no input's shape binds and the call does not pass: a replay would keep its value. Pass it with the call "
                   "(tg_jit_call_vars; a bound Variable argument of a Python TinyJit)");
      from_call.insert(nm);
    }
  call_vars_.assign(from_call.begin(), from_call.end());
  items_ = std::move(cap.items);
  in_specs_.clear(), input_uses_.clear(), outputs_.clear(), input_bufs_.clear(), output_views_input_.clear(), out_devices_.clear();
  std::unordered_map<const Buffer*, size_t> input_of;
  has_vars_ = !call_vars_.empty();
  for (size_t i = 0; i < inputs.size(); i++) {
    const Tensor& t = inputs[i];
    in_specs_.push_back({t.shape(), t.dtype(), t.device(), t.uop()->sym(), int64_t(buffer_of(input_buffer(t))->size())});
    has_vars_ |= !inputs[i].uop()->sym().empty();
    input_bufs_.push_back(input_buffer(inputs[i])->ref());
    input_of.emplace(buffer_of(input_bufs_.back().get()).get(), i);
  }
  bool any_view = false;
  std::unordered_set<const Buffer*> output_bufs;
  for (auto& o : outs) {
    outputs_.push_back(o.uop()), out_devices_.push_back(o.device());
    bool views = false;
    for (auto& u : o.uop()->toposort())
      if (u->op == Ops::BUFFER) output_bufs.insert(buffer_of(u.get()).get()), views |= input_of.count(buffer_of(u.get()).get()) > 0;
    output_views_input_.push_back(views), any_view |= views;
  }
  // buffers only the captured items hold (made by this capture) can share memory across the whole function
  std::unordered_map<const Buffer*, std::pair<long, long>> refs;  // references from the items, and in all
  auto count_refs = [&] {
    refs.clear();
    for (auto& e : items_)
      for (auto& b : e.bufs) refs[b.get()].first++, refs[b.get()].second = b.use_count();
  };
  auto only_items = [&](const Buffer* b) {
    auto [mine, all] = refs.at(b);
    return mine == all && !input_of.count(b) && !output_bufs.count(b);
  };
  count_refs();
  hoist_constants(only_items, output_bufs);
  count_refs();  // the hoisted items' references are gone
  mem_ = plan_memory(items_, only_items);
  item_dev_.clear();
  for (size_t i = 0; i < items_.size(); i++) {
    ExecItem& e = items_[i];
    item_dev_.push_back(&get_device(e.bufs[0]->device()));
    e.vals.resize(e.prg->vars.size());
    e.ptrs.resize(e.bufs.size());
    for (size_t j = 0; j < e.bufs.size(); j++) {
      if (auto it = input_of.find(e.bufs[j].get()); it != input_of.end()) {
        input_uses_.push_back({i, j, it->second});
        // the caller's buffer of the day goes here at each replay; a placeholder (never allocated) keeps its description
        e.bufs[j] = std::make_shared<Buffer>(e.bufs[j]->device(), e.bufs[j]->dtype(), e.bufs[j]->size());
        e.ptrs[j] = nullptr;
      } else e.ptrs[j] = e.bufs[j]->ptr();
    }
  }
  if (!any_view) input_bufs_.clear();
  written_.clear();
  for (auto& e : items_)
    if (e.ptrs[0]) written_.insert(e.ptrs[0]);
  if (DEBUG >= 1)
    std::fprintf(stderr,
                 "jit: captured %zu kernel%s (%zu more ran once: they read constants), %zu input%s; %zu intermediate buffers share %.3f MB "
                 "(of %.3f MB)\n",
                 items_.size(), items_.size() == 1 ? "" : "s", hoisted_, inputs.size(), inputs.size() == 1 ? "" : "s", mem_.buffers,
                 double(mem_.peak_bytes) * 1e-6, double(mem_.total_bytes) * 1e-6);
}

std::vector<Tensor> TinyJit::replay(const std::vector<Tensor>& inputs, const Vars& vars) {
  TG_CHECK(inputs.size() == in_specs_.size(), TG_ERROR_INVALID_ARGUMENT,
           strformat("jit: called with %zu inputs, captured with %zu", inputs.size(), in_specs_.size()));
  for (auto& nm : call_vars_)
    TG_CHECK(vars.count(nm), TG_ERROR_INVALID_ARGUMENT, "jit: the capture was given Variable '" + nm + "' with the call; this call does not pass it");
  void* ptrs[64];
  std::vector<void*> more(inputs.size() > 64 ? inputs.size() : 0);
  void** in_ptr = inputs.size() > 64 ? more.data() : ptrs;
  std::unordered_map<std::string, int64_t> vals(vars.begin(), vars.end());  // the call's Variables, then the inputs' bindings
  std::vector<Tensor> held;  // inputs that had to be made contiguous live until the items ran
  held.reserve(2 * inputs.size());
  UOps in_bufs;              // the inputs' BUFFER nodes, for outputs that view them
  for (size_t i = 0; i < inputs.size(); i++) {
    const Tensor& t = inputs[i];
    const InputSpec& s = in_specs_[i];
    TG_CHECK(t.device() == s.device, TG_ERROR_DEVICE, strformat("jit: input %zu is on %s, captured on %s", i, t.device().c_str(), s.device.c_str()));
    TG_CHECK(t.dtype() == s.dtype, TG_ERROR_DTYPE,
             strformat("jit: input %zu is %s, captured as %s", i, t.dtype().name().c_str(), s.dtype.name().c_str()));
    // dims bound to Variables take any binding; every other dim must be as captured
    bool same = t.shape().size() == s.shape.size() && t.uop()->sym() == s.sym;
    for (size_t d = 0; same && d < s.shape.size(); d++) same = (!s.sym.empty() && s.sym[d]) || t.shape()[d] == s.shape[d];
    TG_CHECK(same, TG_ERROR_SHAPE,
             strformat("jit: input %zu has shape %s, captured with %s", i, sym_shape_str(t).c_str(), sym_shape_str(s.shape, s.sym).c_str()));
    const Tensor* in = &t;
    const UOp* b = input_buffer(t);
    if (!b) {
      held.push_back(prepare_inputs({t})[0]);
      in = &held.back(), b = input_buffer(held.back());
    }
    if (in == &t && buffer_of(b)->size() != s.buffer_size && !t.uop()->sym().empty()) {
      // a Variable view of a buffer of another size than captured ((3,7)[:, :i] after (3,10)[:, :i]): copied to the
      // layout realize gives it, the Variable's largest size
      held.push_back(Tensor(UOp::make(Ops::CONTIGUOUS, t.dtype(), {t.uop()}), t.device()));
      held.back().realize();
      in = &held.back(), b = input_buffer(held.back());
    }
    if (written_.count(buffer_of(b)->ptr())) {  // a kernel would overwrite it while others read it: replay from a copy
      held.push_back(Tensor(UOp::make(Ops::CONTIGUOUS, t.dtype(), {in->uop()}), t.device()));
      held.back().realize();
      in = &held.back(), b = input_buffer(held.back());
    }
    TG_CHECK(buffer_of(b)->size() == s.buffer_size, TG_ERROR_SHAPE,
             strformat("jit: input %zu is a view of a buffer of %lld elements, captured with %lld", i, (long long)buffer_of(b)->size(),
                       (long long)s.buffer_size));
    if (has_vars_) input_vars(*in, vals);
    in_ptr[i] = buffer_of(b)->ptr();
    if (!input_bufs_.empty()) in_bufs.push_back(b->ref());
  }
  for (auto& u : input_uses_) items_[u.item].ptrs[u.buf] = in_ptr[u.input];
  if (has_vars_)
    for (auto& e : items_) e.vals = var_values(*e.prg, vals);
  // one device with graphs (CUDA) and no per-kernel timing asked: the items replay as one graph launch
  auto launches = [&] {
    std::vector<GraphLaunch> g;
    for (auto& e : items_) g.push_back({e.prg->prog.get(), e.ptrs.data(), e.vals.data(), e.vals.size(), e.prg->dims(e.vals.data())});
    return g;
  };
  // a host step (a collective) between the kernels keeps them out of a device graph
  bool one_device = !items_.empty() && std::all_of(item_dev_.begin(), item_dev_.end(), [&](Device* d) { return d == item_dev_[0]; }) &&
                    std::none_of(items_.begin(), items_.end(), [](const ExecItem& e) { return e.prg->host; });
  if (!graph_tried_ && one_device && DEBUG < 2 && getenv_int("JIT_GRAPH", 1) != 0) graph_tried_ = true, graph_ = item_dev_[0]->make_graph(launches());
  viz::RealizeScope rec("jit replay");
  if (graph_ && DEBUG < 2) {
    double st = viz::on() ? viz::now_us() : 0;
    graph_->replay(launches());
    item_dev_[0]->synchronize();
    if (viz::on()) viz::launch(item_dev_[0]->name(), "graph of " + std::to_string(items_.size()) + " kernels", -1, st, viz::now_us(), 0, 0);
    for (auto& e : items_) count_kernel(*e.prg, 0);
    cnt_++;
    return outputs_of(inputs, in_bufs, vals);
  }
  using Clock = std::chrono::steady_clock;
  // host kernels finish within their launch, so each is timed; a GPU's run back to back, waited for once at the end
  // (DEBUG>=2 waits for each to time it)
  std::vector<Device*> wait;
  for (size_t i = 0; i < items_.size(); i++) {
    ExecItem& e = items_[i];
    Device* dev = item_dev_[i];
    bool timed = dev->host_memory() || DEBUG >= 2 || e.prg->host;
    double st = viz::on() ? viz::now_us() : 0;
    auto t0 = Clock::now();
    e.launch();
    if (timed) dev->synchronize();
    else if (std::find(wait.begin(), wait.end(), dev) == wait.end()) wait.push_back(dev);
    double dt = timed ? std::chrono::duration<double>(Clock::now() - t0).count() : e.time_s;  // else its last timed run's
    if (timed) e.time_s = dt;
    if (viz::on() && e.prg->host) viz::launch(dev->name(), e.prg->name, -1, st, st + dt * 1e6, 0, 0);
    else if (viz::on()) viz_launch(*e.prg, dev->name(), st, timed ? st + dt * 1e6 : viz::now_us());
    if (!e.prg->host) count_kernel(*e.prg, timed ? dt : 0);
    if (DEBUG >= 2) std::fprintf(stderr, "*** jit replay %-28s tm %10.2fus\n", e.prg->name.c_str(), dt * 1e6);
  }
  for (Device* d : wait) d->synchronize();
  cnt_++;
  return outputs_of(inputs, in_bufs, vals);
}

std::vector<Tensor> TinyJit::outputs_of(const std::vector<Tensor>& inputs, const std::vector<UOpRef>& in_bufs,
                                        const std::unordered_map<std::string, int64_t>& vals) {
  std::vector<Tensor> outs;
  for (size_t i = 0; i < outputs_.size(); i++) {
    UOpRef o = outputs_[i];
    if (output_views_input_[i]) {
      UOpMap<UOpRef> m;
      for (size_t k = 0; k < inputs.size(); k++) m[input_bufs_[k]] = in_bufs[k];
      o = o->substitute(m);
    }
    if (has_vars_ && !o->sym().empty()) o = rebind_vars(o, vals);
    outs.emplace_back(o, out_devices_[i]);
  }
  return outs;
}

void TinyJit::reset() {
  TG_CHECK(!in_own_function(), TG_ERROR_INVALID_ARGUMENT, "jit: reset from inside its own function");
  // inside another JIT's function this thread may not wait for a JIT lock (jit.h): busy is an error, not a wait
  std::unique_lock<std::mutex> lk(mu_, std::defer_lock);
  if (in_function()) TG_CHECK(lk.try_lock(), TG_ERROR_INVALID_ARGUMENT, "jit: reset from inside another JIT's function while a call runs");
  else lk.lock();
  cnt_ = 0, items_.clear(), in_specs_.clear(), input_uses_.clear(), outputs_.clear(), input_bufs_.clear(), output_views_input_.clear();
  out_devices_.clear(), item_dev_.clear(), mem_ = {}, hoisted_ = 0;
  graph_.reset(), graph_tried_ = false;
}

}  // namespace tg
