// EXP2, LOG2 and SIN decomposed into polynomials (codegen/late/transcendental.cpp) on the CPU's LLVM JIT, against libm:
// random inputs over each op's whole range, the special values (zeros, infinities, NaN, subnormals, the overflow and
// underflow edges of exp2, huge sin arguments that need Payne-Hanek), and vector kernels against scalar ones bit for bit.
//
// Error bounds, in ulp of the exact result (measured maxima in parentheses; a subnormal result's ulp is the smallest
// subnormal). The reference is long double libm for float64, double libm for float32.
//   exp2: float32 1.1 (1.02), float64 1.0 (0.98)
//   log2: float32 3.1 (2.98), float64 2.6 (2.53)   tinygrad's algorithm: x = (m-1)/(m+1) rounds once, and with e = -1
//         the sum e + log2(m) cancels; SLEEF's 1-ulp version carries x as a float pair
//   sin:  float32 2.0 (1.97), float64 1.8 (1.76)   Cody-Waite below 30 / 2^46, exact Payne-Hanek above
// float16: every result within 1 ulp of libm's value rounded to half.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <random>

#include "codegen/opt/postrange.h"
#include "codegen/opt/opt.h"
#include "engine/realize.h"
#include "tensor/tensor.h"

namespace {

using tg::DType;
using tg::Tensor;
namespace dt = tg::dtypes;

enum class Op { Exp2, Log2, Sin };
const char* name(Op op) { return op == Op::Exp2 ? "exp2" : op == Op::Log2 ? "log2" : "sin"; }
Tensor apply(const Tensor& t, Op op) { return op == Op::Exp2 ? t.exp2() : op == Op::Log2 ? t.log2() : t.sin(); }
long double ref(Op op, long double x) { return op == Op::Exp2 ? std::exp2(x) : op == Op::Log2 ? std::log2(x) : std::sin(x); }

// one kernel over all inputs of a dtype
template <class T>
std::vector<T> run(const std::vector<T>& xs, DType d, const std::function<Tensor(const Tensor&)>& f) {
  Tensor t = Tensor::from_data(xs.data(), xs.size() * sizeof(T), d, {int64_t(xs.size())}, "CPU");
  Tensor y = f(t);
  std::vector<T> out(xs.size());
  y.to_data(out.data(), out.size() * sizeof(T));
  return out;
}

// error of `got` against the exact value `want` in ulp of T at want's magnitude; inf counts as the next power of two
template <class T>
double ulp_error(T got, long double want) {
  using L = std::numeric_limits<T>;
  auto fin = [](long double v) { return std::isinf(v) ? std::copysign(std::ldexp(1.0L, L::max_exponent), v) : v; };
  long double g = fin(got), w = fin(want);
  int e = std::max(std::ilogb(w == 0 ? L::min() : w), L::min_exponent - 1);
  return double(std::fabs(g - w) / std::ldexp(1.0L, e - (L::digits - 1)));
}

// the inputs of each op: random over the range, then the special and edge values
template <class T>
std::vector<T> inputs(Op op, uint64_t seed) {
  using L = std::numeric_limits<T>;
  using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  constexpr bool f64 = sizeof(T) == 8;
  std::mt19937_64 g(seed);
  std::vector<T> v;
  auto uni = [&](double lo, double hi, int n) {
    std::uniform_real_distribution<double> u(lo, hi);
    for (int i = 0; i < n; i++) v.push_back(T(u(g)));
  };
  auto bits = [&](U lo, U hi, int n, bool both_signs) {  // uniform over bit patterns: every binade equally
    std::uniform_int_distribution<U> u(lo, hi);
    for (int i = 0; i < n; i++) {
      U b = u(g);
      T x;
      std::memcpy(&x, &b, sizeof(T));
      v.push_back(both_signs && (i & 1) ? -x : x);
    }
  };
  const U inf_bits = f64 ? U(0x7ff0000000000000ull) : U(0x7f800000u);
  for (T s : {T(0), -T(0), L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(), -L::denorm_min(), L::min(), -L::min(), L::max(),
              -L::max(), T(1), T(-1), T(0.5), T(2)})
    v.push_back(s);
  if (op == Op::Exp2) {
    const int emax = f64 ? 1024 : 128, emin = f64 ? 1075 : 150;
    uni(-emin - 10, emax + 10, 20000);
    uni(-1, 1, 2000);
    bits(0, inf_bits, 2000, true);  // tiny to huge
    // the overflow / underflow edges: integers, halves and neighbours
    for (int k = emax - 6; k <= emax + 6; k++)
      for (T x : {T(k), T(k) - T(0.5), std::nextafter(T(k), T(0)), std::nextafter(T(k), T(2 * k))}) v.push_back(x);
    for (int k = f64 ? 1022 : 126; k <= (f64 ? 1080 : 152); k++)
      for (T x : {T(-k), T(-k) + T(0.5), T(-k) - T(0.5), T(-k) - T(0.25), std::nextafter(T(-k), T(0)), std::nextafter(T(-k), -L::infinity())}) v.push_back(x);
  } else if (op == Op::Log2) {
    bits(1, inf_bits - 1, 30000, false);                       // every positive finite binade, subnormals included
    bits(1, f64 ? U(0x000fffffffffffffull) : U(0x007fffffu), 2000, false);  // subnormals
    uni(0.5, 2, 4000);                                         // around 1, where log2 is small
    for (T x : {std::nextafter(T(1), T(0)), std::nextafter(T(1), T(2)), T(0.75), T(1.5), T(3), T(1e-4), std::nextafter(T(1e-4), T(0))}) v.push_back(x);
    for (T x : {T(-1e-30), T(-3), -L::max(), -L::denorm_min()}) v.push_back(x);
  } else {
    uni(-10, 10, 6000);
    uni(-100, 100, 6000);
    uni(-1e5, 1e5, 4000);
    bits(0, inf_bits - 1, 6000, true);  // every magnitude, up to max
    for (double p = 10; p <= 30; p += 1)
      for (int i = 0; i < 100; i++) v.push_back(T(std::pow(10.0, p + std::uniform_real_distribution<double>(0, 1)(g))) * (i & 1 ? -1 : 1));
    for (T x : {T(1e10), T(1e15), T(1e20), T(1e22), T(1e25), T(1e30), T(-1e30), T(30), std::nextafter(T(30), T(0)), T(16), T(39800), T(125)}) v.push_back(x);
    if (f64)
      for (T x : {T(1e14), T(1e100), T(1e300), T(std::ldexp(1.0, 46)), std::nextafter(T(std::ldexp(1.0, 46)), T(0)), T(1e8 + 0.125), T(536870912.125)})
        v.push_back(x);
    // near multiples of pi/2, where the reduced argument cancels
    for (int k = 1; k < 4000; k += 7) {
      T x = T(k * M_PI_2);
      for (T y : {x, std::nextafter(x, T(0)), std::nextafter(x, T(1e300))}) v.push_back(y);
    }
    v.push_back(T(6381956970095103.0 * std::ldexp(1.0, 797)));  // float64's hardest case for reduction (Kahan-McDonald)
  }
  return v;
}

template <class T>
double check_op(Op op, DType d, double bound) {
  std::vector<T> xs = inputs<T>(op, 1234 + int(op));
  std::vector<T> got = run<T>(xs, d, [&](const Tensor& t) { return apply(t, op); });
  double worst = 0;
  int bad = 0;
  for (size_t i = 0; i < xs.size(); i++) {
    long double want = ref(op, xs[i]);
    T w = T(want);
    bool ok;
    if (std::isnan(want)) ok = std::isnan(got[i]);
    else if (w == 0 && std::fabs(want) < std::numeric_limits<T>::denorm_min() / 2) ok = got[i] == 0 && std::signbit(got[i]) == std::signbit(w);
    else if (std::isinf(w)) ok = got[i] == w;  // overflows in T
    else {
      double e = std::isnan(got[i]) ? INFINITY : ulp_error(got[i], want);
      worst = std::max(worst, e);
      ok = e <= bound && (want != 0 || std::signbit(got[i]) == std::signbit(want));
    }
    if (!ok && bad++ < 10)
      ADD_FAILURE() << name(op) << " " << d.name() << "(" << std::setprecision(17) << xs[i] << ") = " << got[i] << ", libm " << double(want);
  }
  std::printf("%s %s: %zu inputs, max error %.3f ulp (bound %.1f)\n", name(op), d.name().c_str(), xs.size(), worst, bound);
  return worst;
}

TEST(Transcendental, Exp2Float32) { check_op<float>(Op::Exp2, dt::float32, 1.1); }
TEST(Transcendental, Exp2Float64) { check_op<double>(Op::Exp2, dt::float64, 1.0); }
TEST(Transcendental, Log2Float32) { check_op<float>(Op::Log2, dt::float32, 3.1); }
TEST(Transcendental, Log2Float64) { check_op<double>(Op::Log2, dt::float64, 2.6); }
TEST(Transcendental, SinFloat32) { check_op<float>(Op::Sin, dt::float32, 2.0); }
TEST(Transcendental, SinFloat64) { check_op<double>(Op::Sin, dt::float64, 1.8); }

// float16 computes through float32: within 1 ulp of libm rounded to half, over every finite half
TEST(Transcendental, Float16) {
  std::vector<_Float16> xs;
  for (uint32_t b = 0; b < 0x10000; b += 7) {
    uint16_t h = uint16_t(b);
    _Float16 x;
    std::memcpy(&x, &h, 2);
    if (!std::isinf(float(x)) && !std::isnan(float(x))) xs.push_back(x);
  }
  for (Op op : {Op::Exp2, Op::Log2, Op::Sin}) {
    std::vector<_Float16> got = run<_Float16>(xs, dt::float16, [&](const Tensor& t) { return apply(t, op); });
    for (size_t i = 0; i < xs.size(); i++) {
      double want = double(ref(op, float(xs[i]))), g = double(got[i]);
      _Float16 w = _Float16(want);
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(g)) << name(op) << "(" << float(xs[i]) << ")";
      else if (std::isinf(float(w)) || w == 0) EXPECT_EQ(g, double(w)) << name(op) << "(" << float(xs[i]) << ")";
      else EXPECT_LE(std::fabs(g - want), std::ldexp(1.0, std::max(std::ilogb(want), -14) - 10)) << name(op) << "(" << float(xs[i]) << ") = " << g;
    }
  }
}

// exp/log/cos are built from exp2/log2/sin: a sanity check against libm (their own roundings, x*log2(e) and pi/2 - x,
// add error growing with |x|, so relative bounds)
TEST(Transcendental, ExpLogCos) {
  std::mt19937_64 g(7);
  std::vector<float> xf;
  std::vector<double> xd;
  std::uniform_real_distribution<double> u(-20, 20);
  for (int i = 0; i < 2000; i++) xd.push_back(u(g)), xf.push_back(float(xd.back()));
  auto check = [&](auto xs, DType d, double rtol) {
    using T = typename decltype(xs)::value_type;
    auto e = run<T>(xs, d, [](const Tensor& t) { return t.exp(); }), c = run<T>(xs, d, [](const Tensor& t) { return t.cos(); });
    auto l = run<T>(xs, d, [](const Tensor& t) { return t.abs().log(); });
    for (size_t i = 0; i < xs.size(); i++) {
      long double x = xs[i];
      EXPECT_NEAR(e[i], std::exp(x), rtol * std::exp(x) * (1 + std::fabs(x))) << "exp(" << xs[i] << ")";
      EXPECT_NEAR(l[i], std::log(std::fabs(x)), rtol * (1 + std::fabs(std::log(std::fabs(x))))) << "log(" << xs[i] << ")";
      EXPECT_NEAR(c[i], std::cos(x), rtol * (1 + std::fabs(x))) << "cos(" << xs[i] << ")";
    }
  };
  check(xf, dt::float32, 3e-7);
  check(xd, dt::float64, 6e-16);
}

// Upcast kernels (vectors of 4, 8, 16 lanes, and the heuristics' choice) compute the bits the scalar kernel does.
template <class T>
void vector_matches_scalar(Op op, DType d) {
  std::vector<T> xs = inputs<T>(op, 99);
  xs.resize(4096);
  Tensor x = Tensor::from_data(xs.data(), xs.size() * sizeof(T), d, {4096}, "CPU");
  tg::Normalized n = tg::normalize({apply(x, op).uop()});
  auto sched = tg::create_schedule(n.sink, n.specs);
  ASSERT_EQ(sched->kernels.size(), 1u);
  auto& k = *sched->kernels[0];
  std::vector<std::shared_ptr<tg::Buffer>> bufs;
  for (size_t i = 0; i < sched->slots.size(); i++)
    bufs.push_back(i < n.inputs.size() ? tg::buffer_of(n.inputs[i].get()) : std::make_shared<tg::Buffer>("CPU", sched->slots[i].first, sched->slots[i].second));
  auto run_with = [&](const std::vector<tg::Opt>* opts) {
    auto c = tg::compile_program(k.ast, k.name, tg::get_device("CPU"), opts);
    std::vector<void*> ptrs;
    for (int s : k.slots) ptrs.push_back(bufs[size_t(s)]->ptr());
    tg::run_kernel(*c, ptrs.data());
    std::vector<T> out(xs.size());
    bufs[size_t(k.slots[0])]->copyout(out.data(), out.size() * sizeof(T));
    return out;
  };
  const std::vector<tg::Opt> none;
  std::vector<T> scalar = run_with(&none);
  std::vector<std::vector<tg::Opt>> lists = {{{tg::OptOps::UPCAST, 0, 4}}, {{tg::OptOps::UPCAST, 0, 8}}, {{tg::OptOps::UPCAST, 0, 16}}};
  for (int l = 0; l <= int(lists.size()); l++) {
    std::vector<T> v = run_with(l < int(lists.size()) ? &lists[size_t(l)] : nullptr);
    for (size_t i = 0; i < xs.size(); i++)
      ASSERT_TRUE(std::memcmp(&v[i], &scalar[i], sizeof(T)) == 0 || (std::isnan(v[i]) && std::isnan(scalar[i])))
          << name(op) << " " << d.name() << " opts #" << l << " x=" << xs[i] << ": " << v[i] << " vs scalar " << scalar[i];
  }
}
TEST(Transcendental, VectorKernelsMatchScalar) {
  for (Op op : {Op::Exp2, Op::Log2, Op::Sin}) {
    vector_matches_scalar<float>(op, dt::float32);
    vector_matches_scalar<double>(op, dt::float64);
  }
}

}  // namespace
