// Elementwise math and activations composed from the primitive ALU ops, with tinygrad's formulas, so each fuses into
// whatever kernel uses it and differentiates through the primitives' gradients.
#include <cmath>

#include "tensor/tensor.h"

namespace tg {

Tensor Tensor::full_like(double v) const {
  Tensor c(UOp::const_(dtype(), v), device());
  return ndim() ? c.reshape(Shape(shape().size(), 1)).expand(shape(), uop()->sym()) : c;  // Variable dims stay Variable
}
Tensor Tensor::bitcast(DType dt) const {
  TG_CHECK(dt.itemsize() == dtype().itemsize(), TG_ERROR_DTYPE, "bitcast: " + dtype().name() + " and " + dt.name() + " differ in size");
  return dt == dtype() ? *this : Tensor(uop()->bitcast(dt), device());
}
static Tensor as_float(const Tensor& t) { return t.cast(least_upper_float(t.dtype())); }
// c0*x^n + ... + cn, by Horner's rule
static Tensor poly(const Tensor& x, std::initializer_list<double> cs) {
  Tensor acc = x.full_like(*cs.begin());
  for (auto it = cs.begin() + 1; it != cs.end(); ++it) acc = acc.mul(x).add(x.scalar_like(*it));
  return acc;
}

Tensor Tensor::rsqrt() const { return sqrt().reciprocal(); }
Tensor Tensor::square() const { return mul(*this); }
Tensor Tensor::tan() const { return sin().div(cos()); }
// Abramowitz & Stegun 4.4.46 (|error| < 2e-8 on [0, 1]), as tinygrad
Tensor Tensor::asin() const {
  Tensor x = as_float(*this), a = x.abs();
  Tensor r = a.scalar_like(M_PI / 2).sub(a.scalar_like(1).sub(a).sqrt().mul(poly(a, {-0.0012624911, 0.0066700901, -0.0170881256, 0.0308918810,
                                                                                      -0.0501743046, 0.0889789874, -0.2145988016, 1.5707963050})));
  return x.sign().mul(r);
}
Tensor Tensor::acos() const { return as_float(*this).scalar_like(M_PI / 2).sub(asin()); }
Tensor Tensor::atan() const {
  Tensor x = as_float(*this);
  return x.div(x.square().add(x.scalar_like(1)).sqrt()).asin();
}
Tensor Tensor::sinh() const {
  Tensor x = as_float(*this);
  return x.exp().sub(x.neg().exp()).div(x.scalar_like(2));
}
Tensor Tensor::cosh() const {
  Tensor x = as_float(*this);
  return x.exp().add(x.neg().exp()).div(x.scalar_like(2));
}
Tensor Tensor::asinh() const {
  Tensor x = as_float(*this);
  return x.add(x.square().add(x.scalar_like(1)).sqrt()).log();
}
Tensor Tensor::acosh() const {
  Tensor x = as_float(*this);
  return x.add(x.square().sub(x.scalar_like(1)).sqrt()).log();
}
Tensor Tensor::atanh() const {
  Tensor x = as_float(*this), one = x.scalar_like(1);
  return one.add(x).div(one.sub(x)).log().mul(x.scalar_like(0.5));
}
// Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), as tinygrad
Tensor Tensor::erf() const {
  Tensor x = as_float(*this);
  Tensor t = x.scalar_like(1).div(x.abs().mul(x.scalar_like(0.3275911)).add(x.scalar_like(1)));
  Tensor p = t.mul(poly(t, {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592}));
  return x.sign().mul(x.scalar_like(1).sub(p.mul(x.square().neg().exp())));
}
// -1/0/1, NaN for NaN; no gradient flows except through the NaN branch (where it is NaN anyway)
Tensor Tensor::sign() const {
  if (dtypes::is_bool(dtype())) return *this;
  Tensor s = ne(full_like(0)).where(lt(full_like(0)).where(full_like(-1), full_like(1)), full_like(0));
  return dtypes::is_float(dtype()) ? isnan().where(*this, s) : s;
}
Tensor Tensor::trunc() const { return dtypes::is_float(dtype()) ? Tensor(uop()->alu(Ops::TRUNC), device()) : *this; }
Tensor Tensor::floor() const {
  if (!dtypes::is_float(dtype())) return *this;
  Tensor t = trunc();
  return lt(t).where(t.sub(t.full_like(1)), t);
}
Tensor Tensor::ceil() const {
  if (!dtypes::is_float(dtype())) return *this;
  Tensor t = trunc();
  return gt(t).where(t.add(t.full_like(1)), t);
}
// half to even: x.5 goes to the even neighbour
Tensor Tensor::round() const {
  if (!dtypes::is_float(dtype())) return *this;
  Tensor half = trunc().div(full_like(2));
  Tensor even = half.trunc().eq(half);  // trunc(x) is even
  Tensor up = sub(full_like(0.5)).ceil(), down = add(full_like(0.5)).floor();
  return gt(full_like(0)).eq(even).where(up, down);
}
Tensor Tensor::isnan() const { return dtypes::is_float(dtype()) ? ne(*this) : full_like(0).cast(dtypes::bool_); }
Tensor Tensor::isinf() const {
  if (!dtypes::is_float(dtype())) return full_like(0).cast(dtypes::bool_);
  return eq(full_like(INFINITY)).bitwise_or(eq(full_like(-INFINITY)));
}
Tensor Tensor::isfinite() const { return isinf().bitwise_or(isnan()).logical_not(); }

// ---- activations ----
Tensor Tensor::relu6() const { return relu().sub(sub(scalar_like(6)).relu()); }
Tensor Tensor::leaky_relu(double s) const { return lt(scalar_like(0)).where(mul(scalar_like(s)), *this); }
Tensor Tensor::elu(double alpha) const {
  Tensor x = as_float(*this);
  return x.relu().sub(x.scalar_like(1).sub(x.exp()).relu().mul(x.scalar_like(alpha)));
}
Tensor Tensor::celu(double alpha) const {
  Tensor x = as_float(*this);
  return x.maximum(x.full_like(0)).add(x.div(x.scalar_like(alpha)).exp().sub(x.scalar_like(1)).mul(x.scalar_like(alpha)).minimum(x.full_like(0)));
}
Tensor Tensor::selu() const {
  constexpr double alpha = 1.67326, gamma = 1.0507;
  Tensor x = as_float(*this);
  return x.ge(x.full_like(0)).where(x, x.exp().sub(x.scalar_like(1)).mul(x.scalar_like(alpha))).mul(x.scalar_like(gamma));
}
// the tanh approximation, as tinygrad (torch's approximate="tanh")
Tensor Tensor::gelu() const {
  Tensor x = as_float(*this);
  Tensor inner = x.add(x.mul(x).mul(x).mul(x.scalar_like(0.044715))).mul(x.scalar_like(std::sqrt(2 / M_PI)));
  return x.mul(x.scalar_like(0.5)).mul(inner.tanh().add(x.scalar_like(1)));
}
Tensor Tensor::quick_gelu() const {
  Tensor x = as_float(*this);
  return x.mul(x.mul(x.scalar_like(1.702)).sigmoid());
}
Tensor Tensor::silu() const {
  Tensor x = as_float(*this);
  return x.mul(x.sigmoid());
}
Tensor Tensor::mish() const {
  Tensor x = as_float(*this);
  return x.mul(x.softplus().tanh());
}
Tensor Tensor::hardsigmoid() const {
  Tensor x = as_float(*this), y = x.div(x.scalar_like(6)).add(x.scalar_like(0.5));
  return y.relu().sub(y.sub(y.scalar_like(1)).relu());
}
Tensor Tensor::logsigmoid() const { return as_float(*this).neg().softplus().neg(); }
Tensor Tensor::softplus(double beta) const {
  Tensor x = as_float(*this);
  return x.mul(x.scalar_like(beta)).logaddexp(x.full_like(0)).div(x.scalar_like(beta));
}
Tensor Tensor::softsign() const {
  Tensor x = as_float(*this);
  return x.div(x.abs().add(x.scalar_like(1)));
}
Tensor Tensor::hardswish() const {
  Tensor x = as_float(*this);
  return x.mul(x.add(x.scalar_like(3)).relu6()).div(x.scalar_like(6));
}
Tensor Tensor::hardtanh(double lo, double hi) const { return clamp(lo, hi); }
Tensor Tensor::clamp(double lo, double hi) const {
  TG_CHECK(!std::isnan(lo) && !std::isnan(hi), TG_ERROR_INVALID_ARGUMENT, "clamp: a NaN bound");
  // wheres, not maximum/minimum, as tinygrad: the gradient at a bound is 1 (torch's), and lo > hi gives hi everywhere
  Tensor l = scalar_like(lo), h = scalar_like(hi);
  Tensor r = lt(l).where(l, *this);
  return r.gt(h).where(h, r);
}

// ---- binary ----
Tensor Tensor::mod(const Tensor& o) const {
  auto [a, b] = broadcasted(o, "mod");
  TG_CHECK(!dtypes::is_bool(a.dtype()), TG_ERROR_DTYPE, "mod: bool tensors have no remainder");
  if (dtypes::is_float(a.dtype())) return a.sub(b.mul(a.div(b).floor()));
  // the C remainder takes the dividend's sign: move it to the divisor's
  Tensor r(a.uop()->alu(Ops::MOD, {b.uop()}), device());
  Tensor zero = r.full_like(0);
  return r.ne(zero).bitwise_and(r.lt(zero).ne(b.lt(zero))).where(r.add(b), r);
}
Tensor Tensor::fmod(const Tensor& o) const {
  auto [a, b] = broadcasted(o, "fmod");
  TG_CHECK(!dtypes::is_bool(a.dtype()), TG_ERROR_DTYPE, "fmod: bool tensors have no remainder");
  if (dtypes::is_float(a.dtype())) return a.sub(b.mul(a.div(b).trunc()));
  return Tensor(a.uop()->alu(Ops::MOD, {b.uop()}), device());
}
static void check_bitwise(const Tensor& a, const char* what) {
  TG_CHECK(!dtypes::is_float(a.dtype()), TG_ERROR_DTYPE, std::string(what) + ": needs int or bool tensors, got " + a.dtype().name());
}
Tensor Tensor::bitwise(Ops op, const Tensor& o, const char* what) const {
  auto [a, b] = broadcasted(o, what);
  check_bitwise(a, what);
  return Tensor(a.uop()->alu(op, {b.uop()}), device());
}
Tensor Tensor::bitwise_and(const Tensor& o) const { return bitwise(Ops::AND, o, "bitwise_and"); }
Tensor Tensor::bitwise_or(const Tensor& o) const { return bitwise(Ops::OR, o, "bitwise_or"); }
Tensor Tensor::bitwise_xor(const Tensor& o) const { return bitwise(Ops::XOR, o, "bitwise_xor"); }
Tensor Tensor::bitwise_not() const {
  check_bitwise(*this, "bitwise_not");
  return dtypes::is_bool(dtype()) ? logical_not() : bitwise_xor(Tensor(UOp::const_int(dtype(), -1), device()));
}
static void check_shift(const Tensor& t, int64_t bits, const char* what) {
  TG_CHECK(dtypes::is_int(t.dtype()), TG_ERROR_DTYPE, std::string(what) + ": needs an int tensor, got " + t.dtype().name());
  TG_CHECK(bits >= 0 && bits < t.dtype().itemsize() * 8, TG_ERROR_INVALID_ARGUMENT,
           strformat("%s: shift by %lld bits of a %s tensor (0..%d allowed)", what, (long long)bits, t.dtype().name().c_str(), t.dtype().itemsize() * 8 - 1));
}
// >> of a signed int is arithmetic (the sign is copied in), as torch's
Tensor Tensor::lshift(int64_t bits) const {
  check_shift(*this, bits, "lshift");
  return Tensor(uop()->alu(Ops::SHL, {UOp::const_int(dtype(), bits)}), device());
}
Tensor Tensor::rshift(int64_t bits) const {
  check_shift(*this, bits, "rshift");
  return Tensor(uop()->alu(Ops::SHR, {UOp::const_int(dtype(), bits)}), device());
}
// elementwise counts: tinygrad's SHL/SHR of the promoted pair
Tensor Tensor::lshift(const Tensor& bits) const {
  auto [a, b] = broadcasted(bits, "lshift");
  TG_CHECK(dtypes::is_int(a.dtype()), TG_ERROR_DTYPE, "lshift: needs int tensors, got " + dtype().name() + " and " + bits.dtype().name());
  return Tensor(a.uop()->alu(Ops::SHL, {b.uop()}), device());
}
Tensor Tensor::rshift(const Tensor& bits) const {
  auto [a, b] = broadcasted(bits, "rshift");
  TG_CHECK(dtypes::is_int(a.dtype()), TG_ERROR_DTYPE, "rshift: needs int tensors, got " + dtype().name() + " and " + bits.dtype().name());
  return Tensor(a.uop()->alu(Ops::SHR, {b.uop()}), device());
}
Tensor Tensor::copysign(const Tensor& o) const {
  auto [a, b] = broadcasted(o, "copysign");
  Tensor x = as_float(a), y = as_float(b), zero = y.full_like(0);
  Tensor neg = y.lt(zero).bitwise_or(y.eq(zero).bitwise_and(y.reciprocal().lt(zero)));  // -0.0 counts as negative
  return neg.where(x.abs().neg(), x.abs());
}
Tensor Tensor::logaddexp(const Tensor& o) const {
  auto [a, b] = broadcasted(o, "logaddexp");
  Tensor x = as_float(a), y = as_float(b), m = x.maximum(y);
  // both -inf: m - m would be NaN; keep m itself there
  Tensor safe = m.isinf().where(m.full_like(0), m);
  return x.sub(safe).exp().add(y.sub(safe).exp()).log().add(safe);
}
Tensor Tensor::lerp(const Tensor& end, const Tensor& w) const { return add(end.sub(*this).mul(w)); }
Tensor Tensor::isclose(const Tensor& o, double rtol, double atol, bool equal_nan) const {
  auto [a, b] = broadcasted(o, "isclose");
  Tensor close = a.eq(b);
  if (dtypes::is_float(a.dtype())) {
    Tensor tol = b.abs().mul(b.scalar_like(rtol)).add(b.scalar_like(atol));
    close = close.bitwise_or(a.sub(b).abs().le(tol).bitwise_and(a.isfinite()).bitwise_and(b.isfinite()));
    if (equal_nan) close = close.bitwise_or(a.isnan().bitwise_and(b.isnan()));
  }
  return close;
}

}  // namespace tg
