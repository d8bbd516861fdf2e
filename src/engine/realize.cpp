#include "engine/realize.h"

#include <chrono>

#include "codegen/codegen.h"
#include "codegen/opt/beam.h"
#include "renderer/renderer.h"
#include "runtime/threadpool.h"
#include "schedule/schedule.h"
#include "tensor/tensor.h"

namespace tg {

using Clock = std::chrono::steady_clock;
static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::shared_ptr<CompiledKernel> compile_program(const UOpRef& ast, const std::string& name, Device& dev, const std::vector<Opt>* opts) {
  if (DEBUG >= 3) std::fprintf(stderr, "=== kernel %s AST ===\n%s", name.c_str(), ast->str().c_str());
  return compile_spec(get_program(ast, name, dev.renderer(), opts), dev);
}

std::shared_ptr<CompiledKernel> compile_spec(ProgramSpec p, Device& dev) {
  auto c = std::make_shared<CompiledKernel>();
  c->name = p.name, c->src = std::move(p.src), c->vars = p.vars, c->threads = p.threads, c->ops = p.ops, c->mem = p.mem;
  if (DEBUG >= 4) std::fprintf(stderr, "=== kernel %s source ===\n%s", c->name.c_str(), c->src.c_str());
  for (size_t i = 0; i < c->vars.size(); i++)
    if (c->vars[i]->argv<VarArg>().name == "core_id") c->core_var = int(i);
  c->prog = dev.compiler().compile(c->name, c->src);
  return c;
}

void run_kernel(const CompiledKernel& k, void** bufs) {
  int64_t vars[8] = {};  // only core_id so far; symbolic shapes bind more
  launch(*k.prog, bufs, vars, k.vars.size(), k.threads, k.core_var);
}

Normalized normalize(const std::vector<UOpRef>& roots) {
  Normalized n;
  UOpRef sink = UOp::sink(roots);
  UOpMap<UOpRef> to_param;
  for (auto& u : sink->toposort())
    if (u->op == Ops::BUFFER) {
      to_param[u] = UOp::make(Ops::PARAM, u->dtype, {}, std::vector<int64_t>{int64_t(n.inputs.size()), std::get<int64_t>(u->arg)});
      n.inputs.push_back(u), n.specs.emplace_back(u->dtype, std::get<int64_t>(u->arg));
    }
  n.sink = sink->substitute(to_param);
  return n;
}

static const CompiledKernel& compile_kernel(const KernelItem& k, Device& dev) {
  std::lock_guard<std::mutex> lk(k.mu);
  // BEAM is read when a kernel is first compiled for a device and beam width; later realizes reuse that program
  auto& slot = k.compiled[BEAM >= 1 ? strformat("%s BEAM=%d", dev.name().c_str(), int(BEAM)) : dev.name()];
  if (slot) return *slot;
  std::vector<Opt> opts;
  if (BEAM >= 1) opts = beam_opts(k.ast, k.name, dev, int(BEAM));
  slot = compile_program(k.ast, k.name, dev, BEAM >= 1 ? &opts : nullptr);
  return *slot;
}

std::vector<UOpRef> realize_uops(const std::vector<UOpRef>& roots, const std::string& device) {
  auto t0 = Clock::now();
  Device& dev = get_device(device);
  // normalize: input buffers become PARAM slots, so graphs that differ only in their data share one schedule
  Normalized norm = normalize(roots);
  auto& inputs = norm.inputs;
  auto sched = get_schedule(norm.sink, norm.specs);
  double t_sched = since(t0);

  // buffers for every slot: inputs as given, the rest new
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
  double t_run = 0;
  for (auto& ki : sched->kernels) {
    const CompiledKernel* k = &compile_kernel(*ki, dev);
    std::vector<void*> ptrs;
    for (int s : ki->slots) ptrs.push_back(bufs[size_t(s)]->ptr());
    if (DEBUG >= 3)
      for (size_t i = 0; i < ki->slots.size(); i++)
        std::fprintf(stderr, "  %s buf%zu: %s[%lld] %s\n", k->name.c_str(), i, bufs[size_t(ki->slots[i])]->dtype().name().c_str(),
                     (long long)bufs[size_t(ki->slots[i])]->size(), i == 0 ? "(out)" : "(in)");
    auto t1 = Clock::now();
    run_kernel(*k, ptrs.data());
    dev.synchronize();
    double dt = since(t1);
    t_run += dt;
    GlobalCounters::kernel_count++, GlobalCounters::global_ops += k->ops, GlobalCounters::global_mem += k->mem;
    for (double cur = GlobalCounters::time_sum_s.load(); !GlobalCounters::time_sum_s.compare_exchange_weak(cur, cur + dt);) {
    }
    if (DEBUG >= 2)
      std::fprintf(stderr, "*** %-4s %6llu %-28s arg %2zu mem %6.3f GB tm %10.2fus (%9.2f GFLOPS %7.2f GB/s)\n", device.c_str(),
                   (unsigned long long)GlobalCounters::kernel_count.load(), k->name.c_str(), ki->slots.size(), double(GlobalCounters::global_mem.load()) * 1e-9,
                   dt * 1e6, double(k->ops) / dt * 1e-9, double(k->mem) / dt * 1e-9);
  }
  if (DEBUG >= 1 && !sched->kernels.empty())
    std::fprintf(stderr, "realize: %zu kernel%s, schedule %.3f ms, run %.3f ms\n", sched->kernels.size(), sched->kernels.size() == 1 ? "" : "s", t_sched * 1e3,
                 t_run * 1e3);
  std::vector<UOpRef> outs;
  for (auto& o : sched->outputs) outs.push_back(o->substitute(from_param));
  return outs;
}

}  // namespace tg
