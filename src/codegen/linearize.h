// Codegen: lower a kernel AST (SINK of STOREs with REDUCE nodes over RANGEs) to a linear program with loops.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace tg {

// A linear program: RANGE opens a loop, END closes it; DEFINE_REG declares an accumulator (src: its initial value);
// STORE to a DEFINE_REG updates it and LOAD of one reads it. Every other node is computed once where it is listed.
struct LinearProgram {
  std::string name;
  UOps globals;  // DEFINE_GLOBALs by arg index
  UOps uops;
  UOps vars;            // DEFINE_VARs in the order of the entry's `vars` array
  int64_t threads = 1;  // the kernel runs once for each value of its `core_id` var in [0, threads) (THREAD)
  UOpMap<UOpRef> reduce_acc;  // REDUCE node -> the DEFINE_REG holding its result
  UOpMap<UOps> reduce_lanes;  // a vector REDUCE kept as one scalar DEFINE_REG per lane: GEP(REDUCE, i) reads lane i's
  uint64_t ops = 0;  // estimated arithmetic ops of one thread or work-item (get_program scales it to the whole launch)
  uint64_t mem = 0;  // bytes of the buffers it touches
};
// `vector_acc(dt)`: whether the target holds a vector accumulator of dt; if not (GPUs), a vector REDUCE keeps one
// scalar accumulator per lane. Null: it does.
LinearProgram linearize(const UOpRef& ast, const std::string& name, const std::function<bool(DType)>& vector_acc = nullptr);
double reduce_identity(Ops op, DType dt);

}  // namespace tg
