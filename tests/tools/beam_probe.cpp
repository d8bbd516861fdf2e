// The second process of the BEAM cache tests: realizes a (sz x 32) @ (32 x sz) matmul under the BEAM of its environment
// and prints how many candidate runs it timed and a checksum of the result. Usage: tg_beam_probe <sz>
#include <cstdio>
#include <cstdlib>

#include "codegen/opt/beam.h"
#include "kernel_case.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int64_t sz = std::atoll(argv[1]);
  try {
    tg::Tensor out = tg::test::randt({sz, 32}, 1).matmul(tg::test::randt({32, sz}, 2));
    std::vector<float> v(static_cast<size_t>(sz * sz));
    out.to_data(v.data(), v.size() * sizeof(float));
    double sum = 0;
    for (float x : v) sum += x;
    std::printf("timing_runs=%llu result=%.6g\n", (unsigned long long)tg::beam_timing_runs.load(), sum);
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "beam_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
