#include "uop/viz.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace tg::viz {
namespace {
const auto t_start = std::chrono::steady_clock::now();
constexpr size_t kMaxLaunches = 100000;  // per realize
constexpr size_t kMaxMemEvents = 200000;

struct Store {
  std::mutex mu;
  size_t capacity = size_t(getenv_int("VIZ_CAPACITY", 64));  // checked: 1..2^20
  std::deque<std::shared_ptr<const Realize>> realizes;
  std::deque<MemEvent> memory;
  std::unordered_map<std::string, int64_t> in_use;
  std::unordered_set<int> kept;  // kernel ids with a record (kept, or in a realize still running)
  int next_realize = 0, next_kernel = 0;
};
Store& store() {
  static Store* s = new Store;  // never destroyed: the at-exit viewer reads it after static destructors may have run
  return *s;
}

thread_local std::shared_ptr<Realize>* t_realize_rec = nullptr;
thread_local std::shared_ptr<Kernel>* t_kernel = nullptr;
thread_local bool t_paused = false;

void drop_old(Store& s) {  // under s.mu
  while (s.realizes.size() > s.capacity) {
    for (auto& k : s.realizes.front()->kernels) s.kept.erase(k->id);
    s.realizes.pop_front();
  }
}
int new_kernel_id() {
  Store& s = store();
  std::lock_guard lk(s.mu);
  s.kept.insert(s.next_kernel);
  return s.next_kernel++;
}

void (*g_exit_hook)() = nullptr;
std::once_flag g_exit_once;

void commit_realize(std::shared_ptr<Realize> r) {
  if (g_exit_hook) std::call_once(g_exit_once, [] { std::atexit(g_exit_hook); });
  Store& s = store();
  std::lock_guard lk(s.mu);
  s.realizes.push_back(std::move(r));
  drop_old(s);
}
}  // namespace

std::atomic<bool> g_on{getenv_int("VIZ", 0) >= 1};
void enable(bool on) { g_on.store(on); }
void set_exit_hook(void (*f)()) { g_exit_hook = f; }
double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t_start).count(); }

Snapshot snapshot() {
  Store& s = store();
  std::lock_guard lk(s.mu);
  return {s.capacity, {s.realizes.begin(), s.realizes.end()}, {s.memory.begin(), s.memory.end()}};
}
void clear() {
  Store& s = store();
  std::lock_guard lk(s.mu);
  s.realizes.clear(), s.memory.clear(), s.in_use.clear(), s.kept.clear();
}
void set_capacity(size_t n) {
  Store& s = store();
  std::lock_guard lk(s.mu);
  s.capacity = std::max<size_t>(n, 1);
  drop_old(s);
}

RealizeScope::RealizeScope(const char* name) {
  if (!on() || t_paused) return;
  r_ = std::make_shared<Realize>();
  {
    Store& s = store();
    std::lock_guard lk(s.mu);
    r_->id = s.next_realize++;
  }
  r_->name = std::string(name) + " " + std::to_string(r_->id);
  r_->t_us = now_us();
  prev_ = t_realize_rec, t_realize_rec = &r_;
}
RealizeScope::~RealizeScope() {
  if (!r_) return;
  t_realize_rec = prev_;
  commit_realize(std::move(r_));
}
void current_graph(const UOpRef& g) {
  if (t_realize_rec) (*t_realize_rec)->graph = g;
}

KernelScope::KernelScope() {
  if (!on() || t_paused) return;
  k_ = std::make_shared<Kernel>();
  prev_ = t_kernel, t_kernel = &k_;
}
KernelScope::~KernelScope() {
  if (t_kernel == &k_) t_kernel = prev_;  // a compile that threw: nothing committed
}
size_t kernel_rewrites() { return t_kernel && *t_kernel ? (*t_kernel)->rewrites.size() : 0; }
void stage(const char* name, const UOpRef& in, const UOpRef& out, size_t rewrites_before, bool always) {
  if (!t_kernel || !*t_kernel || in == out) return;
  auto& rw = (*t_kernel)->rewrites;
  if (rw.size() != rewrites_before && !always) return;
  Rewrite r;
  r.name = name, r.input = in, r.output = out;
  rw.insert(rw.begin() + std::ptrdiff_t(std::min(rewrites_before, rw.size())), std::move(r));  // before the rewrites it ran
}
void kernel_program(const std::string& name, const std::string& src, std::vector<std::string> opts, uint64_t flops, uint64_t bytes, const UOpRef& ast,
                    const UOpRef& linear) {
  if (!t_kernel || !*t_kernel) return;
  Kernel& k = **t_kernel;
  k.name = name, k.src = src, k.opts = std::move(opts), k.flops = flops, k.bytes = bytes;
  Rewrite a;
  a.name = "ast", a.input = a.output = ast;
  k.rewrites.push_front(std::move(a));
  Rewrite l;
  l.name = "linearize", l.input = l.output = linear;
  k.rewrites.push_back(std::move(l));
}
int KernelScope::commit(const std::string& device) {
  if (!k_ || k_->name.empty()) return -1;
  Kernel& k = *k_;
  k.id = new_kernel_id();
  k.device = device;
  int id = k.id;
  t_kernel = prev_;
  if (t_realize_rec) {
    k.realize = (*t_realize_rec)->id;
    (*t_realize_rec)->kernels.push_back(std::move(k_));
  } else {  // compiled outside a realize (a plan, an export): an entry of its own
    RealizeScope rs("compile");
    if (t_realize_rec) k.realize = (*t_realize_rec)->id, (*t_realize_rec)->kernels.push_back(std::move(k_));
  }
  k_.reset();
  return id;
}

bool kernel_kept(int id) {
  Store& s = store();
  std::lock_guard lk(s.mu);
  return s.kept.count(id) > 0;
}
int kernel_seen(const std::string& name, const std::string& device, const std::string& src, const UOpRef& ast, uint64_t flops, uint64_t bytes) {
  if (!on() || t_paused || !t_realize_rec) return -1;
  auto k = std::make_shared<Kernel>();
  k->id = new_kernel_id();
  k->realize = (*t_realize_rec)->id, k->name = name, k->device = device, k->src = src, k->flops = flops, k->bytes = bytes;
  Rewrite a;
  a.name = "ast (compiled before recording began)", a.input = a.output = ast;
  k->rewrites.push_back(std::move(a));
  int id = k->id;
  (*t_realize_rec)->kernels.push_back(std::move(k));
  return id;
}

Pause::Pause() : was_(t_paused) { t_paused = true; }
Pause::~Pause() { t_paused = was_; }

Rewrite* begin_rewrite(const char* stage, const UOpRef& input) {
  if (!on() || t_paused || !stage || !std::strcmp(stage, "simplify")) return nullptr;
  std::deque<Rewrite>* into = t_kernel && *t_kernel ? &(*t_kernel)->rewrites : t_realize_rec ? &(*t_realize_rec)->rewrites : nullptr;
  if (!into) return nullptr;
  Rewrite r;
  r.name = stage, r.input = input;
  into->push_back(std::move(r));
  return &into->back();
}
void add_step(Rewrite* r, const UOp* before, const UOpRef& after, const std::shared_ptr<const RuleLabels>& rules, uint32_t rule) {
  if (r->steps.size() >= kMaxSteps) {
    r->dropped++;
    return;
  }
  if (r->keep.empty() || r->keep.back() != rules) r->keep.push_back(rules);
  r->steps.push_back({before->ref(), after, rules.get(), rule});
}
void end_rewrite(Rewrite* r, const UOpRef& output) {
  if (!r) return;
  r->output = output;
  // a rewrite that changed nothing says nothing: drop it when it is still the last record (it is, unless one nested)
  if (r->steps.empty() && r->dropped == 0 && output == r->input) {
    std::deque<Rewrite>* from = t_kernel && *t_kernel ? &(*t_kernel)->rewrites : t_realize_rec ? &(*t_realize_rec)->rewrites : nullptr;
    if (from && !from->empty() && &from->back() == r) from->pop_back();
  }
}
void launch(const std::string& device, const std::string& name, int kernel, double st_us, double en_us, uint64_t bytes, uint64_t flops) {
  if (!on() || !t_realize_rec) return;
  Realize& r = **t_realize_rec;
  if (r.launches.size() >= kMaxLaunches) {
    r.launches_dropped++;
    return;
  }
  r.launches.push_back({device, name, kernel, r.id, st_us, en_us, bytes, flops});
}
void memory(const std::string& device, int64_t delta) {
  if (!on()) return;
  double t = now_us();
  Store& s = store();
  std::lock_guard lk(s.mu);
  int64_t& u = s.in_use[device];
  u += delta;
  s.memory.push_back({device, t, u});
  if (s.memory.size() > kMaxMemEvents) s.memory.pop_front();
}

}  // namespace tg::viz
