// The semantics every renderer shares, rewritten before linearizing so that a renderer only spells ops. As in tinygrad,
// integer division is defined for every input: x//0 == 0, x%0 == x and MIN//-1 wraps to MIN (C and LLVM leave these
// undefined, and x86 traps). Shifts take C's widths: left through uint64 (a signed left shift into the sign is undefined
// in C), right of a narrow int through 32 bits, the amount in the shifted type. MAX selects, and NaN wins, like numpy's
// maximum. What these make that the renderer can't hold as a vector becomes lanes.
#include <optional>

#include "codegen/late/late.h"

namespace tg {

namespace {
UOpRef lit(const UOpRef& like, int64_t v) { return UOp::const_int(like->dtype, v); }

UOpRef safe_divmod(const UOp* u) {
  const UOpRef &x = u->src[0], &y = u->src[1];
  bool uns = dtypes::is_unsigned(u->dtype);
  auto bad = [&](const UOpRef& d) { return uns ? d->eq(lit(d, 0)) : d->eq(lit(d, 0))->alu(Ops::OR, {d->eq(lit(d, -1))}); };
  // a constant divisor other than 0 and -1 needs no guard, nor a divisor made safe here
  if (y->op == Ops::CONST && !y->is_const(0) && (uns || !y->is_const(-1))) return {};
  if (y->op == Ops::WHERE && y->src[1]->is_const(1) && y->src[0] == bad(y->src[2])) return {};
  // 1 stands in for the divisors the hardware can't divide by; x%1 is already x%-1 == 0
  UOpRef q = x->alu(u->op, {bad(y)->where(lit(y, 1), y)});
  // x/-1 is -x, negated in the unsigned type of the width so that MIN wraps
  DType ut(Scalar(int(u->dtype.scalar) + 1), u->dtype.count);
  if (!uns && u->op == Ops::IDIV) q = y->eq(lit(y, -1))->where(x->cast(ut)->alu(Ops::NEG)->cast(u->dtype), q);
  return y->eq(lit(y, 0))->where(u->op == Ops::MOD ? x : lit(x, 0), q);
}
UOpRef c_shift(const UOp* u) {
  DType d = u->dtype;
  int bits = 8 * d.scalar_of().itemsize();
  bool narrow = bits < 32;
  // a constant amount under the width gives C's bits in the type itself (a left shift of a signed value excepted): a
  // byte vector's nibbles are then split by byte shifts, not through 32-bit lanes and back
  const UOpRef& k = u->src[1];
  if (narrow && k->op == Ops::CONST && k->const_value() >= 0 && k->const_value() < bits && (u->op == Ops::SHR || dtypes::is_unsigned(d))) {
    if (k->dtype == d) return {};
    return u->src[0]->alu(u->op, {UOp::const_int(d, int64_t(k->const_value()))});
  }
  DType w(u->op == Ops::SHL ? Scalar::UInt64 : !narrow ? d.scalar : dtypes::is_unsigned(d) ? Scalar::UInt32 : Scalar::Int32, d.count);
  if (w == d && u->src[1]->dtype == d) return {};
  auto to_w = [&](const UOpRef& v) { return v->op == Ops::CONST ? UOp::const_int(w, std::get<int64_t>(v->arg)) : v->cast(w); };
  return to_w(u->src[0])->alu(u->op, {to_w(u->src[1])})->cast(d);
}
UOpRef nan_max(const UOp* u) {
  const UOpRef &a = u->src[0], &b = u->src[1];
  UOpRef pick = b->lt(a);
  return (dtypes::is_float(u->dtype) ? pick->alu(Ops::OR, {a->ne(a)}) : pick)->where(a, b);
}

// the factors of a product, or of lanes of one (an unrolled reduce adds up a vector's lanes): fused as they are where
// every lane is a scalar (plain C), so a kernel gives the same bits as vectors or as lanes
std::optional<std::pair<UOpRef, UOpRef>> factors(const UOpRef& u) {
  if (u->op == Ops::MUL) return std::pair{u->src[0], u->src[1]};
  if (u->op == Ops::GEP && u->src[0]->op == Ops::MUL) {
    auto lanes = u->arg_ints();
    return std::pair{gep(u->src[0]->src[0], lanes), gep(u->src[0]->src[1], lanes)};
  }
  return std::nullopt;
}
// a*b+c, c+a*b, a*b-c and c-a*b as one MULACC (negation is exact); the first operand's product when both are
UOpRef fuse(const UOp* u) {
  Scalar s = u->dtype.scalar;
  if (s != Scalar::Float32 && s != Scalar::Float64) return {};  // 16-bit floats round after each op, as torch's do
  for (int i : {0, 1}) {
    auto f = factors(u->src[i]);
    if (!f) continue;
    UOpRef c = u->src[1 - i], a = f->first;
    if (u->op == Ops::SUB) (i == 0 ? c : a) = (i == 0 ? c : a)->alu(Ops::NEG);
    return a->alu(Ops::MULACC, {f->second, c});
  }
  return {};
}
}  // namespace

UOpRef fuse_multiply_adds(const UOpRef& ast, const Renderer& ren) {
  if (!ren.target().fma) return ast;
  static const PatternMatcher pm({{UPat({Ops::ADD, Ops::SUB}), [](const Match& m) { return fuse(m.root); }}}, "fma");
  return graph_rewrite(ast, pm, nullptr, false, "fma");
}

UOpRef lower_semantics(const UOpRef& ast, const Renderer& ren) {
  static const PatternMatcher pm(
      {
          {UPat({Ops::IDIV, Ops::MOD}), [](const Match& m) { return safe_divmod(m.root); }},
          {UPat({Ops::SHL, Ops::SHR}), [](const Match& m) { return c_shift(m.root); }},
          {UPat(Ops::MAX), [](const Match& m) { return nan_max(m.root); }},
          {UPat(Ops::GEP, {UPat({Ops::VECTORIZE, Ops::GEP, Ops::CONST})}), [](const Match& m) { return gep(m.root->src[0], m.root->arg_ints()); }},
          {UPat(), [](const Match& m) { return split_lanes(m.root, m.ctx<const Renderer>()); }},
      },
      "semantics");
  return graph_rewrite(ast, pm, const_cast<Renderer*>(&ren), false, "semantics");
}

}  // namespace tg
