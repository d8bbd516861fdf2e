// Renderer: linear program -> C source. One C-style renderer; CUDA/OpenCL dialects will share it.
#pragma once
#include <string>

#include "renderer/renderer.h"

namespace tg {
// C source with the kernel function and `void tg_entry(void** bufs, const int64_t* vars)` that calls it.
class CStyleRenderer : public Renderer {
 public:
  explicit CStyleRenderer(Target t) : target_(std::move(t)) {}
  const Target& target() const override { return target_; }
  std::string render(const LinearProgram& lp) const override;
  bool holds_vector(Ops op, DType dt) const override;
  // exp2/log2/sin as the same polynomials the LLVM renderer uses, so both CPU paths give the same bits
  bool native_op(Ops op, DType dt) const override { return !((op == Ops::EXP2 || op == Ops::LOG2 || op == Ops::SIN) && dtypes::is_float(dt)); }

 private:
  Target target_;
};
}  // namespace tg
