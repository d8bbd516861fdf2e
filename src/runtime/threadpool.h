// The CPU worker pool: kernels split by THREAD run one call per core id on persistent workers (no thread per launch).
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/device.h"

namespace tg {
// the cores this process may run on (shared out among the ranks of an MPI job on this machine)
int cpu_cores();
// $NUM_CPU_THREADS, or cpu_cores()
int num_cpu_threads();
// Calls entry(bufs, vars) once for each core id in [0, threads), with vars[core_var] set to it; returns when all are
// done. The calling thread takes part. threads <= 1 is a plain call.
void launch(CPUProgram::Entry entry, void** bufs, const int64_t* vars, size_t nvars, int64_t threads, int core_var);
// While one lives, this thread's launches use at most `n` threads (the caller's included; 0: no cap): a kernel split
// by THREAD for more cores runs its core ids on fewer. Nests; the innermost cap applies.
class CpuThreadCap {
 public:
  explicit CpuThreadCap(int64_t n);
  ~CpuThreadCap();
  CpuThreadCap(const CpuThreadCap&) = delete;
  CpuThreadCap& operator=(const CpuThreadCap&) = delete;

 private:
  int64_t prev_;
};
}  // namespace tg
