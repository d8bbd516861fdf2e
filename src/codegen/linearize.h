// Codegen: lower a kernel AST (SINK of STOREs with REDUCE nodes over RANGEs) to a linear program with loops.
#pragma once
#include <functional>
#include <string>

#include "renderer/renderer.h"

namespace tg {

// `vector_acc(dt)`: whether the target holds a vector accumulator of dt; if not (GPUs), a vector REDUCE keeps one
// scalar accumulator per lane. Null: it does.
LinearProgram linearize(const UOpRef& ast, const std::string& name, const std::function<bool(DType)>& vector_acc = nullptr);
double reduce_identity(Ops op, DType dt);

}  // namespace tg
