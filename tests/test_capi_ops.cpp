// The C API's op families against double-precision references computed here, on random inputs: unary math and
// activations (float32 within rtol 1e-5 / atol 2e-6, the polynomial approximations asin/acos/atan/erf within 2e-6 more),
// binary ops, reductions and scans, movement, indexing, nn functional and random numbers. Every element is checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tinygrad.h"

namespace {

struct H {  // owns one handle
  tg_tensor* p = nullptr;
  H(tg_tensor* t = nullptr) : p(t) {}
  H(const H&) = delete;
  H(H&& o) noexcept : p(o.p) { o.p = nullptr; }
  ~H() { tg_tensor_release(p); }
  operator tg_tensor*() const { return p; }
};
H f32(const std::vector<float>& v, std::vector<int64_t> s) { return H(tg_tensor_from_data(v.data(), v.size() * 4, TG_FLOAT32, s.data(), s.size(), nullptr)); }
std::vector<float> rnd(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}
std::vector<double> read(tg_tensor* t) {  // any float or int dtype, as doubles
  EXPECT_NE(t, nullptr) << tg_last_error_message();
  if (!t) return {};
  H d(tg_tensor_cast(t, TG_FLOAT64));
  std::vector<double> out(size_t(tg_tensor_numel(d)));
  EXPECT_EQ(tg_tensor_to_data(d, out.data(), out.size() * 8), TG_OK) << tg_last_error_message();
  return out;
}
std::vector<int64_t> shape(tg_tensor* t) {
  std::vector<int64_t> s(size_t(std::max<int64_t>(tg_tensor_ndim(t), 0)));
  tg_tensor_shape(t, s.data(), s.size());
  return s;
}
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); i++) {
    bool same = (std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i] || std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]);
    if (!same && bad++ < 4) ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  }
}
double erf_ref(double x) { return std::erf(x); }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double softplus(double x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0); }

TEST(CApiOps, UnaryMathAndActivations) {
  struct U {
    const char* name;
    tg_tensor* (*fn)(tg_tensor*);
    std::function<double(double)> ref;
    float lo, hi;
    double atol = 2e-6;
  };
  std::vector<U> us = {
      {"rsqrt", tg_tensor_rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.1f, 4},
      {"square", tg_tensor_square, [](double x) { return x * x; }, -3, 3},
      {"tan", tg_tensor_tan, [](double x) { return std::tan(x); }, -1.2f, 1.2f, 1e-5},
      {"asin", tg_tensor_asin, [](double x) { return std::asin(x); }, -0.99f, 0.99f, 4e-6},
      {"acos", tg_tensor_acos, [](double x) { return std::acos(x); }, -0.99f, 0.99f, 4e-6},
      {"atan", tg_tensor_atan, [](double x) { return std::atan(x); }, -5, 5, 4e-6},
      {"sinh", tg_tensor_sinh, [](double x) { return std::sinh(x); }, -3, 3},
      {"cosh", tg_tensor_cosh, [](double x) { return std::cosh(x); }, -3, 3},
      {"asinh", tg_tensor_asinh, [](double x) { return std::asinh(x); }, -3, 3},
      {"acosh", tg_tensor_acosh, [](double x) { return std::acosh(x); }, 1.1f, 5},
      {"atanh", tg_tensor_atanh, [](double x) { return std::atanh(x); }, -0.9f, 0.9f},
      {"erf", tg_tensor_erf, erf_ref, -3, 3, 4e-7},
      {"sign", tg_tensor_sign, [](double x) { return double((x > 0) - (x < 0)); }, -2, 2},
      {"trunc", tg_tensor_trunc, [](double x) { return std::trunc(x); }, -5, 5},
      {"floor", tg_tensor_floor, [](double x) { return std::floor(x); }, -5, 5},
      {"ceil", tg_tensor_ceil, [](double x) { return std::ceil(x); }, -5, 5},
      {"round", tg_tensor_round, [](double x) { return std::nearbyint(x); }, -5, 5},
      {"relu6", tg_tensor_relu6, [](double x) { return std::min(std::max(x, 0.0), 6.0); }, -3, 9},
      {"selu", tg_tensor_selu, [](double x) { return 1.0507 * (x >= 0 ? x : 1.67326 * (std::exp(x) - 1)); }, -3, 3},
      {"gelu", tg_tensor_gelu, [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }, -3, 3},
      {"quick_gelu", tg_tensor_quick_gelu, [](double x) { return x * sigmoid(1.702 * x); }, -3, 3},
      {"silu", tg_tensor_silu, [](double x) { return x * sigmoid(x); }, -4, 4},
      {"mish", tg_tensor_mish, [](double x) { return x * std::tanh(softplus(x)); }, -4, 4},
      {"hardsigmoid", tg_tensor_hardsigmoid, [](double x) { return std::min(std::max(x / 6 + 0.5, 0.0), 1.0); }, -5, 5},
      {"logsigmoid", tg_tensor_logsigmoid, [](double x) { return -softplus(-x); }, -6, 6},
      {"softsign", tg_tensor_softsign, [](double x) { return x / (1 + std::fabs(x)); }, -4, 4},
      {"hardswish", tg_tensor_hardswish, [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; }, -5, 5},
  };
  for (auto& u : us) {
    auto v = rnd(257, u.lo, u.hi, 1);
    H x = f32(v, {257});
    H y(u.fn(x));
    std::vector<double> want;
    for (float a : v) want.push_back(u.ref(double(a)));
    expect_close(read(y), want, 1e-5, u.atol, u.name);
  }
  auto v = rnd(64, -4, 4, 2);
  H x = f32(v, {8, 8});
  std::vector<std::pair<H, std::function<double(double)>>> ps;
  ps.emplace_back(tg_tensor_leaky_relu(x, 0.2), [](double a) { return a < 0 ? 0.2 * a : a; });
  ps.emplace_back(tg_tensor_elu(x, 1.5), [](double a) { return a > 0 ? a : 1.5 * (std::exp(a) - 1); });
  ps.emplace_back(tg_tensor_celu(x, 0.7), [](double a) { return std::max(a, 0.0) + std::min(0.0, 0.7 * (std::exp(a / 0.7) - 1)); });
  ps.emplace_back(tg_tensor_softplus(x, 2.0), [](double a) { return softplus(2 * a) / 2; });
  ps.emplace_back(tg_tensor_hardtanh(x, -0.5, 1.5), [](double a) { return std::min(std::max(a, -0.5), 1.5); });
  ps.emplace_back(tg_tensor_clamp(x, -1, 2), [](double a) { return std::min(std::max(a, -1.0), 2.0); });
  for (auto& [t, ref] : ps) {
    std::vector<double> want;
    for (float a : v) want.push_back(ref(a));
    expect_close(read(t), want, 1e-5, 2e-6, "parameterized activation");
  }
  EXPECT_EQ(tg_tensor_clamp(x, NAN, 1), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
}

TEST(CApiOps, BinaryAndPredicates) {
  auto a = rnd(100, -5, 5, 3), b = rnd(100, -3, 3, 4);
  for (auto& x : b)
    if (std::fabs(x) < 0.1f) x = 0.5f;
  H ta = f32(a, {10, 10}), tb = f32(b, {10, 10});
  auto check = [&](tg_tensor* t, std::function<double(double, double)> ref, const char* what, double atol = 2e-6) {
    H h(t);
    std::vector<double> want;
    for (size_t i = 0; i < a.size(); i++) want.push_back(ref(a[i], b[i]));
    expect_close(read(h), want, 1e-5, atol, what);
  };
  check(tg_tensor_mod(ta, tb), [](double x, double y) { return x - y * std::floor(x / y); }, "mod", 1e-5);
  check(tg_tensor_fmod(ta, tb), [](double x, double y) { return std::fmod(x, y); }, "fmod", 1e-5);
  check(tg_tensor_copysign(ta, tb), [](double x, double y) { return std::copysign(x, y); }, "copysign");
  check(tg_tensor_logaddexp(ta, tb), [](double x, double y) { return std::max(x, y) + std::log1p(std::exp(-std::fabs(x - y))); }, "logaddexp");
  check(tg_tensor_isclose(ta, ta, 1e-5, 1e-8, 0), [](double, double) { return 1.0; }, "isclose");
  H w = f32(std::vector<float>(100, 0.25f), {10, 10});
  check(tg_tensor_lerp(ta, tb, w), [](double x, double y) { return x + (y - x) * 0.25; }, "lerp");
  std::vector<int32_t> ia(64), ib(64);
  std::mt19937 g(5);
  for (auto& x : ia) x = int32_t(g() % 2001) - 1000;
  for (auto& x : ib) x = int32_t(g() % 41) - 20;
  int64_t s[1] = {64};
  H xa(tg_tensor_from_data(ia.data(), 256, TG_INT32, s, 1, nullptr)), xb(tg_tensor_from_data(ib.data(), 256, TG_INT32, s, 1, nullptr));
  auto icheck = [&](tg_tensor* t, std::function<int64_t(int64_t, int64_t)> ref, const char* what) {
    H h(t);
    std::vector<double> want;
    for (size_t i = 0; i < ia.size(); i++) want.push_back(double(ref(ia[i], ib[i])));
    expect_close(read(h), want, 0, 0, what);
  };
  icheck(tg_tensor_mod(xa, xb), [](int64_t x, int64_t y) { return y == 0 ? x : ((x % y) + y) % y; }, "int mod");  // x % 0 == x (defined)
  icheck(tg_tensor_bitwise_and(xa, xb), [](int64_t x, int64_t y) { return x & y; }, "and");
  icheck(tg_tensor_bitwise_or(xa, xb), [](int64_t x, int64_t y) { return x | y; }, "or");
  icheck(tg_tensor_bitwise_xor(xa, xb), [](int64_t x, int64_t y) { return x ^ y; }, "xor");
  icheck(tg_tensor_bitwise_not(xa), [](int64_t x, int64_t) { return ~x; }, "not");
  icheck(tg_tensor_lshift(xa, 3), [](int64_t x, int64_t) { return int64_t(int32_t(uint32_t(x) << 3)); }, "lshift");
  icheck(tg_tensor_rshift(xa, 2), [](int64_t x, int64_t) { return x >> 2; }, "rshift");
  EXPECT_EQ(tg_tensor_lshift(xa, 32), nullptr);
  EXPECT_EQ(tg_tensor_bitwise_and(ta, tb), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_DTYPE);
  std::vector<float> sp{NAN, INFINITY, -INFINITY, 0.f, -1.5f};
  H t = f32(sp, {5});
  expect_close(read(H(tg_tensor_isnan(t))), {1, 0, 0, 0, 0}, 0, 0, "isnan");
  expect_close(read(H(tg_tensor_isinf(t))), {0, 1, 1, 0, 0}, 0, 0, "isinf");
  expect_close(read(H(tg_tensor_isfinite(t))), {0, 0, 0, 1, 1}, 0, 0, "isfinite");
  expect_close(read(H(tg_tensor_sign(t))), {NAN, 1, -1, 0, -1}, 0, 0, "sign of specials");
}

TEST(CApiOps, ReductionsAndScans) {
  const int R = 6, C = 9;
  auto v = rnd(R * C, -2, 2, 6);
  H x = f32(v, {R, C});
  int64_t ax1[1] = {1};
  std::vector<double> mean(R, 0), var(R, 0), lse(R, 0), amax(R, 0), amin(R, 0), cs, cp, cmax, cmin;
  for (int r = 0; r < R; r++) {
    double m = -INFINITY, mi = INFINITY, s = 0, p = 1, mx = -INFINITY, mn = INFINITY;
    int am = 0, an = 0;
    for (int c = 0; c < C; c++) {
      double a = v[size_t(r * C + c)];
      mean[size_t(r)] += a / C;
      if (a > m) m = a, am = c;
      if (a < mi) mi = a, an = c;
      s += a, p *= a, mx = std::max(mx, a), mn = std::min(mn, a);
      cs.push_back(s), cp.push_back(p), cmax.push_back(mx), cmin.push_back(mn);
    }
    amax[size_t(r)] = am, amin[size_t(r)] = an;
    for (int c = 0; c < C; c++) {
      double a = v[size_t(r * C + c)];
      var[size_t(r)] += (a - mean[size_t(r)]) * (a - mean[size_t(r)]) / (C - 1);
      lse[size_t(r)] += std::exp(a - m);
    }
    lse[size_t(r)] = std::log(lse[size_t(r)]) + m;
  }
  std::vector<double> sd;
  for (double x2 : var) sd.push_back(std::sqrt(x2));
  expect_close(read(H(tg_tensor_var(x, ax1, 1, 0, 1.0))), var, 1e-5, 1e-6, "var");
  expect_close(read(H(tg_tensor_std(x, ax1, 1, 0, 1.0))), sd, 1e-5, 1e-6, "std");
  tg_tensor* two[2] = {};
  ASSERT_EQ(tg_tensor_std_mean(x, ax1, 1, 1, 1.0, two), TG_OK);
  H s2(two[0]), m2(two[1]);
  EXPECT_EQ(shape(s2), (std::vector<int64_t>{R, 1}));
  expect_close(read(m2), mean, 1e-5, 1e-6, "std_mean's mean");
  expect_close(read(H(tg_tensor_logsumexp(x, ax1, 1, 0))), lse, 1e-5, 1e-6, "logsumexp");
  expect_close(read(H(tg_tensor_argmax(x, 1, 0, 0))), amax, 0, 0, "argmax");
  expect_close(read(H(tg_tensor_argmin(x, 1, 0, 0))), amin, 0, 0, "argmin");
  expect_close(read(H(tg_tensor_cumsum(x, 1))), cs, 1e-5, 1e-5, "cumsum");
  expect_close(read(H(tg_tensor_cumprod(x, -1))), cp, 1e-5, 1e-6, "cumprod");
  expect_close(read(H(tg_tensor_cummax(x, 1))), cmax, 0, 0, "cummax");
  expect_close(read(H(tg_tensor_cummin(x, 1))), cmin, 0, 0, "cummin");
  H pos(tg_tensor_gt(x, H(f32({0}, {}))));
  std::vector<double> any(R, 0), all(R, 1);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) any[size_t(r)] = any[size_t(r)] || v[size_t(r * C + c)] > 0, all[size_t(r)] = all[size_t(r)] && v[size_t(r * C + c)] > 0;
  expect_close(read(H(tg_tensor_any(pos, ax1, 1, 0))), any, 0, 0, "any");
  expect_close(read(H(tg_tensor_all(pos, ax1, 1, 0))), all, 0, 0, "all");
  EXPECT_EQ(tg_tensor_argmax(x, 2, 0, 0), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_SHAPE);
}

TEST(CApiOps, MovementFamily) {
  std::vector<float> v(24);
  std::iota(v.begin(), v.end(), 0.f);
  H x = f32(v, {2, 3, 4});
  EXPECT_EQ(shape(H(tg_tensor_flatten(x, 1, 2))), (std::vector<int64_t>{2, 12}));
  int64_t us[2] = {2, 2};
  EXPECT_EQ(shape(H(tg_tensor_unflatten(x, 2, us, 2))), (std::vector<int64_t>{2, 3, 2, 2}));
  EXPECT_EQ(shape(H(tg_tensor_unsqueeze(x, -1))), (std::vector<int64_t>{2, 3, 4, 1}));
  int64_t reps[3] = {1, 2, 1};
  H rp(tg_tensor_repeat(x, reps, 3));
  std::vector<double> want;
  for (int a = 0; a < 2; a++)
    for (int r = 0; r < 2; r++)
      for (int b = 0; b < 3; b++)
        for (int c = 0; c < 4; c++) want.push_back(a * 12 + b * 4 + c);
  expect_close(read(rp), want, 0, 0, "repeat");
  int64_t sh[1] = {1}, dm[1] = {2};
  H rl(tg_tensor_roll(x, sh, dm, 1));
  want.clear();
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 4; c++) want.push_back(a * 12 + b * 4 + (c + 3) % 4);
  expect_close(read(rl), want, 0, 0, "roll");
  tg_tensor* parts[2] = {x, x};
  EXPECT_EQ(shape(H(tg_tensor_cat(parts, 2, 1))), (std::vector<int64_t>{2, 6, 4}));
  EXPECT_EQ(shape(H(tg_tensor_stack(parts, 2, 0))), (std::vector<int64_t>{2, 2, 3, 4}));
  H tri(tg_tensor_triu(x, 1));
  want.clear();
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 4; c++) want.push_back(c - b >= 1 ? a * 12 + b * 4 + c : 0);
  expect_close(read(tri), want, 0, 0, "triu");
  int64_t pads[6] = {0, 0, 0, 0, 2, 1};
  H refl(tg_tensor_pad_mode(x, pads, 3, 1, 0)), circ(tg_tensor_pad_mode(x, pads, 3, 3, 0)), repl(tg_tensor_pad_mode(x, pads, 3, 2, 0));
  std::vector<double> wr, wc, wp;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 3; b++)
      for (int c = -2; c < 5; c++) {
        int r = c < 0 ? -c : c > 3 ? 6 - c : c, ci = (c + 4) % 4, p = std::min(std::max(c, 0), 3);
        wr.push_back(a * 12 + b * 4 + r), wc.push_back(a * 12 + b * 4 + ci), wp.push_back(a * 12 + b * 4 + p);
      }
  expect_close(read(refl), wr, 0, 0, "pad reflect");
  expect_close(read(circ), wc, 0, 0, "pad circular");
  expect_close(read(repl), wp, 0, 0, "pad replicate");
  int64_t big[6] = {0, 0, 0, 0, 4, 0};
  EXPECT_EQ(tg_tensor_pad_mode(x, big, 3, 1, 0), nullptr);
  EXPECT_EQ(tg_tensor_pad_mode(x, pads, 3, 9, 0), nullptr);
}

TEST(CApiOps, IndexingNnAndGradThroughThem) {
  auto v = rnd(2 * 3 * 6 * 6, -1, 1, 8), w = rnd(4 * 3 * 3 * 3, -1, 1, 9);
  H x = f32(v, {2, 3, 6, 6}), k = f32(w, {4, 3, 3, 3});
  ASSERT_EQ(tg_tensor_set_requires_grad(x, 1), TG_OK);
  H c(tg_tensor_conv2d(x, k, nullptr, 1, 1, 1, 1, 1, 0, 0));  // (2, 4, 4, 4)
  H p(tg_tensor_max_pool2d(c, 2, 2, 2, 2, 1, 1, 0, 0));        // (2, 4, 2, 2)
  tg_index idx[3] = {{TG_INDEX_INT, 1, 0, 1, 0, 0, 0, nullptr}, {TG_INDEX_SLICE, 0, 0, -1, 0, 0, 1, nullptr}, {TG_INDEX_ELLIPSIS, 0, 0, 1, 0, 0, 0, nullptr}};
  H sel(tg_tensor_getitem(p, idx, 3));  // (4, 2, 2), channels reversed
  EXPECT_EQ(shape(sel), (std::vector<int64_t>{4, 2, 2}));
  // reference: conv (valid), pool 2x2, batch 1, channels reversed
  std::vector<double> conv(2 * 4 * 4 * 4, 0), want;
  for (int n = 0; n < 2; n++)
    for (int o = 0; o < 4; o++)
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
          for (int ci = 0; ci < 3; ci++)
            for (int a = 0; a < 3; a++)
              for (int b = 0; b < 3; b++)
                conv[size_t(((n * 4 + o) * 4 + i) * 4 + j)] += double(v[size_t(((n * 3 + ci) * 6 + i + a) * 6 + j + b)]) * w[size_t(((o * 3 + ci) * 3 + a) * 3 + b)];
  for (int o = 3; o >= 0; o--)
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) {
        double m = -INFINITY;
        for (int a = 0; a < 2; a++)
          for (int b = 0; b < 2; b++) m = std::max(m, conv[size_t(((4 + o) * 4 + 2 * i + a) * 4 + 2 * j + b)]);
        want.push_back(m);
      }
  expect_close(read(sel), want, 1e-5, 1e-5, "conv2d -> max_pool2d -> getitem");
  H s(tg_tensor_sum(sel, nullptr, 0, 0));
  ASSERT_EQ(tg_tensor_backward(s), TG_OK) << tg_last_error_message();
  H g(tg_tensor_grad(x));
  std::vector<double> gx = read(g);
  ASSERT_EQ(gx.size(), v.size());
  double total = 0;
  for (size_t i = 0; i < gx.size() / 2; i++) EXPECT_EQ(gx[i], 0.0) << "batch 0 gets no gradient";
  for (double a : gx) total += a;
  double wsum = 0;  // each of the 16 selected maxima passes the sum of its channel's kernel back
  for (int o = 0; o < 4; o++)
    for (int i = 0; i < 27; i++) wsum += 4 * double(w[size_t(o * 27 + i)]);
  EXPECT_NEAR(total, wsum, 1e-4);
}

}  // namespace
