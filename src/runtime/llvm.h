// The in-process LLVM JIT for the CPU: LLVM IR text -> optimized object code for this CPU -> loaded into one process-wide
// ORC LLJIT; the object files are what the kernel caches hold.
#pragma once
#include <memory>

#include "runtime/device.h"

namespace tg {
std::unique_ptr<Compiler> make_llvm_compiler();
}  // namespace tg
