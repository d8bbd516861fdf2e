// The double-precision reference for tensor ops, shared by test_tensor_ops.cpp and test_random_graphs.cpp: scalar
// helpers for every dtype (wrapping, float16/bfloat16 rounding, byte packing), Nd (a row-major array of doubles with
// tg::Tensor's method names, so one generic lambda runs on both), and random inputs per value domain.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace tg_ref {

using tg::DType;
using tg::Shape;
using tg::Tensor;
namespace dt = tg::dtypes;
using i128 = __int128;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// ---- scalar helpers (independent of the library, except least_upper_dtype which test_dtype covers) -------------------
inline bool isf(DType d) { return dt::is_float(d); }
inline bool isint(DType d) { return dt::is_int(d); }
inline bool isuint(DType d) { return dt::is_unsigned(d); }
inline bool isbool(DType d) { return dt::is_bool(d); }
inline int bits(DType d) { return d.itemsize() * 8; }
inline DType fl(DType d) { return isf(d) ? d : dt::float32; }
inline DType lub(DType a, DType b) { return tg::least_upper_dtype(a, b); }
// sum/prod result dtype, as the header states: ints accumulate in at least int32 (uint32 unsigned); 16-bit floats stay
inline DType acc_dtype(DType d) {
  if (isbool(d) || d == dt::int8 || d == dt::int16 || d == dt::int32) return dt::int32;
  if (d == dt::uint8 || d == dt::uint16 || d == dt::uint32) return dt::uint32;
  return d;
}
inline double dmin(DType d) { return isf(d) ? -INFINITY : isbool(d) || isuint(d) ? 0 : -std::ldexp(1.0, bits(d) - 1); }
inline double dmax(DType d) { return isf(d) ? INFINITY : isbool(d) ? 1 : isuint(d) ? std::ldexp(1.0, bits(d)) - 1 : std::ldexp(1.0, bits(d) - 1) - 1; }

// an integer value as the dtype holds it: truncate toward zero, then wrap modulo 2^bits
inline i128 wrap_int(DType d, double v) {
  if (isbool(d)) return v != 0;
  i128 i = i128(std::trunc(v));
  int b = bits(d);
  unsigned __int128 u = (unsigned __int128)i & ((((unsigned __int128)1) << b) - 1);
  if (!isuint(d) && ((u >> (b - 1)) & 1)) return i128(u) - (i128(1) << b);
  return i128(u);
}
// the reference value after an op producing dtype d (64-bit ints stay unwrapped here and wrap when compared)
inline double norm(DType d, double v) {
  if (isbool(d)) return v != 0;
  if (isint(d)) return bits(d) <= 32 ? double(wrap_int(d, v)) : std::trunc(v);
  return v;
}
inline double h2d(uint16_t h) {
  _Float16 x;
  std::memcpy(&x, &h, 2);
  return double(x);
}
inline uint16_t d2h(double v) {
  _Float16 x = _Float16(v);
  uint16_t h;
  std::memcpy(&h, &x, 2);
  return h;
}
inline double bf2d(uint16_t h) {
  uint32_t b = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint16_t d2bf(double v) {
  float f = float(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if (std::isnan(f)) return 0x7fc0;
  return uint16_t((b + 0x7fffu + ((b >> 16) & 1)) >> 16);
}
inline double round_to(DType d, double v) {
  if (d == dt::float16) return h2d(d2h(v));
  if (d == dt::bfloat16) return bf2d(d2bf(v));
  if (d == dt::float32) return double(float(v));
  return v;
}
inline void put(DType d, uint8_t* p, double v) {
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
inline i128 get_int(DType d, const uint8_t* p) {
  i128 i = 0;
  std::memcpy(&i, p, size_t(d.itemsize()));
  if (isbool(d)) return i != 0;
  return isuint(d) || i < (i128(1) << (bits(d) - 1)) ? i : i - (i128(1) << bits(d));
}
inline double get_float(DType d, const uint8_t* p) {
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
inline std::string i128_str(i128 v) {
  if (v >= 0 && v <= i128(UINT64_MAX)) return std::to_string((unsigned long long)v);
  return std::to_string((long long)v);
}
inline std::string shape_s(const Shape& s) { return tg::shape_str(s); }

// max/min propagate NaN, like numpy's maximum/minimum/max/min and tinygrad's
inline double nmax(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
inline double nmin(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

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

inline double sample(DType d, Dom dom, std::mt19937_64& g) {
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
inline uint64_t seed_of(const std::string& s) { return tg::fnv1a(s.data(), s.size()); }
inline Nd rnd(Shape s, DType d, Dom dom, std::mt19937_64& g) {
  Nd r(std::move(s), d);
  for (auto& x : r.v) x = sample(d, dom, g);
  return r;
}
inline Tensor to_tensor(const Nd& n) {
  std::vector<uint8_t> bytes(n.v.size() * size_t(n.dt.itemsize()));
  for (size_t i = 0; i < n.v.size(); i++) put(n.dt, bytes.data() + i * size_t(n.dt.itemsize()), n.v[i]);
  return Tensor::from_data(bytes.data(), bytes.size(), n.dt, n.shape, "CPU");
}

}  // namespace tg_ref
