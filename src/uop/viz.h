// VIZ recording: what graph_rewrite, the kernel compiler and the launches did, kept for the viewer (src/viz/).
// Off by default (VIZ=1 or tg_viz_enable turn it on). Off, every hook is one relaxed atomic load. On, a record holds
// references to the (immutable, hash-consed) UOps it saw, so recording copies no graphs: the viewer rebuilds each
// step's graph from them when it is asked for one. The last `capacity` realizes are kept, with their kernels, rewrites
// and launches; older ones are dropped whole.
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace tg::viz {

extern std::atomic<bool> g_on;
inline bool on() { return g_on.load(std::memory_order_relaxed); }
void enable(bool on);  // VIZ=1 in the environment turns it on at load
// `f` runs at exit (std::atexit, registered when the first realize is recorded, so after the statics it needs exist)
void set_exit_hook(void (*f)());

constexpr size_t kMaxSteps = 2000;  // kept per rewrite: a runaway symbolic rewrite keeps its first steps and a count

// A matcher's rules as the viewer names them: "<matcher> #<index> <pattern>" and "src/uop/symbolic.cpp:88" (or "").
struct RuleLabels {
  std::vector<std::string> label, loc;
};
struct Step {  // one rule application inside a graph_rewrite
  UOpRef before, after;
  const RuleLabels* rules;
  uint32_t rule;
};
struct Rewrite {
  std::string name;
  UOpRef input, output;
  std::vector<Step> steps;
  size_t dropped = 0;                                   // steps past the cap, not kept
  std::vector<std::shared_ptr<const RuleLabels>> keep;  // the label tables `steps` point into
};
struct Kernel {
  int id = -1, realize = -1;
  std::string name, device, src;
  std::vector<std::string> opts;
  uint64_t flops = 0, bytes = 0;
  std::deque<Rewrite> rewrites;  // "ast" first, then every named graph_rewrite and stage, "linearize" last
};
struct Launch {
  std::string device, name;
  int kernel = -1, realize = -1;
  double st_us = 0, en_us = 0;
  uint64_t bytes = 0, flops = 0;
};
struct Realize {
  int id = -1;
  std::string name;
  double t_us = 0;
  UOpRef graph;                   // the tensor graph scheduled (null for a JIT replay)
  std::deque<Rewrite> rewrites;  // the scheduler's named rewrites
  std::vector<std::shared_ptr<Kernel>> kernels;  // compiled in this realize
  std::vector<Launch> launches;
  size_t launches_dropped = 0;
};
struct MemEvent {
  std::string device;
  double t_us;
  int64_t bytes;  // in use on the device after this event
};

// The recorded data, copied out under the lock (records are immutable once committed; their UOps are shared).
struct Snapshot {
  size_t capacity = 0;
  std::vector<std::shared_ptr<const Realize>> realizes;
  std::vector<MemEvent> memory;
};
Snapshot snapshot();
void clear();
void set_capacity(size_t n);  // realizes kept (VIZ_CAPACITY, default 64); at least 1
double now_us();              // since the recorder started

// ---- hooks (all no-ops when off) ----
// A realize (or a JIT replay): rewrites, kernels and launches on this thread until it ends belong to it.
class RealizeScope {
 public:
  explicit RealizeScope(const char* name);
  ~RealizeScope();

 private:
  std::shared_ptr<Realize> r_;
  std::shared_ptr<Realize>* prev_ = nullptr;  // the enclosing scope's record (restored at the end)
};
void current_graph(const UOpRef& g);  // the tensor graph the current realize schedules

// A kernel being compiled: the graph_rewrites and stages on this thread until commit belong to it.
class KernelScope {
 public:
  KernelScope();
  ~KernelScope();
  int commit(const std::string& device);  // the kernel compiled: its id (-1 when off)

 private:
  std::shared_ptr<Kernel> k_;
  std::shared_ptr<Kernel>* prev_ = nullptr;
};
// A kernel launched while recording that was compiled before (or whose record is gone): its AST and source, no steps.
bool kernel_kept(int id);  // a kernel id's record is still there (not dropped from the ring or cleared)
int kernel_seen(const std::string& name, const std::string& device, const std::string& src, const UOpRef& ast, uint64_t flops, uint64_t bytes);

// Recording stops on this thread while one lives (BEAM's candidates are compiled and timed, not kept).
class Pause {
 public:
  Pause();
  ~Pause();

 private:
  bool was_;
};

// The compiler's side, inside a KernelScope: a lowering step done by code rather than rules (recorded when it changed
// the graph and no named graph_rewrite inside it was, or `always`), and the program it made.
size_t kernel_rewrites();
void stage(const char* name, const UOpRef& in, const UOpRef& out, size_t rewrites_before, bool always = false);
void kernel_program(const std::string& name, const std::string& src, std::vector<std::string> opts, uint64_t flops, uint64_t bytes, const UOpRef& ast,
                    const UOpRef& linear);

// graph_rewrite's side: a rewrite named `stage` starts; rule hits go to the returned record (null: not recorded).
// The record stays where it is while later rewrites are added (a deque), so nested rewrites may record too.
Rewrite* begin_rewrite(const char* stage, const UOpRef& input);
void add_step(Rewrite* r, const UOp* before, const UOpRef& after, const std::shared_ptr<const RuleLabels>& rules, uint32_t rule);
void end_rewrite(Rewrite* r, const UOpRef& output);
void launch(const std::string& device, const std::string& name, int kernel, double st_us, double en_us, uint64_t bytes, uint64_t flops);
void memory(const std::string& device, int64_t delta);

}  // namespace tg::viz
