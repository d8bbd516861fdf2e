// Reductions become accumulators (tinygrad's reduce_to_acc), so the linearizer only orders nodes. REDUCE(x, r...) is
//   acc = DEFINE_REG; STORE(AFTER(acc, the ranges x runs inside), identity)           set where the reduce's scope opens
//   END(STORE(acc, LOAD(AFTER(acc, that store, r...)) op x), r...)                     updated inside its loops
//   LOAD(AFTER(acc, that END))                                                         read after them
// AFTER orders a register access after its sources and places it inside the loops they use.
#include <algorithm>
#include <limits>
#include <unordered_set>

#include "codegen/late/late.h"

namespace tg {

double reduce_identity(Ops op, DType dt) {
  if (op == Ops::ADD) return 0;
  if (op == Ops::MUL) return 1;
  return dtypes::is_float(dt) ? -std::numeric_limits<double>::infinity() : dtypes::min(dt);
}

namespace {
UOpRef after(const UOpRef& acc, const UOps& deps) {
  if (deps.empty()) return acc;
  UOps s{acc};
  s.insert(s.end(), deps.begin(), deps.end());
  return UOp::make(Ops::AFTER, acc->dtype, s);
}
UOpRef end(const UOpRef& body, const UOps& rngs) {
  UOps s{body};
  s.insert(s.end(), rngs.begin(), rngs.end());
  return UOp::make(Ops::END, dtypes::void_, s);
}
// the ranges `x` runs inside: those it uses, less its own and those an END within it closes
UOps input_ranges(const UOpRef& x, const UOps& own) {
  UOps topo = x->toposort(), out;
  std::unordered_set<const UOp*> closed;
  for (auto& r : own) closed.insert(r.get());
  for (auto& u : topo)
    if (u->op == Ops::END)
      for (size_t i = 1; i < u->src.size(); i++) closed.insert(u->src[i].get());
  for (auto& u : topo)
    if (u->op == Ops::RANGE && !closed.count(u.get())) out.push_back(u);
  return out;
}

// A sum of WMMAs accumulates in the instruction: the lanes of a REDUCE's value that are a WMMA's whole result (with a
// zero C) become WMMA(a, b, the accumulators) instead of accumulators + WMMA(a, b, 0). Lane -> (WMMA, element).
using Lanes = std::vector<std::pair<UOpRef, int64_t>>;
Lanes wmma_lanes(const UOp* r) {
  Lanes out(size_t(r->dtype.count));
  if (Ops(std::get<int64_t>(r->arg)) != Ops::ADD) return out;
  std::unordered_map<const UOp*, int64_t> seen;
  for (int64_t l = 0; l < r->dtype.count; l++) {
    UOpRef v = lane_of(r->src[0], l);
    if (v->op != Ops::GEP || v->src[0]->op != Ops::WMMA) continue;
    const UOpRef& w = v->src[0];
    bool zero = true;
    for (int64_t i = 0; i < w->src[2]->dtype.count; i++) zero &= lane_of(w->src[2], i)->is_const(0);
    if (zero) out[size_t(l)] = {w, v->arg_ints()[0]}, seen[w.get()] |= int64_t(1) << v->arg_ints()[0];
  }
  for (auto& [w, e] : out)  // only whole results
    if (w && seen[w.get()] != (int64_t(1) << w->dtype.count) - 1) w = nullptr;
  return out;
}

struct Accumulators {
  const Renderer& ren;
  int64_t id = 0;

  UOpRef lower(const UOp* red) {
    UOps rngs(red->src.begin() + 1, red->src.end());
    const UOpRef& x = red->src[0];
    if (red->dtype == dtypes::void_) return end(x, rngs);  // loops around stores (a PACK's copy): no accumulator
    Ops op = Ops(std::get<int64_t>(red->arg));
    // a vector the target can't hold in a register (GPUs) is one scalar accumulator per lane
    bool split = red->dtype.count > 1 && !ren.holds_vector(Ops::DEFINE_REG, red->dtype);
    DType at = split ? red->dtype.scalar_of() : red->dtype;
    UOps in = input_ranges(x, rngs), accs, cur, stores;
    for (int64_t l = 0; l < (split ? red->dtype.count : 1); l++) {
      accs.push_back(UOp::make(Ops::DEFINE_REG, at.ptr_to(1, AddrSpace::Reg), {}, id++));
      UOps deps{UOp::make(Ops::STORE, dtypes::void_, {after(accs.back(), in), UOp::const_(at, reduce_identity(op, at))})};
      deps.insert(deps.end(), rngs.begin(), rngs.end());
      cur.push_back(UOp::make(Ops::LOAD, at, {after(accs.back(), deps)}));
    }
    Lanes wl = split ? wmma_lanes(red) : Lanes(1);
    std::vector<const UOp*> placed;
    for (size_t l = 0; l < accs.size(); l++) {
      const UOpRef& w = wl[l].first;
      if (!w) {
        UOpRef v = split ? lane_of(x, int64_t(l)) : x;
        // likewise a dot product instruction's (DOT4, DOT2) zero: it adds into the accumulator itself
        bool dot = op == Ops::ADD && (v->op == Ops::DOT4 || v->op == Ops::DOT2) && v->dtype == at;
        for (int64_t i = 0; dot && i < at.count; i++) dot &= lane_of(v->src[2], i)->is_const(0);
        v = dot ? UOp::make(v->op, v->dtype, {v->src[0], v->src[1], cur[l]}) : cur[l]->alu(op, {v});
        stores.push_back(UOp::make(Ops::STORE, dtypes::void_, {accs[l], v}));
      } else if (std::find(placed.begin(), placed.end(), w.get()) == placed.end()) {
        placed.push_back(w.get());
        std::vector<size_t> lane(size_t(w->dtype.count));  // the WMMA's element -> the accumulator lane holding it
        for (size_t k = 0; k < wl.size(); k++)
          if (wl[k].first == w) lane[size_t(wl[k].second)] = k;
        UOps c;
        for (size_t e : lane) c.push_back(cur[e]);
        UOpRef acc = UOp::make(Ops::WMMA, w->dtype, {w->src[0], w->src[1], UOp::make(Ops::VECTORIZE, w->dtype, c)}, w->arg);
        for (size_t e = 0; e < lane.size(); e++) stores.push_back(UOp::make(Ops::STORE, dtypes::void_, {accs[lane[e]], lane_of(acc, int64_t(e))}));
      }
    }
    UOpRef done = end(stores.size() == 1 ? stores[0] : UOp::make(Ops::GROUP, dtypes::void_, stores), rngs);
    UOps out;
    for (auto& a : accs) out.push_back(UOp::make(Ops::LOAD, at, {after(a, {done})}));
    return split ? UOp::make(Ops::VECTORIZE, red->dtype, out) : out[0];
  }
};
}  // namespace

UOpRef reduce_to_acc(const UOpRef& ast, const Renderer& ren) {
  Accumulators a{ren};
  static const PatternMatcher pm(
      {
          {UPat(Ops::REDUCE).any_len(), [](const Match& m) { return m.ctx<Accumulators>().lower(m.root); }},
          // the lanes of a reduce kept in scalars are read from their accumulators
          {UPat(Ops::GEP, {UPat(Ops::VECTORIZE)}), [](const Match& m) { return gep(m.root->src[0], m.root->arg_ints()); }},
      },
      "reduce_to_acc");
  return graph_rewrite(ast, pm, &a, false, "reduce_to_acc");
}

}  // namespace tg
