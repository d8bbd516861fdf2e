#include "runtime/cpurates.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tg {

namespace {
#if defined(__x86_64__)
constexpr long kIters = 4096;  // x 12 independent chains: long enough to leave the frequency ramp, short enough to be free

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// twelve accumulators in registers of their own (an array would go through memory), each an instruction's latency or
// more from its next use on two ports: throughput, not latency, is measured; the empty asm keeps each result live so
// the compiler can't fold the loop
#define TG_CHAINS(X) X(a0) X(a1) X(a2) X(a3) X(a4) X(a5) X(a6) X(a7) X(a8) X(a9) X(a10) X(a11)
__attribute__((target("avx512f,avx512bw,avx512vnni"))) double int8_macs_per_ns() {
  __m512i u = _mm512_set1_epi8(1), s = _mm512_set1_epi8(-1);
#define TG_ZERO(a) __m512i a = _mm512_setzero_si512();
#define TG_STEP(a) a = _mm512_dpbusd_epi32(a, u, s); __asm__ volatile("" : "+v"(a));
  TG_CHAINS(TG_ZERO)
  auto t = std::chrono::steady_clock::now();
  for (long i = 0; i < kIters; i++) { TG_CHAINS(TG_STEP) }
  return kIters * 12.0 * 64 / seconds_since(t) / 1e9;
#undef TG_ZERO
#undef TG_STEP
}
__attribute__((target("avx512f,avx512bw,avx512bf16"))) double bf16_macs_per_ns() {
  __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80);
#define TG_ZERO(a) __m512 a = _mm512_setzero_ps();
#define TG_STEP(a) a = _mm512_dpbf16_ps(a, x, x); __asm__ volatile("" : "+v"(a));
  TG_CHAINS(TG_ZERO)
  auto t = std::chrono::steady_clock::now();
  for (long i = 0; i < kIters; i++) { TG_CHAINS(TG_STEP) }
  return kIters * 12.0 * 32 / seconds_since(t) / 1e9;
#undef TG_ZERO
#undef TG_STEP
}
#undef TG_CHAINS
#endif

DotRates measure() {
  DotRates r;
#if defined(__x86_64__)
  __builtin_cpu_init();
  bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw"),
       bf16 = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
  for (int i = 0; i < 3; i++) {  // interleaved, the best of each: a clock that rises during the first pass hurts neither
    if (vnni) r.int8 = std::max(r.int8, int8_macs_per_ns());
    if (bf16) r.bf16 = std::max(r.bf16, bf16_macs_per_ns());
  }
#endif
  return r;
}
}  // namespace

const DotRates& cpu_dot_rates() {
  static const DotRates rates = measure();
  return rates;
}

}  // namespace tg
