#include "engine/realize.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "codegen/opt/beam.h"
#include "renderer/renderer.h"
#include "runtime/mpi.h"
#include "runtime/threadpool.h"
#include "schedule/schedule.h"
#include "schedule/graph.h"
#include "uop/viz.h"

namespace tg {

using Clock = std::chrono::steady_clock;
static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void count_kernel(const CompiledRunner& k, double seconds) {
  GlobalCounters::kernel_count++, GlobalCounters::global_ops += k.ops, GlobalCounters::global_mem += k.mem;
  for (double cur = GlobalCounters::time_sum_s.load(); !GlobalCounters::time_sum_s.compare_exchange_weak(cur, cur + seconds);) {
  }
}

void viz_launch(const CompiledRunner& k, const std::string& device, double st_us, double en_us) {
  int id = k.viz_id.load(std::memory_order_relaxed);
  if (id < 0 || !viz::kernel_kept(id)) k.viz_id = viz::kernel_seen(k.name, device, k.src, k.ast, k.ops, k.mem);
  viz::launch(device, k.name, k.viz_id, st_us, en_us, k.mem, k.ops);
}

void ExecItem::run() {
  ptrs.resize(bufs.size());
  for (size_t i = 0; i < bufs.size(); i++) ptrs[i] = bufs[i]->ptr();
  vals.resize(prg->vars.size());
  launch();
}
void ExecItem::launch() {
  if (!prg->host) return prg->prog->launch(ptrs.data(), vals.data(), vals.size(), prg->dims(vals.data()));
  try {
    prg->prog->launch(ptrs.data(), nullptr, 0, LaunchDims{});
  } catch (const mpi::Timeout& t) {
    // MPI may still write these buffers (the request is pending): they stay allocated for the rest of the process
    static auto* kept = new std::vector<std::shared_ptr<Buffer>>();
    static std::mutex mu;
    std::lock_guard<std::mutex> lk(mu);
    kept->insert(kept->end(), bufs.begin(), bufs.end());
    fail(TG_ERROR_RUNTIME, t.message);
  }
}


// A computed root with Variable dims is stored at the Variables' largest values: its value is the view of the bound part.
static UOpRef rebind(const UOpRef& stored, const UOpRef& root, const std::unordered_map<std::string, int64_t>& var_vals) {
  if (root->sym().empty()) return stored;
  std::vector<int64_t> bounds, dims;
  UOps src{stored};
  for (size_t i = 0; i < root->shape().size(); i++) {
    bounds.push_back(0), bounds.push_back(root->shape()[i]);
    const UOp* v = root->sym()[i];
    if (!v) continue;
    UOps inner;  // an expression's Variables are bound beside it: the view is all its graph
    if (v->op != Ops::DEFINE_VAR)
      for (const UOp* x : sym_vars(v)) {
        auto it = var_vals.find(x->argv<VarArg>().name);
        TG_CHECK(it != var_vals.end(), TG_ERROR_INVALID_ARGUMENT, "realize: the size " + sym_name(v) + " has Variable '" + x->argv<VarArg>().name + "', which nothing binds");
        inner.push_back(bound_var(x, it->second));
      }
    dims.push_back(int64_t(i)), src.push_back(bound_var(v, root->shape()[i], std::move(inner)));
  }
  return UOp::make(Ops::SHRINK, root->dtype, std::move(src), bounds, dims);
}

std::vector<int64_t> var_values(const CompiledRunner& k, const std::unordered_map<std::string, int64_t>& var_vals) {
  std::vector<int64_t> vals(k.vars.size(), 0);
  for (size_t i = 0; i < k.vars.size(); i++) {
    if (int(i) == k.core_var) continue;
    auto& name = k.vars[i]->argv<VarArg>().name;
    auto it = var_vals.find(name);
    TG_CHECK(it != var_vals.end(), TG_ERROR_INTERNAL, "realize: kernel " + k.name + " needs Variable '" + name + "', which nothing binds");
    vals[i] = it->second;
  }
  return vals;
}

Normalized normalize(const std::vector<UOpRef>& roots) {
  Normalized n;
  UOpRef sink = UOp::sink(roots);
  UOps topo = sink->toposort();
  // an assign that already ran is its target's buffer now (the base of a chain of assigns)
  UOpMap<UOpRef> done;
  for (auto& u : topo)
    if (const AssignArg* a = assign_arg(u.get()); a && a->done.load()) {
      const UOp* b = u.get();
      while (b->op == Ops::ASSIGN) b = b->src[0].get();
      done[u] = b->ref();
    }
  if (!done.empty()) sink = sink->substitute(done), topo = sink->toposort();
  std::unordered_map<const UOp*, UOpRef> to;
  for (auto& u : topo) {
    if (u->op == Ops::BUFFER) {
      to[u.get()] = UOp::make(Ops::PARAM, u->dtype, {}, std::vector<int64_t>{int64_t(n.inputs.size()), std::get<int64_t>(u->arg)});
      n.inputs.push_back(u), n.specs.emplace_back(u->dtype, std::get<int64_t>(u->arg));
      continue;
    }
    UOps src;
    bool same = true;
    for (auto& x : u->src) src.push_back(to.at(x.get())), same &= src.back() == x;
    if (u->op == Ops::CUSTOM_BACKWARD) {  // only autograd reads it: the value is its first source
      to[u.get()] = src[0];
      continue;
    }
    if (u->op == Ops::BIND && u->src[0]->op != Ops::DEFINE_VAR) {  // an expression: its Variables are bound on their own
      to[u.get()] = src[0];
      continue;
    }
    if (u->op == Ops::BIND) {  // unbind: the graph names the Variable, the value goes to the kernels as an argument
      auto& v = u->src[0]->argv<VarArg>();
      int64_t val = int64_t(u->src[1]->const_value());
      auto [it, fresh] = n.var_vals.try_emplace(v.name, std::make_pair(u->src[0].get(), val));
      TG_CHECK(it->second.first == u->src[0].get(), TG_ERROR_INVALID_ARGUMENT, "realize: two different Variables are named '" + v.name + "'");
      TG_CHECK(fresh || it->second.second == val, TG_ERROR_INVALID_ARGUMENT,
               strformat("realize: Variable '%s' is bound to both %lld and %lld", v.name.c_str(), (long long)it->second.second, (long long)val));
      to[u.get()] = u->src[0];
      continue;
    }
    if (u->op == Ops::PAD && std::holds_alternative<std::vector<int64_t>>(u->tag)) {
      // padded by symbolic amounts: the padding before and the size at their largest, the padding after makes up the rest
      std::vector<int64_t> arg = u->arg_ints();
      auto& dims = std::get<std::vector<int64_t>>(u->tag);
      for (size_t k = 0; k < dims.size(); k++) {
        size_t d = size_t(dims[k]);
        arg[2 * d] = sym_largest(src[1 + 2 * k].get());
        arg[2 * d + 1] = sym_largest(src[2 + 2 * k].get()) - arg[2 * d] - src[0]->shape()[d];
        TG_CHECK(arg[2 * d + 1] >= 0, TG_ERROR_SHAPE,
                 "realize: a pad of dim " + std::to_string(d) + " to " + sym_name(src[2 + 2 * k].get()) + " doesn't fit at the Variables' largest values");
      }
      to[u.get()] = UOp::make(u->op, u->dtype, std::move(src), std::move(arg), u->tag);
      continue;
    }
    if (!u->sym().empty() && (u->op == Ops::RESHAPE || u->op == Ops::EXPAND || u->op == Ops::SHRINK)) {
      // a symbolic dim's size becomes its largest value, so the graph is the same for every binding
      auto largest = [](const UOp* v, int64_t) { return sym_largest(v); };
      std::vector<int64_t> arg = sym_arg(u.get(), largest);
      if (u->op == Ops::SHRINK) {
        // a Variable whose range passes the dim it shrinks ((3,7)[:, :i], i in [1,10]): the view takes the whole dim and
        // is padded to the largest size, so every binding lays its buffer out the same; the kernels loop only to i
        const Shape& in = src[0]->shape();
        std::vector<int64_t> cut = arg, pad(arg.size(), 0);
        bool over = false;
        for (size_t i = 0; i < in.size(); i++)
          if (arg[2 * i + 1] > in[i]) cut[2 * i + 1] = in[i], pad[2 * i + 1] = arg[2 * i + 1] - in[i], over = true;
        if (over) {
          to[u.get()] = UOp::make(Ops::PAD, u->dtype, {UOp::make(u->op, u->dtype, std::move(src), std::move(cut), u->tag)}, std::move(pad));
          continue;
        }
      }
      to[u.get()] = UOp::make(u->op, u->dtype, std::move(src), std::move(arg), u->tag);
      continue;
    }
    if (assign_arg(u.get())) {
      n.assigns.push_back(u);
      to[u.get()] = UOp::make(Ops::ASSIGN, u->dtype, {src[0], src[1]});
    } else to[u.get()] = same ? u : u->replace_src(std::move(src));
  }
  n.sink = to.at(sink.get());
  return n;
}

static thread_local CaptureScope* g_capture = nullptr;

// Compiled programs by kernel AST (hash-consed: the pointer is the structure), device and BEAM width: BEAM is read when a
// kernel is first compiled for a device, later realizes of any schedule with that kernel reuse the program
struct ProgramKey {
  UOpRef ast;
  std::string device;
  int beam;
  bool operator==(const ProgramKey&) const = default;
};
struct ProgramKeyHash {
  size_t operator()(const ProgramKey& k) const { return hash_combine(hash_combine(UOpHash()(k.ast), std::hash<std::string>()(k.device)), size_t(k.beam)); }
};
using ProgramCache = LruCache<ProgramKey, std::shared_ptr<const CompiledRunner>, ProgramKeyHash>;
static ProgramCache& program_cache() {
  static auto* cache = new ProgramCache(size_t(getenv_int("TG_PROGRAM_CACHE", 4096)));
  return *cache;
}
static std::shared_ptr<const CompiledRunner> compile_item(const ScheduleItem& k, Device& dev) {
  auto* cache = &program_cache();
  ProgramKey key{k.ast, dev.name(), BEAM >= 1 ? int(BEAM) : 0};
  if (auto p = cache->get(key)) return *p;
  std::vector<Opt> opts;
  if (key.beam) {
    viz::Pause quiet;  // the candidates are timed, not kept
    opts = beam_opts(k.ast, k.name, dev, key.beam);
  }
  viz::KernelScope rec;
  auto prg = compile_program(k.ast, k.name, dev, key.beam ? &opts : nullptr);
  prg->viz_id = rec.commit(dev.name());
  return cache->put(key, std::move(prg));
}

// The schedule's kernels not compiled yet, compiled on several threads at once before the items are made: LLVM's code
// generation is most of a cold start (ResNet-18's 32 kernels). The cores this process may use (TG_COMPILE_THREADS
// caps them; 1 compiles in order, as a kernel is reached), each thread under the caller's Context. A kernel that fails
// here is compiled again in order, where its error reaches the caller. Not for BEAM (it times its candidates), VIZ
// (it records on the calling thread) or DEBUG >= 3 (it prints each kernel as it compiles), and only on the CPUs.
static void compile_ahead(const std::vector<std::shared_ptr<ScheduleItem>>& kernels, Device& dev) {
  static const int64_t cap = getenv_int("TG_COMPILE_THREADS", 0);
  if (BEAM >= 1 || viz::on() || DEBUG >= 3 || kernels.size() < 2 || dev.name().rfind("CPU", 0) != 0) return;
  int64_t threads = std::min<int64_t>(cpu_cores(), cap > 0 ? cap : 64);
  if (threads < 2) return;
  std::vector<const ScheduleItem*> todo;
  std::unordered_set<const UOp*> seen;
  for (auto& k : kernels)
    if (seen.insert(k->ast.get()).second && !program_cache().get(ProgramKey{k->ast, dev.name(), 0})) todo.push_back(k.get());
  if (todo.size() < 2) return;
  // the process's first compile on the calling thread: LLVM registers its passes and targets once (call_once), and an
  // exception out of that (memory running out) on another thread went through glibc's pthread_once, whose unwinding
  // then needed to load libgcc_s, and aborted the process
  static std::atomic<bool> warm{false};
  size_t first = 0;
  if (!warm.load()) {
    try {
      compile_item(*todo[0], dev);
    } catch (...) {
      return;  // compiled again in order, by the caller
    }
    warm = true, first = 1;
  }
  ContextCopy ctx;
  std::atomic<size_t> next{first};
  auto work = [&]() noexcept {
    try {
      ContextCopy::Scope scope(ctx);
      for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
        try {
          compile_item(*todo[i], dev);
        } catch (...) {  // compiled again, in order, by the caller
        }
      }
    } catch (...) {
    }
  };
  std::vector<std::thread> pool;
  try {
    for (int64_t t = 1; t < std::min<int64_t>(threads, int64_t(todo.size() - first)); t++) pool.emplace_back(work);
  } catch (...) {  // no thread to be had (a process limit): fewer helpers, or none
  }
  work();
  for (auto& t : pool) t.join();
}

Lowered lower_realize(const std::vector<UOpRef>& roots, const std::string& device) {
  auto t0 = Clock::now();
  Lowered l;
  l.device = device;
  Device& dev = get_device(device);
  // normalize: input buffers become PARAM slots, so graphs that differ only in their data share one schedule
  Normalized norm = normalize(roots);
  auto& inputs = norm.inputs;
  if (viz::on()) viz::current_graph(norm.sink);
  auto sched = get_schedule(norm.sink, norm.specs);
  l.t_schedule = since(t0);
  l.assigns = std::move(norm.assigns);

  // buffers for every slot: inputs as given, the rest new (allocated when first run)
  std::vector<std::shared_ptr<Buffer>> bufs(sched->slots.size());
  UOpMap<UOpRef> from_param;
  for (size_t i = 0; i < sched->slots.size(); i++) {
    UOpRef param = UOp::make(Ops::PARAM, sched->slots[i].first, {}, std::vector<int64_t>{int64_t(i), sched->slots[i].second});
    if (i < inputs.size()) {
      bufs[i] = buffer_of(inputs[i].get());
      from_param[param] = inputs[i];
    } else {
      bufs[i] = std::make_shared<Buffer>(device, sched->slots[i].first, sched->slots[i].second);
      from_param[param] = buffer_uop(bufs[i]);
    }
  }
  std::unordered_set<const Buffer*> movable;  // intermediates: neither an input nor behind an output
  for (size_t i = inputs.size(); i < bufs.size(); i++) movable.insert(bufs[i].get());
  for (auto& [name, v] : norm.var_vals) l.var_vals[name] = v.second;
  for (size_t r = 0; r < sched->outputs.size(); r++) {
    const UOpRef& o = sched->outputs[r];
    for (auto& u : o->toposort())
      if (u->op == Ops::PARAM) movable.erase(bufs[size_t(u->arg_ints()[0])].get());
    if (o == norm.sink->src[r]) l.outputs.push_back(roots[r]);  // a view of inputs is its own value
    else l.outputs.push_back(rebind(o->substitute(from_param), roots[r], l.var_vals));
  }
  from_param.clear();
  compile_ahead(sched->kernels, dev);
  for (auto& ki : sched->kernels) {
    ExecItem e{compile_item(*ki, dev), {}, {}, -1, {}};
    for (int s : ki->slots) e.bufs.push_back(bufs[size_t(s)]);
    e.vals = var_values(*e.prg, l.var_vals);
    l.items.push_back(std::move(e));
  }
  // a capturing JIT plans the intermediates of all its realizes together
  if (movable.size() > 1 && !g_capture) l.mem = plan_memory(l.items, [&](const Buffer* b) { return movable.count(b) > 0; });
  if (!l.items.empty()) GlobalCounters::lower_count++;
  l.t_lower = since(t0) - l.t_schedule;
  return l;
}

CaptureScope::CaptureScope() : prev(g_capture) { g_capture = this; }
CaptureScope::~CaptureScope() { g_capture = prev; }

void run_host_step(const std::string& name, std::function<void(void** bufs)> fn, std::vector<std::shared_ptr<Buffer>> bufs) {
  auto prog = std::make_shared<HostProgram>();
  prog->name = name, prog->fn = std::move(fn);
  auto k = std::make_shared<CompiledRunner>();
  k->name = name, k->prog = std::move(prog), k->host = true, k->nbufs = bufs.size();
  ExecItem e{std::move(k), std::move(bufs)};
  auto t0 = std::chrono::steady_clock::now();
  e.run();
  e.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (DEBUG >= 2) std::fprintf(stderr, "*** HOST %-28s tm %10.2fus\n", name.c_str(), e.time_s * 1e6);
  if (g_capture) g_capture->items.push_back(std::move(e));
}

void copy_step(std::shared_ptr<Buffer> dst, std::shared_ptr<Buffer> src, size_t doff, size_t soff, size_t n) {
  if (n == SIZE_MAX) n = src->nbytes();
  TG_CHECK(soff <= src->nbytes() && n <= src->nbytes() - soff && doff <= dst->nbytes() && n <= dst->nbytes() - doff, TG_ERROR_INTERNAL,
           strformat("copy: bytes [%zu, %zu) of %zu into [%zu, ...) of %zu", soff, soff + n, src->nbytes(), doff, dst->nbytes()));
  Device &dd = dst->dev(), &sd = src->dev();
  run_host_step("copy " + sd.name() + " -> " + dd.name(), [&dd, &sd, doff, soff, n](void** p) {
    copy_between(dd, p[0], doff, sd, p[1], soff, n);
    if (&dd != &sd) GlobalCounters::copy_count++, GlobalCounters::copy_bytes += n;
  }, {std::move(dst), std::move(src)});
}

void run_lowered(Lowered& l) {
  Device& dev = get_device(l.device);
  double t_run = 0;
  for (auto& e : l.items) {
    const CompiledRunner& k = *e.prg;
    if (DEBUG >= 3)
      for (size_t i = 0; i < e.bufs.size(); i++)
        std::fprintf(stderr, "  %s buf%zu: %s[%lld] %s\n", k.name.c_str(), i, e.bufs[i]->dtype().name().c_str(), (long long)e.bufs[i]->size(),
                     i == 0 ? "(out)" : "(in)");
    double st = viz::on() ? viz::now_us() : 0;
    auto t1 = Clock::now();
    e.run();
    dev.synchronize();  // each kernel timed (a jit replay is where GPU kernels run back to back)
    double dt = e.time_s = since(t1);
    if (viz::on()) viz_launch(k, l.device, st, st + dt * 1e6);
    t_run += dt;
    count_kernel(k, dt);
    if (DEBUG >= 2)
      std::fprintf(stderr, "*** %-4s %6llu %-28s arg %2zu mem %6.3f GB tm %10.2fus (%9.2f GFLOPS %7.2f GB/s)\n", l.device.c_str(),
                   (unsigned long long)GlobalCounters::kernel_count.load(), k.name.c_str(), e.bufs.size(), double(GlobalCounters::global_mem.load()) * 1e-9,
                   dt * 1e6, double(k.ops) / dt * 1e-9, double(k.mem) / dt * 1e-9);
  }
  for (auto& a : l.assigns) assign_arg(a.get())->done = true;
  if (g_capture) g_capture->items.insert(g_capture->items.end(), l.items.begin(), l.items.end());
  if (DEBUG >= 1 && !l.items.empty())
    std::fprintf(stderr, "realize: %zu kernel%s, schedule %.3f ms, lower %.3f ms, run %.3f ms, intermediates %zu in %.3f MB (of %.3f MB)\n",
                 l.items.size(), l.items.size() == 1 ? "" : "s", l.t_schedule * 1e3, l.t_lower * 1e3, t_run * 1e3, l.mem.buffers,
                 double(l.mem.peak_bytes) * 1e-6, double(l.mem.total_bytes) * 1e-6);
}

std::vector<UOpRef> realize_uops(const std::vector<UOpRef>& roots, const std::string& device) {
  viz::RealizeScope rec("realize");
  Lowered l = lower_realize(roots, device);
  run_lowered(l);
  return std::move(l.outputs);
}

}  // namespace tg
