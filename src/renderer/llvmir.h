// Renderer: linear program -> textual LLVM IR (LLVM 19, opaque pointers) for the in-process CPU JIT.
#pragma once
#include <string>

#include "renderer/renderer.h"

namespace tg {
// An internal kernel function and `void tg_entry(ptr bufs, ptr vars)` that loads each buffer pointer from bufs[i] and
// each variable from vars[i] (i64) and calls it. The semantics are the C renderer's, rule for rule.
class LLVMRenderer : public Renderer {
 public:
  explicit LLVMRenderer(Target t) : target_(std::move(t)) {}
  const Target& target() const override { return target_; }
  std::string render(const LinearProgram& lp) const override;
  bool holds_vector(Ops, DType) const override { return true; }  // LLVM has a vector form of every op and dtype
  // LLVM lowers exp2/log2/sin to a libm call per lane, vectors included: those are decomposed into polynomials
  bool native_op(Ops op, DType dt) const override;

 private:
  Target target_;
};
}  // namespace tg
