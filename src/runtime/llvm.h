// The in-process LLVM JIT for the CPU: LLVM IR text -> optimized object code for this CPU -> loaded into one process-wide
// ORC LLJIT. Objects are cached in memory and (CACHELEVEL>0) in the on-disk kernel cache.
#pragma once
#include <memory>

#include "runtime/device.h"

namespace tg {
std::unique_ptr<Compiler> make_llvm_compiler();
}  // namespace tg
