// Engine: run schedules. realize_uops schedules the graphs of `roots` (through the schedule cache), allocates the new
// buffers, compiles (cached) and runs every kernel in order, and returns each root's realized graph.
#pragma once
#include <string>
#include <vector>

#include "uop/uop.h"

namespace tg {
std::vector<UOpRef> realize_uops(const std::vector<UOpRef>& roots, const std::string& device);
}
