// Renderer: linear program -> C source. One C-style renderer; CUDA/OpenCL dialects will share it.
#pragma once
#include <string>

#include "codegen/linearize.h"

namespace tg {
// C source with the kernel function and `void tg_entry(void** bufs, const int64_t* vars)` that calls it.
std::string render_c(const LinearProgram& lp);
}  // namespace tg
