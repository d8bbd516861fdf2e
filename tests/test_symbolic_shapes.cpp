// Symbolic shapes: a dim bound to a Variable (shrink_var) flows through ops; the schedule and the kernels are the same
// for every bound value (one compile per kernel), and the results are right for each.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/realize.h"
#include "float_data.h"
#include "tensor/tensor.h"

using namespace tg;

namespace {

using tg_test::randf;
using tg_test::read;
using tg_test::tf;
}  // namespace

TEST(SymbolicShapes, ElementwiseAndReductionsCompileOnceForEveryBinding) {
  const int64_t B = 64, F = 24;
  std::vector<float> xv = randf(B * F, 1), bv = randf(F, 2);
  Tensor x = Tensor::from_data(xv.data(), xv.size() * 4, dtypes::float32, {B, F}, "CPU");
  Tensor bias = Tensor::from_data(bv.data(), bv.size() * 4, dtypes::float32, {F}, "CPU");
  UOpRef n = UOp::variable("n", 1, B);
  uint64_t compiles = 0, schedules = 0;
  for (int64_t nv = 1; nv <= B; nv++) {
    Tensor xs = x.shrink_var(0, n, nv);
    ASSERT_EQ(xs.shape(), (Shape{nv, F}));
    ASSERT_EQ(xs.uop()->sym().size(), 2u);
    Tensor y = xs.mul(xs.scalar_like(2)).add(bias).relu();  // (n, F), broadcasting a plain (F,) over the Variable rows
    Tensor rows = y.sum({1});                               // (n,): a reduce over the plain axis
    Tensor cols = y.mean({0});                              // (F,): a reduce over the Variable axis, divided by n
    Tensor::realize_all({&rows, &cols});
    if (nv == 2) compiles = GlobalCounters::compile_count, schedules = GlobalCounters::schedule_count;
    if (nv > 2) {
      ASSERT_EQ(GlobalCounters::compile_count.load(), compiles) << "n=" << nv << " compiled again";
      ASSERT_EQ(GlobalCounters::schedule_count.load(), schedules) << "n=" << nv << " scheduled again";
    }
    std::vector<float> r = read(rows), c = read(cols);
    ASSERT_EQ(r.size(), size_t(nv));
    std::vector<double> colsum(F, 0);
    for (int64_t i = 0; i < nv; i++) {
      double s = 0;
      for (int64_t j = 0; j < F; j++) {
        double v = std::max(0.0, 2.0 * xv[size_t(i * F + j)] + bv[size_t(j)]);
        s += v, colsum[size_t(j)] += v;
      }
      ASSERT_NEAR(r[size_t(i)], s, 1e-4) << "n=" << nv << " row " << i;
    }
    for (int64_t j = 0; j < F; j++) ASSERT_NEAR(c[size_t(j)], colsum[size_t(j)] / double(nv), 1e-5) << "n=" << nv << " col " << j;
  }
}

TEST(SymbolicShapes, MatmulOverAVariableBatch) {
  const int64_t B = 16, K = 32, N = 8;
  std::vector<float> xv = randf(B * K, 3), wv = randf(K * N, 4);
  Tensor x = Tensor::from_data(xv.data(), xv.size() * 4, dtypes::float32, {B, K}, "CPU");
  Tensor w = Tensor::from_data(wv.data(), wv.size() * 4, dtypes::float32, {K, N}, "CPU");
  UOpRef n = UOp::variable("batch", 1, B);
  uint64_t compiles = 0;
  for (int64_t nv : {3, 16, 1, 7, 12}) {
    Tensor y = x.shrink_var(0, n, nv).matmul(w).softmax(-1);
    ASSERT_EQ(y.shape(), (Shape{nv, N}));
    std::vector<float> got = read(y);
    if (nv == 16) compiles = GlobalCounters::compile_count;
    if (compiles && nv != 16) ASSERT_EQ(GlobalCounters::compile_count.load(), compiles) << "batch " << nv << " compiled again";
    for (int64_t i = 0; i < nv; i++) {
      double row[N], m = -1e30, s = 0;
      for (int64_t j = 0; j < N; j++) {
        row[j] = 0;
        for (int64_t k = 0; k < K; k++) row[j] += double(xv[size_t(i * K + k)]) * wv[size_t(k * N + j)];
        m = std::max(m, row[j]);
      }
      for (int64_t j = 0; j < N; j++) s += std::exp(row[j] - m);
      for (int64_t j = 0; j < N; j++) ASSERT_NEAR(got[size_t(i * N + j)], std::exp(row[j] - m) / s, 1e-5) << "batch " << nv;
    }
  }
}

TEST(SymbolicShapes, MisuseIsAnError) {
  Tensor x = Tensor::full({8, 4}, 1, dtypes::float32, "CPU");
  UOpRef n = UOp::variable("n", 1, 8), big = UOp::variable("big", 1, 9), m = UOp::variable("m", 1, 8);
  auto code = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code;
    }
    return TG_OK;
  };
  EXPECT_EQ(code([&] { x.shrink_var(0, big, 9); }), TG_ERROR_SHAPE);              // its value exceeds the dim
  EXPECT_EQ(code([&] { x.shrink_var(0, big, 3); }), TG_OK);                       // its range may, as tinygrad
  EXPECT_EQ(code([&] { x.shrink_var(0, n, 9); }), TG_ERROR_INVALID_ARGUMENT);     // value outside the range
  Tensor xs = x.shrink_var(0, n, 4);
  EXPECT_EQ(code([&] { xs.reshape({16}); }), TG_ERROR_UNSUPPORTED);               // merges the Variable dim
  EXPECT_EQ(code([&] { xs.pad({{1, 0}, {0, 0}}); }), TG_OK);                      // grows to n+1
  EXPECT_EQ(code([&] { xs.shrink({{1, 4}, {0, 4}}); }), TG_ERROR_UNSUPPORTED);     // a symbolic start
  EXPECT_EQ(code([&] { xs.flip({0}); }), TG_ERROR_UNSUPPORTED);
  EXPECT_EQ(code([&] { xs.add(Tensor::full({4, 4}, 1, dtypes::float32, "CPU")); }), TG_ERROR_SHAPE);  // plain 4 meets n=4
  EXPECT_EQ(code([&] { xs.add(x.shrink_var(0, m, 4)); }), TG_ERROR_SHAPE);        // two Variables
  EXPECT_EQ(code([&] { xs.reshape({4, 2, 2}).sum({0}).realize(); }), TG_OK);     // splitting the plain dim is fine
}

// The gradients of a cross-entropy loss over a Variable batch equal those over the same rows taken plainly, and every
// batch size after the first runs the kernels compiled for it.
TEST(SymbolicShapes, GradientsOverAVariableBatch) {
  const int64_t B = 32, K = 12, C = 5;
  std::vector<float> xv = randf(B * K, 5), wv = randf(K * C, 6);
  std::vector<int32_t> yv(B);
  for (int64_t i = 0; i < B; i++) yv[size_t(i)] = int32_t((i * 3) % C);
  Tensor x = Tensor::from_data(xv.data(), xv.size() * 4, dtypes::float32, {B, K}, "CPU");
  Tensor y = Tensor::from_data(yv.data(), yv.size() * 4, dtypes::int32, {B}, "CPU");
  Tensor w = Tensor::from_data(wv.data(), wv.size() * 4, dtypes::float32, {K, C}, "CPU");
  w.requires_grad_();
  UOpRef n = UOp::variable("n", 1, B);
  auto grad_at = [&](const Tensor& xs, const Tensor& ys) {
    w.set_grad(std::nullopt);
    Tensor loss = xs.matmul(w).relu().sparse_categorical_crossentropy(ys);
    loss.backward();
    Tensor g = *w.grad();
    Tensor::realize_all({&g, &loss});
    std::vector<float> out = read(g);
    out.push_back(read(loss)[0]);
    return out;
  };
  uint64_t compiles = 0;
  for (int64_t nv : {5, 17, 32, 1, 9}) {
    std::vector<float> sym = grad_at(x.shrink_var(0, n, nv), y.shrink_var(0, n, nv));
    if (nv == 17) compiles = GlobalCounters::compile_count;
    if (compiles && nv != 17) ASSERT_EQ(GlobalCounters::compile_count.load(), compiles) << "batch " << nv << " compiled again";
    std::vector<float> plain = grad_at(x.shrink({{0, nv}, {0, K}}), y.shrink({{0, nv}}));
    if (compiles) compiles = GlobalCounters::compile_count;  // the plain batches compile their own kernels
    ASSERT_EQ(sym.size(), plain.size());
    for (size_t i = 0; i < sym.size(); i++) ASSERT_NEAR(sym[i], plain[i], 1e-5 * (1 + std::fabs(plain[i]))) << "batch " << nv << " [" << i << "]";
  }
}
