// How many multiply-adds one core of this CPU retires per nanosecond in its byte and bfloat dot-product instructions,
// measured once per process: the two differ by 2x to 8x between CPUs that have both, which decides how an LLM's
// prompt products are best computed (nn/llm.cpp).
#pragma once

namespace tg {
struct DotRates {
  double int8 = 0;  // vpdpbusd (AVX512-VNNI, 512-bit): 64 multiply-adds of uint8 x int8 an instruction; 0: none
  double bf16 = 0;  // vdpbf16ps (AVX512-BF16, 512-bit): 32 of bfloat pairs; 0: none
};
// about 0.3 ms the first time (a few dependent-free chains of each instruction, the best of three), then cached
const DotRates& cpu_dot_rates();
}  // namespace tg
