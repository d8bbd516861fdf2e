// Codegen: order a lowered kernel AST (accumulators explicit, loops closed by END) into a linear program with loops.
#pragma once
#include <string>

#include "renderer/renderer.h"

namespace tg {

LinearProgram linearize(const UOpRef& ast, const std::string& name);

}  // namespace tg
