// C API tensors: every tg_tensor_* function once against a hand reference (shapes shared with test_tensor_ops, so the
// kernels are already compiled), then bad input of every kind: each returns the right status and a message naming the
// problem. Last, a 1e5-iteration build/realize/release loop that must not grow memory or the UOp intern table.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "rss.h"
#include "tinygrad.h"
#include "uop/uop.h"

namespace {

// an owned tensor handle, released at scope end
struct H {
  tg_tensor* p = nullptr;
  H(tg_tensor* t = nullptr) : p(t) {}
  ~H() { tg_tensor_release(p); }
  H(const H&) = delete;
  H& operator=(const H&) = delete;
  H(H&& o) noexcept : p(o.p) { o.p = nullptr; }
  operator tg_tensor*() const { return p; }
};
using Shape = std::vector<int64_t>;

H from(const std::vector<float>& v, Shape s) { return H(tg_tensor_from_data(v.data(), v.size() * 4, TG_FLOAT32, s.data(), s.size(), nullptr)); }
H from_i32(const std::vector<int32_t>& v, Shape s) { return H(tg_tensor_from_data(v.data(), v.size() * 4, TG_INT32, s.data(), s.size(), nullptr)); }
H from_bool(const std::vector<uint8_t>& v, Shape s) { return H(tg_tensor_from_data(v.data(), v.size(), TG_BOOL, s.data(), s.size(), nullptr)); }

Shape shape_of(tg_tensor* t) {
  int64_t n = tg_tensor_ndim(t);
  if (n < 0) return {-1};
  Shape s(static_cast<size_t>(n));
  EXPECT_EQ(tg_tensor_shape(t, s.data(), s.size()), TG_OK) << tg_last_error_message();
  return s;
}
tg_dtype dtype_of(tg_tensor* t) {
  tg_dtype d = TG_FLOAT64;
  EXPECT_EQ(tg_tensor_dtype(t, &d), TG_OK) << tg_last_error_message();
  return d;
}
// the contents as doubles (the dtypes these tests produce)
std::vector<double> values(tg_tensor* t) {
  std::vector<double> r;
  if (!t) return r;
  int64_t n = tg_tensor_numel(t);
  tg_dtype d = dtype_of(t);
  std::vector<uint8_t> b(size_t(n) * tg_dtype_size(d));
  EXPECT_EQ(tg_tensor_to_data(t, b.data(), b.size()), TG_OK) << tg_last_error_message();
  for (int64_t i = 0; i < n; i++) {
    const uint8_t* p = b.data() + size_t(i) * tg_dtype_size(d);
    switch (d) {
      case TG_BOOL: r.push_back(*p); break;
      case TG_INT32: r.push_back(*reinterpret_cast<const int32_t*>(p)); break;
      case TG_INT64: r.push_back(double(*reinterpret_cast<const int64_t*>(p))); break;
      case TG_FLOAT32: r.push_back(*reinterpret_cast<const float*>(p)); break;
      case TG_FLOAT64: r.push_back(*reinterpret_cast<const double*>(p)); break;
      case TG_FLOAT16: {
        _Float16 h;
        std::memcpy(&h, p, 2);
        r.push_back(double(h));
        break;
      }
      default: ADD_FAILURE() << "values(): dtype " << tg_dtype_name(d) << " not handled";
    }
  }
  return r;
}
// result of a C call: not NULL, the given shape and dtype, every value within rtol/atol of the reference
void expect_tensor(tg_tensor* t, Shape shape, tg_dtype dtype, const std::vector<double>& want, double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_NE(t, nullptr) << tg_last_error_message();
  EXPECT_EQ(shape_of(t), shape);
  EXPECT_EQ(dtype_of(t), dtype) << tg_dtype_name(dtype_of(t)) << " vs " << tg_dtype_name(dtype);
  auto got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++)
    EXPECT_TRUE(got[i] == want[i] || std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]) || (std::isnan(got[i]) && std::isnan(want[i])))
        << "[" << i << "] got " << got[i] << " want " << want[i];
}

// the last error: its status and every substring in its message
::testing::AssertionResult failed_with(tg_status want, std::initializer_list<const char*> subs) {
  tg_status got = tg_last_error();
  std::string msg = tg_last_error_message();
  if (got != want)
    return ::testing::AssertionFailure() << "status " << tg_status_name(got) << " (want " << tg_status_name(want) << "), message '" << msg << "'";
  for (const char* s : subs)
    if (msg.find(s) == std::string::npos) return ::testing::AssertionFailure() << "message '" << msg << "' does not mention '" << s << "'";
  return ::testing::AssertionSuccess();
}
// a constructor-like call must return NULL and record the error
#define EXPECT_NULL_ERR(expr, code, ...)                                   \
  do {                                                                     \
    tg_clear_error();                                                      \
    tg_tensor* r_ = (expr);                                                \
    EXPECT_EQ(r_, nullptr) << #expr << " succeeded";                       \
    tg_tensor_release(r_);                                                 \
    EXPECT_TRUE(failed_with(code, {__VA_ARGS__})) << "  in: " << #expr;  \
  } while (0)
// a status-returning call must return the code and record it
#define EXPECT_STATUS_ERR(expr, code, ...)                                 \
  do {                                                                     \
    tg_clear_error();                                                      \
    tg_status s_ = (expr);                                                 \
    EXPECT_EQ(s_, code) << #expr;                                          \
    EXPECT_TRUE(failed_with(code, {__VA_ARGS__})) << "  in: " << #expr;  \
  } while (0)

using BinFn = tg_tensor* (*)(tg_tensor*, tg_tensor*);
using UnFn = tg_tensor* (*)(tg_tensor*);
using RedFn = tg_tensor* (*)(tg_tensor*, const int64_t*, size_t, int);
using ScalarFn = tg_tensor* (*)(tg_tensor*, double);
struct NamedBin {
  const char* name;
  BinFn fn;
  double (*ref)(double, double);
  tg_dtype out;
};
struct NamedUn {
  const char* name;
  UnFn fn;
  double (*ref)(double);
  bool positive;  // needs x > 0
};
struct NamedRed {
  const char* name;
  RedFn fn;
};
const std::vector<NamedBin>& bins() {
  static const std::vector<NamedBin> v = {
      {"add", tg_tensor_add, [](double a, double b) { return a + b; }, TG_FLOAT32},
      {"sub", tg_tensor_sub, [](double a, double b) { return a - b; }, TG_FLOAT32},
      {"mul", tg_tensor_mul, [](double a, double b) { return a * b; }, TG_FLOAT32},
      {"div", tg_tensor_div, [](double a, double b) { return a / b; }, TG_FLOAT32},
      {"maximum", tg_tensor_maximum, [](double a, double b) { return std::max(a, b); }, TG_FLOAT32},
      {"minimum", tg_tensor_minimum, [](double a, double b) { return std::min(a, b); }, TG_FLOAT32},
      {"pow", tg_tensor_pow, [](double a, double b) { return std::pow(a, b); }, TG_FLOAT32},
      {"lt", tg_tensor_lt, [](double a, double b) { return double(a < b); }, TG_BOOL},
      {"le", tg_tensor_le, [](double a, double b) { return double(a <= b); }, TG_BOOL},
      {"gt", tg_tensor_gt, [](double a, double b) { return double(a > b); }, TG_BOOL},
      {"ge", tg_tensor_ge, [](double a, double b) { return double(a >= b); }, TG_BOOL},
      {"eq", tg_tensor_eq, [](double a, double b) { return double(a == b); }, TG_BOOL},
      {"ne", tg_tensor_ne, [](double a, double b) { return double(a != b); }, TG_BOOL},
      {"idiv", tg_tensor_idiv, nullptr, TG_INT32},
      {"matmul", tg_tensor_matmul, nullptr, TG_FLOAT32},
  };
  return v;
}
const std::vector<NamedUn>& uns() {
  static const std::vector<NamedUn> v = {
      {"neg", tg_tensor_neg, [](double x) { return -x; }, false},
      {"exp", tg_tensor_exp, [](double x) { return std::exp(x); }, false},
      {"exp2", tg_tensor_exp2, [](double x) { return std::exp2(x); }, false},
      {"log", tg_tensor_log, [](double x) { return std::log(x); }, true},
      {"log2", tg_tensor_log2, [](double x) { return std::log2(x); }, true},
      {"sqrt", tg_tensor_sqrt, [](double x) { return std::sqrt(x); }, true},
      {"reciprocal", tg_tensor_reciprocal, [](double x) { return 1 / x; }, false},
      {"sin", tg_tensor_sin, [](double x) { return std::sin(x); }, false},
      {"cos", tg_tensor_cos, [](double x) { return std::cos(x); }, false},
      {"abs", tg_tensor_abs, [](double x) { return std::fabs(x); }, false},
      {"relu", tg_tensor_relu, [](double x) { return std::max(x, 0.0); }, false},
      {"sigmoid", tg_tensor_sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, false},
      {"tanh", tg_tensor_tanh, [](double x) { return std::tanh(x); }, false},
      {"contiguous", tg_tensor_contiguous, [](double x) { return x; }, false},
  };
  return v;
}
const std::vector<NamedRed>& reds() {
  static const std::vector<NamedRed> v = {{"sum", tg_tensor_sum}, {"prod", tg_tensor_prod}, {"max", tg_tensor_max}, {"min", tg_tensor_min}, {"mean", tg_tensor_mean}};
  return v;
}

// ---- every function once ----------------------------------------------------------------------------------------------------
TEST(CApiTensor, PropertiesAndRoundTrip) {
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  H t = from(v, {2, 3});
  ASSERT_NE(t.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(tg_tensor_ndim(t), 2);
  EXPECT_EQ(tg_tensor_numel(t), 6);
  EXPECT_EQ(shape_of(t), (Shape{2, 3}));
  EXPECT_EQ(dtype_of(t), TG_FLOAT32);
  const char* env = std::getenv("DEV") && *std::getenv("DEV") ? std::getenv("DEV") : std::getenv("DEVICE");
  std::string def = env && *env ? env : "CPU";  // the default device: $DEV, else $DEVICE, else "CPU" (the LLVM JIT)
  for (auto& c : def) c = char(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(tg_tensor_device(t), def);
  expect_tensor(t, {2, 3}, TG_FLOAT32, {1, 2, 3, 4, 5, 6}, 0, 0);
  int64_t s[2] = {2, 3};
  for (auto [dev, want] : std::vector<std::pair<const char*, const char*>>{
           {"CPU", "CPU"}, {"cpu", "CPU"}, {"CPU:0", "CPU"}, {"llvm", "CPU"}, {"clang", "CPU:CLANG"}, {"cpu:clang", "CPU:CLANG"}}) {
    H u(tg_tensor_from_data(v.data(), 24, TG_FLOAT32, s, 2, dev));
    ASSERT_NE(u.p, nullptr) << dev << ": " << tg_last_error_message();
    EXPECT_STREQ(tg_tensor_device(u), want) << dev;
  }
  int64_t big[3];
  EXPECT_EQ(tg_tensor_shape(t, big, 3), TG_OK) << "a larger capacity is fine";
  // 0-d
  H z(tg_tensor_from_data(v.data(), 4, TG_FLOAT32, nullptr, 0, nullptr));
  EXPECT_EQ(tg_tensor_ndim(z), 0);
  EXPECT_EQ(tg_tensor_numel(z), 1);
  EXPECT_EQ(tg_tensor_shape(z, nullptr, 0), TG_OK);
}

TEST(CApiTensor, Creation) {
  int64_t s[2] = {2, 3};
  H e(tg_tensor_empty(s, 2, TG_INT8, nullptr));
  ASSERT_NE(e.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(shape_of(e), (Shape{2, 3}));
  EXPECT_EQ(dtype_of(e), TG_INT8);
  expect_tensor(H(tg_tensor_zeros(s, 2, TG_FLOAT32, nullptr)), {2, 3}, TG_FLOAT32, std::vector<double>(6, 0.0));
  expect_tensor(H(tg_tensor_ones(s, 2, TG_FLOAT16, nullptr)), {2, 3}, TG_FLOAT16, std::vector<double>(6, 1.0));
  expect_tensor(H(tg_tensor_full(s, 2, -2.5, TG_FLOAT32, nullptr)), {2, 3}, TG_FLOAT32, std::vector<double>(6, -2.5));
  expect_tensor(H(tg_tensor_arange(0, 10, 1, TG_INT32, nullptr)), {10}, TG_INT32, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_tensor(H(tg_tensor_arange(5, -5, -1.5, TG_FLOAT32, nullptr)), {7}, TG_FLOAT32, {5, 3.5, 2, 0.5, -1, -2.5, -4});
  expect_tensor(H(tg_tensor_arange(3, 3, 1, TG_FLOAT32, nullptr)), {0}, TG_FLOAT32, {});
  expect_tensor(H(tg_tensor_eye(4, TG_FLOAT32, nullptr)), {4, 4}, TG_FLOAT32, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  int64_t zs[2] = {0, 3};
  expect_tensor(H(tg_tensor_zeros(zs, 2, TG_FLOAT32, nullptr)), {0, 3}, TG_FLOAT32, {});
}

// binary ops on (4,5) x (5,) float32, the shapes test_tensor_ops sweeps every dtype over
TEST(CApiTensor, Binary) {
  std::vector<float> av(20), bv;
  for (size_t i = 0; i < 20; i++) av[i] = 0.5f + 0.125f * float(i);
  bv = {av[0], av[6], -0.75f, av[13], 2.25f};  // some equal pairs for eq/le/ge
  H a = from(av, {4, 5}), b = from(bv, {5});
  for (auto& op : bins()) {
    if (!op.ref) continue;
    SCOPED_TRACE(op.name);
    std::vector<double> want;
    for (size_t i = 0; i < 20; i++) want.push_back(op.ref(av[i], bv[i % 5]));
    expect_tensor(H(op.fn(a, b)), {4, 5}, op.out, want);
  }
  std::vector<int32_t> iv = {7, -7, 9, 0, -20, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, -17}, jv = {2, -2, 4, 3, 7};
  std::vector<double> want;
  for (size_t i = 0; i < 20; i++) want.push_back(double(iv[i] / jv[i % 5]));  // C truncates toward zero
  expect_tensor(H(tg_tensor_idiv(from_i32(iv, {4, 5}), from_i32(jv, {5}))), {4, 5}, TG_INT32, want);
  // matmul (3,4) @ (4,5)
  std::vector<float> m(12), n(20);
  for (size_t i = 0; i < 12; i++) m[i] = float(i) - 5;
  for (size_t i = 0; i < 20; i++) n[i] = float(i % 7) * 0.5f;
  want.clear();
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++) {
      double s = 0;
      for (int k = 0; k < 4; k++) s += m[size_t(i * 4 + k)] * n[size_t(k * 5 + j)];
      want.push_back(s);
    }
  expect_tensor(H(tg_tensor_matmul(from(m, {3, 4}), from(n, {4, 5}))), {3, 5}, TG_FLOAT32, want);
}

TEST(CApiTensor, ScalarWhereCast) {
  std::vector<float> xv(12);
  for (size_t i = 0; i < 12; i++) xv[i] = (float(i) - 5.5f) * 0.5f;
  H x = from(xv, {3, 4});
  struct S {
    const char* name;
    ScalarFn fn;
    double b;
    double (*ref)(double, double);
  };
  for (auto& s : std::vector<S>{{"add_scalar", tg_tensor_add_scalar, 2.5, [](double a, double b) { return a + b; }},
                                {"sub_scalar", tg_tensor_sub_scalar, 2.5, [](double a, double b) { return a - b; }},
                                {"mul_scalar", tg_tensor_mul_scalar, 2.5, [](double a, double b) { return a * b; }},
                                {"div_scalar", tg_tensor_div_scalar, 2.5, [](double a, double b) { return a / b; }},
                                {"pow_scalar", tg_tensor_pow_scalar, 2, [](double a, double b) { return std::pow(a, b); }}}) {
    SCOPED_TRACE(s.name);
    std::vector<double> want;
    for (float v : xv) want.push_back(s.ref(v, s.b));
    expect_tensor(H(s.fn(x, s.b)), {3, 4}, TG_FLOAT32, want);
  }
  // an int tensor with a fractional scalar promotes to float32; with a whole one it stays int32
  std::vector<int32_t> iv = {1, -2, 3, 4, 5, 6};
  H i = from_i32(iv, {2, 3});
  expect_tensor(H(tg_tensor_add_scalar(i, 2.5)), {2, 3}, TG_FLOAT32, {3.5, 0.5, 5.5, 6.5, 7.5, 8.5});
  expect_tensor(H(tg_tensor_mul_scalar(i, 3)), {2, 3}, TG_INT32, {3, -6, 9, 12, 15, 18});
  // where (3,1) ? (1,4) : (3,4)
  H c = from_bool({1, 0, 1}, {3, 1}), w = from({10, 20, 30, 40}, {1, 4});
  std::vector<double> want;
  for (size_t r = 0; r < 3; r++)
    for (size_t k = 0; k < 4; k++) want.push_back(r != 1 ? 10.0 * double(k + 1) : xv[r * 4 + k]);
  expect_tensor(H(tg_tensor_where(c, w, x)), {3, 4}, TG_FLOAT32, want);
  want.clear();
  for (float v : xv) want.push_back(std::trunc(v));
  expect_tensor(H(tg_tensor_cast(x, TG_INT32)), {3, 4}, TG_INT32, want);
}

TEST(CApiTensor, Unary) {
  std::vector<float> sv(12), pv(12);
  for (size_t i = 0; i < 12; i++) sv[i] = (float(i) - 5.5f) * 0.5f, pv[i] = 0.25f + 0.25f * float(i);
  H s = from(sv, {3, 4}), p = from(pv, {3, 4});
  for (auto& op : uns()) {
    SCOPED_TRACE(op.name);
    auto& in = op.positive ? pv : sv;
    std::vector<double> want;
    for (float v : in) want.push_back(op.ref(v));
    expect_tensor(H(op.fn(op.positive ? p : s)), {3, 4}, TG_FLOAT32, want, 1e-5, 1e-5);
  }
}

TEST(CApiTensor, ReductionsAndSoftmax) {
  std::vector<float> xv(24);
  for (size_t i = 0; i < 24; i++) xv[i] = 0.75f + 0.0625f * float((i * 7) % 24);
  H x = from(xv, {3, 8});
  int64_t ax1[1] = {1}, axm1[1] = {-1};
  for (auto& r : reds()) {
    SCOPED_TRACE(r.name);
    std::vector<double> want;
    for (size_t i = 0; i < 3; i++) {
      double s = 0, p = 1, mx = -INFINITY, mn = INFINITY;
      for (size_t j = 0; j < 8; j++) {
        double v = xv[i * 8 + j];
        s += v, p *= v, mx = std::max(mx, v), mn = std::min(mn, v);
      }
      std::string n = r.name;
      want.push_back(n == "sum" ? s : n == "prod" ? p : n == "max" ? mx : n == "min" ? mn : s / 8);
    }
    expect_tensor(H(r.fn(x, ax1, 1, 0)), {3}, TG_FLOAT32, want);
    expect_tensor(H(r.fn(x, axm1, 1, 1)), {3, 1}, TG_FLOAT32, want);
  }
  double total = 0;
  for (float v : xv) total += v;
  expect_tensor(H(tg_tensor_sum(x, nullptr, 0, 0)), {}, TG_FLOAT32, {total});
  // softmax / log_softmax over the last axis of (4,7), the shape test_tensor_ops uses
  std::vector<float> sv(28);
  for (size_t i = 0; i < 28; i++) sv[i] = std::sin(float(i)) * 3;
  H sx = from(sv, {4, 7});
  std::vector<double> sm, lsm;
  for (size_t i = 0; i < 4; i++) {
    double m = -INFINITY, z = 0;
    for (size_t j = 0; j < 7; j++) m = std::max(m, double(sv[i * 7 + j]));
    for (size_t j = 0; j < 7; j++) z += std::exp(sv[i * 7 + j] - m);
    for (size_t j = 0; j < 7; j++) sm.push_back(std::exp(sv[i * 7 + j] - m) / z), lsm.push_back(sv[i * 7 + j] - m - std::log(z));
  }
  expect_tensor(H(tg_tensor_softmax(sx, -1)), {4, 7}, TG_FLOAT32, sm, 1e-5, 1e-6);
  expect_tensor(H(tg_tensor_log_softmax(sx, 1)), {4, 7}, TG_FLOAT32, lsm, 1e-5, 1e-5);
}

TEST(CApiTensor, Movement) {
  H x = from({1, 2, 3, 4, 5, 6}, {2, 3});
  int64_t rs[2] = {3, -1}, perm[2] = {1, 0}, ex[3] = {2, 2, 3}, ex1[2] = {2, 1}, pads[4] = {1, 0, 0, 1}, bnd[4] = {0, 2, 1, 3}, fl[1] = {-1};
  expect_tensor(H(tg_tensor_reshape(x, rs, 2)), {3, 2}, TG_FLOAT32, {1, 2, 3, 4, 5, 6});
  expect_tensor(H(tg_tensor_permute(x, perm, 2)), {3, 2}, TG_FLOAT32, {1, 4, 2, 5, 3, 6});
  expect_tensor(H(tg_tensor_transpose(x, 0, 1)), {3, 2}, TG_FLOAT32, {1, 4, 2, 5, 3, 6});
  H col = from({7, 8}, {2, 1});
  expect_tensor(H(tg_tensor_expand(col, ex, 3)), {2, 2, 3}, TG_FLOAT32, {7, 7, 7, 8, 8, 8, 7, 7, 7, 8, 8, 8});
  expect_tensor(H(tg_tensor_expand(col, ex1, 2)), {2, 1}, TG_FLOAT32, {7, 8});
  expect_tensor(H(tg_tensor_pad(x, pads, 2, 9)), {3, 4}, TG_FLOAT32, {9, 9, 9, 9, 1, 2, 3, 9, 4, 5, 6, 9});
  expect_tensor(H(tg_tensor_shrink(x, bnd, 2)), {2, 2}, TG_FLOAT32, {2, 3, 5, 6});
  expect_tensor(H(tg_tensor_flip(x, fl, 1)), {2, 3}, TG_FLOAT32, {3, 2, 1, 6, 5, 4});
}

TEST(CApiTensor, RealizeRetainRelease) {
  H x = from({1, 2, 3, 4, 5, 6}, {2, 3});
  H a(tg_tensor_mul_scalar(x, 2.5)), b(tg_tensor_add_scalar(x, 2.5));
  tg_tensor* both[2] = {a, b};
  EXPECT_EQ(tg_tensor_realize_many(both, 2), TG_OK) << tg_last_error_message();
  EXPECT_EQ(tg_tensor_realize_many(nullptr, 0), TG_OK);
  EXPECT_EQ(tg_tensor_realize(a), TG_OK);
  expect_tensor(a, {2, 3}, TG_FLOAT32, {2.5, 5, 7.5, 10, 12.5, 15});
  expect_tensor(b, {2, 3}, TG_FLOAT32, {3.5, 4.5, 5.5, 6.5, 7.5, 8.5});
  // retain gives the same handle with one more reference; it stays usable until the last release
  tg_tensor* r = tg_tensor_retain(a);
  EXPECT_EQ(r, a.p);
  tg_tensor_release(r);
  EXPECT_EQ(tg_tensor_ndim(a), 2);
  tg_clear_error();
  tg_tensor_release(nullptr);  // a no-op, not an error
  EXPECT_EQ(tg_last_error(), TG_OK);
  // realize of an input keeps working and reading it gives the same data
  EXPECT_EQ(tg_tensor_realize(x), TG_OK);
  expect_tensor(x, {2, 3}, TG_FLOAT32, {1, 2, 3, 4, 5, 6});
}

TEST(CApiTensor, Counters) {
  tg_counters_reset();
  H x = from({1, 2, 3, 4, 5, 6}, {2, 3});
  H y(tg_tensor_exp(x));
  ASSERT_EQ(tg_tensor_realize(y), TG_OK);
  tg_counters c{};
  c.struct_size = sizeof c;
  ASSERT_EQ(tg_counters_get(&c), TG_OK);
  EXPECT_EQ(c.struct_size, sizeof c);
  EXPECT_EQ(c.kernel_count, 1u);
  EXPECT_GT(c.global_mem, 0u);
  // a caller built against an older, smaller struct gets only its prefix
  struct Old {
    size_t struct_size;
    uint64_t kernel_count;
  };
  struct {
    Old old;
    uint64_t canary;
  } o{{sizeof(Old), 0}, 0xdeadbeef};
  ASSERT_EQ(tg_counters_get(reinterpret_cast<tg_counters*>(&o)), TG_OK);
  EXPECT_EQ(o.old.struct_size, sizeof(Old));
  EXPECT_EQ(o.old.kernel_count, 1u);
  EXPECT_EQ(o.canary, 0xdeadbeefu) << "wrote past the caller's struct_size";
  tg_counters_reset();
  ASSERT_EQ(tg_counters_get(&c), TG_OK);
  EXPECT_EQ(c.kernel_count, 0u);
}

// ---- bad input ------------------------------------------------------------------------------------------------------------------
TEST(CApiTensor, NullHandles) {
  H a = from({1, 2, 3, 4, 5, 6}, {2, 3});
  int64_t shp[2] = {2, 3}, ax[1] = {0}, pairs[4] = {0, 1, 0, 1};
  float buf[6];
  tg_dtype d;
  tg_clear_error();
  EXPECT_EQ(tg_tensor_ndim(nullptr), -1);
  EXPECT_TRUE(failed_with(TG_ERROR_INVALID_ARGUMENT, {"ndim", "NULL"}));
  tg_clear_error();
  EXPECT_EQ(tg_tensor_numel(nullptr), -1);
  EXPECT_TRUE(failed_with(TG_ERROR_INVALID_ARGUMENT, {"numel", "NULL"}));
  tg_clear_error();
  EXPECT_EQ(tg_tensor_device(nullptr), nullptr);
  EXPECT_TRUE(failed_with(TG_ERROR_INVALID_ARGUMENT, {"device", "NULL"}));
  EXPECT_STATUS_ERR(tg_tensor_shape(nullptr, shp, 2), TG_ERROR_INVALID_ARGUMENT, "shape", "NULL");
  EXPECT_STATUS_ERR(tg_tensor_dtype(nullptr, &d), TG_ERROR_INVALID_ARGUMENT, "dtype", "NULL");
  for (auto& op : bins()) {
    SCOPED_TRACE(op.name);
    EXPECT_NULL_ERR(op.fn(nullptr, a), TG_ERROR_INVALID_ARGUMENT, op.name, "a is NULL");
    EXPECT_NULL_ERR(op.fn(a, nullptr), TG_ERROR_INVALID_ARGUMENT, op.name, "b is NULL");
  }
  for (auto fn : {tg_tensor_add_scalar, tg_tensor_sub_scalar, tg_tensor_mul_scalar, tg_tensor_div_scalar, tg_tensor_pow_scalar})
    EXPECT_NULL_ERR(fn(nullptr, 1.0), TG_ERROR_INVALID_ARGUMENT, "_scalar", "NULL");
  EXPECT_NULL_ERR(tg_tensor_where(nullptr, a, a), TG_ERROR_INVALID_ARGUMENT, "where", "cond is NULL");
  EXPECT_NULL_ERR(tg_tensor_where(a, nullptr, a), TG_ERROR_INVALID_ARGUMENT, "where", "x is NULL");
  EXPECT_NULL_ERR(tg_tensor_where(a, a, nullptr), TG_ERROR_INVALID_ARGUMENT, "where", "y is NULL");
  EXPECT_NULL_ERR(tg_tensor_cast(nullptr, TG_INT32), TG_ERROR_INVALID_ARGUMENT, "cast", "NULL");
  for (auto& op : uns()) EXPECT_NULL_ERR(op.fn(nullptr), TG_ERROR_INVALID_ARGUMENT, op.name, "NULL");
  for (auto& r : reds()) EXPECT_NULL_ERR(r.fn(nullptr, ax, 1, 0), TG_ERROR_INVALID_ARGUMENT, r.name, "NULL");
  EXPECT_NULL_ERR(tg_tensor_softmax(nullptr, -1), TG_ERROR_INVALID_ARGUMENT, "softmax", "NULL");
  EXPECT_NULL_ERR(tg_tensor_log_softmax(nullptr, -1), TG_ERROR_INVALID_ARGUMENT, "log_softmax", "NULL");
  EXPECT_NULL_ERR(tg_tensor_reshape(nullptr, shp, 2), TG_ERROR_INVALID_ARGUMENT, "reshape", "NULL");
  EXPECT_NULL_ERR(tg_tensor_permute(nullptr, shp, 2), TG_ERROR_INVALID_ARGUMENT, "permute", "NULL");
  EXPECT_NULL_ERR(tg_tensor_expand(nullptr, shp, 2), TG_ERROR_INVALID_ARGUMENT, "expand", "NULL");
  EXPECT_NULL_ERR(tg_tensor_pad(nullptr, pairs, 2, 0), TG_ERROR_INVALID_ARGUMENT, "pad", "NULL");
  EXPECT_NULL_ERR(tg_tensor_shrink(nullptr, pairs, 2), TG_ERROR_INVALID_ARGUMENT, "shrink", "NULL");
  EXPECT_NULL_ERR(tg_tensor_flip(nullptr, ax, 1), TG_ERROR_INVALID_ARGUMENT, "flip", "NULL");
  EXPECT_NULL_ERR(tg_tensor_transpose(nullptr, 0, 1), TG_ERROR_INVALID_ARGUMENT, "transpose", "NULL");
  EXPECT_NULL_ERR(tg_tensor_retain(nullptr), TG_ERROR_INVALID_ARGUMENT, "retain", "NULL");
  EXPECT_STATUS_ERR(tg_tensor_realize(nullptr), TG_ERROR_INVALID_ARGUMENT, "realize", "NULL");
  EXPECT_STATUS_ERR(tg_tensor_realize_many(nullptr, 2), TG_ERROR_INVALID_ARGUMENT, "realize_many", "NULL");
  tg_tensor* some[2] = {a, nullptr};
  EXPECT_STATUS_ERR(tg_tensor_realize_many(some, 2), TG_ERROR_INVALID_ARGUMENT, "realize_many", "tensors[1]", "NULL");
  EXPECT_STATUS_ERR(tg_tensor_to_data(nullptr, buf, sizeof buf), TG_ERROR_INVALID_ARGUMENT, "to_data", "NULL");
  EXPECT_STATUS_ERR(tg_counters_get(nullptr), TG_ERROR_INVALID_ARGUMENT, "counters_get", "NULL");
  // NULL pointer arguments next to a live handle
  EXPECT_NULL_ERR(tg_tensor_from_data(nullptr, 24, TG_FLOAT32, shp, 2, nullptr), TG_ERROR_INVALID_ARGUMENT, "from_data", "data is NULL");
  EXPECT_NULL_ERR(tg_tensor_zeros(nullptr, 2, TG_FLOAT32, nullptr), TG_ERROR_INVALID_ARGUMENT, "zeros", "shape is NULL");
  EXPECT_NULL_ERR(tg_tensor_sum(a, nullptr, 2, 0), TG_ERROR_INVALID_ARGUMENT, "sum", "axes is NULL");
  EXPECT_NULL_ERR(tg_tensor_reshape(a, nullptr, 2), TG_ERROR_INVALID_ARGUMENT, "reshape", "NULL");
  EXPECT_NULL_ERR(tg_tensor_pad(a, nullptr, 2, 0), TG_ERROR_INVALID_ARGUMENT, "pad", "NULL");
  EXPECT_STATUS_ERR(tg_tensor_to_data(a, nullptr, sizeof buf), TG_ERROR_INVALID_ARGUMENT, "to_data", "out is NULL");
  EXPECT_STATUS_ERR(tg_tensor_shape(a, nullptr, 2), TG_ERROR_INVALID_ARGUMENT, "shape", "out is NULL");
  EXPECT_STATUS_ERR(tg_tensor_dtype(a, nullptr), TG_ERROR_INVALID_ARGUMENT, "dtype", "out is NULL");
}

TEST(CApiTensor, MismatchedShapes) {
  H a(tg_tensor_zeros(std::vector<int64_t>{3, 4}.data(), 2, TG_FLOAT32, nullptr)), b(tg_tensor_zeros(std::vector<int64_t>{5, 6}.data(), 2, TG_FLOAT32, nullptr));
  ASSERT_TRUE(a.p && b.p);
  EXPECT_NULL_ERR(tg_tensor_matmul(a, b), TG_ERROR_SHAPE, "matmul", "(3,4)", "(5,6)");
  for (auto& op : bins())
    if (std::string(op.name) != "idiv") EXPECT_NULL_ERR(op.fn(a, b), TG_ERROR_SHAPE, "(3,4)", "(5,6)");
  EXPECT_NULL_ERR(tg_tensor_where(a, a, b), TG_ERROR_SHAPE, "where", "(3,4)", "(5,6)");
  H s(tg_tensor_full(nullptr, 0, 2, TG_FLOAT32, nullptr));
  EXPECT_NULL_ERR(tg_tensor_matmul(s, a), TG_ERROR_SHAPE, "matmul", "1 dimension");
  int64_t ex[2] = {5, 4}, pad3[6] = {0, 1, 0, 1, 0, 1}, padneg[4] = {0, -4, 0, 0}, shr_bad[4] = {0, 3, 2, 5}, shr_rev[4] = {2, 1, 0, 4}, perm_rep[2] = {0, 0},
          perm_len[3] = {0, 1, 2};
  EXPECT_NULL_ERR(tg_tensor_expand(a, ex, 2), TG_ERROR_SHAPE, "expand", "(3,4)", "(5,4)");
  EXPECT_NULL_ERR(tg_tensor_pad(a, pad3, 3, 0), TG_ERROR_SHAPE, "pad", "(3,4)");
  EXPECT_NULL_ERR(tg_tensor_pad(a, padneg, 2, 0), TG_ERROR_SHAPE, "pad", "crops more than dim 0 of size 3");  // a crop, but past the dim
  EXPECT_NULL_ERR(tg_tensor_shrink(a, shr_bad, 2), TG_ERROR_SHAPE, "shrink", "(2,5)", "(3,4)");
  EXPECT_NULL_ERR(tg_tensor_shrink(a, shr_rev, 2), TG_ERROR_SHAPE, "shrink", "(2,1)");
  EXPECT_NULL_ERR(tg_tensor_permute(a, perm_rep, 2), TG_ERROR_SHAPE, "permute", "repeats");
  EXPECT_NULL_ERR(tg_tensor_permute(a, perm_len, 3), TG_ERROR_SHAPE, "permute", "(3,4)");
  int64_t cap[1];
  EXPECT_STATUS_ERR(tg_tensor_shape(a, cap, 1), TG_ERROR_INVALID_ARGUMENT, "shape", "capacity");
}

TEST(CApiTensor, AxisOutOfRange) {
  H a(tg_tensor_zeros(std::vector<int64_t>{3, 4}.data(), 2, TG_FLOAT32, nullptr));
  int64_t two[1] = {2}, m3[1] = {-3}, five[1] = {5}, ok_then_bad[2] = {0, 7}, perm_bad[2] = {0, 2};
  for (auto& r : reds()) {
    SCOPED_TRACE(r.name);
    EXPECT_NULL_ERR(r.fn(a, two, 1, 0), TG_ERROR_SHAPE, "axis 2", "(3,4)");
    EXPECT_NULL_ERR(r.fn(a, m3, 1, 1), TG_ERROR_SHAPE, "axis -3", "(3,4)");
    EXPECT_NULL_ERR(r.fn(a, ok_then_bad, 2, 0), TG_ERROR_SHAPE, "axis 7");
  }
  EXPECT_NULL_ERR(tg_tensor_softmax(a, 2), TG_ERROR_SHAPE, "axis 2", "(3,4)");
  EXPECT_NULL_ERR(tg_tensor_log_softmax(a, -3), TG_ERROR_SHAPE, "axis -3", "(3,4)");
  EXPECT_NULL_ERR(tg_tensor_flip(a, five, 1), TG_ERROR_SHAPE, "flip", "axis 5");
  EXPECT_NULL_ERR(tg_tensor_transpose(a, 0, 2), TG_ERROR_SHAPE, "transpose", "axis 2");
  EXPECT_NULL_ERR(tg_tensor_permute(a, perm_bad, 2), TG_ERROR_SHAPE, "permute", "axis 2");
}

TEST(CApiTensor, WrongByteSizes) {
  std::vector<float> v(6);
  int64_t s[2] = {2, 3};
  EXPECT_NULL_ERR(tg_tensor_from_data(v.data(), 23, TG_FLOAT32, s, 2, nullptr), TG_ERROR_INVALID_ARGUMENT, "from_data", "23 bytes", "24");
  EXPECT_NULL_ERR(tg_tensor_from_data(v.data(), 0, TG_FLOAT32, s, 2, nullptr), TG_ERROR_INVALID_ARGUMENT, "from_data", "0 bytes", "24");
  EXPECT_NULL_ERR(tg_tensor_from_data(v.data(), 24, TG_FLOAT64, s, 2, nullptr), TG_ERROR_INVALID_ARGUMENT, "from_data", "24 bytes", "48");
  H a = from(v, {2, 3});
  float out[8];
  EXPECT_STATUS_ERR(tg_tensor_to_data(a, out, 20), TG_ERROR_INVALID_ARGUMENT, "to_data", "20 bytes", "24");
  EXPECT_STATUS_ERR(tg_tensor_to_data(a, out, 32), TG_ERROR_INVALID_ARGUMENT, "to_data", "32 bytes", "24");
  EXPECT_EQ(tg_tensor_to_data(a, out, 24), TG_OK) << "the right size still works";
}

TEST(CApiTensor, BadReshape) {
  H a(tg_tensor_zeros(std::vector<int64_t>{3, 4}.data(), 2, TG_FLOAT32, nullptr));
  int64_t five[1] = {5}, two_infer[2] = {-1, -1}, indivisible[2] = {5, -1}, neg[2] = {-2, -6};
  EXPECT_NULL_ERR(tg_tensor_reshape(a, five, 1), TG_ERROR_SHAPE, "reshape", "(3,4)", "(5,)");
  EXPECT_NULL_ERR(tg_tensor_reshape(a, two_infer, 2), TG_ERROR_SHAPE, "reshape", "-1");
  EXPECT_NULL_ERR(tg_tensor_reshape(a, indivisible, 2), TG_ERROR_SHAPE, "reshape", "(3,4)");
  EXPECT_NULL_ERR(tg_tensor_reshape(a, neg, 2), TG_ERROR_SHAPE, "reshape", "negative");
}

TEST(CApiTensor, NegativeDims) {
  int64_t s[2] = {-1, 3};
  float v[3] = {};
  EXPECT_NULL_ERR(tg_tensor_zeros(s, 2, TG_FLOAT32, nullptr), TG_ERROR_SHAPE, "negative", "(-1,3)");
  EXPECT_NULL_ERR(tg_tensor_ones(s, 2, TG_FLOAT32, nullptr), TG_ERROR_SHAPE, "negative");
  EXPECT_NULL_ERR(tg_tensor_full(s, 2, 1.0, TG_FLOAT32, nullptr), TG_ERROR_SHAPE, "negative");
  EXPECT_NULL_ERR(tg_tensor_empty(s, 2, TG_FLOAT32, nullptr), TG_ERROR_SHAPE, "empty", "negative");
  EXPECT_NULL_ERR(tg_tensor_from_data(v, sizeof v, TG_FLOAT32, s, 2, nullptr), TG_ERROR_SHAPE, "from_data", "negative");
  EXPECT_NULL_ERR(tg_tensor_eye(-1, TG_FLOAT32, nullptr), TG_ERROR_SHAPE, "eye", "-1");
  EXPECT_NULL_ERR(tg_tensor_arange(0, 10, 0, TG_FLOAT32, nullptr), TG_ERROR_INVALID_ARGUMENT, "arange", "step");
  H a(tg_tensor_zeros(std::vector<int64_t>{3, 1}.data(), 2, TG_FLOAT32, nullptr));
  int64_t ex[2] = {3, -2};
  EXPECT_NULL_ERR(tg_tensor_expand(a, ex, 2), TG_ERROR_SHAPE, "expand");
}

TEST(CApiTensor, UnknownDtype) {
  int64_t s[1] = {2};
  float v[2] = {};
  // any value in the 32-bit enum's range; (a negative one would be undefined behaviour to form in C++: its range is
  // [0, 2^31-1] since every enumerator is >= 0)
  auto bad = tg_dtype(42);
  EXPECT_NULL_ERR(tg_tensor_from_data(v, sizeof v, bad, s, 1, nullptr), TG_ERROR_DTYPE, "from_data", "unknown dtype 42");
  EXPECT_NULL_ERR(tg_tensor_zeros(s, 1, tg_dtype(13), nullptr), TG_ERROR_DTYPE, "zeros", "unknown dtype 13");
  EXPECT_NULL_ERR(tg_tensor_empty(s, 1, TG_DTYPE_MAX_ENUM, nullptr), TG_ERROR_DTYPE, "empty", "unknown dtype 2147483647");
  EXPECT_NULL_ERR(tg_tensor_arange(0, 3, 1, bad, nullptr), TG_ERROR_DTYPE, "arange", "unknown dtype");
  EXPECT_NULL_ERR(tg_tensor_eye(3, bad, nullptr), TG_ERROR_DTYPE, "eye", "unknown dtype");
  H a = from({1, 2}, {2});
  EXPECT_NULL_ERR(tg_tensor_cast(a, tg_dtype(99)), TG_ERROR_DTYPE, "cast", "unknown dtype 99");
  // dtypes an op does not take
  EXPECT_NULL_ERR(tg_tensor_idiv(a, a), TG_ERROR_DTYPE, "idiv", "float32");
  H b = from_bool({1, 0}, {2});
  EXPECT_NULL_ERR(tg_tensor_pow(b, b), TG_ERROR_DTYPE, "pow", "bool");
}

TEST(CApiTensor, UnknownDevice) {
  int64_t s[1] = {2};
  float v[2] = {};
  EXPECT_NULL_ERR(tg_tensor_from_data(v, sizeof v, TG_FLOAT32, s, 1, "FOO"), TG_ERROR_DEVICE, "FOO");
  EXPECT_NULL_ERR(tg_tensor_empty(s, 1, TG_FLOAT32, "FOO"), TG_ERROR_DEVICE, "FOO");
  EXPECT_NULL_ERR(tg_tensor_zeros(s, 1, TG_FLOAT32, "FOO"), TG_ERROR_DEVICE, "FOO");
  EXPECT_NULL_ERR(tg_tensor_ones(s, 1, TG_FLOAT32, "foo"), TG_ERROR_DEVICE, "FOO");
  EXPECT_NULL_ERR(tg_tensor_full(s, 1, 3.0, TG_FLOAT32, "FOO"), TG_ERROR_DEVICE, "FOO");
  EXPECT_NULL_ERR(tg_tensor_arange(0, 3, 1, TG_FLOAT32, "FOO"), TG_ERROR_DEVICE, "FOO");
  EXPECT_NULL_ERR(tg_tensor_eye(3, TG_FLOAT32, "FOO"), TG_ERROR_DEVICE, "FOO");
}

TEST(CApiTensor, ReleasedHandle) {
  int64_t s[1] = {2};
  tg_tensor* a = tg_tensor_zeros(s, 1, TG_FLOAT32, nullptr);
  H b(tg_tensor_ones(s, 1, TG_FLOAT32, nullptr));
  ASSERT_TRUE(a && b.p);
  tg_tensor_release(a);
  // no object is made between the release and these calls, so `a` can't have been handed out again
  EXPECT_NULL_ERR(tg_tensor_add(a, b), TG_ERROR_INVALID_ARGUMENT, "add", "a is not a live tg_tensor handle");
  EXPECT_NULL_ERR(tg_tensor_add(b, a), TG_ERROR_INVALID_ARGUMENT, "add", "b is not a live tg_tensor handle");
  EXPECT_NULL_ERR(tg_tensor_exp(a), TG_ERROR_INVALID_ARGUMENT, "exp", "live");
  EXPECT_STATUS_ERR(tg_tensor_realize(a), TG_ERROR_INVALID_ARGUMENT, "realize", "live");
  tg_clear_error();
  EXPECT_EQ(tg_tensor_ndim(a), -1);
  EXPECT_TRUE(failed_with(TG_ERROR_INVALID_ARGUMENT, {"ndim", "live"}));
  tg_clear_error();
  tg_tensor_release(a);  // double release: an error, not a crash
  EXPECT_TRUE(failed_with(TG_ERROR_INVALID_ARGUMENT, {"release", "released twice"}));
  // retained: two releases needed, a third is an error
  tg_tensor* c = tg_tensor_zeros(s, 1, TG_FLOAT32, nullptr);
  ASSERT_EQ(tg_tensor_retain(c), c);
  tg_tensor_release(c);
  EXPECT_EQ(tg_tensor_numel(c), 2) << "still referenced once";
  tg_tensor_release(c);
  tg_clear_error();
  tg_tensor_release(c);
  EXPECT_TRUE(failed_with(TG_ERROR_INVALID_ARGUMENT, {"release"}));
}

TEST(CApiTensor, CountersStructSize) {
  tg_counters c{};
  c.struct_size = 0;
  EXPECT_STATUS_ERR(tg_counters_get(&c), TG_ERROR_INVALID_ARGUMENT, "counters_get", "struct_size");
  c.struct_size = sizeof(size_t);  // too small to hold even kernel_count
  EXPECT_STATUS_ERR(tg_counters_get(&c), TG_ERROR_INVALID_ARGUMENT, "counters_get", "struct_size");
}

// A failure is kept until the next failure: successful calls don't clear it (the header's convention).
TEST(CApiTensor, SuccessKeepsLastError) {
  tg_clear_error();
  EXPECT_EQ(tg_tensor_ndim(nullptr), -1);
  H a = from({1, 2}, {2});
  ASSERT_NE(a.p, nullptr);
  EXPECT_EQ(tg_tensor_ndim(a), 1);
  EXPECT_TRUE(failed_with(TG_ERROR_INVALID_ARGUMENT, {"ndim", "NULL"}));
}

// ---- memory ---------------------------------------------------------------------------------------------------------------------
// one iteration: 16 floats in, ((x+x)*x).sum() out, everything released
bool iteration(int i) {
  float in[16], out = 0;
  int64_t s[1] = {16};
  for (int k = 0; k < 16; k++) in[k] = float((i + k) % 13) * 0.25f;
  tg_tensor* x = tg_tensor_from_data(in, sizeof in, TG_FLOAT32, s, 1, nullptr);
  tg_tensor* y = tg_tensor_add(x, x);
  tg_tensor* z = tg_tensor_mul(y, x);
  tg_tensor* r = tg_tensor_sum(z, nullptr, 0, 0);
  bool ok = r && tg_tensor_to_data(r, &out, sizeof out) == TG_OK;
  double want = 0;
  for (float v : in) want += 2.0 * v * v;
  ok = ok && std::fabs(out - want) <= 1e-5 * want + 1e-6;
  tg_tensor_release(r), tg_tensor_release(z), tg_tensor_release(y), tg_tensor_release(x);
  return ok;
}

TEST(CApiTensor, LoopDoesNotLeak) {
  const int warmup = 2000, n = 100000;
  for (int i = 0; i < warmup; i++) ASSERT_TRUE(iteration(i)) << "iteration " << i << ": " << tg_last_error_message();
  size_t rss0 = rss_bytes(), live0 = tg::UOp::live_count();
  auto t0 = std::chrono::steady_clock::now();
  int bad = 0;
  for (int i = 0; i < n; i++) bad += !iteration(i);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t rss1 = rss_bytes(), live1 = tg::UOp::live_count();
  EXPECT_EQ(bad, 0) << "iterations with a wrong result or an error";
#ifndef __SANITIZE_ADDRESS__  // AddressSanitizer's quarantine holds freed memory on purpose
  EXPECT_LT(double(rss1) - double(rss0), 8.0 * (1 << 20)) << "RSS grew from " << rss0 << " to " << rss1 << " bytes over " << n << " iterations";
#endif
  EXPECT_LE(live1, live0 + 64) << "UOp::live_count grew from " << live0 << " to " << live1;
  std::printf("[ info     ] %d iterations in %.2f s (%.1f us each), RSS %+.2f MiB, live UOps %zu -> %zu\n", n, secs, secs / n * 1e6,
              (double(rss1) - double(rss0)) / (1 << 20), live0, live1);
}

}  // namespace
