// Engine: run schedules. realize_uops schedules the graphs of `roots` (through the schedule cache), allocates the new
// buffers, compiles (cached) and runs every kernel in order, and returns each root's realized graph.
#pragma once
#include <string>
#include <vector>

#include "uop/uop.h"

#include "codegen/codegen.h"
#include "schedule/schedule.h"

namespace tg {
// A graph whose input buffers are PARAM slots (what the schedule cache keys on), and the BUFFER node of each slot.
struct Normalized {
  UOpRef sink;
  std::vector<UOpRef> inputs;
  std::vector<std::pair<DType, int64_t>> specs;
};
Normalized normalize(const std::vector<UOpRef>& roots);
// A kernel AST made runnable on `dev`: with `opts` if given, else the heuristics (NOOPT=1: none).
std::shared_ptr<CompiledKernel> compile_program(const UOpRef& ast, const std::string& name, Device& dev, const std::vector<Opt>* opts);
// A rendered program compiled for `dev` (compile_program's second half; BEAM renders first to skip duplicate sources).
std::shared_ptr<CompiledKernel> compile_spec(ProgramSpec p, Device& dev);
void run_kernel(const CompiledKernel& k, void** bufs);  // one launch (THREAD kernels on the worker pool), synchronous on the CPU
std::vector<UOpRef> realize_uops(const std::vector<UOpRef>& roots, const std::string& device);
}
