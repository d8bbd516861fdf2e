// Schedule: turn a tensor-level graph into an ordered list of kernels (rangeify + fusion), cached by graph structure.
#pragma once
#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/device.h"
#include "uop/uop.h"

namespace tg {

// A kernel made runnable for one device: the program and how to launch it.
struct CompiledKernel {
  std::string name, src;  // the optimized kernel's name and generated source
  std::shared_ptr<Program> prog;
  UOps vars;  // the entry's variables (core_id for THREAD)
  int64_t threads = 1;
  int core_var = -1;
  size_t nbufs = 0;  // buffer parameters
  std::array<UOpRef, 3> global_size, local_size;  // a GPU launch's grid, as expressions of the variables (null: 1)
  uint64_t ops = 0, mem = 0;
  LaunchDims dims(const int64_t* vals) const;  // the launch for these variable values
};

// One kernel: its AST (SINK of STOREs over DEFINE_GLOBALs numbered 0..n) and which schedule slot each global is.
struct KernelItem {
  UOpRef ast;
  std::vector<int> slots;
  std::string name;
  // filled on first run on each device: kernels are shared by every use of a cached schedule
  mutable std::mutex mu;
  mutable std::unordered_map<std::string, std::shared_ptr<const CompiledKernel>> compiled;
};

// The schedule of a normalized graph: input buffers are PARAM(slot) nodes; slots past the inputs are new buffers.
struct Schedule {
  int n_inputs = 0;
  std::vector<std::pair<DType, int64_t>> slots;  // dtype and size of every slot
  std::vector<std::shared_ptr<KernelItem>> kernels;
  std::vector<UOpRef> outputs;  // per root: the realized value as a graph over PARAM slots
};

// Schedules `sink` (SINK of tensor-level roots whose buffers are PARAM nodes 0..n_inputs-1).
std::shared_ptr<const Schedule> create_schedule(const UOpRef& sink, const std::vector<std::pair<DType, int64_t>>& inputs);
// create_schedule through the cache keyed by the (hash-consed) normalized sink.
std::shared_ptr<const Schedule> get_schedule(const UOpRef& sink, const std::vector<std::pair<DType, int64_t>>& inputs);
size_t schedule_cache_size();

}  // namespace tg
