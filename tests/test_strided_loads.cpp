// Lanes that read every 2nd element (a stride-2 convolution's window): on a target with masked vector accesses
// (AVX-512) the devectorizer reads them as whole masked vectors and shuffles the lanes out, instead of a scalar load
// and an insert per lane. Checked against a float64 reference on both CPU renderers, every element, and the LLVM kernel
// checked to read the window that way where the host can.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/realize.h"
#include "float_data.h"
#include "renderer/renderer.h"
#include "tensor/tensor.h"

namespace {

using tg::Tensor;

using tg_test::randn;

// a stride-2 3x3 conv without padding: its windows' rows are read 2 elements apart and never gated
TEST(StridedLoads, StrideTwoConvMatchesFloat64OnBothRenderers) {
  constexpr int64_t C = 8, O = 16, H = 33, OH = (H - 3) / 2 + 1;
  auto xv = randn(size_t(C * H * H), 1), wv = randn(size_t(O * C * 9), 2);
  std::vector<double> want(size_t(O * OH * OH));
  for (int64_t o = 0; o < O; o++)
    for (int64_t y = 0; y < OH; y++)
      for (int64_t x = 0; x < OH; x++) {
        double s = 0;
        for (int64_t c = 0; c < C; c++)
          for (int64_t ky = 0; ky < 3; ky++)
            for (int64_t kx = 0; kx < 3; kx++)
              s += double(xv[size_t((c * H + 2 * y + ky) * H + 2 * x + kx)]) * wv[size_t(((o * C + c) * 3 + ky) * 3 + kx)];
        want[size_t((o * OH + y) * OH + x)] = s;
      }
  for (const char* dev : {"CPU", "CPU:CLANG"}) {
    SCOPED_TRACE(dev);
    Tensor x = Tensor::from_data(xv.data(), xv.size() * 4, tg::dtypes::float32, {1, C, H, H}, dev).realize();
    Tensor w = Tensor::from_data(wv.data(), wv.size() * 4, tg::dtypes::float32, {O, C, 3, 3}, dev).realize();
    Tensor y = x.conv2d(w, std::nullopt, 1, {2, 2}, {1, 1}, {0, 0});
    if (std::string(dev) == "CPU" && tg::cpu_target("CPU", 1).vector_bytes >= 64) {
      std::string src;
      for (auto& e : tg::lower_realize({y.uop()}, dev).items) src += e.prg->src;
      EXPECT_NE(src.find("@llvm.masked.load.v16f32"), std::string::npos) << src;
    }
    std::vector<float> got(want.size());
    y.to_data(got.data(), got.size() * 4);
    for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "at " << i;
  }
}

}  // namespace
