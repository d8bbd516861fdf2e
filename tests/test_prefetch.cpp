// Software prefetch on the CPU renderers (plan_prefetches): a reduce loop that streams a large buffer forward, read about
// once (a GEMV: decode's matmuls, a classifier's last layer), asks for its bytes Target::prefetch_bytes ahead; a matmul,
// whose tiles come from cache, a walk down a column and a small buffer do not. Results are checked either way.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/realize.h"
#include "float_data.h"
#include "renderer/renderer.h"
#include "tensor/tensor.h"

namespace {

using tg::Tensor;
using tg_test::randn;
using tg_test::read;
Tensor tensor(const std::vector<float>& v, tg::Shape s, const char* dev) { return tg_test::tf(v, s, dev).realize(); }
std::string sources(const Tensor& t, const char* dev) {
  std::string s;
  for (auto& e : tg::lower_realize({t.uop()}, dev).items) s += e.prg->src;
  return s;
}
bool prefetches(const std::string& src) { return src.find("llvm.prefetch") != std::string::npos || src.find("__builtin_prefetch") != std::string::npos; }
bool host_prefetches() { return tg::cpu_target("CPU", 1).prefetch_bytes > 0; }

// rows x cols weight by a vector: each row's dot product, against a double reference (relative 1e-5 of the row's |w||x|)
void check_gemv(int64_t rows, int64_t cols, const char* dev, bool want) {
  SCOPED_TRACE(std::string(dev) + " " + std::to_string(rows) + "x" + std::to_string(cols));
  auto w = randn(size_t(rows * cols), 1), x = randn(size_t(cols), 2);
  Tensor y = tensor(w, {rows, cols}, dev).mul(tensor(x, {1, cols}, dev)).sum({1});
  EXPECT_EQ(prefetches(sources(y, dev)), want && host_prefetches());
  std::vector<float> got = read(y);
  for (int64_t r = 0; r < rows; r++) {
    double ref = 0, mag = 0;
    for (int64_t c = 0; c < cols; c++) ref += double(w[size_t(r * cols + c)]) * x[size_t(c)], mag += std::fabs(double(w[size_t(r * cols + c)]) * x[size_t(c)]);
    ASSERT_NEAR(got[size_t(r)], ref, 1e-5 * mag + 1e-6) << "row " << r;
  }
}

TEST(Prefetch, GemvOverALargeWeightPrefetchesOnBothRenderers) {
  for (const char* dev : {"CPU", "CPU:CLANG"}) check_gemv(2048, 1024, dev, true);  // 8 MB, each byte read once
}

// a step that reads its buffer as several runs (a row of 4 blocks of 18 bytes, 16 of each read: Q4_0's codes), one load
// each: every load reads under a quarter of the buffer, together most of it, so the loop still streams it
TEST(Prefetch, LoadsOfOneBufferCountTogether) {
  int64_t rows = 2048, steps = 16;
  std::vector<uint8_t> raw(size_t(rows * steps * 4 * 18));
  for (size_t i = 0; i < raw.size(); i++) raw[i] = uint8_t((i * 2654435761u) >> 13);
  auto x = randn(size_t(steps * 4 * 16), 6);
  Tensor w = Tensor::from_data(raw.data(), raw.size(), tg::dtypes::uint8, {rows, steps, 4, 18}, "CPU");
  Tensor y = w.shrink({{0, rows}, {0, steps}, {0, 4}, {2, 18}}).cast(tg::dtypes::float32).mul(tensor(x, {1, steps, 4, 16}, "CPU")).sum({1, 2, 3});
  EXPECT_EQ(prefetches(sources(y, "CPU")), host_prefetches());
  std::vector<float> got = read(y);
  for (int64_t r = 0; r < rows; r += 7) {
    double ref = 0, mag = 0;
    for (int64_t i = 0; i < steps * 4; i++)
      for (int64_t j = 0; j < 16; j++) {
        double p = double(raw[size_t((r * steps * 4 + i) * 18 + 2 + j)]) * x[size_t(i * 16 + j)];
        ref += p, mag += std::fabs(p);
      }
    ASSERT_NEAR(got[size_t(r)], ref, 1e-5 * mag + 1e-6) << "row " << r;
  }
}

TEST(Prefetch, SmallWeightDoesNot) { check_gemv(64, 256, "CPU", false); }  // 64 KB: may stay in the L2

TEST(Prefetch, MatmulAndColumnWalkDoNot) {
  auto a = randn(256 * 256, 3), b = randn(256 * 256, 4);
  Tensor mm = tensor(a, {256, 256}, "CPU").matmul(tensor(b, {256, 256}, "CPU"));  // tiles reread from cache
  EXPECT_FALSE(prefetches(sources(mm, "CPU")));
  std::vector<float> got = read(mm);
  for (int64_t i = 0; i < 256; i += 37)
    for (int64_t j = 0; j < 256; j += 41) {
      double ref = 0;
      for (int64_t k = 0; k < 256; k++) ref += double(a[size_t(i * 256 + k)]) * b[size_t(k * 256 + j)];
      ASSERT_NEAR(got[size_t(i * 256 + j)], ref, 1e-3) << i << "," << j;
    }
  // a sum down the columns of 2048 x 1024: each step of the reduce moves 4 KB, so 4 KB ahead is the next step's line
  auto w = randn(2048 * 1024, 5);
  Tensor cs = tensor(w, {2048, 1024}, "CPU").sum({0});
  EXPECT_FALSE(prefetches(sources(cs, "CPU")));
}

}  // namespace
