// Autograd and random numbers through the C API: the gradient of a small MLP's loss against central finite differences
// in float64, backward's accumulation and its errors, detach, and threefry's reproducibility and distribution.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "rss.h"
#include "tinygrad.h"

namespace {

struct T {  // an owning handle for the test's own convenience
  tg_tensor* h = nullptr;
  T() = default;
  explicit T(tg_tensor* t) : h(t) { EXPECT_NE(t, nullptr) << tg_last_error_message(); }
  T(const T&) = delete;
  T(T&& o) noexcept : h(o.h) { o.h = nullptr; }
  T& operator=(T&& o) noexcept {
    std::swap(h, o.h);
    return *this;
  }
  ~T() { tg_tensor_release(h); }
  operator tg_tensor*() const { return h; }
};
T from(const std::vector<double>& v, std::vector<int64_t> shape) {
  return T(tg_tensor_from_data(v.data(), v.size() * sizeof(double), TG_FLOAT64, shape.data(), shape.size(), nullptr));
}
std::vector<double> data(tg_tensor* t) {
  std::vector<double> out(size_t(tg_tensor_numel(t)));
  EXPECT_EQ(tg_tensor_to_data(t, out.data(), out.size() * sizeof(double)), TG_OK) << tg_last_error_message();
  return out;
}
// an int64 array that outlives the call it is passed to
const int64_t* L(std::initializer_list<int64_t> v) {
  static std::vector<std::vector<int64_t>> keep;
  return keep.emplace_back(v).data();
}
std::vector<double> randv(size_t n, std::mt19937& g) {
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// loss = mean(log_softmax(relu(x @ w1 + b1) @ w2)[label]) negated, built from the C API
T mlp_loss(tg_tensor* x, tg_tensor* w1, tg_tensor* b1, tg_tensor* w2, tg_tensor* onehot) {
  T h(tg_tensor_matmul(x, w1));
  T hb(tg_tensor_add(h, b1));
  T a(tg_tensor_relu(hb));
  T o(tg_tensor_matmul(a, w2));
  T ls(tg_tensor_log_softmax(o, -1));
  T picked(tg_tensor_mul(ls, onehot));
  T s(tg_tensor_sum(picked, nullptr, 0, 0));
  return T(tg_tensor_mul_scalar(s, -1.0 / 4));
}

TEST(Autograd, MlpGradientMatchesCentralDifferencesFloat64) {
  std::mt19937 g(7);
  const int64_t B = 4, I = 5, H = 6, O = 3;
  std::vector<double> xv = randv(B * I, g), w1v = randv(I * H, g), b1v = randv(H, g), w2v = randv(H * O, g), oh(B * O, 0);
  for (int64_t b = 0; b < B; b++) oh[size_t(b * O + (b * 2 + 1) % O)] = 1;
  T x = from(xv, {B, I}), onehot = from(oh, {B, O});
  std::vector<std::vector<double>> params{w1v, b1v, w2v};
  std::vector<std::vector<int64_t>> shapes{{I, H}, {H}, {H, O}};
  std::vector<T> ps;
  for (size_t i = 0; i < 3; i++) ps.push_back(from(params[i], shapes[i]));
  for (auto& p : ps) ASSERT_EQ(tg_tensor_set_requires_grad(p, 1), TG_OK);
  T loss = mlp_loss(x, ps[0], ps[1], ps[2], onehot);
  ASSERT_EQ(tg_tensor_backward(loss), TG_OK) << tg_last_error_message();
  auto loss_at = [&](size_t which, size_t k, double delta) {
    std::vector<std::vector<double>> q = params;
    q[which][k] += delta;
    T a = from(q[0], shapes[0]), b = from(q[1], shapes[1]), c = from(q[2], shapes[2]);
    T l = mlp_loss(x, a, b, c, onehot);
    return data(l)[0];
  };
  for (size_t i = 0; i < 3; i++) {
    T gr(tg_tensor_grad(ps[i]));
    std::vector<double> got = data(gr);
    ASSERT_EQ(got.size(), params[i].size());
    for (size_t k = 0; k < got.size(); k++) {
      const double eps = 1e-6;
      double fd = (loss_at(i, k, eps) - loss_at(i, k, -eps)) / (2 * eps);
      EXPECT_NEAR(got[k], fd, 1e-7) << "parameter " << i << " element " << k;
    }
  }
}

TEST(Autograd, BackwardAccumulatesAndSetGradClears) {
  T w = from({1, 2, 3}, {3});
  ASSERT_EQ(tg_tensor_set_requires_grad(w, 1), TG_OK);
  EXPECT_EQ(tg_tensor_requires_grad(w), 1);
  T sq(tg_tensor_mul(w, w));
  T l(tg_tensor_sum(sq, nullptr, 0, 0));
  ASSERT_EQ(tg_tensor_backward(l), TG_OK);
  ASSERT_EQ(tg_tensor_backward(l), TG_OK);
  T gr(tg_tensor_grad(w));
  EXPECT_EQ(data(gr), (std::vector<double>{4, 8, 12}));  // 2 * 2w
  ASSERT_EQ(tg_tensor_set_grad(w, nullptr), TG_OK);
  EXPECT_EQ(tg_tensor_grad(w), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
}

// current tinygrad's backward: the tensors in `also` take a grad when the loss depends on them, whatever requires_grad;
// unrelated, int and requires_grad tensors are as tg_tensor_backward leaves them
TEST(Autograd, BackwardAlsoFillsTheListedTensorsInTheGraph) {
  T x = from({1, -2, 3}, {3}), w = from({0.5, 0.5, 0.5}, {3}), other = from({9}, {1});
  T idx(tg_tensor_arange(1, 4, 1, TG_INT32, nullptr));
  T h(tg_tensor_mul(x, w));
  T r(tg_tensor_relu(h));
  T ri(tg_tensor_mul(r, idx));
  T l(tg_tensor_sum(ri, nullptr, 0, 0));
  tg_tensor* also[4] = {x, h, other, idx};
  ASSERT_EQ(tg_tensor_backward_also(l, also, 4), TG_OK) << tg_last_error_message();
  T gx(tg_tensor_grad(x)), gh(tg_tensor_grad(h));
  EXPECT_EQ(data(gx), (std::vector<double>{0.5, 0, 1.5}));
  EXPECT_EQ(data(gh), (std::vector<double>{1, 0, 3}));
  EXPECT_EQ(tg_tensor_grad(w), nullptr);  // not listed, no requires_grad
  EXPECT_EQ(tg_tensor_grad(other), nullptr);  // not in the graph
  EXPECT_EQ(tg_tensor_grad(idx), nullptr);  // int
  tg_clear_error();
  ASSERT_EQ(tg_tensor_backward_also(l, nullptr, 0), TG_OK);  // tg_tensor_backward: nothing requires grad, nothing changes
  EXPECT_EQ(data(T(tg_tensor_grad(x))), (std::vector<double>{0.5, 0, 1.5}));
  EXPECT_EQ(tg_tensor_backward_also(l, nullptr, 2), TG_ERROR_INVALID_ARGUMENT);
  tg_tensor* bad[1] = {nullptr};
  EXPECT_EQ(tg_tensor_backward_also(l, bad, 1), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tg_last_error_message()).find("backward_also"), std::string::npos) << tg_last_error_message();
}

TEST(Autograd, GradientFunctionDetachAndErrors) {
  T a = from({0.5, -1.5}, {2}), b = from({2, 3}, {2}), c = from({1, 1}, {2});
  T d(tg_tensor_detach(b));
  T ab(tg_tensor_mul(a, d));
  T e(tg_tensor_exp(ab));
  T s(tg_tensor_sum(e, nullptr, 0, 0));
  tg_tensor* wrt[3] = {a, b, c};
  tg_tensor* out[3] = {nullptr, nullptr, nullptr};
  ASSERT_EQ(tg_tensor_gradient(s, wrt, 3, out), TG_OK) << tg_last_error_message();
  T ga(out[0]), gb(out[1]), gc(out[2]);
  std::vector<double> want{2 * std::exp(1.0), 3 * std::exp(-4.5)};
  auto got = data(ga);
  for (size_t i = 0; i < 2; i++) EXPECT_NEAR(got[i], want[i], 1e-12);
  EXPECT_EQ(data(gb), (std::vector<double>{0, 0}));  // through detach: nothing
  EXPECT_EQ(data(gc), (std::vector<double>{0, 0}));  // unreached
  // a non-scalar loss and an int tensor are errors that name the problem
  EXPECT_EQ(tg_tensor_backward(e), TG_ERROR_SHAPE);
  EXPECT_NE(std::string(tg_last_error_message()).find("backward"), std::string::npos);
  int64_t shape[1] = {3};
  T iz(tg_tensor_zeros(shape, 1, TG_INT32, nullptr));
  EXPECT_EQ(tg_tensor_set_requires_grad(iz, 1), TG_ERROR_DTYPE);
  EXPECT_EQ(tg_tensor_backward(nullptr), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_tensor_gradient(s, nullptr, 2, out), TG_ERROR_INVALID_ARGUMENT);
}

// every op with a gradient rule, each against central differences of the composed graph (float64)
TEST(Autograd, EachPrimitiveAgainstCentralDifferences) {
  std::mt19937 g(11);
  std::vector<double> xv = randv(6, g), yv = randv(6, g);
  for (auto& v : yv) v = std::fabs(v) + 0.5;  // positive: log, sqrt, pow, div
  using F = T (*)(tg_tensor*, tg_tensor*);
  std::vector<std::pair<const char*, F>> fs = {
      {"mul-add", [](tg_tensor* x, tg_tensor* y) { T m(tg_tensor_mul(x, y)); return T(tg_tensor_add(m, x)); }},
      {"div", [](tg_tensor* x, tg_tensor* y) { return T(tg_tensor_div(x, y)); }},
      {"pow", [](tg_tensor* x, tg_tensor* y) { return T(tg_tensor_pow(y, x)); }},
      {"max", [](tg_tensor* x, tg_tensor* y) { return T(tg_tensor_maximum(x, y)); }},
      {"sin-log-sqrt", [](tg_tensor* x, tg_tensor* y) { T s(tg_tensor_sin(x)); T l(tg_tensor_log(y)); T q(tg_tensor_sqrt(y)); T a(tg_tensor_mul(s, l)); return T(tg_tensor_add(a, q)); }},
      {"softmax", [](tg_tensor* x, tg_tensor* y) { T m(tg_tensor_mul(x, y)); T r(tg_tensor_reshape(m, L({2, 3}), 2)); return T(tg_tensor_softmax(r, 0)); }},
      {"reduce-max", [](tg_tensor* x, tg_tensor*) { T r(tg_tensor_reshape(x, L({2, 3}), 2)); return T(tg_tensor_max(r, L({1}), 1, 1)); }},
      {"prod", [](tg_tensor* x, tg_tensor* y) { T r(tg_tensor_reshape(y, L({3, 2}), 2)); T p(tg_tensor_prod(r, L({0}), 1, 0)); T s(tg_tensor_sum(x, nullptr, 0, 0)); return T(tg_tensor_mul(p, s)); }},
      {"movement", [](tg_tensor* x, tg_tensor*) {
         T r(tg_tensor_reshape(x, L({2, 3}), 2));
         T p(tg_tensor_permute(r, L({1, 0}), 2));
         T f(tg_tensor_flip(p, L({0}), 1));
         T pd(tg_tensor_pad(f, L({1, 0, 0, 2}), 2, 0.0));
         T sh(tg_tensor_shrink(pd, L({0, 3, 1, 4}), 2));
         T e(tg_tensor_expand(T(tg_tensor_reshape(sh, L({1, 3, 3}), 3)), L({2, 3, 3}), 3));
         T sq(tg_tensor_mul(e, e));
         return T(tg_tensor_mul(sq, sh));
       }},
      {"where-tanh-sigmoid", [](tg_tensor* x, tg_tensor* y) { T c(tg_tensor_gt(x, y)); T a(tg_tensor_tanh(x)); T b(tg_tensor_sigmoid(y)); return T(tg_tensor_where(c, a, b)); }},
      {"cumsum-logsumexp", [](tg_tensor* x, tg_tensor*) { T c(tg_tensor_cumsum(x, 0)); T cc(tg_tensor_mul(c, c)); return T(tg_tensor_logsumexp(cc, nullptr, 0, 0)); }},
  };
  for (auto& [name, f] : fs) {
    T x = from(xv, {6}), y = from(yv, {6});
    T out = f(x, y);
    T l(tg_tensor_sum(out, nullptr, 0, 0));
    tg_tensor* wrt[2] = {x, y};
    tg_tensor* gs[2] = {};
    ASSERT_EQ(tg_tensor_gradient(l, wrt, 2, gs), TG_OK) << name << ": " << tg_last_error_message();
    T gx(gs[0]), gy(gs[1]);
    std::vector<std::vector<double>> got{data(gx), data(gy)}, base{xv, yv};
    for (size_t w = 0; w < 2; w++)
      for (size_t k = 0; k < 6; k++) {
        auto at = [&](double d) {
          std::vector<std::vector<double>> q = base;
          q[w][k] += d;
          T a = from(q[0], {6}), b = from(q[1], {6});
          T o = f(a, b);
          T s(tg_tensor_sum(o, nullptr, 0, 0));
          return data(s)[0];
        };
        double fd = (at(1e-6) - at(-1e-6)) / 2e-6;
        EXPECT_NEAR(got[w][k], fd, 1e-6 * std::max(1.0, std::fabs(fd))) << name << " d/d" << (w ? "y" : "x") << "[" << k << "]";
      }
  }
}

TEST(Random, SameSeedSameNumbersInOneKernel) {
  int64_t shape[1] = {1 << 20};
  tg_manual_seed(1234);
  T a(tg_tensor_rand(shape, 1, TG_FLOAT32, nullptr));
  T b(tg_tensor_rand(shape, 1, TG_FLOAT32, nullptr));
  tg_manual_seed(1234);
  T c(tg_tensor_rand(shape, 1, TG_FLOAT32, nullptr));
  std::vector<float> va(static_cast<size_t>(shape[0])), vb(va.size()), vc(va.size());
  tg_counters k0{sizeof k0}, k1{sizeof k1};
  tg_counters_get(&k0);
  ASSERT_EQ(tg_tensor_to_data(a, va.data(), va.size() * 4), TG_OK) << tg_last_error_message();
  tg_counters_get(&k1);
  EXPECT_EQ(k1.kernel_count - k0.kernel_count, 1u);  // generated inside one kernel
  ASSERT_EQ(tg_tensor_to_data(b, vb.data(), vb.size() * 4), TG_OK);
  ASSERT_EQ(tg_tensor_to_data(c, vc.data(), vc.size() * 4), TG_OK);
  EXPECT_EQ(va, vc);
  EXPECT_NE(va, vb);
  // uniform on [0, 1): mean 1/2, variance 1/12 (5 sigma bounds), and a chi-square over 100 bins (p = 1e-6: 185.2)
  double m = 0, v = 0;
  std::vector<int64_t> bins(100, 0);
  for (float x : va) {
    ASSERT_TRUE(x >= 0 && x < 1) << x;
    m += x, bins[size_t(x * 100)]++;
  }
  m /= double(va.size());
  for (float x : va) v += (x - m) * (x - m);
  v /= double(va.size());
  double n = double(va.size());
  EXPECT_NEAR(m, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(v, 1.0 / 12, 5 * std::sqrt(1.0 / 180 / n));
  double chi = 0, expect = n / 100;
  for (auto c2 : bins) chi += (double(c2) - expect) * (double(c2) - expect) / expect;
  EXPECT_LT(chi, 185.2);
}

TEST(Random, RandnRandintDistributions) {
  int64_t shape[2] = {1000, 1000};
  tg_manual_seed(99);
  T a(tg_tensor_randn(shape, 2, TG_FLOAT32, nullptr));
  std::vector<float> va(1000000);
  ASSERT_EQ(tg_tensor_to_data(a, va.data(), va.size() * 4), TG_OK) << tg_last_error_message();
  double m = 0, v = 0;
  for (float x : va) m += x;
  m /= 1e6;
  for (float x : va) v += (x - m) * (x - m);
  v /= 1e6;
  EXPECT_NEAR(m, 0, 5e-3);  // 5 sigma
  EXPECT_NEAR(v, 1, 5 * std::sqrt(2.0 / 1e6));
  T r(tg_tensor_randint(shape, 2, -3, 7, TG_INT32, nullptr));
  std::vector<int32_t> vr(1000000);
  ASSERT_EQ(tg_tensor_to_data(r, vr.data(), vr.size() * 4), TG_OK) << tg_last_error_message();
  std::vector<double> bins(10, 0);
  for (int32_t x : vr) {
    ASSERT_TRUE(x >= -3 && x < 7) << x;
    bins[size_t(x + 3)]++;
  }
  double chi = 0;
  for (double c : bins) chi += (c - 1e5) * (c - 1e5) / 1e5;
  EXPECT_LT(chi, 42.0);  // 9 degrees of freedom, p = 1e-6
  EXPECT_EQ(tg_tensor_randint(shape, 2, 5, 5, TG_INT32, nullptr), nullptr);
  EXPECT_EQ(tg_tensor_rand(shape, 2, TG_INT32, nullptr), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_DTYPE);
}

}  // namespace

namespace {


// forward + backward + SGD update of a tiny MLP, every handle released: a training loop's steady state
TEST(Autograd, TrainingLoopDoesNotGrowMemory) {
#ifdef __SANITIZE_ADDRESS__
  const int64_t dflt = 3000;  // instrumented code is ~10x slower; the leak check is LeakSanitizer's there
#else
  const int64_t dflt = 100000;
#endif
  const int64_t n = std::getenv("TG_AUTOGRAD_LOOP") ? std::atoll(std::getenv("TG_AUTOGRAD_LOOP")) : dflt;
  std::mt19937 g(3);
  T x = from(randv(8 * 4, g), {8, 4}), w1 = from(randv(4 * 6, g), {4, 6}), w2 = from(randv(6 * 3, g), {6, 3});
  std::vector<int32_t> lab{0, 1, 2, 0, 1, 2, 0, 1};
  int64_t ls[1] = {8};
  T y(tg_tensor_from_data(lab.data(), lab.size() * 4, TG_INT32, ls, 1, nullptr));
  double first = 0, last = 0;
  size_t rss0 = 0;
  auto step = [&](int64_t i) {
    tg_tensor_set_requires_grad(w1, 1), tg_tensor_set_requires_grad(w2, 1);
    T h(tg_tensor_matmul(x, w1));
    T a(tg_tensor_relu(h));
    T o(tg_tensor_matmul(a, w2));
    T l(tg_tensor_sparse_categorical_crossentropy(o, y, -1, 0, 1));
    ASSERT_EQ(tg_tensor_backward(l), TG_OK) << tg_last_error_message();
    T g1(tg_tensor_grad(w1)), g2(tg_tensor_grad(w2));
    T s1(tg_tensor_mul_scalar(g1, 0.1)), s2(tg_tensor_mul_scalar(g2, 0.1));
    T n1(tg_tensor_sub(w1, s1)), n2(tg_tensor_sub(w2, s2));
    T d1(tg_tensor_detach(n1)), d2(tg_tensor_detach(n2));
    tg_tensor* all[3] = {l, d1, d2};
    ASSERT_EQ(tg_tensor_realize_many(all, 3), TG_OK) << tg_last_error_message();
    double loss = 0;
    T l64(tg_tensor_cast(l, TG_FLOAT64));
    ASSERT_EQ(tg_tensor_to_data(l64, &loss, sizeof loss), TG_OK);
    if (i == 0) first = loss;
    last = loss;
    w1 = std::move(d1), w2 = std::move(d2);
  };
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; i++) {
    if (i == std::min<int64_t>(n / 10, 2000)) rss0 = rss_bytes();
    step(i);
    if (HasFatalFailure()) return;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t rss1 = rss_bytes();
  EXPECT_LT(last, first) << "the loss did not go down";
#ifndef __SANITIZE_ADDRESS__  // AddressSanitizer's quarantine holds freed memory on purpose
  EXPECT_LT(double(rss1) - double(rss0), 16.0 * (1 << 20)) << "RSS grew from " << rss0 << " to " << rss1 << " bytes";
#endif
  std::printf("[ info     ] %lld training steps in %.2f s (%.0f us each), loss %.4f -> %.4f, RSS %+.2f MiB after warm-up\n", (long long)n, secs,
              secs / double(n) * 1e6, first, last, (double(rss1) - double(rss0)) / (1 << 20));
}

}  // namespace
