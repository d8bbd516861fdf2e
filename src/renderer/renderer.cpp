#include "renderer/renderer.h"

#include <algorithm>

namespace tg {

// The host CPU as a target: vectors as wide as its widest registers, THREAD across the cores this process may use.
Target cpu_target(const std::string& device, int64_t threads) {
  Target t;
  t.device = device;
  t.has_threads = getenv_int("THREADS", 1) != 0;
  t.global_max = {threads, 0, 0};
#if defined(__x86_64__)
  __builtin_cpu_init();
  t.vector_bytes = __builtin_cpu_supports("avx512f") ? 64 : __builtin_cpu_supports("avx2") ? 32 : 16;
  t.fma = __builtin_cpu_supports("fma");
  bool vnni512 = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl");
  t.dot4_bytes = vnni512 ? 64 : __builtin_cpu_supports("avxvnni") ? 32 : 0;
  t.dot2_bytes = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vl") ? 64 : 0;
#else
  t.vector_bytes = 16;  // NEON, and a safe width elsewhere
#if defined(__aarch64__)
  t.fma = true;
#endif
#endif
  t.fma = t.fma && getenv_int("TG_FMA", 1) != 0;  // TG_FMA=0: a multiply and an add round separately, as numpy's do
  if (!getenv_int("TG_DOT4", 1)) t.dot4_bytes = 0;  // TG_DOT4=0: byte dot products as integer multiply-adds
  if (!getenv_int("TG_DOT2", 1)) t.dot2_bytes = 0;  // TG_DOT2=0: bfloat dot products as float multiply-adds
  t.prefetch_bytes = int(std::clamp<int64_t>(getenv_int("TG_PREFETCH", 4096), 0, 1 << 20));  // TG_PREFETCH=0: none
  return t;
}

}  // namespace tg
