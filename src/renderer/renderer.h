// Renderer: a target's facts (what the optimizer, heuristics and late lowering may use) and linear program -> source.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "codegen/linearize.h"

namespace tg {

struct TensorCore {  // D(M,N) = A(M,K) * B(K,N) + C(M,N) across `threads` lanes
  std::array<int64_t, 3> dims;  // N, M, K
  int64_t threads;
  DType dtype_in, dtype_out;
};

struct Target {
  std::string device;
  bool has_local = false, has_shared = false, has_threads = false;
  std::array<int64_t, 3> global_max{0, 0, 0}, local_max{0, 0, 0};
  int64_t shared_max = 0;
  int64_t local_threads_max = 0;  // work-items in one work-group (GPUs)
  int warp_size = 1;              // work-items that execute together (32 on NVIDIA)
  int vector_bytes = 16;  // the widest vector register: loads, stores and ALU vectors are sized to it
  std::vector<TensorCore> tensor_cores;
};

class Renderer {
 public:
  virtual ~Renderer() = default;
  virtual const Target& target() const = 0;
  virtual std::string render(const LinearProgram& lp) const = 0;
  // whether a vector value of `dt` made by `op` is rendered as a vector; the devectorizer splits the rest into lanes
  virtual bool holds_vector(Ops op, DType dt) const = 0;
  // whether `op` on `dt` (scalar or vector) is rendered as is; late lowering decomposes the rest (EXP2/LOG2/SIN)
  virtual bool native_op(Ops op, DType dt) const { return true; }
};

Target cpu_target(const std::string& device);

}  // namespace tg
