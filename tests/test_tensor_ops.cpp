// Tensor ops against a plain C++ reference: every op, every dtype where it is defined, several shapes (broadcasting,
// size-0 / size-1 / 0-d, non-contiguous views before the op). The reference (Nd) computes in double with the same
// method names as tg::Tensor, so each case is one generic lambda applied to both. Every element is compared.
//
// Tolerances (|got - ref| <= atol + rtol * |ref|; ints and bool exact after wrapping the reference to the dtype):
//   float64 1e-12 / 1e-12, float32 1e-5 / 1e-6 (transcendentals 1e-5 / 1e-5), float16 2e-3 / 1e-3,
//   bfloat16 1e-2 / 1e-2. Sums and matmuls scale rtol by the same reduction over |inputs| (cancellation).
// Kernel budget (each distinct kernel is one clang run on a cold cache): every op meets every dtype at one shared shape;
// the shape/view cases are dealt out round robin over the ops, so each case meets several ops. About 650 kernels here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "tensor/tensor.h"

namespace {

using tg::DType;
using tg::Shape;
using tg::Tensor;
namespace dt = tg::dtypes;
using i128 = __int128;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// ---- scalar helpers (independent of the library, except least_upper_dtype which test_dtype covers) -------------------
bool isf(DType d) { return dt::is_float(d); }
bool isint(DType d) { return dt::is_int(d); }
bool isuint(DType d) { return dt::is_unsigned(d); }
bool isbool(DType d) { return dt::is_bool(d); }
int bits(DType d) { return d.itemsize() * 8; }
DType fl(DType d) { return isf(d) ? d : dt::float32; }
DType lub(DType a, DType b) { return tg::least_upper_dtype(a, b); }
// sum/prod result dtype, as the header states: ints accumulate in at least int32 (uint32 unsigned); 16-bit floats stay
DType acc_dtype(DType d) {
  if (isbool(d) || d == dt::int8 || d == dt::int16 || d == dt::int32) return dt::int32;
  if (d == dt::uint8 || d == dt::uint16 || d == dt::uint32) return dt::uint32;
  return d;
}
double dmin(DType d) { return isf(d) ? -INFINITY : isbool(d) || isuint(d) ? 0 : -std::ldexp(1.0, bits(d) - 1); }
double dmax(DType d) { return isf(d) ? INFINITY : isbool(d) ? 1 : isuint(d) ? std::ldexp(1.0, bits(d)) - 1 : std::ldexp(1.0, bits(d) - 1) - 1; }

// an integer value as the dtype holds it: truncate toward zero, then wrap modulo 2^bits
i128 wrap_int(DType d, double v) {
  if (isbool(d)) return v != 0;
  i128 i = i128(std::trunc(v));
  int b = bits(d);
  unsigned __int128 u = (unsigned __int128)i & ((((unsigned __int128)1) << b) - 1);
  if (!isuint(d) && ((u >> (b - 1)) & 1)) return i128(u) - (i128(1) << b);
  return i128(u);
}
// the reference value after an op producing dtype d (64-bit ints stay unwrapped here and wrap when compared)
double norm(DType d, double v) {
  if (isbool(d)) return v != 0;
  if (isint(d)) return bits(d) <= 32 ? double(wrap_int(d, v)) : std::trunc(v);
  return v;
}
double h2d(uint16_t h) {
  _Float16 x;
  std::memcpy(&x, &h, 2);
  return double(x);
}
uint16_t d2h(double v) {
  _Float16 x = _Float16(v);
  uint16_t h;
  std::memcpy(&h, &x, 2);
  return h;
}
double bf2d(uint16_t h) {
  uint32_t b = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint16_t d2bf(double v) {
  float f = float(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if (std::isnan(f)) return 0x7fc0;
  return uint16_t((b + 0x7fffu + ((b >> 16) & 1)) >> 16);
}
double round_to(DType d, double v) {
  if (d == dt::float16) return h2d(d2h(v));
  if (d == dt::bfloat16) return bf2d(d2bf(v));
  if (d == dt::float32) return double(float(v));
  return v;
}
void put(DType d, uint8_t* p, double v) {
  if (d == dt::float16) {
    uint16_t h = d2h(v);
    std::memcpy(p, &h, 2);
  } else if (d == dt::bfloat16) {
    uint16_t h = d2bf(v);
    std::memcpy(p, &h, 2);
  } else if (d == dt::float32) {
    float f = float(v);
    std::memcpy(p, &f, 4);
  } else if (d == dt::float64) {
    std::memcpy(p, &v, 8);
  } else {
    i128 i = wrap_int(d, v);
    std::memcpy(p, &i, size_t(d.itemsize()));  // little endian: the low bytes are the wrapped value
  }
}
i128 get_int(DType d, const uint8_t* p) {
  i128 i = 0;
  std::memcpy(&i, p, size_t(d.itemsize()));
  if (isbool(d)) return i != 0;
  return isuint(d) || i < (i128(1) << (bits(d) - 1)) ? i : i - (i128(1) << bits(d));
}
double get_float(DType d, const uint8_t* p) {
  if (d == dt::float16 || d == dt::bfloat16) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return d == dt::float16 ? h2d(h) : bf2d(h);
  }
  if (d == dt::float32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  double x;
  std::memcpy(&x, p, 8);
  return x;
}
std::string i128_str(i128 v) {
  if (v >= 0 && v <= i128(UINT64_MAX)) return std::to_string((unsigned long long)v);
  return std::to_string((long long)v);
}
std::string shape_s(const Shape& s) { return tg::shape_str(s); }

// max/min propagate NaN, like numpy's maximum/minimum/max/min and tinygrad's
double nmax(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nmin(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

// ---- the reference: a row-major array of doubles with a dtype and the Tensor's method names ---------------------------
struct Nd {
  Shape shape;
  std::vector<double> v;
  DType dt = dt::float32;

  Nd(Shape s, DType d) : shape(std::move(s)), v(size_t(tg::prod(shape)), 0.0), dt(d) {}
  Nd(Shape s, DType d, std::vector<double> vals) : shape(std::move(s)), v(std::move(vals)), dt(d) {}
  int64_t numel() const { return tg::prod(shape); }
  int64_t ndim() const { return int64_t(shape.size()); }
  DType dtype() const { return dt; }
  static Shape strides(const Shape& s) {
    Shape st(s.size(), 1);
    for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
    return st;
  }
  int64_t ax(int64_t a) const { return a < 0 ? a + ndim() : a; }

  // the one strided-view primitive: out[idx] = this[src(idx)], or `fill` where map() says the index is outside
  template <class F>
  Nd gather(Shape out, F map, double fill = 0) const {
    Nd r(std::move(out), dt);
    Shape st = strides(shape), ost = strides(r.shape);
    std::vector<int64_t> idx(r.shape.size()), src(shape.size());
    for (int64_t i = 0; i < r.numel(); i++) {
      for (size_t k = 0; k < idx.size(); k++) idx[k] = (i / ost[k]) % r.shape[k];
      bool inside = map(idx, src);
      int64_t off = 0;
      for (size_t k = 0; k < src.size(); k++) off += src[k] * st[k];
      r.v[size_t(i)] = inside ? v[size_t(off)] : fill;
    }
    return r;
  }
  Nd reshape(Shape s) const {
    int64_t known = 1;
    for (auto d : s) known *= d == -1 ? 1 : d;
    for (auto& d : s)
      if (d == -1) d = numel() / known;
    return Nd(s, dt, v);
  }
  Nd permute(std::vector<int64_t> order) const {
    Shape out;
    for (auto& o : order) out.push_back(shape[size_t(o = ax(o))]);
    return gather(out, [&](auto& i, auto& s) {
      for (size_t k = 0; k < order.size(); k++) s[size_t(order[k])] = i[k];
      return true;
    });
  }
  Nd transpose(int64_t d0 = 1, int64_t d1 = 0) const {
    std::vector<int64_t> o(shape.size());
    for (size_t i = 0; i < o.size(); i++) o[i] = int64_t(i);
    std::swap(o[size_t(ax(d0))], o[size_t(ax(d1))]);
    return permute(o);
  }
  Nd expand(Shape s) const {
    Shape src(s.size() - shape.size(), 1);
    src.insert(src.end(), shape.begin(), shape.end());
    for (size_t i = 0; i < s.size(); i++)
      if (s[i] == -1) s[i] = src[i];
    Nd r = reshape(src);
    return r.gather(s, [&](auto& i, auto& o) {
      for (size_t k = 0; k < i.size(); k++) o[k] = src[k] == 1 ? 0 : i[k];
      return true;
    });
  }
  Nd pad(const Pairs& p, double value = 0) const {
    Shape out;
    for (size_t k = 0; k < shape.size(); k++) out.push_back(shape[k] + p[k].first + p[k].second);
    return gather(
        out,
        [&](auto& i, auto& s) {
          bool in = true;
          for (size_t k = 0; k < i.size(); k++) s[k] = i[k] - p[k].first, in &= s[k] >= 0 && s[k] < shape[k];
          return in;
        },
        norm(dt, value));
  }
  Nd shrink(const Pairs& b) const {
    Shape out;
    for (auto [s, e] : b) out.push_back(e - s);
    return gather(out, [&](auto& i, auto& s) {
      for (size_t k = 0; k < i.size(); k++) s[k] = i[k] + b[k].first;
      return true;
    });
  }
  Nd flip(std::vector<int64_t> axes) const {
    std::vector<bool> f(shape.size());
    for (auto a : axes) f[size_t(ax(a))] = true;
    return gather(shape, [&](auto& i, auto& s) {
      for (size_t k = 0; k < i.size(); k++) s[k] = f[k] ? shape[k] - 1 - i[k] : i[k];
      return true;
    });
  }
  Nd contiguous() const { return *this; }

  // elementwise
  template <class F>
  Nd map(DType out, F f) const {
    Nd r(shape, out);
    for (size_t i = 0; i < v.size(); i++) r.v[i] = norm(out, f(v[i]));
    return r;
  }
  static Shape bshape(Shape a, const Shape& b) {
    if (a.size() < b.size()) a.insert(a.begin(), b.size() - a.size(), 1);
    for (size_t i = 0; i < b.size(); i++) {
      int64_t x = a[a.size() - b.size() + i], y = b[i];
      a[a.size() - b.size() + i] = x == 1 ? y : x;
    }
    return a;
  }
  template <class F>
  static Nd zip(DType out, const Nd& a, const Nd& b, F f) {
    Shape s = bshape(a.shape, b.shape);
    Nd x = a.expand(s), y = b.expand(s), r(s, out);
    for (size_t i = 0; i < r.v.size(); i++) r.v[i] = norm(out, f(x.v[i], y.v[i]));
    return r;
  }
  Nd add(const Nd& o) const { return zip(lub(dt, o.dt), *this, o, [](double a, double b) { return a + b; }); }
  Nd sub(const Nd& o) const { return zip(lub(dt, o.dt), *this, o, [](double a, double b) { return a - b; }); }
  Nd mul(const Nd& o) const { return zip(lub(dt, o.dt), *this, o, [](double a, double b) { return a * b; }); }
  Nd div(const Nd& o) const { return zip(fl(lub(dt, o.dt)), *this, o, [](double a, double b) { return a / b; }); }
  Nd idiv(const Nd& o) const { return zip(lub(dt, o.dt), *this, o, [](double a, double b) { return std::trunc(a / b); }); }
  Nd maximum(const Nd& o) const { return zip(lub(dt, o.dt), *this, o, nmax); }
  Nd minimum(const Nd& o) const { return zip(lub(dt, o.dt), *this, o, nmin); }
  Nd pow(const Nd& o) const { return zip(lub(dt, o.dt), *this, o, [](double a, double b) { return std::pow(a, b); }); }
  Nd lt(const Nd& o) const { return zip(dt::bool_, *this, o, [](double a, double b) { return double(a < b); }); }
  Nd le(const Nd& o) const { return zip(dt::bool_, *this, o, [](double a, double b) { return double(a <= b); }); }
  Nd gt(const Nd& o) const { return zip(dt::bool_, *this, o, [](double a, double b) { return double(a > b); }); }
  Nd ge(const Nd& o) const { return zip(dt::bool_, *this, o, [](double a, double b) { return double(a >= b); }); }
  Nd eq(const Nd& o) const { return zip(dt::bool_, *this, o, [](double a, double b) { return double(a == b); }); }
  Nd ne(const Nd& o) const { return zip(dt::bool_, *this, o, [](double a, double b) { return double(a != b); }); }
  Nd where(const Nd& x, const Nd& y) const {
    Shape s = bshape(bshape(shape, x.shape), y.shape);
    Nd c = expand(s), a = x.expand(s), b = y.expand(s), r(s, lub(x.dt, y.dt));
    for (size_t i = 0; i < r.v.size(); i++) r.v[i] = norm(r.dt, c.v[i] != 0 ? a.v[i] : b.v[i]);
    return r;
  }
  Nd cast(DType d) const { return map(d, [](double x) { return x; }); }
  Nd neg() const { return isbool(dt) ? map(dt, [](double x) { return double(x == 0); }) : map(dt, [](double x) { return -x; }); }
  Nd exp() const { return map(fl(dt), [](double x) { return std::exp(x); }); }
  Nd exp2() const { return map(fl(dt), [](double x) { return std::exp2(x); }); }
  Nd log() const { return map(fl(dt), [](double x) { return std::log(x); }); }
  Nd log2() const { return map(fl(dt), [](double x) { return std::log2(x); }); }
  Nd sqrt() const { return map(fl(dt), [](double x) { return std::sqrt(x); }); }
  Nd reciprocal() const { return map(fl(dt), [](double x) { return 1 / x; }); }
  Nd sin() const { return map(fl(dt), [](double x) { return std::sin(x); }); }
  Nd cos() const { return map(fl(dt), [](double x) { return std::cos(x); }); }
  Nd sigmoid() const { return map(fl(dt), [](double x) { return 1 / (1 + std::exp(-x)); }); }
  Nd tanh() const { return map(fl(dt), [](double x) { return std::tanh(x); }); }
  Nd abs() const { return map(dt, [](double x) { return std::fabs(x); }); }
  Nd relu() const { return map(dt, [](double x) { return std::max(x, 0.0); }); }

  // reductions
  template <class F>
  Nd reduce(std::vector<int64_t> axes, bool keepdim, DType out, double init, F f) const {
    std::vector<bool> red(shape.size(), axes.empty());
    for (auto a : axes) red[size_t(ax(a))] = true;
    Shape ks, s;
    for (size_t k = 0; k < shape.size(); k++) {
      ks.push_back(red[k] ? 1 : shape[k]);
      if (!red[k]) s.push_back(shape[k]);
    }
    Nd r(ks, out);
    std::fill(r.v.begin(), r.v.end(), init);
    Shape st = strides(shape), kst = strides(ks);
    for (int64_t i = 0; i < numel(); i++) {
      int64_t o = 0;
      for (size_t k = 0; k < shape.size(); k++)
        if (!red[k]) o += (i / st[k]) % shape[k] * kst[k];
      r.v[size_t(o)] = f(r.v[size_t(o)], v[size_t(i)]);
    }
    for (auto& x : r.v) x = norm(out, x);
    if (!keepdim) r.shape = s;
    return r;
  }
  Nd sum(std::vector<int64_t> axes = {}, bool keepdim = false) const {
    return reduce(axes, keepdim, acc_dtype(dt), 0, [](double a, double b) { return a + b; });
  }
  Nd prod(std::vector<int64_t> axes = {}, bool keepdim = false) const {
    return reduce(axes, keepdim, acc_dtype(dt), 1, [](double a, double b) { return a * b; });
  }
  Nd max(std::vector<int64_t> axes = {}, bool keepdim = false) const {
    return reduce(axes, keepdim, dt, dmin(dt), nmax);
  }
  Nd min(std::vector<int64_t> axes = {}, bool keepdim = false) const {
    return reduce(axes, keepdim, dt, dmax(dt), nmin);
  }
  Nd mean(std::vector<int64_t> axes = {}, bool keepdim = false) const {
    Nd s = sum(axes, keepdim);
    double n = s.numel() ? double(numel()) / double(s.numel()) : 1;
    return s.map(fl(s.dt), [&](double x) { return x / n; });
  }
  Nd softmax(int64_t axis = -1) const {
    Nd x = cast(fl(dt)), e = x.sub(x.max({axis}, true)).exp();
    return e.div(e.sum({axis}, true));
  }
  Nd log_softmax(int64_t axis = -1) const {
    Nd x = cast(fl(dt)), m = x.sub(x.max({axis}, true));
    return m.sub(m.exp().sum({axis}, true).log());
  }
  Nd matmul(const Nd& w) const {
    bool xv = ndim() == 1, wv = w.ndim() == 1;
    Nd a = xv ? reshape({1, shape[0]}) : *this, b = wv ? w.reshape({w.shape[0], 1}) : w;
    int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
    Shape batch = bshape(Shape(a.shape.begin(), a.shape.end() - 2), Shape(b.shape.begin(), b.shape.end() - 2)), sa = batch, sb = batch, so = batch;
    sa.insert(sa.end(), {M, K}), sb.insert(sb.end(), {K, N}), so.insert(so.end(), {M, N});
    a = a.expand(sa), b = b.expand(sb);
    Nd r(so, lub(dt, w.dt));
    int64_t nb = tg::prod(batch);
    for (int64_t p = 0; p < nb; p++)
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
          double s = 0;
          for (int64_t k = 0; k < K; k++) s += a.v[size_t((p * M + i) * K + k)] * b.v[size_t((p * K + k) * N + j)];
          r.v[size_t((p * M + i) * N + j)] = norm(r.dt, s);
        }
    Shape out = batch;
    if (!xv) out.push_back(M);
    if (!wv) out.push_back(N);
    r.shape = out;
    return r;
  }
};

// ---- inputs -----------------------------------------------------------------------------------------------------------
// Value domains per op: Disc has many ties (comparisons), Pos/NonZero keep log/sqrt/div defined, Pow* and Prod keep
// integer results small enough that no C signed overflow (UB) can happen, Big pushes small ints past their range in sums.
enum class Dom { Any, Disc, Pos, NonZero, PowBase, PowExp, Prod, Big, Unit };

double sample(DType d, Dom dom, std::mt19937_64& g) {
  auto ui = [&](int64_t lo, int64_t hi) { return double(std::uniform_int_distribution<int64_t>(lo, hi)(g)); };
  auto uf = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(g); };
  auto sign = [&] { return ui(0, 1) ? 1.0 : -1.0; };
  if (isbool(d)) return dom == Dom::NonZero ? 1 : ui(0, 1);
  if (isint(d)) {
    bool u = isuint(d);
    switch (dom) {
      case Dom::Any: return u ? ui(0, 40) : ui(-20, 20);
      case Dom::Disc: return u ? ui(0, 4) : ui(-3, 3);
      case Dom::Pos: return ui(1, 40);
      case Dom::NonZero: return u ? ui(1, 40) : sign() * ui(1, 20);
      case Dom::PowBase: return u ? ui(0, 3) : ui(-3, 3);
      case Dom::PowExp: return ui(0, 3);
      case Dom::Prod: return u ? ui(0, 2) : ui(-2, 2);
      case Dom::Big: return bits(d) <= 16 ? ui(int64_t(dmax(d) / 2), int64_t(dmax(d))) : ui(1000, 100000);
      case Dom::Unit: return ui(0, 1);
    }
  }
  double x = 0;
  switch (dom) {
    case Dom::Any: x = uf(-3, 3); break;
    case Dom::Disc: x = 0.5 * ui(-4, 4); break;
    case Dom::Pos: x = uf(0.1, 4); break;
    case Dom::NonZero: x = sign() * uf(0.25, 3); break;
    case Dom::PowBase: x = uf(0.2, 2.5); break;
    case Dom::PowExp: x = uf(-2, 2); break;
    case Dom::Prod: x = uf(0.5, 1.5); break;
    case Dom::Big: x = uf(-100, 100); break;
    case Dom::Unit: x = uf(0, 1); break;
  }
  return round_to(d, x);
}
uint64_t seed_of(const std::string& s) { return tg::fnv1a(s.data(), s.size()); }
Nd rnd(Shape s, DType d, Dom dom, std::mt19937_64& g) {
  Nd r(std::move(s), d);
  for (auto& x : r.v) x = sample(d, dom, g);
  return r;
}
Tensor to_tensor(const Nd& n) {
  std::vector<uint8_t> bytes(n.v.size() * size_t(n.dt.itemsize()));
  for (size_t i = 0; i < n.v.size(); i++) put(n.dt, bytes.data() + i * size_t(n.dt.itemsize()), n.v[i]);
  return Tensor::from_data(bytes.data(), bytes.size(), n.dt, n.shape, "CPU");
}

// ---- comparison -------------------------------------------------------------------------------------------------------
enum class Kind { Arith, Transc };
struct Tol {
  double rtol, atol;
};
Tol tol_for(DType d, Kind k) {
  if (d == dt::float64) return {1e-12, 1e-12};
  if (d == dt::float32) return k == Kind::Transc ? Tol{1e-5, 1e-5} : Tol{1e-5, 1e-6};
  if (d == dt::float16) return {2e-3, 1e-3};
  if (d == dt::bfloat16) return {1e-2, 1e-2};
  return {0, 0};
}

// every element of `t` against `ref`; `mag` (same shape) replaces |ref| in the rtol term where it is larger
void expect_match(Tensor t, const Nd& ref, Kind kind = Kind::Arith, const Nd* mag = nullptr) {
  ASSERT_EQ(shape_s(t.shape()), shape_s(ref.shape)) << "shape";
  ASSERT_EQ(t.dtype().name(), ref.dt.name()) << "dtype";
  DType d = ref.dt;
  size_t isz = size_t(d.itemsize());
  std::vector<uint8_t> out(ref.v.size() * isz);
  t.to_data(out.data(), out.size());
  Tol tol = tol_for(d, kind);
  int bad = 0;
  std::ostringstream msg;
  for (size_t i = 0; i < ref.v.size(); i++) {
    const uint8_t* p = out.data() + i * isz;
    std::string got, want;
    if (isf(d)) {
      double g = get_float(d, p), r = ref.v[i];
      double scale = std::max(std::fabs(r), mag ? std::fabs(mag->v[i]) : 0.0);
      bool ok = (std::isnan(r) && std::isnan(g)) || g == r || std::fabs(g - r) <= tol.atol + tol.rtol * scale;
      if (ok) continue;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g", g), got = buf;
      std::snprintf(buf, sizeof buf, "%.9g", r), want = buf;
    } else {
      i128 g = get_int(d, p), r = wrap_int(d, ref.v[i]);
      if (g == r) continue;
      got = i128_str(g), want = i128_str(r);
    }
    if (bad++ < 6) msg << "  [" << i << "] got " << got << " want " << want << "\n";
  }
  EXPECT_EQ(bad, 0) << bad << " of " << ref.v.size() << " elements differ (" << d.name() << " rtol " << tol.rtol << " atol " << tol.atol
                    << "):\n"
                    << msg.str();
}

// One case: f (a generic lambda over a vector of inputs) runs on the reference and on Tensors, then every element is
// compared. `mag` recomputes the reference on |inputs| to scale the tolerance of sums and matmuls.
template <class F>
void check(const std::string& name, const std::vector<Nd>& in, F f, Kind kind = Kind::Arith, bool mag = false) {
  SCOPED_TRACE(name);
  try {
    Nd ref = f(in);
    std::optional<Nd> m;
    if (mag) {
      std::vector<Nd> a = in;
      for (auto& x : a) x = x.abs();
      m = f(a);
    }
    std::vector<Tensor> ts;
    for (auto& n : in) ts.push_back(to_tensor(n));
    expect_match(f(ts), ref, kind, m ? &*m : nullptr);
  } catch (const tg::Error& e) {
    ADD_FAILURE() << name << ": library threw " << tg_status_name(e.code) << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": threw " << e.what();
  }
}

const std::vector<DType>& all_dtypes() { return dt::all(); }
std::string nm(const std::string& a, DType d, const std::string& b = "") { return a + " " + d.name() + (b.empty() ? "" : " " + b); }

// ---- binary ops ---------------------------------------------------------------------------------------------------------
enum Mask : unsigned { kBool = 1, kInt = 2, kFloat = 4, kAll = 7, kNum = 6 };
bool in_mask(DType d, unsigned m) { return (isbool(d) && (m & kBool)) || (isint(d) && (m & kInt)) || (isf(d) && (m & kFloat)); }

struct BinOp {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> t;
  std::function<Nd(const Nd&, const Nd&)> r;
  Dom da, db;
  unsigned mask;
};
template <class F>
BinOp bin(std::string n, F f, Dom da, Dom db, unsigned mask) {
  return {std::move(n), f, f, da, db, mask};
}
Tensor call(const BinOp& o, const Tensor& a, const Tensor& b) { return o.t(a, b); }
Nd call(const BinOp& o, const Nd& a, const Nd& b) { return o.r(a, b); }

// bool subtraction is not defined (numpy raises; tinygrad computes a | !b): left out
const std::vector<BinOp>& bin_ops() {
  static const std::vector<BinOp> ops = {
      bin("add", [](auto a, auto b) { return a.add(b); }, Dom::Any, Dom::Any, kAll),
      bin("sub", [](auto a, auto b) { return a.sub(b); }, Dom::Any, Dom::Any, kNum),
      bin("mul", [](auto a, auto b) { return a.mul(b); }, Dom::Any, Dom::Any, kAll),
      bin("div", [](auto a, auto b) { return a.div(b); }, Dom::Any, Dom::NonZero, kAll),
      bin("idiv", [](auto a, auto b) { return a.idiv(b); }, Dom::Any, Dom::NonZero, kInt),
      bin("maximum", [](auto a, auto b) { return a.maximum(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("minimum", [](auto a, auto b) { return a.minimum(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("pow", [](auto a, auto b) { return a.pow(b); }, Dom::PowBase, Dom::PowExp, kNum),
      bin("lt", [](auto a, auto b) { return a.lt(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("le", [](auto a, auto b) { return a.le(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("gt", [](auto a, auto b) { return a.gt(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("ge", [](auto a, auto b) { return a.ge(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("eq", [](auto a, auto b) { return a.eq(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("ne", [](auto a, auto b) { return a.ne(b); }, Dom::Disc, Dom::Disc, kAll),
  };
  return ops;
}

// a pair of input shapes and the views taken before the op (generic: the same lambda runs on Nd and Tensor)
struct View2 {
  std::string name;
  Shape sa, sb;
  std::function<std::pair<Tensor, Tensor>(const Tensor&, const Tensor&)> t;
  std::function<std::pair<Nd, Nd>(const Nd&, const Nd&)> r;
};
template <class F>
View2 view2(std::string n, Shape sa, Shape sb, F f) {
  return {std::move(n), std::move(sa), std::move(sb), f, f};
}
std::pair<Tensor, Tensor> call(const View2& v, const Tensor& a, const Tensor& b) { return v.t(a, b); }
std::pair<Nd, Nd> call(const View2& v, const Nd& a, const Nd& b) { return v.r(a, b); }
auto ident2 = [](const auto& a, const auto& b) { return std::pair{a, b}; };

// The padded/flipped/... operand is always the first one, so a divisor never gets a padded zero.
const std::vector<View2>& bin_views() {
  static const std::vector<View2> v = {
      view2("bcast (4,5)x(5,)", {4, 5}, {5}, ident2),
      view2("same (2,3,4)", {2, 3, 4}, {2, 3, 4}, ident2),
      view2("outer (3,1)x(1,4)", {3, 1}, {1, 4}, ident2),
      view2("0-d x (3,)", {}, {3}, ident2),
      view2("size-0 (0,3)x(1,3)", {0, 3}, {1, 3}, ident2),
      view2("size-1 (1,1,5)x(1,)", {1, 1, 5}, {1}, ident2),
      view2("permute", {4, 3}, {3, 4}, [](const auto& a, const auto& b) { return std::pair{a.permute({1, 0}), b}; }),
      view2("flip", {3, 4}, {3, 4}, [](const auto& a, const auto& b) { return std::pair{a.flip({0, 1}), b.flip({-1})}; }),
      view2("shrink", {5, 6}, {3, 4}, [](const auto& a, const auto& b) { return std::pair{a.shrink({{1, 4}, {2, 6}}), b}; }),
      view2("pad", {2, 3}, {3, 4}, [](const auto& a, const auto& b) { return std::pair{a.pad({{1, 0}, {0, 1}}), b}; }),
      view2("pad value", {2, 3}, {3, 4}, [](const auto& a, const auto& b) { return std::pair{a.pad({{0, 1}, {1, 0}}, 1.5), b}; }),
      view2("expand", {3, 1}, {2, 1, 4}, [](const auto& a, const auto& b) { return std::pair{a.expand({2, 3, 4}), b.expand({2, 3, 4})}; }),
      view2("permute+flip+shrink+reshape", {2, 3, 4}, {3, 6},
            [](const auto& a, const auto& b) { return std::pair{a.permute({2, 1, 0}).flip({0}).shrink({{1, 4}, {0, 3}, {0, 2}}).reshape({3, 6}), b}; }),
      view2("transposed both", {4, 3}, {4, 3}, [](const auto& a, const auto& b) { return std::pair{a.transpose(), b.transpose(-1, -2)}; }),
  };
  return v;
}

void check_binary(const BinOp& op, const View2& v, DType d) {
  std::string name = op.name + " " + d.name() + " " + v.name;
  std::mt19937_64 g(seed_of(name));
  check(name, {rnd(v.sa, d, op.da, g), rnd(v.sb, d, op.db, g)}, [&](const auto& x) {
    auto [a, b] = call(v, x[0], x[1]);
    return call(op, a, b);
  });
}

// le/gt/ge are compositions of lt/eq (and checked over every shape case below): they share the dtypes out round robin
TEST(TensorOps, BinaryEveryDtype) {
  auto& ds = all_dtypes();
  for (auto& op : bin_ops()) {
    int k = op.name == "le" ? 0 : op.name == "gt" ? 1 : op.name == "ge" ? 2 : -1;
    for (size_t i = 0; i < ds.size(); i++)
      if (in_mask(ds[i], op.mask) && (k < 0 || int(i % 3) == k)) check_binary(op, bin_views()[0], ds[i]);
  }
}

// every op in float32 over three of the shape/view cases (round robin, so every case meets several ops); add in float32
// and idiv in int32 over all of them
TEST(TensorOps, BinaryShapesAndViews) {
  auto& views = bin_views();
  size_t nv = views.size();
  for (size_t i = 0; i < bin_ops().size(); i++) {
    auto& op = bin_ops()[i];
    DType d = in_mask(dt::float32, op.mask) ? dt::float32 : dt::int32;
    for (size_t k = 1; k <= 3; k++) check_binary(op, views[(i * 3 + k) % nv], d);
  }
  for (auto& v : views) check_binary(bin_ops()[0], v, dt::float32);
  for (auto& v : views) check_binary(bin_ops()[4], v, dt::int32);
}

TEST(TensorOps, BinaryMixedDtypes) {
  struct M {
    DType a, b, out;
  };
  for (auto [a, b, out] : std::vector<M>{{dt::int8, dt::uint8, dt::int16},
                                         {dt::int32, dt::float16, dt::float16},
                                         {dt::bool_, dt::int32, dt::int32},
                                         {dt::float32, dt::float64, dt::float64},
                                         {dt::uint32, dt::int32, dt::int64},
                                         {dt::bfloat16, dt::float16, dt::float32},
                                         {dt::uint8, dt::float32, dt::float32}}) {
    std::string name = std::string("mixed ") + a.name() + "+" + b.name();
    std::mt19937_64 g(seed_of(name));
    Nd x = rnd({3, 4}, a, Dom::Any, g), y = rnd({4}, b, Dom::Any, g);
    EXPECT_EQ(x.add(y).dt.name(), out.name()) << name;  // the reference promotes like the library's lattice: pin it
    check(name, {x, y}, [](const auto& v) { return v[0].add(v[1]); });
    check(name + " mul", {x, y}, [](const auto& v) { return v[0].mul(v[1]); });
    check(name + " lt", {x, y}, [](const auto& v) { return v[0].lt(v[1]); });
  }
  // an int tensor divided truly is float32; idiv of unsigned truncates
  std::mt19937_64 g(7);
  check("int32 div -> float32", {rnd({2, 3}, dt::int32, Dom::Any, g), rnd({2, 3}, dt::int32, Dom::NonZero, g)},
        [](const auto& v) { return v[0].div(v[1]); });
}

// NaN and infinities through the binary ops and the max/min reductions (IEEE comparisons; max/min propagate NaN)
TEST(TensorOps, BinarySpecialValues) {
  Nd a({8}, dt::float32, {NAN, 1, NAN, -INFINITY, INFINITY, 0.0, -0.0, 2}), b({8}, dt::float32, {1, NAN, NAN, 1, 1, -0.0, 0.0, INFINITY});
  for (auto& op : bin_ops())
    if (in_mask(dt::float32, op.mask) && op.name != "pow")
      check(op.name + " special values", {a, b}, [&](const auto& x) { return call(op, x[0], x[1]); });
  Nd pa({8}, dt::float32, {-2, -2, 0, 0, 2, -0.5, INFINITY, NAN}), pb({8}, dt::float32, {3, 0.5, 0, -1, -INFINITY, 2, 0, 0});
  check("pow special values", {pa, pb}, [](const auto& x) { return x[0].pow(x[1]); });  // C pow: (-2)^3 = -8, (-2)^0.5 = nan, 0^0 = 1
  Nd r({2, 3}, dt::float32, {1, NAN, 3, -INFINITY, 2, INFINITY});
  check("max special values", {r}, [](const auto& x) { return x[0].max({1}); });
  check("min special values", {r}, [](const auto& x) { return x[0].min({1}); });
  check("sum special values", {r}, [](const auto& x) { return x[0].sum({1}); });
  check("max all special values", {r}, [](const auto& x) { return x[0].max(); });
}

// 64-bit integers beyond double's 2^53: an exact (__int128) reference. Signed results stay in range (overflow is UB in
// the generated C); unsigned ones wrap modulo 2^64, and their order is unsigned (values >= 2^63 are large, not negative).
TEST(TensorOps, Int64ExactBigValues) {
  auto run = [](DType d, const std::vector<i128>& a, const std::vector<i128>& b) {
    auto tensor = [&](const std::vector<i128>& v) {
      std::vector<uint64_t> raw;
      for (auto x : v) raw.push_back(uint64_t(x));
      return Tensor::from_data(raw.data(), raw.size() * 8, d, {int64_t(raw.size())}, "CPU");
    };
    auto wrap = [&](i128 x) { return isuint(d) ? i128(uint64_t(x)) : i128(int64_t(uint64_t(x))); };
    auto read = [&](Tensor t) {
      std::vector<uint64_t> raw(size_t(t.numel()));
      t.to_data(raw.data(), raw.size() * 8);
      std::vector<i128> r;
      for (auto x : raw) r.push_back(isuint(d) ? i128(x) : i128(int64_t(x)));
      return r;
    };
    Tensor ta = tensor(a), tb = tensor(b);
    struct Op {
      const char* name;
      std::function<Tensor(const Tensor&, const Tensor&)> t;
      std::function<i128(i128, i128)> r;
    };
    std::vector<Op> ops = {{"add", [](auto x, auto y) { return x.add(y); }, [](i128 x, i128 y) { return x + y; }},
                           {"sub", [](auto x, auto y) { return x.sub(y); }, [](i128 x, i128 y) { return x - y; }},
                           {"mul", [](auto x, auto y) { return x.mul(y); }, [](i128 x, i128 y) { return x * y; }},
                           {"idiv", [](auto x, auto y) { return x.idiv(y); }, [](i128 x, i128 y) { return x / y; }},
                           {"maximum", [](auto x, auto y) { return x.maximum(y); }, [](i128 x, i128 y) { return std::max(x, y); }},
                           {"minimum", [](auto x, auto y) { return x.minimum(y); }, [](i128 x, i128 y) { return std::min(x, y); }},
                           {"lt", [](auto x, auto y) { return x.lt(y).cast(dt::int64); }, [](i128 x, i128 y) { return i128(x < y); }},
                           {"eq", [](auto x, auto y) { return x.eq(y).cast(dt::int64); }, [](i128 x, i128 y) { return i128(x == y); }}};
    for (auto& op : ops) {
      SCOPED_TRACE(std::string(op.name) + " " + d.name());
      try {
        auto got = read(op.t(ta, tb));
        for (size_t i = 0; i < a.size(); i++) {
          i128 want = wrap(op.r(a[i], b[i]));
          if (!isuint(d)) {
            ASSERT_TRUE(op.r(a[i], b[i]) == want) << "test data overflows int64 at " << i;
          }
          EXPECT_TRUE(got[i] == want) << "[" << i << "] got " << i128_str(got[i]) << " want " << i128_str(want);
        }
      } catch (const tg::Error& e) {
        ADD_FAILURE() << e.what();
      }
    }
    // reductions over everything: sum wraps like the dtype, max/min use the dtype's order
    i128 sum = 0, mx = a[0], mn = a[0];
    for (auto x : a) sum += x, mx = std::max(mx, x), mn = std::min(mn, x);
    try {
      EXPECT_TRUE(read(ta.sum().reshape({1}))[0] == wrap(sum)) << "sum " << d.name();
      EXPECT_TRUE(read(ta.max().reshape({1}))[0] == mx) << "max " << d.name() << ": got " << i128_str(read(ta.max().reshape({1}))[0]);
      EXPECT_TRUE(read(ta.min().reshape({1}))[0] == mn) << "min " << d.name() << ": got " << i128_str(read(ta.min().reshape({1}))[0]);
    } catch (const tg::Error& e) {
      ADD_FAILURE() << e.what();
    }
  };
  i128 p61 = i128(1) << 61;
  run(dt::int64, {p61 + 1, -p61 - 3, INT64_MAX - 10, INT64_MIN + 10, 123456789012345678, -5}, {3, -3, -1, 1, -7, 7});
  run(dt::uint64, {i128(UINT64_MAX), i128(1) << 63, (i128(1) << 63) - 1, i128(12345678901234567890ULL), 0, 5},
      {2, i128(1) << 63, 1, 3, 1, i128(UINT64_MAX)});
}

// ---- where / cast ---------------------------------------------------------------------------------------------------------
TEST(TensorOps, WhereEveryDtype) {
  for (DType d : all_dtypes()) {
    std::string name = nm("where", d, "(3,1)?(1,4):(3,4)");
    std::mt19937_64 g(seed_of(name));
    check(name, {rnd({3, 1}, dt::bool_, Dom::Any, g), rnd({1, 4}, d, Dom::Any, g), rnd({3, 4}, d, Dom::Any, g)},
          [](const auto& x) { return x[0].where(x[1], x[2]); });
  }
  std::mt19937_64 g(11);
  // a non-bool condition is cast to bool; mixed value dtypes promote; views on every operand
  check("where float cond", {rnd({3, 4}, dt::float32, Dom::Disc, g), rnd({3, 4}, dt::float32, Dom::Any, g), rnd({4}, dt::float32, Dom::Any, g)},
        [](const auto& x) { return x[0].where(x[1], x[2]); });
  check("where int8:float32", {rnd({2, 3}, dt::bool_, Dom::Any, g), rnd({2, 3}, dt::int8, Dom::Any, g), rnd({2, 3}, dt::float32, Dom::Any, g)},
        [](const auto& x) { return x[0].where(x[1], x[2]); });
  check("where views", {rnd({4, 3}, dt::bool_, Dom::Any, g), rnd({3, 5}, dt::int32, Dom::Any, g), rnd({1}, dt::int32, Dom::Any, g)},
        [](const auto& x) { return x[0].transpose().where(x[1].flip({1}).shrink({{0, 3}, {1, 5}}), x[2]); });
  check("where 0-d cond", {rnd({}, dt::bool_, Dom::Any, g), rnd({2, 2}, dt::float32, Dom::Any, g), rnd({2, 2}, dt::float32, Dom::Any, g)},
        [](const auto& x) { return x[0].where(x[1], x[2]); });
}

TEST(TensorOps, CastEveryDtype) {
  auto cast_case = [](DType from, DType to, Dom dom, Shape s = {3, 4}) {
    std::string name = std::string("cast ") + from.name() + "->" + to.name();
    std::mt19937_64 g(seed_of(name));
    check(name, {rnd(s, from, dom, g)}, [&](const auto& x) { return x[0].cast(to); });
  };
  for (DType d : all_dtypes()) cast_case(d, dt::float32, Dom::Any);
  // float -> int truncates toward zero; float -> unsigned of a negative value wraps (through int64, like numpy)
  for (DType d : all_dtypes()) cast_case(dt::float32, d, Dom::Any);
  cast_case(dt::int32, dt::int8, Dom::Big);  // 1000..100000 wraps modulo 256
  cast_case(dt::int64, dt::int32, Dom::Any);
  cast_case(dt::uint8, dt::int8, Dom::Big);  // 127..255 -> negative
  cast_case(dt::int8, dt::uint16, Dom::Any);
  cast_case(dt::int16, dt::uint64, Dom::Any);
  cast_case(dt::int32, dt::bool_, Dom::Disc);
  cast_case(dt::bool_, dt::float16, Dom::Any);
  cast_case(dt::float64, dt::float16, Dom::Any);
  cast_case(dt::float16, dt::bfloat16, Dom::Any);
  cast_case(dt::bfloat16, dt::float64, Dom::Any);
  cast_case(dt::float16, dt::int16, Dom::Big);
  cast_case(dt::float64, dt::int64, Dom::Big);
  cast_case(dt::uint16, dt::float16, Dom::Any);
  // a cast after a view
  std::mt19937_64 g(3);
  check("cast permuted int8->float64", {rnd({2, 3, 4}, dt::int8, Dom::Any, g)}, [](const auto& x) { return x[0].permute({2, 0, 1}).cast(dt::float64); });
}

// ---- unary ops ------------------------------------------------------------------------------------------------------------
struct UnOp {
  std::string name;
  std::function<Tensor(const Tensor&)> t;
  std::function<Nd(const Nd&)> r;
  Dom dom;
  Kind kind;
};
template <class F>
UnOp un(std::string n, F f, Dom d, Kind k) {
  return {std::move(n), f, f, d, k};
}
Tensor call(const UnOp& o, const Tensor& a) { return o.t(a); }
Nd call(const UnOp& o, const Nd& a) { return o.r(a); }
const std::vector<UnOp>& un_ops() {
  static const std::vector<UnOp> ops = {
      un("neg", [](auto a) { return a.neg(); }, Dom::Any, Kind::Arith),
      un("exp", [](auto a) { return a.exp(); }, Dom::Any, Kind::Transc),
      un("exp2", [](auto a) { return a.exp2(); }, Dom::Any, Kind::Transc),
      un("log", [](auto a) { return a.log(); }, Dom::Pos, Kind::Transc),
      un("log2", [](auto a) { return a.log2(); }, Dom::Pos, Kind::Transc),
      un("sqrt", [](auto a) { return a.sqrt(); }, Dom::Pos, Kind::Transc),
      un("reciprocal", [](auto a) { return a.reciprocal(); }, Dom::NonZero, Kind::Arith),
      un("sin", [](auto a) { return a.sin(); }, Dom::Any, Kind::Transc),
      un("cos", [](auto a) { return a.cos(); }, Dom::Any, Kind::Transc),
      un("abs", [](auto a) { return a.abs(); }, Dom::Any, Kind::Arith),
      un("relu", [](auto a) { return a.relu(); }, Dom::Any, Kind::Arith),
      un("sigmoid", [](auto a) { return a.sigmoid(); }, Dom::Any, Kind::Transc),
      un("tanh", [](auto a) { return a.tanh(); }, Dom::Any, Kind::Transc),
  };
  return ops;
}
struct View1 {
  std::string name;
  Shape s;
  std::function<Tensor(const Tensor&)> t;
  std::function<Nd(const Nd&)> r;
};
template <class F>
View1 view1(std::string n, Shape s, F f) {
  return {std::move(n), std::move(s), f, f};
}
Tensor call(const View1& v, const Tensor& a) { return v.t(a); }
Nd call(const View1& v, const Nd& a) { return v.r(a); }
auto ident1 = [](const auto& a) { return a; };
const std::vector<View1>& un_views() {
  static const std::vector<View1> v = {
      view1("(3,4)", {3, 4}, ident1),
      view1("0-d", {}, ident1),
      view1("size-0 (2,0)", {2, 0}, ident1),
      view1("size-1 (1,3,1)", {1, 3, 1}, ident1),
      view1("permute", {2, 3, 4}, [](const auto& a) { return a.permute({1, 2, 0}); }),
      view1("flip", {3, 4}, [](const auto& a) { return a.flip({0}); }),
      view1("shrink", {4, 5}, [](const auto& a) { return a.shrink({{1, 3}, {0, 5}}); }),
      view1("pad", {2, 3}, [](const auto& a) { return a.pad({{1, 1}, {0, 2}}); }),
      view1("expand", {1, 3}, [](const auto& a) { return a.expand({4, 3}); }),
  };
  return v;
}
void check_unary(const UnOp& op, const View1& v, DType d) {
  std::string name = op.name + " " + d.name() + " " + v.name;
  std::mt19937_64 g(seed_of(name));
  check(name, {rnd(v.s, d, op.dom, g)}, [&](const auto& x) { return call(op, call(v, x[0])); }, op.kind);
}

// exp, log, sin, ... of ints and bool are computed in float32 (the reference's result dtype says so)
// neg/abs/relu keep the dtype: every dtype. The float-valued ops run on every float dtype; for bool and ints they
// all take the same path (cast to float32, then the op), so the 9 non-float dtypes are dealt out round robin, two each.
TEST(TensorOps, UnaryEveryDtype) {
  std::vector<DType> nonfloat;
  for (DType d : all_dtypes())
    if (!isf(d)) nonfloat.push_back(d);
  size_t j = 0;
  for (auto& op : un_ops()) {
    bool keeps = op.name == "neg" || op.name == "abs" || op.name == "relu";
    for (DType d : all_dtypes())
      if (keeps || isf(d)) check_unary(op, un_views()[0], d);
    if (!keeps)
      for (size_t k = 0; k < 2; k++, j++) check_unary(op, un_views()[0], nonfloat[j % nonfloat.size()]);
  }
}

TEST(TensorOps, UnaryShapesAndViews) {
  auto& views = un_views();
  size_t nv = views.size();
  for (size_t i = 0; i < un_ops().size(); i++)
    for (size_t k = 1; k <= 2; k++) check_unary(un_ops()[i], views[(i * 2 + k) % nv], dt::float32);
  for (auto& v : views) check_unary(un_ops()[1], v, dt::float32);  // exp over every case
  for (auto& v : views) check_unary(un_ops()[0], v, dt::int32);    // neg over every case
}

// special values the C library gives: log(0) = -inf, sqrt(-1) = nan, 1/0 = inf, exp(-inf) = 0
TEST(TensorOps, UnarySpecialValues) {
  Nd x({6}, dt::float32, {0.0, -1.0, INFINITY, -INFINITY, 1.0, -0.0});
  // random inputs of the same shape first: the special-value cases below then reuse these kernels
  for (size_t i : {1, 3, 5, 6, 11}) check_unary(un_ops()[i], view1("(6,)", {6}, ident1), dt::float32);
  check("log special", {x}, [](const auto& v) { return v[0].log(); }, Kind::Transc);
  check("sqrt special", {x}, [](const auto& v) { return v[0].sqrt(); }, Kind::Transc);
  check("reciprocal special", {x}, [](const auto& v) { return v[0].reciprocal(); });
  check("exp special", {x}, [](const auto& v) { return v[0].exp(); }, Kind::Transc);
  check("sigmoid special", {x}, [](const auto& v) { return v[0].sigmoid(); }, Kind::Transc);
}

// ---- reductions -----------------------------------------------------------------------------------------------------------
struct RedOp {
  std::string name;
  std::function<Tensor(const Tensor&, std::vector<int64_t>, bool)> t;
  std::function<Nd(const Nd&, std::vector<int64_t>, bool)> r;
  Dom dom;
  bool mag;  // sum-like: scale the tolerance by the reduction of |x|
};
template <class F>
RedOp red(std::string n, F f, Dom d, bool mag) {
  return {std::move(n), f, f, d, mag};
}
Tensor call(const RedOp& o, const Tensor& a, std::vector<int64_t> ax, bool k) { return o.t(a, std::move(ax), k); }
Nd call(const RedOp& o, const Nd& a, std::vector<int64_t> ax, bool k) { return o.r(a, std::move(ax), k); }
const std::vector<RedOp>& red_ops() {
  static const std::vector<RedOp> ops = {
      red("sum", [](auto a, std::vector<int64_t> ax, bool k) { return a.sum(ax, k); }, Dom::Any, true),
      red("max", [](auto a, std::vector<int64_t> ax, bool k) { return a.max(ax, k); }, Dom::Any, false),
      red("prod", [](auto a, std::vector<int64_t> ax, bool k) { return a.prod(ax, k); }, Dom::Prod, false),
      red("min", [](auto a, std::vector<int64_t> ax, bool k) { return a.min(ax, k); }, Dom::Any, false),
      red("mean", [](auto a, std::vector<int64_t> ax, bool k) { return a.mean(ax, k); }, Dom::Any, true),
  };
  return ops;
}
void check_reduce(const RedOp& op, DType d, Shape s, std::vector<int64_t> axes, bool keep, Dom dom, const std::string& extra = "") {
  std::string name = op.name + " " + d.name() + " " + shape_s(s) + " axes " + shape_s(axes) + (keep ? " keepdim" : "") + extra;
  std::mt19937_64 g(seed_of(name));
  check(name, {rnd(s, d, dom, g)}, [&](const auto& x) { return call(op, x[0], axes, keep); }, Kind::Arith, op.mag && isf(d));
}

TEST(TensorReduce, EveryDtype) {
  for (auto& op : red_ops())
    for (DType d : all_dtypes()) check_reduce(op, d, {3, 8}, {1}, false, op.dom);
}

// ints accumulate in int32/uint32: sums and products that overflow the input dtype come out right
TEST(TensorReduce, IntAccumulation) {
  for (DType d : {dt::int8, dt::uint8, dt::int16, dt::uint16, dt::bool_}) check_reduce(red_ops()[0], d, {3, 8}, {1}, false, Dom::Big, " big");
  check_reduce(red_ops()[0], dt::uint8, {2, 8}, {}, false, Dom::Big, " big all");
  for (DType d : {dt::int8, dt::uint8}) {
    std::string name = std::string("prod big ") + d.name();
    std::mt19937_64 g(seed_of(name));
    Nd x({4, 3}, d);
    for (auto& v : x.v) v = double(std::uniform_int_distribution<int>(5, 10)(g));  // up to 1000 > 255
    check(name, {x}, [](const auto& a) { return a[0].prod({1}); });
  }
  check_reduce(red_ops()[4], dt::int8, {3, 8}, {1}, false, Dom::Big, " big");  // mean of int8 sums in int32, then float32
}

TEST(TensorReduce, AxesAndKeepdim) {
  std::vector<std::pair<std::vector<int64_t>, bool>> cfg = {{{}, false}, {{0}, false}, {{-1}, true}, {{0, 2}, false}, {{1}, true}, {{-3, -1}, true}};
  for (size_t i = 0; i < red_ops().size(); i++) {
    auto& op = red_ops()[i];
    for (size_t k = 0; k < cfg.size(); k++)
      if (i < 2 || k % 3 == i % 3) check_reduce(op, dt::float32, {2, 3, 4}, cfg[k].first, cfg[k].second, op.dom);
  }
  check_reduce(red_ops()[0], dt::int32, {2, 3, 4}, {0, 2}, true, Dom::Any);
  check_reduce(red_ops()[1], dt::int8, {2, 3, 4}, {}, false, Dom::Any);
  check_reduce(red_ops()[3], dt::uint16, {2, 3, 4}, {1}, false, Dom::Any);
  check_reduce(red_ops()[0], dt::float32, {1000}, {}, false, Dom::Any);  // a longer reduction
}

TEST(TensorReduce, EmptyAndSizeOne) {
  // over a size-0 axis: sum 0, prod 1, max -inf (the dtype's min for ints), min +inf, mean nan
  for (auto& op : red_ops()) check_reduce(op, dt::float32, {0, 3}, {0}, false, op.dom);
  check_reduce(red_ops()[1], dt::int32, {0, 3}, {0}, false, Dom::Any);
  check_reduce(red_ops()[0], dt::float32, {3, 0}, {1}, true, Dom::Any);
  check_reduce(red_ops()[0], dt::float32, {0}, {}, false, Dom::Any);    // 0-d result from nothing
  check_reduce(red_ops()[0], dt::float32, {0, 3}, {1}, false, Dom::Any);  // size-0 result: no kernel
  check_reduce(red_ops()[0], dt::float32, {3, 1}, {1}, false, Dom::Any);  // size-1 axis
  check_reduce(red_ops()[1], dt::float32, {1}, {}, true, Dom::Any);
  check_reduce(red_ops()[0], dt::float32, {}, {}, false, Dom::Any);  // 0-d input
  check_reduce(red_ops()[0], dt::int8, {}, {}, false, Dom::Any);     // 0-d int8 input: int32 result
}

TEST(TensorReduce, AfterViews) {
  std::mt19937_64 g(5);
  Nd x = rnd({3, 4}, dt::float32, Dom::Any, g), c = rnd({3, 1}, dt::float32, Dom::Any, g), i = rnd({3, 4}, dt::int32, Dom::Any, g);
  check("sum permuted", {x}, [](const auto& v) { return v[0].permute({1, 0}).sum({1}); }, Kind::Arith, true);
  check("sum flipped", {x}, [](const auto& v) { return v[0].flip({1}).sum({0}, true); }, Kind::Arith, true);
  check("sum padded value", {x}, [](const auto& v) { return v[0].pad({{1, 1}, {2, 0}}, 1.5).sum({1}); }, Kind::Arith, true);
  check("sum shrunk", {x}, [](const auto& v) { return v[0].shrink({{1, 3}, {1, 4}}).sum(); }, Kind::Arith, true);
  check("sum expanded", {c}, [](const auto& v) { return v[0].expand({3, 5}).sum({1}); }, Kind::Arith, true);
  check("max padded -inf side", {x}, [](const auto& v) { return v[0].pad({{0, 0}, {1, 1}}, -5).max({1}); });
  check("min of flipped int32", {i}, [](const auto& v) { return v[0].flip({0, 1}).min({0}); });
  check("mean transposed", {x}, [](const auto& v) { return v[0].transpose().mean({0}); }, Kind::Arith, true);
  check("prod expanded", {c}, [](const auto& v) { return v[0].expand({3, 2}).prod({1}, true); });
  check("sum of reduce result", {x}, [](const auto& v) { return v[0].max({1}).sum(); }, Kind::Arith, true);
}

TEST(TensorReduce, SoftmaxLogSoftmax) {
  struct S {
    DType d;
    Shape s;
    int64_t axis;
  };
  for (auto [d, s, axis] : std::vector<S>{{dt::float32, {4, 7}, -1},
                                          {dt::float32, {2, 3, 5}, 1},
                                          {dt::float64, {4, 7}, 0},
                                          {dt::float16, {4, 7}, -1},
                                          {dt::bfloat16, {3, 5}, -1},
                                          {dt::int32, {3, 4}, -1}}) {
    std::string name = std::string(d.name()) + " " + shape_s(s) + " axis " + std::to_string(axis);
    std::mt19937_64 g(seed_of(name));
    Nd x = rnd(s, d, Dom::Any, g);
    check("softmax " + name, {x}, [&](const auto& v) { return v[0].softmax(axis); }, Kind::Transc);
    check("log_softmax " + name, {x}, [&](const auto& v) { return v[0].log_softmax(axis); }, Kind::Transc);
  }
  std::mt19937_64 g(9);
  check("softmax of a permuted view", {rnd({5, 3}, dt::float32, Dom::Any, g)}, [](const auto& v) { return v[0].transpose().softmax(-1); }, Kind::Transc);
  // large logits: max subtraction keeps it finite
  Nd big({2, 3}, dt::float32, {1000, 1001, 1002, -1000, -1001, -1002});
  check("softmax large logits", {big}, [](const auto& v) { return v[0].softmax(); }, Kind::Transc);
  check("log_softmax large logits", {big}, [](const auto& v) { return v[0].log_softmax(); }, Kind::Transc);
}

// ---- matmul ---------------------------------------------------------------------------------------------------------------
TEST(TensorMatmul, ShapesAndDtypes) {
  struct C {
    std::string name;
    DType da, db;
    Shape sa, sb;
    bool transpose_a;
  };
  std::vector<C> cases = {
      {"2D", dt::float32, dt::float32, {3, 4}, {4, 5}, false},
      {"1D x 2D", dt::float32, dt::float32, {4}, {4, 5}, false},
      {"2D x 1D", dt::float32, dt::float32, {3, 4}, {4}, false},
      {"1D x 1D", dt::float32, dt::float32, {4}, {4}, false},
      {"batched", dt::float32, dt::float32, {2, 3, 4}, {2, 4, 5}, false},
      {"batch broadcast", dt::float32, dt::float32, {2, 1, 3, 4}, {3, 4, 2}, false},
      {"1D x batched", dt::float32, dt::float32, {4}, {2, 4, 3}, false},
      {"transposed operand", dt::float32, dt::float32, {4, 3}, {4, 5}, true},
      {"K=0", dt::float32, dt::float32, {3, 0}, {0, 2}, false},
      {"M=0", dt::float32, dt::float32, {0, 4}, {4, 2}, false},
      {"row x col", dt::float32, dt::float32, {1, 4}, {4, 1}, false},
      {"larger", dt::float32, dt::float32, {16, 32}, {32, 8}, false},
      {"float64", dt::float64, dt::float64, {5, 6}, {6, 3}, false},
      {"float16", dt::float16, dt::float16, {4, 8}, {8, 3}, false},
      {"bfloat16", dt::bfloat16, dt::bfloat16, {4, 8}, {8, 3}, false},
      {"int32", dt::int32, dt::int32, {3, 4}, {4, 2}, false},
      {"int8 (wraps)", dt::int8, dt::int8, {3, 4}, {4, 2}, false},
      {"uint8 x float32", dt::uint8, dt::float32, {3, 4}, {4, 2}, false},
  };
  for (auto& c : cases) {
    std::string name = "matmul " + c.name + " " + c.da.name() + " " + shape_s(c.sa) + "@" + shape_s(c.sb);
    std::mt19937_64 g(seed_of(name));
    bool t = c.transpose_a;
    check(name, {rnd(c.sa, c.da, Dom::Any, g), rnd(c.sb, c.db, Dom::Any, g)},
          [&](const auto& x) { return (t ? x[0].transpose() : x[0]).matmul(x[1]); }, Kind::Arith, isf(c.da) || isf(c.db));
  }
}

// ---- movement -------------------------------------------------------------------------------------------------------------
TEST(TensorMovement, ViewsThenContiguous) {
  auto mv = [](const std::string& name, DType d, Shape s, auto f) {
    std::mt19937_64 g(seed_of(name));
    check(name + " " + d.name(), {rnd(s, d, Dom::Any, g)}, [&](const auto& x) { return f(x[0]); });  // to_data makes it contiguous
  };
  mv("permute", dt::float32, {2, 3, 4}, [](const auto& a) { return a.permute({2, 0, 1}); });
  mv("permute", dt::int64, {2, 3, 4}, [](const auto& a) { return a.permute({2, 0, 1}); });
  mv("reshape of permuted", dt::float32, {4, 3}, [](const auto& a) { return a.permute({1, 0}).reshape({2, 6}); });
  mv("reshape -1", dt::float32, {2, 3, 4}, [](const auto& a) { return a.reshape({4, -1}); });
  mv("reshape to 0-d", dt::float32, {1, 1}, [](const auto& a) { return a.reshape({}); });
  mv("reshape size-0", dt::float32, {0, 4}, [](const auto& a) { return a.reshape({2, 0, 2}); });
  mv("expand", dt::float32, {3, 1}, [](const auto& a) { return a.expand({2, -1, 4}); });
  mv("expand 0-d", dt::float32, {}, [](const auto& a) { return a.expand({2, 3}); });
  mv("expand to size-0", dt::float32, {3, 1}, [](const auto& a) { return a.expand({3, 0}); });
  mv("pad", dt::float32, {2, 3}, [](const auto& a) { return a.pad({{1, 2}, {0, 1}}); });
  mv("pad value", dt::float32, {2, 3}, [](const auto& a) { return a.pad({{1, 2}, {0, 1}}, -2.5); });
  mv("pad value", dt::int8, {2, 3}, [](const auto& a) { return a.pad({{0, 1}, {2, 0}}, -3); });
  mv("pad value", dt::bool_, {2, 3}, [](const auto& a) { return a.pad({{0, 1}, {2, 0}}, 1); });
  mv("pad value", dt::float16, {2, 3}, [](const auto& a) { return a.pad({{0, 1}, {2, 0}}, 0.5); });
  mv("pad value", dt::uint64, {2, 3}, [](const auto& a) { return a.pad({{0, 1}, {2, 0}}, 7); });
  mv("pad size-0", dt::float32, {0, 2}, [](const auto& a) { return a.pad({{1, 1}, {0, 0}}, 3); });
  mv("shrink", dt::float32, {4, 5, 6}, [](const auto& a) { return a.shrink({{1, 3}, {0, 5}, {2, 4}}); });
  mv("shrink", dt::uint16, {4, 5}, [](const auto& a) { return a.shrink({{1, 3}, {2, 4}}); });
  mv("shrink to size-0", dt::float32, {4, 5}, [](const auto& a) { return a.shrink({{2, 2}, {0, 5}}); });
  mv("flip", dt::float32, {2, 3, 4}, [](const auto& a) { return a.flip({0, 2}); });
  mv("flip", dt::float64, {2, 3, 4}, [](const auto& a) { return a.flip({-1}); });
  mv("transpose", dt::float32, {2, 3, 4}, [](const auto& a) { return a.transpose(-1, 0); });
  mv("transpose", dt::bfloat16, {3, 5}, [](const auto& a) { return a.transpose(); });
  mv("chain", dt::float32, {3, 4},
     [](const auto& a) { return a.pad({{1, 1}, {0, 2}}, 0.25).shrink({{0, 4}, {1, 6}}).flip({1}).permute({1, 0}).reshape({5, 2, 2}).expand({2, 5, 2, 2}); });
  mv("contiguous of a buffer", dt::float32, {3, 4}, [](const auto& a) { return a.contiguous(); });
  mv("contiguous of a view", dt::float32, {2, 3, 4}, [](const auto& a) { return a.permute({2, 0, 1}).contiguous(); });
  mv("view of a contiguous", dt::float32, {3, 4}, [](const auto& a) { return a.flip({0}).contiguous().transpose(); });
}

// ---- creation -------------------------------------------------------------------------------------------------------------
TEST(TensorCreation, FromDataRoundTripsEveryDtype) {
  for (DType d : all_dtypes()) {
    // extremes of every dtype, and inf / nan / -0.0 / subnormals for floats
    std::vector<uint8_t> bytes(size_t(7 * d.itemsize()));
    std::mt19937_64 g(seed_of(d.name()));
    for (auto& b : bytes) b = uint8_t(g());
    if (isbool(d))
      for (auto& b : bytes) b &= 1;
    if (isf(d)) {
      std::vector<double> special = {INFINITY, -INFINITY, NAN, -0.0, 1e-40, 65504, -1.5};
      for (size_t i = 0; i < special.size(); i++) put(d, bytes.data() + i * size_t(d.itemsize()), special[i]);
    }
    Tensor t = Tensor::from_data(bytes.data(), bytes.size(), d, {7}, "CPU");
    EXPECT_EQ(shape_s(t.shape()), "(7,)");
    EXPECT_EQ(t.dtype().name(), d.name());
    std::vector<uint8_t> out(bytes.size());
    t.to_data(out.data(), out.size());
    EXPECT_EQ(out, bytes) << d.name();
    // the same bytes seen as (7,1) and as 0-d / size-0 tensors
    Tensor t2 = Tensor::from_data(bytes.data(), bytes.size(), d, {7, 1}, "CPU");
    EXPECT_EQ(t2.numel(), 7);
    Tensor t0 = Tensor::from_data(bytes.data(), size_t(d.itemsize()), d, {}, "CPU");
    std::vector<uint8_t> one(size_t(d.itemsize()));
    t0.to_data(one.data(), one.size());
    EXPECT_TRUE(std::equal(one.begin(), one.end(), bytes.begin())) << d.name();
    Tensor te = Tensor::from_data(nullptr, 0, d, {0, 5}, "CPU");
    EXPECT_EQ(te.numel(), 0);
    te.to_data(nullptr, 0);
  }
}

TEST(TensorCreation, EmptyHasShapeOnly) {
  for (DType d : {dt::float32, dt::int8, dt::bool_, dt::bfloat16}) {
    Tensor t = Tensor::empty({2, 3, 4}, d, "CPU");
    EXPECT_EQ(shape_s(t.shape()), "(2,3,4)");
    EXPECT_EQ(t.dtype().name(), d.name());
    EXPECT_EQ(t.numel(), 24);
    std::vector<uint8_t> out(size_t(24 * d.itemsize()));
    EXPECT_NO_THROW(t.to_data(out.data(), out.size()));  // contents are unspecified, but readable
  }
  Tensor z = Tensor::empty({0, 3}, dt::float32, "CPU");
  EXPECT_EQ(z.numel(), 0);
  Tensor s = Tensor::empty({}, dt::float64, "CPU");
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.numel(), 1);
}

TEST(TensorCreation, FullZerosOnes) {
  auto full_case = [](Shape s, double value, DType d) {
    std::string name = "full " + shape_s(s) + " " + std::to_string(value) + " " + d.name();
    SCOPED_TRACE(name);
    try {
      Nd ref(s, d);
      for (auto& x : ref.v) x = norm(d, value);
      expect_match(Tensor::full(s, value, d, "CPU"), ref);
    } catch (const tg::Error& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
  };
  for (DType d : all_dtypes()) full_case({2, 3}, isbool(d) ? 1 : isuint(d) ? 9 : isint(d) ? -7 : -2.5, d);
  for (DType d : {dt::float32, dt::int64, dt::bool_}) full_case({2, 3}, 0, d);  // zeros
  for (DType d : {dt::float16, dt::uint8, dt::bfloat16}) full_case({2, 3}, 1, d);  // ones
  full_case({}, 3.25, dt::float32);
  full_case({0, 4}, 1, dt::float32);
  full_case({1, 1, 5}, 1e30, dt::float64);
}

TEST(TensorCreation, Arange) {
  struct A {
    double start, stop, step;
    DType d;
  };
  for (auto [start, stop, step, d] : std::vector<A>{{0, 10, 1, dt::int32},
                                                    {5, -5, -1.5, dt::float32},
                                                    {0, 1, 0.1, dt::float64},
                                                    {3, 3, 1, dt::float32},
                                                    {3, 0, 1, dt::int32},
                                                    {0, 5, 2, dt::int64},
                                                    {-3, 3, 1, dt::int8},
                                                    {0, 4, 0.5, dt::float16}}) {
    std::string name = "arange " + std::to_string(start) + " " + std::to_string(stop) + " " + std::to_string(step) + " " + d.name();
    SCOPED_TRACE(name);
    std::vector<double> v;
    int64_t n = std::max<int64_t>(0, int64_t(std::ceil((stop - start) / step)));
    for (int64_t i = 0; i < n; i++) v.push_back(norm(d, start + double(i) * step));
    try {
      expect_match(Tensor::arange(start, stop, step, d, "CPU"), Nd({n}, d, v));
    } catch (const tg::Error& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
  }
}

TEST(TensorCreation, Eye) {
  for (auto [n, d] : std::vector<std::pair<int64_t, DType>>{{4, dt::float32}, {3, dt::int32}, {1, dt::bool_}, {0, dt::float32}, {5, dt::float16}}) {
    SCOPED_TRACE("eye " + std::to_string(n) + " " + d.name());
    Nd ref({n, n}, d);
    for (int64_t i = 0; i < n; i++) ref.v[size_t(i * n + i)] = 1;
    try {
      expect_match(Tensor::eye(n, d, "CPU"), ref);
    } catch (const tg::Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

// the reference itself: a few hand-computed values, so a bug in Nd can't hide a bug in the library
TEST(TensorReference, HandChecked) {
  Nd a({2, 3}, dt::float32, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(a.permute({1, 0}).v, (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(a.flip({1}).v, (std::vector<double>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(a.shrink({{1, 2}, {0, 2}}).v, (std::vector<double>{4, 5}));
  EXPECT_EQ(a.pad({{0, 1}, {1, 0}}, 9).v, (std::vector<double>{9, 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9}));
  EXPECT_EQ(Nd({2, 1}, dt::float32, {1, 2}).expand({2, 2, 3}).v, (std::vector<double>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(a.sum({1}).v, (std::vector<double>{6, 15}));
  EXPECT_EQ(shape_s(a.sum({0}, true).shape), "(1,3)");
  EXPECT_EQ(a.max().v, (std::vector<double>{6}));
  EXPECT_EQ(a.matmul(a.transpose()).v, (std::vector<double>{14, 32, 32, 77}));
  EXPECT_EQ(shape_s(Nd({4}, dt::float32).matmul(Nd({4}, dt::float32)).shape), "()");
  EXPECT_EQ(Nd({2}, dt::uint8, {5, 3}).sub(Nd({2}, dt::uint8, {10, 1})).v, (std::vector<double>{251, 2}));
  EXPECT_EQ(Nd({2}, dt::int8, {100, -7}).mul(Nd({2}, dt::int8, {2, 3})).v, (std::vector<double>{-56, -21}));
  EXPECT_EQ(Nd({2}, dt::int32, {-7, 7}).idiv(Nd({2}, dt::int32, {2, -2})).v, (std::vector<double>{-3, -3}));
  EXPECT_EQ(Nd({1}, dt::float32, {-2.7}).cast(dt::uint8).v, (std::vector<double>{254}));
  EXPECT_TRUE(wrap_int(dt::uint64, -3) == i128(UINT64_MAX) - 2);
  EXPECT_EQ(a.sum().dt.name(), "float32");
  EXPECT_EQ(Nd({2}, dt::int8).sum().dt.name(), "int32");
  EXPECT_EQ(Nd({2}, dt::uint16).prod().dt.name(), "uint32");
  EXPECT_EQ(Nd({2}, dt::float16).mean().dt.name(), "float16");
  EXPECT_EQ(Nd({2}, dt::int16).mean().dt.name(), "float32");
  EXPECT_NEAR(Nd({2}, dt::float32, {0, 0}).softmax().v[0], 0.5, 1e-15);
  EXPECT_EQ(round_to(dt::float16, 1.0 + 1.0 / 4096), 1.0);
  EXPECT_EQ(round_to(dt::bfloat16, 1.0 + 1.0 / 512), 1.0);
}

// ---- random graphs ----------------------------------------------------------------------------------------------------
// Seeded random chains of 6-10 ops mixing elementwise (unary, binary with broadcasting), movement (reshape, permute,
// expand, pad, shrink, flip) and reductions (sum/max/min/mean over random axes, keepdim or not), on float32 and
// float64. The generator tracks the shape, so each step is concrete; one program runs on Nd and on Tensor, and every
// element is compared (float32 at the transcendental tolerance, scaled by the graph on |inputs|).
struct GraphStep {
  int kind;                     // 0 unary, 1 binary, 2 reshape, 3 permute, 4 expand, 5 pad, 6 shrink, 7 flip, 8 reduce
  int which = 0;                // which unary/binary/reduce
  std::vector<int64_t> ints;    // shape, order, axes
  Pairs pairs;                  // pad / shrink
  bool keepdim = false;
  int operand = -1;             // binary: index into the graph's inputs
};
struct Graph {
  std::vector<GraphStep> steps;
  std::vector<Nd> inputs;  // inputs[0] is the start; the rest are binary operands
};
Graph random_graph(std::mt19937_64& g, DType d) {
  auto ri = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(g); };
  Shape sh;
  for (int64_t i = 0, n = ri(1, 3); i < n; i++) sh.push_back(ri(1, 5));
  Graph gr;
  gr.inputs.push_back(rnd(sh, d, Dom::Any, g));
  int reductions = 0;
  for (int64_t n = ri(6, 10), i = 0; i < n; i++) {
    GraphStep st{int(ri(0, 8))};
    int64_t nd = int64_t(sh.size());
    if ((st.kind == 8 && (reductions >= 2 || nd == 0)) || (nd == 0 && st.kind >= 3)) st.kind = int(ri(0, 2));
    switch (st.kind) {
      case 0: st.which = int(ri(0, 6)); break;
      case 1: {  // the operand broadcasts: some dims 1, maybe fewer dims
        st.which = int(ri(0, 4));
        Shape os(sh.begin() + ri(0, nd), sh.end());
        for (auto& x : os)
          if (ri(0, 2) == 0) x = 1;
        st.operand = int(gr.inputs.size());
        gr.inputs.push_back(rnd(os, d, Dom::Any, g));
        break;
      }
      case 2: {  // flatten, or split a dim into two factors
        Shape ns;
        int64_t k = nd ? ri(0, nd - 1) : 0;
        if (nd && ri(0, 1)) {
          ns.push_back(tg::prod(sh));
        } else {
          for (int64_t j = 0; j < nd; j++) {
            if (j == k && sh[size_t(j)] % 2 == 0) ns.push_back(2), ns.push_back(sh[size_t(j)] / 2);
            else ns.push_back(sh[size_t(j)]);
          }
          if (ns.size() > 4) ns = {tg::prod(sh)};
        }
        st.ints = ns, sh = ns;
        break;
      }
      case 3: {
        std::vector<int64_t> o(size_t(nd), 0);
        std::iota(o.begin(), o.end(), 0);
        std::shuffle(o.begin(), o.end(), g);
        Shape ns;
        for (auto x : o) ns.push_back(sh[size_t(x)]);
        st.ints = o, sh = ns;
        break;
      }
      case 4: {  // a new leading dim of 2 or 3, or a size-1 dim expanded
        Shape ns = sh;
        bool any1 = false;
        for (auto& x : ns)
          if (x == 1 && !any1) x = ri(2, 3), any1 = true;
        if (!any1 && ns.size() < 4) ns.insert(ns.begin(), ri(2, 3));
        st.ints = ns, sh = ns;
        break;
      }
      case 5:
        for (auto& x : sh) {
          int64_t b = ri(0, 2), a = ri(0, 1);
          st.pairs.emplace_back(b, a), x += a + b;
        }
        break;
      case 6:
        for (auto& x : sh) {
          int64_t b = ri(0, x - 1), e = ri(b + 1, x);
          st.pairs.emplace_back(b, e), x = e - b;
        }
        break;
      case 7:
        for (int64_t j = 0; j < nd; j++)
          if (ri(0, 1)) st.ints.push_back(ri(0, 1) ? j : j - nd);
        break;
      case 8: {
        reductions++;
        st.which = int(ri(0, 3)), st.keepdim = ri(0, 1);
        for (int64_t j = 0; j < nd; j++)
          if (ri(0, 1)) st.ints.push_back(j);
        if (st.ints.empty()) st.ints.push_back(ri(0, nd - 1));
        Shape ns;
        for (int64_t j = 0; j < nd; j++) {
          bool red = std::find(st.ints.begin(), st.ints.end(), j) != st.ints.end();
          if (!red) ns.push_back(sh[size_t(j)]);
          else if (st.keepdim) ns.push_back(1);
        }
        sh = ns;
        break;
      }
    }
    gr.steps.push_back(st);
  }
  return gr;
}
template <class T>
T run_graph(const Graph& gr, const std::vector<T>& in) {
  T x = in[0];
  for (auto& st : gr.steps) {
    switch (st.kind) {
      case 0: {
        const int w = st.which;
        x = w == 0 ? x.neg() : w == 1 ? x.sigmoid() : w == 2 ? x.tanh() : w == 3 ? x.sin() : w == 4 ? x.abs() : w == 5 ? x.relu() : x.cos();
        break;
      }
      case 1: {
        const T& y = in[size_t(st.operand)];
        x = st.which == 0 ? x.add(y) : st.which == 1 ? x.sub(y) : st.which == 2 ? x.mul(y) : st.which == 3 ? x.maximum(y) : x.minimum(y);
        break;
      }
      case 2: x = x.reshape(st.ints); break;
      case 3: x = x.permute(st.ints); break;
      case 4: x = x.expand(st.ints); break;
      case 5: x = x.pad(st.pairs); break;
      case 6: x = x.shrink(st.pairs); break;
      case 7: x = x.flip(st.ints); break;
      case 8:
        x = st.which == 0 ? x.sum(st.ints, st.keepdim) : st.which == 1 ? x.max(st.ints, st.keepdim) : st.which == 2 ? x.min(st.ints, st.keepdim)
                                                                                                      : x.mean(st.ints, st.keepdim);
        break;
    }
  }
  return x;
}
TEST(RandomGraph, ChainsMatchTheReference) {
  std::mt19937_64 g(seed_of("random graphs"));
  for (int i = 0; i < 60; i++) {
    DType d = i % 2 ? dt::float64 : dt::float32;
    Graph gr = random_graph(g, d);
    check("random graph " + std::to_string(i) + " " + d.name(), gr.inputs, [&](const auto& in) { return run_graph(gr, in); }, Kind::Transc, true);
  }
}

}  // namespace
