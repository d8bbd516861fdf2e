// Byte dot products as one instruction. An unrolled reduce of four int32 products of a uint8 and an int8 (a quantized
// matmul: a weight's unsigned codes times the int8 activations) expands to four GEPs of one product vector added up,
// lane o of the sum taking lanes L0[o]..L3[o]. On a target with DOT4 (x86 VNNI) the bytes are gathered so that each
// output lane's four are adjacent, and DOT4 multiplies and adds them in one step: exact, since no int32 lane can
// overflow from four products of bytes.
#include <optional>

#include "codegen/late/late.h"

namespace tg {

namespace {
// the byte vector whose int32 cast `u` is, and whether it is signed: a CAST of bytes, or lanes of one
std::optional<std::pair<UOpRef, bool>> bytes_of(const UOpRef& u) {
  const UOp* c = u->op == Ops::GEP ? u->src[0].get() : u.get();
  if (c->op != Ops::CAST || (c->src[0]->dtype.scalar != Scalar::UInt8 && c->src[0]->dtype.scalar != Scalar::Int8)) return std::nullopt;
  UOpRef b = u->op == Ops::GEP ? gep(c->src[0], u->arg_ints()) : c->src[0];
  return std::pair{b, c->src[0]->dtype.scalar == Scalar::Int8};
}

// the leaves of a tree of int32 ADDs under `u`, left to right (at most `cap` of them, else none). A tree of `cap`
// leaves is at most `cap` - 1 deep, so a longer chain of adds stops the walk there
bool add_leaves(const UOpRef& u, UOps& out, size_t cap, size_t depth = 0) {
  if (u->op != Ops::ADD) {
    out.push_back(u);
    return out.size() <= cap;
  }
  return depth + 1 < cap && add_leaves(u->src[0], out, cap, depth + 1) && add_leaves(u->src[1], out, cap, depth + 1);
}

UOpRef dot4(const UOp* root) {
  if (root->dtype.scalar != Scalar::Int32 || root->dtype.count % 4 != 0) return {};
  UOps leaves;
  if (!add_leaves(root->ref(), leaves, 5)) return {};
  // four GEPs of one product of a uint8 and an int8 vector; what else is added is the accumulator
  UOpRef prod;
  UOps gepped, rest;
  for (auto& l : leaves) {
    bool part = l->op == Ops::GEP && l->src[0]->op == Ops::MUL && l->dtype == root->dtype && (!prod || l->src[0] == prod);
    if (part) prod = l->src[0], gepped.push_back(l);
    else rest.push_back(l);
  }
  if (gepped.size() != 4 || rest.size() > 1) return {};
  auto a = bytes_of(prod->src[0]), b = bytes_of(prod->src[1]);
  if (!a || !b || a->second == b->second) return {};
  if (a->second) std::swap(a, b);  // a: the unsigned bytes
  std::vector<int64_t> lanes;
  for (int64_t o = 0; o < root->dtype.count; o++)
    for (auto& g : gepped) lanes.push_back(g->arg_ints()[size_t(o)]);
  UOpRef acc = rest.empty() ? UOp::const_(root->dtype, 0) : rest[0];
  return UOp::make(Ops::DOT4, root->dtype, {gep(a->first, lanes), gep(b->first, lanes), acc});
}
}  // namespace

UOpRef fuse_dot_products(const UOpRef& ast, const Renderer& ren) {
  if (!ren.native_op(Ops::DOT4, dtypes::int32)) return ast;
  static const PatternMatcher pm({{UPat(Ops::ADD), [](const Match& m) { return dot4(m.root); }}}, "dot4");
  return graph_rewrite(ast, pm, nullptr, false, "dot4");
}

}  // namespace tg
