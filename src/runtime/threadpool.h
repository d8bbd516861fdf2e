// The CPU worker pool: kernels split by THREAD run one call per core id on persistent workers (no thread per launch).
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/device.h"

namespace tg {
int num_cpu_threads();  // $NUM_CPU_THREADS, or the cores this process may run on
// Calls entry(bufs, vars) once for each core id in [0, threads), with vars[core_var] set to it; returns when all are
// done. The calling thread takes part. threads <= 1 is a plain call.
void launch(CPUProgram::Entry entry, void** bufs, const int64_t* vars, size_t nvars, int64_t threads, int core_var);
}  // namespace tg
