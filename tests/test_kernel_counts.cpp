// Kernel counts: fusion produces the number of kernels tinygrad does (tg_counters kernel_count around one realize), and
// a graph realized again with new data reuses its cached schedule and compiled kernels. Values are checked too.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "schedule/schedule.h"
#include "float_data.h"
#include "tensor/tensor.h"

namespace {

using tg_test::randf;
using tg_test::read;
using tg_test::tf;

using tg::Shape;
using tg::Tensor;
namespace dt = tg::dtypes;

tg_counters counters() {
  tg_counters c{};
  c.struct_size = sizeof c;
  EXPECT_EQ(tg_counters_get(&c), TG_OK) << tg_last_error_message();
  return c;
}
// kernels run by realizing t (t then refers to its buffer)
uint64_t kernels_to_realize(Tensor& t) {
  tg_counters_reset();
  t.realize();
  return counters().kernel_count;
}
void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); i++)
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i])) && bad++ < 5) ADD_FAILURE() << "[" << i << "] got " << got[i] << " want " << want[i];
}

TEST(KernelCount, ElementwiseChainIsOneKernel) {
  auto xv = randf(256, 1);
  Tensor x = tf(xv, {16, 16});
  Tensor y = x.add(x.scalar_like(1)).mul(x.scalar_like(2)).sub(x.scalar_like(1)).div(x.scalar_like(2));  // ((x+1)*2-1)/2
  EXPECT_EQ(kernels_to_realize(y), 1u);
  std::vector<double> want;
  for (float v : xv) want.push_back(((double(v) + 1) * 2 - 1) / 2);
  expect_near_all(read(y), want);
}

TEST(KernelCount, SumAxisIsOneKernel) {
  auto xv = randf(8 * 16, 2);
  Tensor s = tf(xv, {8, 16}).sum({1});
  EXPECT_EQ(kernels_to_realize(s), 1u);
  std::vector<double> want(8, 0.0);
  for (size_t i = 0; i < xv.size(); i++) want[i / 16] += xv[i];
  expect_near_all(read(s), want, 1e-5, 1e-5);
}

TEST(KernelCount, TransposeContiguousIsOneKernel) {
  auto xv = randf(8 * 16, 3);
  Tensor t = tf(xv, {8, 16}).transpose().contiguous();
  EXPECT_EQ(kernels_to_realize(t), 1u);
  std::vector<double> want;
  for (int j = 0; j < 16; j++)
    for (int i = 0; i < 8; i++) want.push_back(xv[size_t(i * 16 + j)]);
  tg_counters_reset();
  expect_near_all(read(t), want, 0, 0);
  EXPECT_EQ(counters().kernel_count, 0u) << "reading a realized tensor runs nothing";
}

TEST(KernelCount, MatmulBiasReluIsOneKernel) {
  auto av = randf(4 * 8, 4), bv = randf(8 * 6, 5), cv = randf(6, 6);
  Tensor a = tf(av, {4, 8}), b = tf(bv, {8, 6}), c = tf(cv, {6});
  Tensor y = a.matmul(b).add(c).relu();
  EXPECT_EQ(kernels_to_realize(y), 1u);
  std::vector<double> want;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++) {
      double s = cv[size_t(j)];
      for (int k = 0; k < 8; k++) s += double(av[size_t(i * 8 + k)]) * bv[size_t(k * 6 + j)];
      want.push_back(std::max(s, 0.0));
    }
  expect_near_all(read(y), want, 1e-5, 1e-5);
}

TEST(KernelCount, SoftmaxAtMostThreeKernels) {
  auto xv = randf(4 * 10, 7, -4, 4);
  Tensor y = tf(xv, {4, 10}).softmax(-1);
  EXPECT_LE(kernels_to_realize(y), 3u);
  std::vector<double> want;
  for (int i = 0; i < 4; i++) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < 10; j++) m = std::max(m, double(xv[size_t(i * 10 + j)]));
    for (int j = 0; j < 10; j++) s += std::exp(xv[size_t(i * 10 + j)] - m);
    for (int j = 0; j < 10; j++) want.push_back(std::exp(xv[size_t(i * 10 + j)] - m) / s);
  }
  expect_near_all(read(y), want, 1e-5, 1e-6);
}

// a float32 sum of 1M values: at most 2 kernels (a split reduction is allowed), within 1e-4 of the double sum
TEST(KernelCount, SumOfAMillionAtMostTwoKernels) {
  const size_t n = 1 << 20;
  auto xv = randf(n, 8, 0, 1);
  Tensor s = tf(xv, {int64_t(n)}).sum();
  EXPECT_LE(kernels_to_realize(s), 2u);
  double want = 0;
  for (float v : xv) want += v;
  float got = read(s)[0];
  EXPECT_NEAR(got, want, 1e-4 * want) << "float32 sum of 2^20 values in [0,1)";
}

// realize t with DEBUG=3, which prints "=== kernel <name> AST ===" each time a scheduled kernel is lowered: a schedule
// found in the cache brings kernels that were lowered already, so nothing is printed
std::string realize_logged(Tensor& t) {
  tg::Context ctx({{"DEBUG", 3}});
  testing::internal::CaptureStderr();
  t.realize();
  return testing::internal::GetCapturedStderr();
}

// The same graph structure over new buffers: the schedule cache hits (nothing is scheduled or lowered again, nothing
// compiled), the same number of kernels runs, and the results are the new data's.
TEST(KernelCount, ScheduleCacheReusedWithNewData) {
  static int runs = 0;  // a constant new to each run (--gtest_repeat), so the first realize is never a cache hit
  double k = 1 + ++runs;
  auto f = [&](const Tensor& x, const Tensor& y) { return x.mul(y).add(x.scalar_like(k)).sum({1}).relu(); };
  auto ref = [&](const std::vector<float>& x, const std::vector<float>& y) {
    std::vector<double> r(8, 0.0);
    for (size_t i = 0; i < 64; i++) r[i / 8] += double(x[i]) * y[i] + k;
    for (auto& v : r) v = std::max(v, 0.0);
    return r;
  };
  auto x1 = randf(64, 9), y1 = randf(64, 10), x2 = randf(64, 11), y2 = randf(64, 12);
  Tensor r1 = f(tf(x1, {8, 8}), tf(y1, {8, 8}));
  tg_counters_reset();
  std::string log1 = realize_logged(r1);
  uint64_t k1 = counters().kernel_count;
  EXPECT_GE(k1, 1u);
  EXPECT_NE(log1.find("=== kernel"), std::string::npos) << "the first realize should lower its kernel (else this test sees nothing):\n" << log1;
  size_t cached = tg::schedule_cache_size();
  Tensor r2 = f(tf(x2, {8, 8}), tf(y2, {8, 8}));
  tg_counters_reset();  // clears compile_count too
  std::string log2 = realize_logged(r2);
  tg_counters c = counters();
  EXPECT_EQ(c.kernel_count, k1);
  EXPECT_EQ(c.compile_count, 0u) << "the second realize compiled a kernel";
  EXPECT_EQ(log2.find("=== kernel"), std::string::npos) << "the second realize scheduled and lowered again (schedule cache miss):\n" << log2;
  EXPECT_EQ(tg::schedule_cache_size(), cached) << "the second realize added a schedule";
  expect_near_all(read(r1), ref(x1, y1), 1e-5, 1e-5);
  expect_near_all(read(r2), ref(x2, y2), 1e-5, 1e-5);
  // and a third time, after another graph was realized, with the inputs swapped around: still right
  Tensor other = tf(x1, {8, 8}).exp().sum({0});
  other.realize();
  Tensor r3 = f(tf(y2, {8, 8}), tf(x1, {8, 8}));
  EXPECT_EQ(realize_logged(r3).find("=== kernel"), std::string::npos);
  expect_near_all(read(r3), ref(y2, x1), 1e-5, 1e-5);
}

TEST(KernelCount, NothingToRunForBuffersAndRealizedTensors) {
  auto xv = randf(12, 13);
  Tensor x = tf(xv, {3, 4});
  EXPECT_EQ(kernels_to_realize(x), 0u) << "an input buffer";
  Tensor r = x.reshape({2, 6});
  EXPECT_EQ(kernels_to_realize(r), 0u) << "a reshape of a buffer is a view";
  Tensor y = x.exp();
  EXPECT_EQ(kernels_to_realize(y), 1u);
  EXPECT_EQ(kernels_to_realize(y), 0u) << "realized twice";
  tg_counters_reset();
  read(y);
  EXPECT_EQ(counters().kernel_count, 0u) << "to_data of a realized tensor";
}

// A CONTIGUOUS of a CONTIGUOUS is one kernel, not a kernel plus a copy; to_data() of an unrealized x.contiguous() (which
// makes its tensor contiguous again) is one kernel too.
TEST(KernelCount, ContiguousOfContiguousIsOneKernel) {
  auto xv = randf(12, 14);
  Tensor t = tf(xv, {3, 4}).flip({0}).contiguous().contiguous();
  EXPECT_EQ(kernels_to_realize(t), 1u);
  Tensor u = tf(xv, {3, 4}).transpose().contiguous();
  tg_counters_reset();
  auto got = read(u);
  EXPECT_EQ(counters().kernel_count, 1u);
  std::vector<double> want;
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < 3; i++) want.push_back(xv[size_t(i * 4 + j)]);
  expect_near_all(got, want, 0, 0);
}

}  // namespace

namespace {

// tinygrad's counts on the same graphs, equal or fewer: log_softmax <= 3, std <= 2, cumsum <= 3, and the forward and
// backward of an MLP layer with its gradients realized together
TEST(KernelCount, LogSoftmaxStdCumsum) {
  auto xv = randf(8 * 32, 5);
  Tensor x = tf(xv, {8, 32});
  Tensor ls = x.log_softmax(-1);
  EXPECT_LE(kernels_to_realize(ls), 3u);
  Tensor sd = tf(xv, {8, 32}).std({1});
  EXPECT_LE(kernels_to_realize(sd), 2u);
  Tensor cs = tf(xv, {8, 32}).cumsum(1);
  EXPECT_LE(kernels_to_realize(cs), 3u);
  std::vector<double> want_sd, want_cs;
  for (int r = 0; r < 8; r++) {
    double m = 0, v = 0, c = 0;
    for (int i = 0; i < 32; i++) m += xv[size_t(r * 32 + i)] / 32.0;
    for (int i = 0; i < 32; i++) v += (xv[size_t(r * 32 + i)] - m) * (xv[size_t(r * 32 + i)] - m) / 31.0;
    for (int i = 0; i < 32; i++) want_cs.push_back(c += xv[size_t(r * 32 + i)]);
    want_sd.push_back(std::sqrt(v));
  }
  expect_near_all(read(sd), want_sd, 1e-5, 1e-5);
  expect_near_all(read(cs), want_cs, 1e-5, 1e-5);
}

// the numbers are generated inside one kernel (the device's counter was read and advanced when the tensor was made)
TEST(KernelCount, RandOfAMillionIsOneKernel) {
  Tensor::manual_seed(3);
  Tensor r = Tensor::rand({1 << 20}, dt::float32, "CPU");
  EXPECT_EQ(kernels_to_realize(r), 1u);
}

TEST(KernelCount, LinearReluBackwardRealizedTogether) {
  auto xv = randf(64 * 32, 6), wv = randf(32 * 16, 7);
  Tensor x = tf(xv, {64, 32}), w = tf(wv, {32, 16});
  w.requires_grad_();
  Tensor loss = x.matmul(w).relu().sum();
  loss.backward();
  Tensor g = *w.grad();
  tg_counters_reset();
  Tensor::realize_all({&loss, &g});
  EXPECT_LE(counters().kernel_count, 3u);
  // d sum(relu(x w)) / d w = x^T (x w > 0)
  std::vector<double> want(32 * 16, 0.0);
  for (int b = 0; b < 64; b++)
    for (int o = 0; o < 16; o++) {
      double z = 0;
      for (int i = 0; i < 32; i++) z += double(xv[size_t(b * 32 + i)]) * wv[size_t(i * 16 + o)];
      if (z > 0)
        for (int i = 0; i < 32; i++) want[size_t(i * 16 + o)] += xv[size_t(b * 32 + i)];
    }
  expect_near_all(read(g), want, 1e-4, 1e-4);
}

}  // namespace

namespace {

// a direct 3x3 convolution (stride 1, padding 1) with bias and relu, in double
std::vector<double> conv_ref(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b, int N, int C, int H, int W, int O) {
  std::vector<double> out;
  for (int n = 0; n < N; n++)
    for (int o = 0; o < O; o++)
      for (int y = 0; y < H; y++)
        for (int xx = 0; xx < W; xx++) {
          double acc = b[size_t(o)];
          for (int c = 0; c < C; c++)
            for (int ky = 0; ky < 3; ky++)
              for (int kx = 0; kx < 3; kx++) {
                int iy = y + ky - 1, ix = xx + kx - 1;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc += double(x[size_t(((n * C + c) * H + iy) * W + ix)]) * w[size_t(((o * C + c) * 3 + ky) * 3 + kx)];
              }
          out.push_back(std::max(acc, 0.0));
        }
  return out;
}

TEST(KernelCount, Conv2dBiasReluIsOneKernel) {
  const int N = 2, C = 3, H = 8, W = 7, O = 4;
  auto xv = randf(N * C * H * W, 11), wv = randf(O * C * 9, 12), bv = randf(O, 13);
  Tensor y = tf(xv, {N, C, H, W}).conv2d(tf(wv, {O, C, 3, 3}), tf(bv, {O}), 1, {1}, {1}, {1}).relu();
  EXPECT_EQ(kernels_to_realize(y), 1u);
  expect_near_all(read(y), conv_ref(xv, wv, bv, N, C, H, W, O), 1e-4, 1e-4);
}

TEST(KernelCount, MaxPool2dIsOneKernel) {
  auto xv = randf(2 * 3 * 8 * 8, 14);
  Tensor y = tf(xv, {2, 3, 8, 8}).max_pool2d({2, 2});
  EXPECT_EQ(kernels_to_realize(y), 1u);
  std::vector<double> want;
  for (int p = 0; p < 6; p++)
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) {
        double m = -INFINITY;
        for (int a = 0; a < 2; a++)
          for (int b = 0; b < 2; b++) m = std::max(m, double(xv[size_t(p * 64 + (2 * i + a) * 8 + 2 * j + b)]));
        want.push_back(m);
      }
  expect_near_all(read(y), want);
}

TEST(KernelCount, LayernormCrossEntropyAttention) {
  auto xv = randf(16 * 32, 15);
  Tensor ln = tf(xv, {16, 32}).layernorm();
  EXPECT_LE(kernels_to_realize(ln), 3u);
  std::vector<int32_t> labels(16);
  for (int i = 0; i < 16; i++) labels[size_t(i)] = (i * 7) % 10;
  Tensor y = Tensor::from_data(labels.data(), labels.size() * 4, dt::int32, {16}, "CPU");
  Tensor ce = tf(randf(16 * 10, 16), {16, 10}).cross_entropy(y);
  EXPECT_LE(kernels_to_realize(ce), 4u);
  auto q = randf(2 * 8 * 16, 17), k = randf(2 * 8 * 16, 18), v = randf(2 * 8 * 16, 19);
  Tensor att = tf(q, {2, 8, 16}).scaled_dot_product_attention(tf(k, {2, 8, 16}), tf(v, {2, 8, 16}), std::nullopt, true);
  EXPECT_LE(kernels_to_realize(att), 4u);
  // causal attention reference for batch 0, row 3
  std::vector<float> got = read(att);
  for (int d = 0; d < 16; d++) {
    double w[8], m = -INFINITY, s = 0, o = 0;
    for (int j = 0; j <= 3; j++) {
      w[j] = 0;
      for (int e = 0; e < 16; e++) w[j] += double(q[size_t(3 * 16 + e)]) * k[size_t(j * 16 + e)];
      w[j] /= 4.0, m = std::max(m, w[j]);
    }
    for (int j = 0; j <= 3; j++) s += std::exp(w[j] - m);
    for (int j = 0; j <= 3; j++) o += std::exp(w[j] - m) / s * v[size_t(j * 16 + d)];
    EXPECT_NEAR(got[size_t(3 * 16 + d)], o, 1e-5);
  }
}

// tinygrad 0.13 runs 12 kernels for this step: the loss and all four gradients realized together. We run 13: the
// softmax's exp gets its own (64, 10) kernel instead of being recomputed inside the backward matmul for each of the 128
// hidden units (82k exps, which made that one kernel 40x slower than all the others together).
TEST(KernelCount, MlpForwardBackwardAtMostThirteen) {
  Tensor::manual_seed(5);
  Tensor w1 = Tensor::uniform({784, 128}, -0.05, 0.05, dt::float32, "CPU"), b1 = Tensor::full({128}, 0, dt::float32, "CPU");
  Tensor w2 = Tensor::uniform({128, 10}, -0.05, 0.05, dt::float32, "CPU"), b2 = Tensor::full({10}, 0, dt::float32, "CPU");
  Tensor::realize_all({&w1, &b1, &w2, &b2});
  for (Tensor* p : {&w1, &b1, &w2, &b2}) p->requires_grad_();
  Tensor x = Tensor::rand({64, 784}, dt::float32, "CPU").realize();
  Tensor y = Tensor::randint({64}, 0, 10, dt::int32, "CPU").realize();
  Tensor loss = x.linear(w1, b1).relu().linear(w2, b2).sparse_categorical_crossentropy(y);
  loss.backward();
  Tensor g1 = *w1.grad(), g2 = *b1.grad(), g3 = *w2.grad(), g4 = *b2.grad();
  tg_counters_reset();
  Tensor::realize_all({&loss, &g1, &g2, &g3, &g4});
  EXPECT_LE(counters().kernel_count, 13u);
}

}  // namespace

namespace {
// A chain of residual blocks as MobileNetV2's: each block's output is realized for the next block's product (a conv's
// input) and added again after it (the residual). Every product is computed once: a reduce computed inline by two
// kernels gets its own buffer, and the scheduler finds all of them at once, not one block per try (it used to stop
// after 8 and compute the later blocks' products twice). The ops counter is the check: recomputed products add to it.
TEST(KernelCount, ResidualChainComputesEachProductOnce) {
  constexpr int64_t C = 32, P = 256, Blocks = 16;
  Tensor x = tf(randf(size_t(C * P), 91), {C, P}).realize();
  std::vector<Tensor> ws, vs;
  for (int64_t i = 0; i < Blocks; i++) {
    ws.push_back(tf(randf(size_t(C * C), uint64_t(100 + i), -0.2f, 0.2f), {C, C}).realize());
    vs.push_back(tf(randf(size_t(C * C), uint64_t(200 + i), -0.2f, 0.2f), {C, C}).realize());
  }
  Tensor y = x;
  for (int64_t i = 0; i < Blocks; i++) y = y.add(vs[size_t(i)].matmul(ws[size_t(i)].matmul(y.contiguous()).relu().contiguous()));
  tg_counters_reset();
  y.realize();
  double products = double(2 * Blocks) * 2.0 * C * C * P;
  EXPECT_LT(double(counters().global_ops), 1.05 * products) << "products " << products;
  // the values, against float64 on the host
  std::vector<double> h(x.numel());
  auto xv = read(x);
  for (size_t i = 0; i < h.size(); i++) h[i] = xv[i];
  for (int64_t b = 0; b < Blocks; b++) {
    auto wv = read(ws[size_t(b)]), vv = read(vs[size_t(b)]);
    std::vector<double> t(size_t(C * P)), u(size_t(C * P));
    for (int64_t r = 0; r < C; r++)
      for (int64_t c = 0; c < P; c++) {
        double s = 0;
        for (int64_t k = 0; k < C; k++) s += double(wv[size_t(r * C + k)]) * h[size_t(k * P + c)];
        t[size_t(r * P + c)] = std::max(s, 0.0);
      }
    for (int64_t r = 0; r < C; r++)
      for (int64_t c = 0; c < P; c++) {
        double s = 0;
        for (int64_t k = 0; k < C; k++) s += double(vv[size_t(r * C + k)]) * t[size_t(k * P + c)];
        u[size_t(r * P + c)] = h[size_t(r * P + c)] + s;
      }
    h = u;
  }
  expect_near_all(read(y), h, 1e-4, 1e-4);
}
}  // namespace
