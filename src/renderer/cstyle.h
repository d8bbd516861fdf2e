// Renderer: linear program -> C-family source. One renderer, three dialects: C for the CPU (GCC vector extensions, a
// tg_entry trampoline), CUDA C for NVRTC and OpenCL C; the differences are types, qualifiers, ids and math names.
#pragma once
#include <string>

#include "renderer/renderer.h"

namespace tg {
enum class Dialect { C, CUDA, OpenCL };  // each a row of cstyle.cpp's kDialects: spellings, not code
// C source with the kernel function and `void tg_entry(void** bufs, const int64_t* vars)` that calls it.
class CStyleRenderer : public Renderer {
 public:
  explicit CStyleRenderer(Target t, Dialect d = Dialect::C) : target_(std::move(t)), dialect_(d) {}
  Dialect dialect() const { return dialect_; }
  const Target& target() const override { return target_; }
  std::string render(const LinearProgram& lp) const override;
  bool holds_vector(Ops op, DType dt) const override;
  bool native_op(Ops op, DType dt) const override;

 private:
  Target target_;
  Dialect dialect_;
};
}  // namespace tg
