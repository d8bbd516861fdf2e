/* Reference loops for bench_ops ("bandwidth loop" rows): plain C doing the same work as the libtinygrad kernels,
 * compiled apart from bench_ops with -O3 -march=native -fopenmp (ref_sum.c adds -ffast-math so the compiler may
 * reassociate the sum into vector accumulators). `threads` is the OpenMP thread count for the parallel loop. */
#ifndef TG_BENCH_REF_LOOPS_H
#define TG_BENCH_REF_LOOPS_H
#include <stddef.h>
/* out[i] = ((in[i] + 1) * 2 - 1) / 2 */
void bench_ref_elementwise(const float* in, float* out, size_t n, int threads);
/* the sum of in[0..n) */
float bench_ref_sum(const float* in, size_t n, int threads);
#endif
