// Transcendental decompositions: EXP2, LOG2 and SIN as polynomials over plain ALU ops, for renderers whose EXP2/LOG2/SIN
// would be scalar library calls (tinygrad's codegen/decomp/transcendental.py, after SLEEF). Lane-wise: a vector op
// becomes the same ops on vectors, so an upcast kernel computes the bits a scalar one does.
//
// Differences from tinygrad, each for accuracy: SIN of |x| >= 2^46 (float64) / 30 (float32) uses an exact integer
// Payne-Hanek reduction modulo pi (tinygrad's float64 reduction keeps 32 bits of the argument and 190 bits of 2/pi, so
// it is wrong past ~1e8), float64 keeps Cody-Waite up to 2^46 (SLEEF's range for it), and sin(-0) is -0.
#include <bit>
#include <cmath>

#include "codegen/late/late.h"

namespace tg {

namespace {

// ---- bits of a float dtype (lanes kept) -----------------------------------------------------------------------------
struct FloatBits {
  int mbits, bias;  // mantissa bits, exponent bias
  DType f, u, i;    // the float, and unsigned/signed ints of its width, with its lane count
};
FloatBits bits_of(DType f) {
  auto w = [&](Scalar s) { return DType(s, f.count); };
  if (f.scalar == Scalar::Float64) return {52, 1023, f, w(Scalar::UInt64), w(Scalar::Int64)};
  return {23, 127, f, w(Scalar::UInt32), w(Scalar::Int32)};
}
DType lanes(const UOpRef& like, Scalar s) { return DType(s, like->dtype.count); }
UOpRef cint(const UOpRef& like, int64_t v) { return UOp::const_int(like->dtype, v); }
UOpRef shl(const UOpRef& x, int64_t k) { return x->alu(Ops::SHL, {cint(x, k)}); }
UOpRef shr(const UOpRef& x, int64_t k) { return x->alu(Ops::SHR, {cint(x, k)}); }
UOpRef band(const UOpRef& x, int64_t k) { return x & cint(x, k); }
bool is64(const UOpRef& x) { return x->dtype.scalar == Scalar::Float64; }

// Horner: c[0]*x^n + ... + c[n]
UOpRef poly(const UOpRef& x, std::initializer_list<double> c) {
  UOpRef u = x->const_like(*c.begin());
  for (auto it = c.begin() + 1; it != c.end(); ++it) u = u * x + *it;
  return u;
}
// inf -> inf_, -inf -> ninf, nan -> nan_, anything else -> other
UOpRef map_specials(const UOpRef& x, double inf_, double ninf, double nan_, const UOpRef& other) {
  return x->ne(x->const_like(INFINITY))
      ->where(x->ne(x)->where(x->const_like(nan_), x->ne(x->const_like(-INFINITY))->where(other, x->const_like(ninf))), x->const_like(inf_));
}
// round to the nearest integer, halves away from zero
UOpRef rintk(const UOpRef& d, DType to) { return (d + (d < 0.0)->where(d->const_like(-0.5), d->const_like(0.5)))->cast(to); }
// 2^q as a float, for an integer q in the dtype's normal exponent range
UOpRef pow2if(const UOpRef& q, const FloatBits& b) { return shl(q + int64_t(b.bias), b.mbits)->bitcast(b.f); }
// d*2^e for d > 0 normal: two steps, so 2^e itself may be out of range
UOpRef ldexp2k(const UOpRef& d, const UOpRef& e, const FloatBits& b) {
  UOpRef h = shr(e, 1);
  return d * pow2if(h, b) * pow2if(e - h, b);
}

// ---- EXP2 -------------------------------------------------------------------------------------------------------------
// 2^d = 2^q * 2^s with q = round(d), s in [-0.5, 0.5] by a minimax polynomial
UOpRef xexp2(const UOpRef& d) {
  FloatBits b = bits_of(d->dtype);
  UOpRef x = map_specials(d, 0, 0, 0, d), q = rintk(x, b.i), s = x - q->cast(b.f), u;
  if (is64(d))
    u = poly(s, {0.4434359082926529454e-9, 0.7073164598085707425e-8, 0.1017819260921760451e-6, 0.1321543872511327615e-5, 0.1525273353517584730e-4,
                 0.1540353045101147808e-3, 0.1333355814670499073e-2, 0.9618129107597600536e-2, 0.5550410866482046596e-1, 0.2402265069591012214e+0,
                 0.6931471805599452862e+0, 0.1000000000000000000e+1});
  else u = poly(s, {0.1535920892e-3, 0.1339262701e-2, 0.9618384764e-2, 0.5550347269e-1, 0.2402264476e+0, 0.6931471825e+0, 1.0});
  u = ldexp2k(u, q, b);
  // past the range 2^d overflows to inf or underflows to 0 (q would leave the exponent range there)
  double upper = is64(d) ? 1024 : 128, lower = is64(d) ? -2000 : -150;
  u = (d < upper)->where(u, d->const_like(INFINITY));
  u = (d < lower)->where(d->const_like(0.0), u);
  return d->ne(d)->where(d->const_like(NAN), u);
}

// ---- LOG2 -------------------------------------------------------------------------------------------------------------
// d = m * 2^e with m in [0.75, 1.5); log2(m) = 2*atanh(x)/ln2 with x = (m-1)/(m+1), odd polynomial in x
UOpRef xlog2(const UOpRef& d) {
  FloatBits b = bits_of(d->dtype);
  // subnormals (and small values, harmlessly) are scaled into the normal range first
  UOpRef denorm = d < 1e-4, a = denorm->where(d * std::ldexp(1.0, 64), d);
  UOpRef e = band(shr((a * (1.0 / 0.75))->bitcast(b.i), b.mbits), (1 << (b.mbits == 52 ? 11 : 8)) - 1) - int64_t(b.bias);
  UOpRef m = (a->bitcast(b.i) - shl(e, b.mbits))->bitcast(b.f), ef = e->cast(b.f);
  ef = denorm->where(ef - 64.0, ef);
  UOpRef x = (m - 1.0) / (m + 1.0), x2 = x * x, r;
  if (is64(d)) {
    UOpRef t = poly(x2, {0.2211941750456081490e+0, 0.2200768693152277689e+0, 0.2623708057488514656e+0, 0.3205977477944495502e+0,
                         0.4121985945485324709e+0, 0.5770780162997058982e+0, 0.96179669392608091449});
    r = ef + (x * 2.885390081777926774 + t * (x * x2));  // small terms first, the exponent last
  } else {
    UOpRef t = poly(x2, {0.4374550283e+0, 0.5764790177e+0, 0.9618012905120});
    // 2/ln2 as a float pair: the low part keeps the last bit
    r = ef + (x * 2.8853900432586669922 + (x * 3.2734474483568488616e-08 + t * (x * x2)));
  }
  r = d->ne(d->const_like(INFINITY))->where(r, d->const_like(INFINITY));
  r = d->ne(d->const_like(0.0))->where(r, d->const_like(-INFINITY));  // both zeros
  r = (d < 0.0)->where(d->const_like(NAN), r);
  return d->ne(d)->where(d->const_like(NAN), r);
}

// ---- SIN --------------------------------------------------------------------------------------------------------------
// sin on [-pi/2, pi/2]: d + d^3 * P(d^2), d added last so the rounding of the correction stays below d's ulp (d * (1 +
// d^2 P) as tinygrad has it rounds twice at full size and reaches 1.0000001 near pi/2 in float32)
UOpRef sin_poly(const UOpRef& d) {
  UOpRef d2 = d * d, p;
  if (is64(d))
    p = poly(d2, {-7.97255955009037868891952e-18, 2.81009972710863200091251e-15, -7.64712219118158833288484e-13, 1.60590430605664501629054e-10,
                  -2.50521083763502045810755e-08, 2.75573192239198747630416e-06, -0.000198412698412696162806809, 0.00833333333333332974823815,
                  -0.166666666666666657414808});
  else p = poly(d2, {2.6083159809786593541503e-06, -0.0001981069071916863322258, 0.00833307858556509017944336, -0.166666597127914428710938});
  return d + d * d2 * p;
}

struct Reduced {
  UOpRef r, odd;  // a - n*pi in [-pi/2, pi/2], and whether n is odd (sin changes sign)
};

// Cody-Waite: n = round(a/pi), a - n*pi with pi split in parts whose products with n are exact (SLEEF's constants;
// float32's first two parts have 15 and 12 bits, exact for n < 2^9)
Reduced cody_waite(const UOpRef& a) {
  const double m_1_pi = 0.318309886183790671537767526745028724;
  if (is64(a)) {
    // n = qdh + q with qdh a multiple of 2^24, so each part times pi's parts stays exact up to |a| ~ 1e14
    UOpRef qdh = (a * (m_1_pi / 16777216.0))->cast(lanes(a, Scalar::Int64))->cast(a->dtype) * 16777216.0;
    UOpRef q = rintk(a * m_1_pi - qdh, lanes(a, Scalar::Int64)), qf = q->cast(a->dtype);
    const double PI_A = 3.1415926218032836914, PI_B = 3.1786509424591713469e-08, PI_C = 1.2246467864107188502e-16, PI_D = 1.2736634327021899816e-24;
    UOpRef d = qdh * -PI_A + a;
    d = qf * -PI_A + d;
    d = qdh * -PI_B + d;
    d = qf * -PI_B + d;
    d = qdh * -PI_C + d;
    d = qf * -PI_C + d;
    d = (qdh + qf) * -PI_D + d;
    return {d, band(q, 1)->ne(cint(q, 0))};  // qdh is even
  }
  UOpRef q = rintk(a * m_1_pi, lanes(a, Scalar::Int32)), qf = q->cast(a->dtype);
  UOpRef d = qf * -3.1414794921875 + a;
  d = qf * -0.00011315941810607910156 + d;
  d = qf * -1.9841872589410058936e-09 + d;  // the three parts sum to pi (tinygrad adds a fourth, 1.2e-10 too much)
  return {d, band(q, 1)->ne(cint(q, 0))};
}

// 2/pi in 32-bit words, most significant first: 2/pi = sum TWO_OVER_PI[i] * 2^(-32(i+1)). 36 words cover float64's range.
constexpr uint32_t TWO_OVER_PI[] = {
    0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0, 0xdb629599, 0x3c439041, 0xfe5163ab, 0xdebbc561, 0xb7246e3a, 0x424dd2e0, 0x06492eea, 0x09d1921c,
    0xfe1deb1c, 0xb129a73e, 0xe88235f5, 0x2ebb4484, 0xe99c7026, 0xb45f7e41, 0x3991d639, 0x835339f4, 0x9c845f8b, 0xbdf9283b, 0x1ff897ff, 0xde05980f,
    0xef2f118b, 0x5a0a6d1f, 0x6d367ecf, 0x27cb09b7, 0x4f463f66, 0x9e5fea2d, 0x7527bac7, 0xebe5f17b, 0x3d0739f7, 0x8a5292ea, 0x6bfb5fb1, 0x1f8d5d08};

// Payne-Hanek, exact in integers, for a >= 2^lo_exp (finite). a = m * 2^s (m an integer of mbits+1 bits). Only bits j >= s-1
// of 2/pi (bit j weighs 2^-j) matter for a/pi = m * 2^(s-1) * 2/pi modulo 2: earlier ones give even integers. Taking
// N 32-bit words of 2/pi from bit s-1 on, a/pi = m * sum_n word_n * 2^(-31-32n) (mod 2), summed exactly in 32-bit limbs.
// Its fraction, rounded to the nearest integer, is a signed fixed-point number f in [-0.5, 0.5], and r = f*pi.
Reduced payne_hanek(const UOpRef& a, int lo_exp) {
  FloatBits b = bits_of(a->dtype);
  DType u64 = lanes(a, Scalar::UInt64);
  const int N = is64(a) ? 5 : 3, smin = lo_exp - b.mbits, Z = smin < 2 ? (2 - smin + 31) / 32 : 0;  // Z zero words before 2/pi
  const int smax = (1 << (b.mbits == 52 ? 11 : 8)) - 2 - b.bias - b.mbits, wmax = (smax - 2 + 32 * Z) >> 5;
  auto word = [&](int i) -> uint32_t { return i < Z || i - Z >= int(std::size(TWO_OVER_PI)) ? 0u : TWO_OVER_PI[i - Z]; };
  UOpRef ab = a->bitcast(b.u);
  UOpRef m = (band(ab, (int64_t(1) << b.mbits) - 1) | cint(ab, int64_t(1) << b.mbits))->cast(u64);
  UOpRef s = shr(ab, b.mbits)->cast(lanes(a, Scalar::Int32)) - int64_t(b.bias + b.mbits);
  s = s->maximum(cint(s, smin));  // below the range (lanes Cody-Waite takes): any in-range shift, the result is unused
  // bit s-1 of 2/pi is bit J of the padded table (J = 0: the top bit of word 0)
  UOpRef J = (s + int64_t(32 * Z - 2))->cast(u64), w = shr(J, 5), sh = band(J, 31);
  // words w..w+N of the padded table, by a select chain on w
  std::vector<UOpRef> raw;
  for (int n = 0; n <= N; n++) {
    UOpRef v = cint(m, word(n));
    for (int t = 1; t <= wmax; t++) v = w->ne(cint(w, t))->where(v, cint(m, word(t + n)));
    raw.push_back(v);
  }
  // the N words aligned to bit J
  std::vector<UOpRef> aw;
  for (int n = 0; n < N; n++)
    aw.push_back(band(raw[n]->alu(Ops::SHL, {sh}) | raw[n + 1]->alu(Ops::SHR, {cint(sh, 32) - sh}), 0xffffffff));
  // m * sum_n aw[n] * 2^(-32n) in limbs L[p] (weight 2^(32p)), p = 0 down to -(N-1); higher limbs are even in a/pi
  std::vector<std::vector<UOpRef>> at(N);  // at[k]: the 32-bit pieces of limb p = -k
  auto put = [&](int p, const UOpRef& v) {
    if (p <= 0) at[size_t(-p)].push_back(v);
  };
  std::vector<std::pair<UOpRef, int>> parts = {{band(m, 0xffffffff), 0}};
  if (b.mbits >= 32) parts.push_back({shr(m, 32), 1});
  for (auto& [mp, off] : parts)
    for (int n = 0; n < N; n++) {
      UOpRef prod = mp * aw[n];
      put(off - n, band(prod, 0xffffffff)), put(off - n + 1, shr(prod, 32));
    }
  std::vector<UOpRef> L(N);  // L[k] is limb p = -k
  UOpRef carry = cint(m, 0);
  for (int k = N - 1; k >= 0; k--) {
    UOpRef acc = carry;
    for (auto& v : at[size_t(k)]) acc = acc + v;
    L[size_t(k)] = band(acc, 0xffffffff), carry = shr(acc, 32);
  }
  auto limb = [&](int k) { return k < N ? L[size_t(k)] : cint(m, 0); };
  // a/pi = G * 2^-31: bit 31 of L[0] is its ones bit, the rest of the fraction follows
  UOpRef hi = shl(L[0], 33) | shl(limb(1), 1) | shr(limb(2), 31), lo = shl(limb(2), 33) | shl(limb(3), 1) | shr(limb(4), 31);
  UOpRef half = shr(hi, 63)->ne(cint(hi, 0));  // fraction >= 0.5: round n up, f = fraction - 1
  UOpRef odd = band(shr(L[0], 31), 1)->ne(cint(m, 0))->ne(half);
  // |f| as a 128-bit magnitude: negate (hi, lo) where f < 0
  UOpRef nlo = cint(lo, 0) - lo, nhi = (cint(hi, 0) - hi) - lo->ne(cint(lo, 0))->cast(u64);
  UOpRef mhi = half->where(nhi, hi), mlo = half->where(nlo, lo);
  // pieces exact in the float, summed smallest first: |f| to within ~1/2 ulp
  UOpRef f;
  if (is64(a)) {
    UOpRef low = band(mhi, 0xffffffff)->cast(a->dtype) * std::ldexp(1.0, -64) + mlo->cast(a->dtype) * std::ldexp(1.0, -128);
    f = shr(mhi, 32)->cast(a->dtype) * std::ldexp(1.0, -32) + low;
  } else {
    f = mhi->cast(a->dtype) * std::ldexp(1.0, -64);
  }
  // r = |f|*pi: f's high half times pi's high half is exact, the rest are small corrections
  const int keep = (b.mbits + 1) / 2;  // significant bits of the high halves: 26 of 53, 12 of 24
  double pi_hi = is64(a) ? M_PI : double(float(M_PI)), pi_lo = is64(a) ? 1.2246467991473532072e-16 : M_PI - double(float(M_PI));
  double pa = std::bit_cast<double>(std::bit_cast<uint64_t>(pi_hi) & ~((uint64_t(1) << (53 - keep)) - 1)), pb = pi_hi - pa + pi_lo;
  UOpRef fh = band(f->bitcast(b.i), ~((int64_t(1) << (b.mbits + 1 - keep)) - 1))->bitcast(b.f), fl = f - fh;
  UOpRef r = fh * pa + (fl * pa + f * pb);
  return {half->where(-r, r), odd};
}

UOpRef xsin(const UOpRef& d) {
  // Cody-Waite below the switch, Payne-Hanek at and above it
  const int lo_exp = is64(d) ? 46 : 4;  // 2^46 ~ 7e13 (float64); float32 switches at 30 as tinygrad does
  const double sw = is64(d) ? std::ldexp(1.0, lo_exp) : 30.0;
  UOpRef x = map_specials(d, 0, 0, 0, d), neg = x < 0.0, a = neg->where(-x, x), small = a < sw;
  Reduced cw = cody_waite(small->where(a, a->const_like(0.0))), ph = payne_hanek(a, lo_exp);
  UOpRef r = small->where(cw.r, ph.r), flip = small->where(cw.odd, ph.odd)->ne(neg);
  UOpRef res = sin_poly(r) * flip->where(d->const_like(-1.0), d->const_like(1.0)), one = d->const_like(1.0);
  // near pi/2 the reduced argument's last-bit error carries into a result whose ulp is half of it: |sin| stays <= 1
  res = one->lt(res)->where(one, res->lt(-one)->where(-one, res));
  // +-0 stay themselves (d + d^3 P(d^2) would round -0 to +0)
  return map_specials(d, NAN, NAN, NAN, x->ne(x->const_like(0.0))->where(res, x));
}

UOpRef decompose(const Match& m) {
  const UOp* u = m.root;
  if (m.ctx<const Renderer>().native_op(u->op, u->dtype)) return {};
  const UOpRef& d = m["d"];
  // 16-bit floats compute in float32, as the renderers do for them anyway
  if (d->dtype.scalar == Scalar::Float16 || d->dtype.scalar == Scalar::BFloat16)
    return d->cast(lanes(d, Scalar::Float32))->alu(u->op)->cast(u->dtype);
  switch (u->op) {
    case Ops::EXP2: return xexp2(d);
    case Ops::LOG2: return xlog2(d);
    default: return xsin(d);
  }
}

}  // namespace

UOpRef decompose_transcendentals(const UOpRef& ast, const Renderer& ren) {
  static const PatternMatcher pm({{UPat({Ops::EXP2, Ops::LOG2, Ops::SIN}, {UPat::var("d")}).scalar_kind(dtypes::is_float), decompose}},
                                 "transcendental");
  return graph_rewrite(ast, pm, const_cast<Renderer*>(&ren), false, "decompose transcendentals");
}

}  // namespace tg
