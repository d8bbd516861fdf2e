// Schedule: turn a tensor-level graph into an ordered list of kernels (rangeify + fusion), cached by graph structure.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace tg {

// One kernel: its AST (SINK of STOREs over DEFINE_GLOBALs numbered 0..n) and which schedule slot each global is.
struct ScheduleItem {
  UOpRef ast;
  std::vector<int> slots;
  std::string name;
};

// The schedule of a normalized graph: input buffers are PARAM(slot) nodes; slots past the inputs are new buffers.
struct Schedule {
  int n_inputs = 0;
  std::vector<std::pair<DType, int64_t>> slots;  // dtype and size of every slot
  std::vector<std::shared_ptr<ScheduleItem>> kernels;
  std::vector<UOpRef> outputs;  // per root: the realized value as a graph over PARAM slots
};

// Schedules `sink` (SINK of tensor-level roots whose buffers are PARAM nodes 0..n_inputs-1).
std::shared_ptr<const Schedule> create_schedule(const UOpRef& sink, const std::vector<std::pair<DType, int64_t>>& inputs);
// create_schedule through the cache keyed by the (hash-consed) normalized sink.
std::shared_ptr<const Schedule> get_schedule(const UOpRef& sink, const std::vector<std::pair<DType, int64_t>>& inputs);
size_t schedule_cache_size();

}  // namespace tg
