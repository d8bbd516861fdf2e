// Gradients at extreme values and at kinks through the C API, against closed forms: sigmoid/tanh/quick_gelu stay finite
// for |x| in the hundreds (torch's values), prod's backward with zeros, abs and clamp at their kinks; and the C functions
// added for issue 33: shifts by a tensor, nll_loss with weight/ignore_index, BCE with pos_weight, attention with GQA.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "capi_handles.h"

namespace {

T vec(const std::vector<float>& v) {
  int64_t n = int64_t(v.size());
  return T(tg_tensor_from_data(v.data(), v.size() * sizeof(float), TG_FLOAT32, &n, 1, nullptr));
}
T ints(const std::vector<int32_t>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {int64_t(v.size())};
  return T(tg_tensor_from_data(v.data(), v.size() * sizeof(int32_t), TG_INT32, shape.data(), shape.size(), nullptr));
}
std::vector<int32_t> idata(tg_tensor* t) {
  std::vector<int32_t> v(size_t(tg_tensor_numel(t)));
  EXPECT_EQ(tg_tensor_to_data(t, v.data(), v.size() * sizeof(int32_t)), TG_OK) << tg_last_error_message();
  return v;
}
// d sum(f(x)) / dx
std::vector<float> grad_of(tg_tensor* x, tg_tensor* fx) {
  T s(tg_tensor_sum(fx, nullptr, 0, 0));
  tg_tensor* g = nullptr;
  EXPECT_EQ(tg_tensor_gradient(s, &x, 1, &g), TG_OK) << tg_last_error_message();
  T gg(g);
  return data(gg);
}

TEST(GradStable, SigmoidTanhQuickGeluAtLargeMagnitudes) {
  std::vector<float> xs{-400, -300, -90, -20, -1, 0, 0.5f, 20, 90, 300, 400};
  T x = vec(xs);
  std::vector<float> gs = grad_of(x, T(tg_tensor_sigmoid(x))), gt = grad_of(x, T(tg_tensor_tanh(x))), gq = grad_of(x, T(tg_tensor_quick_gelu(x)));
  for (size_t i = 0; i < xs.size(); i++) {
    double s = 1 / (1 + std::exp(-double(xs[i]))), t = std::tanh(double(xs[i]));
    double sq = 1 / (1 + std::exp(-1.702 * xs[i]));
    EXPECT_TRUE(std::isfinite(gs[i]) && std::isfinite(gt[i]) && std::isfinite(gq[i])) << xs[i];
    EXPECT_NEAR(gs[i], s * (1 - s), 1e-6) << xs[i];
    EXPECT_NEAR(gt[i], 1 - t * t, 2e-6) << xs[i];
    EXPECT_NEAR(gq[i], sq + 1.702 * xs[i] * sq * (1 - sq), 1e-5) << xs[i];
  }
  std::vector<float> v = data(T(tg_tensor_sigmoid(x)));
  for (size_t i = 0; i < xs.size(); i++) EXPECT_NEAR(v[i], 1 / (1 + std::exp(-double(xs[i]))), 1e-7) << xs[i];
}

// exp(x)/(1+exp(x)) written out: the quotient rule must not square the divisor (exp(80)^2 overflows float32 and left
// the gradient at 1 instead of e^-80)
TEST(GradStable, QuotientWithALargeDivisor) {
  std::vector<float> xs{-80, -20, -1, 0, 1, 20, 40, 80};
  T x = vec(xs);
  T e(tg_tensor_exp(x)), one(tg_tensor_full_like(e, 1.0)), den(tg_tensor_add(one, e));
  std::vector<float> g = grad_of(x, T(tg_tensor_div(e, den)));
  for (size_t i = 0; i < xs.size(); i++) {
    double s = 1 / (1 + std::exp(-double(xs[i])));
    EXPECT_NEAR(g[i], s * (1 - s), 1e-6) << xs[i];
  }
  // and x/y's gradients stay exact for ordinary values: d/dx = 1/y, d/dy = -x/y^2
  T a = vec({3, -2, 0.5f}), b = vec({4, 0.25f, -8});
  T q(tg_tensor_div(a, b)), s(tg_tensor_sum(q, nullptr, 0, 0));
  tg_tensor* in[2] = {a, b};
  tg_tensor* gr[2] = {nullptr, nullptr};
  ASSERT_EQ(tg_tensor_gradient(s, in, 2, gr), TG_OK) << tg_last_error_message();
  T ga(gr[0]), gb(gr[1]);
  std::vector<float> da = data(ga), db = data(gb);
  float av[3] = {3, -2, 0.5f}, bv[3] = {4, 0.25f, -8};
  for (int i = 0; i < 3; i++) {
    EXPECT_FLOAT_EQ(da[i], 1 / bv[i]);
    EXPECT_FLOAT_EQ(db[i], -av[i] / (bv[i] * bv[i]));
  }
}

TEST(GradStable, ProdBackwardWithZeros) {
  struct Case {
    std::vector<float> x, g;
  };
  for (auto& c : std::vector<Case>{{{1, 2, 3}, {6, 3, 2}}, {{0, 2, 3}, {6, 0, 0}}, {{0, 0, 3}, {0, 0, 0}}, {{4, 0, -2}, {0, -8, 0}}}) {
    T x = vec(c.x);
    EXPECT_EQ(grad_of(x, T(tg_tensor_prod(x, nullptr, 0, 0))), c.g);
  }
}

TEST(GradStable, AbsAndClampAtTheKink) {
  T x = vec({-1, -0.0f, 0, 1, INFINITY, -INFINITY});
  EXPECT_EQ(grad_of(x, T(tg_tensor_abs(x))), (std::vector<float>{-1, 0, 0, 1, 1, -1}));
  T y = vec({-3, -2.5f, 0, 1.5f, 2});
  EXPECT_EQ(grad_of(y, T(tg_tensor_clamp(y, -2.5, 1.5))), (std::vector<float>{0, 1, 1, 1, 0}));
  EXPECT_EQ(data(T(tg_tensor_clamp(y, 3, 0))), (std::vector<float>{0, 0, 0, 0, 0}));  // lo > hi: hi, as torch
}

TEST(GradStable, ShiftByTensor) {
  T a = ints({-1, -3, 1, 7}), s = ints({0, 2, 8, 31});
  EXPECT_EQ(idata(T(tg_tensor_lshift_tensor(a, s))), (std::vector<int32_t>{-1, -12, 256, INT32_MIN}));
  EXPECT_EQ(idata(T(tg_tensor_rshift_tensor(a, s))), (std::vector<int32_t>{-1, -1, 0, 0}));
  T f = vec({1});
  EXPECT_EQ(tg_tensor_lshift_tensor(f, s), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_DTYPE);
  EXPECT_NE(std::string(tg_last_error_message()).find("lshift"), std::string::npos);
}

TEST(GradStable, NllLossWeightedAndIgnoreIndex) {
  // log-probs (3, 2), targets {0, 1, 1}, weight {2, 0.5}
  std::vector<int64_t> s32{3, 2};
  T flat = vec({-0.1f, -2, -1, -0.5f, -3, -0.25f}), lp(tg_tensor_reshape(flat, s32.data(), 2));
  T y = ints({0, 1, 1}), w = vec({2, 0.5f});
  // mean: (2*0.1 + 0.5*0.5 + 0.5*0.25) / (2 + 0.5 + 0.5)
  EXPECT_NEAR(data(T(tg_tensor_nll_loss_weighted(lp, y, w, 0, 0, 1)))[0], (0.2 + 0.25 + 0.125) / 3.0, 1e-6);
  EXPECT_NEAR(data(T(tg_tensor_nll_loss_weighted(lp, y, w, 0, 0, 2)))[0], 0.2 + 0.25 + 0.125, 1e-6);
  // ignore_index 1: only the first target, weight 1
  EXPECT_NEAR(data(T(tg_tensor_nll_loss_weighted(lp, y, nullptr, 1, 1, 1)))[0], 0.1, 1e-6);
  EXPECT_EQ(data(T(tg_tensor_nll_loss_weighted(lp, y, nullptr, 1, 1, 0))), (std::vector<float>{0.1f, 0, 0}));
  T bad = vec({1, 2, 3});
  EXPECT_EQ(tg_tensor_nll_loss_weighted(lp, y, bad, 0, 0, 1), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_SHAPE);
}

TEST(GradStable, BceLogitsPosWeight) {
  T x = vec({-2, 0.5f, 3}), y = vec({1, 0, 0.25f}), pw = vec({3, 3, 3});
  std::vector<float> got = data(T(tg_tensor_binary_crossentropy_logits_weighted(x, y, pw, 0)));
  std::vector<float> xs{-2, 0.5f, 3}, ys{1, 0, 0.25f};
  for (size_t i = 0; i < 3; i++) {
    double ls = -std::log1p(std::exp(-double(xs[i]))), lns = -std::log1p(std::exp(double(xs[i])));
    EXPECT_NEAR(got[i], -(3 * ys[i] * ls + (1 - ys[i]) * lns), 1e-5) << i;
  }
}

TEST(GradStable, AttentionGqa) {
  // q (1, 4, 2, 3) attends with k/v of 2 heads: the same as k/v repeated to 4 heads
  auto mk = [](uint32_t seed, int64_t h) {
    std::vector<float> v = randv(size_t(h * 2 * 3), seed);
    std::vector<int64_t> s{1, h, 2, 3};
    return T(tg_tensor_from_data(v.data(), v.size() * sizeof(float), TG_FLOAT32, s.data(), s.size(), nullptr));
  };
  T q = mk(1, 4), k = mk(2, 2), v = mk(3, 2);
  T kr(tg_tensor_repeat_interleave(k, 2, -3)), vr(tg_tensor_repeat_interleave(v, 2, -3));
  std::vector<float> got = data(T(tg_tensor_scaled_dot_product_attention_gqa(q, k, v, nullptr, 1, 1)));
  std::vector<float> want = data(T(tg_tensor_scaled_dot_product_attention(q, kr, vr, nullptr, 1)));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  T k3 = mk(4, 3);
  EXPECT_EQ(tg_tensor_scaled_dot_product_attention_gqa(q, k3, k3, nullptr, 0, 1), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_SHAPE);
  EXPECT_EQ(tg_tensor_scaled_dot_product_attention_gqa(q, kr, vr, q, 1, 0), nullptr);  // a mask with is_causal
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
}

}  // namespace
