// Codegen: order a lowered kernel AST (accumulators explicit, loops closed by END) into a linear program with loops.
#pragma once
#include <string>

#include "renderer/renderer.h"

namespace tg {

LinearProgram linearize(const UOpRef& ast, const std::string& name);
// Marks in lp.prefetch the loads a target with prefetch_bytes asks ahead for: a kernel of few ops per byte (a GEMV, not a
// matmul, whose tiles come from cache), each ungated load of a global buffer of at least kPrefetchMinBytes whose index
// moves with its innermost loop, a reduce loop
void plan_prefetches(LinearProgram& lp, const Target& t);

}  // namespace tg
