/* The sum reference loop of bench_ops. Build flags: -O3 -march=native -fopenmp -ffast-math (the compiler may
 * reassociate the sum into vector accumulators). See ref_loops.h. */
#include "ref_loops.h"

float bench_ref_sum(const float* restrict in, size_t n, int threads) {
  float s = 0.0f;
#pragma omp parallel for simd num_threads(threads) schedule(static) reduction(+ : s)
  for (size_t i = 0; i < n; i++) s += in[i];
  return s;
}
