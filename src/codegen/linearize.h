// Codegen: order a lowered kernel AST (accumulators explicit, loops closed by END) into a linear program with loops.
#pragma once
#include <string>

#include "renderer/renderer.h"

namespace tg {

LinearProgram linearize(const UOpRef& ast, const std::string& name);
// Marks in lp.prefetch the loads a target with prefetch_bytes asks ahead for: ungated loads in a reduce loop (their
// innermost) that stream a large global buffer, reading it about once, forward in small constant steps (a GEMV's
// weight; not a matmul's tiles, which come from cache); docs/codegen.md
void plan_prefetches(LinearProgram& lp, const Target& t);

}  // namespace tg
