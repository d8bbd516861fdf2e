// Renderer: linear program -> C-family source. One renderer, three dialects: C for the CPU (GCC vector extensions, a
// tg_entry trampoline), CUDA C for NVRTC and OpenCL C; the differences are types, qualifiers, ids and math names.
#pragma once
#include <map>
#include <string>

#include "renderer/renderer.h"

namespace tg {
enum class Dialect { C, CUDA, OpenCL };  // each a row of cstyle.cpp's kDialects: spellings, not code
// C source with the kernel function and `void tg_entry(void** bufs, const int64_t* vars)` that calls it.
// A program's source in pieces, for a file of several kernels (the C export): the prelude every kernel shares, the
// typedefs and helper functions by name (a file needs each once), and the kernel function.
struct CSourceParts {
  std::string head;
  std::map<std::string, std::string> typedefs, helpers;
  std::string kernel;
};
// One value of scalar dtype `d`, given as its bytes in memory, as the C renderer writes a constant in C: exact floats
// (9 / 17 significant digits, NAN, INFINITY), INT64_MIN spelled so it parses; 16-bit floats as their storage bits.
std::string c_literal(DType d, const void* bytes);
class CStyleRenderer : public Renderer {
 public:
  // vectors=false: no GCC vector extensions in C (plain ISO C, every lane a scalar)
  explicit CStyleRenderer(Target t, Dialect d = Dialect::C, bool vectors = true) : target_(std::move(t)), dialect_(d), vectors_(vectors) {}
  Dialect dialect() const { return dialect_; }
  const Target& target() const override { return target_; }
  std::string render(const LinearProgram& lp) const override;
  CSourceParts render_parts(const LinearProgram& lp) const;  // the same source, not yet joined (and no tg_entry)
  bool holds_vector(Ops op, DType dt) const override;
  bool native_op(Ops op, DType dt) const override;

 private:
  Target target_;
  Dialect dialect_;
  bool vectors_;
};
}  // namespace tg
