// Dot products as one instruction. An unrolled reduce of k products per output lane expands to k GEPs of one product
// vector added up, lane o of the sum taking lanes L0[o]..L(k-1)[o]. Where the target has the instruction the inputs are
// gathered so that each output lane's k are adjacent, and one op multiplies and adds them:
// - DOT4 (x86 VNNI vpdpbusd): four int32 products of a uint8 and an int8 (a quantized matmul: a weight's unsigned codes
//   times the int8 activations); exact, since no int32 lane can overflow from four products of bytes;
// - DOT2 (AVX512-BF16 vdpbf16ps): two float products of bfloat pairs (a bfloat matmul); each product is exact in float,
//   the two adds round as a reduce's adds do (and, as the instruction does, subnormal inputs count as zero).
#include <optional>

#include "codegen/late/late.h"

namespace tg {

namespace {
// the narrow vector whose cast `u` is (a CAST of one, or lanes of such a CAST), if its scalar is `a` or `b`, and whether
// it is `b`
std::optional<std::pair<UOpRef, bool>> narrow_of(const UOpRef& u, Scalar a, Scalar b) {
  const UOp* c = u->op == Ops::GEP ? u->src[0].get() : u.get();
  if (c->op != Ops::CAST || (c->src[0]->dtype.scalar != a && c->src[0]->dtype.scalar != b)) return std::nullopt;
  UOpRef v = u->op == Ops::GEP ? gep(c->src[0], u->arg_ints()) : c->src[0];
  return std::pair{v, c->src[0]->dtype.scalar == b};
}

// the leaves of a tree of ADDs under `u`, left to right (at most `cap` of them, else none). A tree of `cap`
// leaves is at most `cap` - 1 deep, so a longer chain of adds stops the walk there
bool add_leaves(const UOpRef& u, UOps& out, size_t cap, size_t depth = 0) {
  if (u->op != Ops::ADD) {
    out.push_back(u);
    return out.size() <= cap;
  }
  return depth + 1 < cap && add_leaves(u->src[0], out, cap, depth + 1) && add_leaves(u->src[1], out, cap, depth + 1);
}

// `bf`: DOT2 of bfloat pairs, else DOT4 of bytes
UOpRef dot(const UOp* root, bool bf) {
  size_t k = bf ? 2 : 4;
  if (root->dtype.scalar != (bf ? Scalar::Float32 : Scalar::Int32) || root->dtype.count % 4 != 0) return {};
  UOps leaves;
  if (!add_leaves(root->ref(), leaves, k + 1)) return {};
  // k GEPs of one product (DOT4: of a uint8 and an int8 vector; DOT2: of two bfloat vectors); what else is added is
  // the accumulator
  UOpRef prod;
  UOps gepped, rest;
  for (auto& l : leaves) {
    bool part = l->op == Ops::GEP && l->src[0]->op == Ops::MUL && l->dtype == root->dtype && (!prod || l->src[0] == prod);
    if (part) prod = l->src[0], gepped.push_back(l);
    else rest.push_back(l);
  }
  if (gepped.size() != k || rest.size() > 1) return {};
  Scalar sa = bf ? Scalar::BFloat16 : Scalar::UInt8, sb = bf ? Scalar::BFloat16 : Scalar::Int8;
  auto a = narrow_of(prod->src[0], sa, sb), b = narrow_of(prod->src[1], sa, sb);
  if (!a || !b || (!bf && a->second == b->second)) return {};
  if (!bf && a->second) std::swap(a, b);  // a: the unsigned bytes
  std::vector<int64_t> lanes;
  for (int64_t o = 0; o < root->dtype.count; o++)
    for (auto& g : gepped) lanes.push_back(g->arg_ints()[size_t(o)]);
  UOpRef acc = rest.empty() ? UOp::const_(root->dtype, 0) : rest[0];
  return UOp::make(bf ? Ops::DOT2 : Ops::DOT4, root->dtype, {gep(a->first, lanes), gep(b->first, lanes), acc});
}
}  // namespace

UOpRef fuse_dot_products(const UOpRef& ast, const Renderer& ren) {
  std::pair<bool, bool> has{ren.native_op(Ops::DOT4, dtypes::int32), ren.native_op(Ops::DOT2, dtypes::float32)};
  if (!has.first && !has.second) return ast;
  static const PatternMatcher pm({{UPat(Ops::ADD), [](const Match& m) {
                                     bool bf = m.root->dtype.scalar == Scalar::Float32;
                                     auto& h = m.ctx<std::pair<bool, bool>>();
                                     return (bf ? h.second : h.first) ? dot(m.root, bf) : UOpRef();
                                   }}},
                                 "dot products");
  return graph_rewrite(ast, pm, &has, false, "dot products");
}

}  // namespace tg
