// A kernel made runnable on one device: the rendered program compiled and loaded, with how to launch it.
#pragma once
#include <atomic>
#include <array>
#include <memory>
#include <string>

#include "codegen/codegen.h"
#include "runtime/device.h"

namespace tg {

struct CompiledRunner {
  std::string name, src;  // the optimized kernel's name and generated source
  UOpRef ast;             // the kernel before optimization (the C export renders it again for its target)
  std::shared_ptr<Program> prog;
  UOps vars;  // the entry's variables (core_id for THREAD)
  int64_t threads = 1;
  int core_var = -1;
  size_t nbufs = 0;  // buffer parameters
  std::array<UOpRef, 3> global_size, local_size;  // a GPU launch's grid, as expressions of the variables (null: 1)
  uint64_t ops = 0, mem = 0;
  bool host = false;  // a step the host runs between kernels (a collective over MPI): no AST, no source, no device graph
  mutable std::atomic<int> viz_id{-1};  // its VIZ record (made at its first launch while recording if not compiled then)
  LaunchDims dims(const int64_t* vals) const;  // the launch for these variable values
};

// A kernel AST made runnable on `dev`: with `opts` if given, else the heuristics (NOOPT=1: none).
std::shared_ptr<CompiledRunner> compile_program(const UOpRef& ast, const std::string& name, Device& dev, const std::vector<Opt>* opts);
// A rendered program compiled for `dev` (compile_program's second half; BEAM renders first to skip duplicate sources).
std::shared_ptr<CompiledRunner> compile_spec(ProgramSpec p, Device& dev);
// one launch, waited for, with every Variable at its largest value (the binding BEAM times a symbolic kernel at); its
// duration in seconds (the device's events where it has them)
double run_kernel(const CompiledRunner& k, void** bufs);

}  // namespace tg
