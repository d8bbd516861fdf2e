/* The elementwise reference loop of bench_ops. Build flags: -O3 -march=native -fopenmp (no -ffast-math: the
 * expression is computed as written, as the libtinygrad kernel does). See ref_loops.h. */
#include "ref_loops.h"

void bench_ref_elementwise(const float* restrict in, float* restrict out, size_t n, int threads) {
#pragma omp parallel for simd num_threads(threads) schedule(static)
  for (size_t i = 0; i < n; i++) out[i] = ((in[i] + 1.0f) * 2.0f - 1.0f) / 2.0f;
}
