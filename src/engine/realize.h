// Engine: a realize schedules the roots' graphs (through the schedule cache), lowers the schedule to ExecItems (a
// compiled program, its buffers, its variable values), plans the intermediate buffers' memory, then runs the items.
// The list of items is what TinyJit captures and replays, and what tg_plan shows a C caller.
#pragma once
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <string>
#include <vector>

#include "uop/uop.h"

#include "codegen/runner.h"
#include "schedule/schedule.h"

namespace tg {
// A graph whose input buffers are PARAM slots (what the schedule cache keys on), and the BUFFER node of each slot.
// Assigns already done are their buffers; pending ones lose their identity (so one step's graph equals the next's).
struct Normalized {
  UOpRef sink;
  std::vector<UOpRef> inputs;
  std::vector<std::pair<DType, int64_t>> specs;
  std::vector<UOpRef> assigns;  // the pending assigns: marked done once their kernels ran
  std::unordered_map<std::string, std::pair<const UOp*, int64_t>> var_vals;  // Variable name -> (DEFINE_VAR, bound value)
};
Normalized normalize(const std::vector<UOpRef>& roots);
void count_kernel(const CompiledRunner& k, double seconds);  // GlobalCounters for one launch
// VIZ: one launch of `k` on `device` from st_us to en_us (viz::now_us); call only while recording
void viz_launch(const CompiledRunner& k, const std::string& device, double st_us, double en_us);
// a kernel's variable values from the bound Variables (core_id is set at launch)
std::vector<int64_t> var_values(const CompiledRunner& k, const std::unordered_map<std::string, int64_t>& var_vals);

// One kernel launch: the program, the buffers it takes (output first) and the values of its variables.
struct ExecItem {
  std::shared_ptr<const CompiledRunner> prg;
  std::vector<std::shared_ptr<Buffer>> bufs;
  std::vector<int64_t> vals;  // one per program variable (core_id is set per launch)
  double time_s = -1;         // of the last run
  std::vector<void*> ptrs;    // the buffers' addresses at the last run
  void run();     // with the buffers' current addresses
  void launch();  // with `ptrs` as they are (a JIT replay patches only its inputs' entries)
};

// What the memory planner did: the intermediate buffers' total size and the arena they now share.
struct MemoryPlan {
  size_t buffers = 0, total_bytes = 0, peak_bytes = 0;
};
// Buffers of `items` that `movable` accepts and whose first use is as a kernel's output share arenas (one per device):
// two share bytes only if no item lies in both lifetimes. Replaces them in `items` with views.
MemoryPlan plan_memory(std::vector<ExecItem>& items, const std::function<bool(const Buffer*)>& movable);

// A realize, lowered and not yet run.
struct Lowered {
  std::string device;
  std::vector<ExecItem> items;
  std::vector<UOpRef> outputs;  // per root: its realized value (a view of a buffer)
  std::vector<UOpRef> assigns;
  std::unordered_map<std::string, int64_t> var_vals;  // the bound Variables' values
  MemoryPlan mem;
  double t_schedule = 0, t_lower = 0;
};
Lowered lower_realize(const std::vector<UOpRef>& roots, const std::string& device);
// Runs the items in order, timing each; marks the assigns done and hands the items to a capturing JIT.
void run_lowered(Lowered& l);
std::vector<UOpRef> realize_uops(const std::vector<UOpRef>& roots, const std::string& device);

// A step the host runs between kernels, on the buffers' handles (bufs[0] the output where it has one): a collective over
// MPI, a copy between devices. It runs as an ExecItem, so a capturing JIT records it in order with the kernels and every
// replay runs it again.
struct HostProgram : Program {
  std::function<void(void** bufs)> fn;
  void launch(void** bufs, const int64_t*, size_t, const LaunchDims&) const override { fn(bufs); }
};
// runs `fn` as an item named `name` on `bufs` now, and appends it to this thread's capture if one is on
void run_host_step(const std::string& name, std::function<void(void** bufs)> fn, std::vector<std::shared_ptr<Buffer>> bufs);
// n bytes of src from byte soff to dst from byte doff (any two devices; the whole of src into dst by default) as a host
// step: a TinyJit replays the copy with the buffers of that call. A copy between two devices is counted in
// GlobalCounters::copy_count and copy_bytes, replays too.
void copy_step(std::shared_ptr<Buffer> dst, std::shared_ptr<Buffer> src, size_t doff = 0, size_t soff = 0, size_t n = SIZE_MAX);

// While one is set on a thread, every realize on that thread appends the items it ran (TinyJit's capture).
struct CaptureScope {
  std::vector<ExecItem> items;
  CaptureScope* prev;
  CaptureScope();
  ~CaptureScope();
};
}  // namespace tg
