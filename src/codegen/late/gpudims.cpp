// gpudims: on a GPU target the output loops are the launch grid. GLOBAL ranges become work-group ids and LOCAL ranges
// work-item ids (SPECIAL gidx/lidx), innermost range on x, so neighbouring work-items touch neighbouring memory. More
// ranges than the grid has dimensions, or a range past a dimension's limit, fold into fewer ids by division.
#include <algorithm>

#include "codegen/late/late.h"
#include "codegen/opt/opt.h"

namespace tg {

namespace {
UOpRef prod(const UOps& xs) {
  UOpRef p = UOp::const_int(dtypes::index, 1);
  for (auto& x : xs) p = p->alu(Ops::MUL, {x});
  return p->simplify();
}

// the ids for `rngs` (outermost first) under per-dimension limits `max`: substitutions into the AST and the grid sizes
void assign(const UOps& rngs, const std::array<int64_t, 3>& max, const char* prefix, UOpMap<UOpRef>& subs, std::array<UOpRef, 3>& grid) {
  if (rngs.empty()) return;
  auto size = [](const UOps& group) {
    UOps s;
    for (auto& r : group) s.push_back(r->src[0]);
    return prod(s);
  };
  auto fits = [&](const std::vector<UOps>& groups) {
    for (size_t d = 0; d < groups.size(); d++)
      if (max[d] > 0 && size(groups[d])->vmax() > max[d]) return false;
    return true;
  };
  // groups[d]: the ranges dimension d covers, outermost first; x takes the innermost range
  std::vector<UOps> groups;
  size_t n = rngs.size();
  if (n <= 3) {
    for (size_t d = 0; d < n; d++) groups.push_back({rngs[n - 1 - d]});
  } else {
    groups = {{rngs[n - 1]}, {rngs[n - 2]}, UOps(rngs.begin(), rngs.end() - 2)};
  }
  if (!fits(groups)) groups = {rngs};  // one dimension over everything: x has the largest limit
  TG_CHECK(fits(groups), TG_ERROR_UNSUPPORTED, strformat("gpudims: a launch of %lld %s ids exceeds the device's limit of %lld", (long long)size(rngs)->vmax(),
                                                         prefix, (long long)max[0]));
  for (size_t d = 0; d < groups.size(); d++) {
    UOpRef total = size(groups[d]);
    grid[d] = total;
    UOpRef id = UOp::make(Ops::SPECIAL, dtypes::index, {total}, std::string(prefix) + std::to_string(d));
    // a folded dimension: range i is (id / the sizes inside it) % its size
    UOpRef inner = UOp::const_int(dtypes::index, 1);
    for (size_t i = groups[d].size(); i-- > 0;) {
      const UOpRef& r = groups[d][i];
      UOpRef v = i + 1 == groups[d].size() ? id : id->alu(Ops::IDIV, {inner});
      if (i > 0) v = v->alu(Ops::MOD, {r->src[0]});
      subs[r] = v;
      inner = inner->alu(Ops::MUL, {r->src[0]})->simplify();
    }
  }
}
}  // namespace

std::pair<UOpRef, int64_t> row_major(const UOps& rngs) {
  UOpRef at = UOp::const_int(dtypes::index, 0);
  int64_t n = 1;
  for (auto& r : rngs) at = at->alu(Ops::MUL, {r->src[0]})->alu(Ops::ADD, {r}), n *= r->src[0]->vmax();
  return {at->simplify(), n};
}

// GROUP/GROUPTOP: a reduce split across a work-group. Each work-item reduces its share (the reduce's other ranges), puts
// the partial result in local memory at its slot (one per work-item and output lane: the kernel's LOCAL and UPCAST
// ranges and the group's), waits at
// a barrier, then reduces the group's partial results itself: every work-item of the group computes the same value and
// stores it to the same address.
UOpRef lower_group_reduces(const UOpRef& ast) {
  UOps topo = ast->toposort(), locals;
  for (auto& u : topo)
    if (u->op == Ops::RANGE && (range_kind(u.get()) == AxisType::LOCAL || range_kind(u.get()) == AxisType::UPCAST)) locals.push_back(u);
  std::sort(locals.begin(), locals.end(), [](const UOpRef& a, const UOpRef& b) { return range_path(a.get()) < range_path(b.get()); });
  UOpMap<UOpRef> subs;
  int64_t id = 0;
  for (auto& r : topo) {
    if (r->op != Ops::REDUCE) continue;
    UOps group, other;
    for (size_t i = 1; i < r->src.size(); i++) (range_kind(r->src[i].get()) == AxisType::GROUP_REDUCE ? group : other).push_back(r->src[i]);
    if (group.empty()) continue;
    // the slot of a work-item: its LOCAL ids and group ids, as one index; `with` the group ranges replaced
    auto slot = [&](const UOps& grp) {
      UOps all = locals;
      all.insert(all.end(), grp.begin(), grp.end());
      return row_major(all);
    };
    auto [at, n] = slot(group);
    UOpRef partial = other.empty() ? r->src[0] : UOp::make(Ops::REDUCE, r->dtype, [&] {
      UOps s{r->src[0]};
      s.insert(s.end(), other.begin(), other.end());
      return s;
    }(), r->arg);
    UOpRef buf = UOp::make(Ops::DEFINE_LOCAL, r->dtype.ptr_to(n, AddrSpace::Local), {}, id++);
    UOpRef store = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, buf->dtype, {buf, at}), partial});
    UOpRef barrier = UOp::make(Ops::BARRIER, dtypes::void_, {store});
    UOps again;  // the group's partial results, read back over new REDUCE ranges
    for (auto& g : group) {
      auto arg = g->arg_ints();
      arg.back() = 2, arg.push_back(int64_t(AxisType::REDUCE));  // path + {2}: unique, ordered after the group's
      again.push_back(UOp::make(Ops::RANGE, g->dtype, g->src, arg));
    }
    UOpRef from = slot(again).first;
    UOpRef load = UOp::make(Ops::LOAD, r->dtype, {UOp::make(Ops::INDEX, buf->dtype, {buf, from}), barrier});
    UOps src{load};
    src.insert(src.end(), again.begin(), again.end());
    subs[r] = UOp::make(Ops::REDUCE, r->dtype, src, r->arg);
  }
  return subs.empty() ? ast : ast->substitute(subs);
}

UOpRef add_gpudims(const UOpRef& ast, const Target& t, std::array<UOpRef, 3>& global, std::array<UOpRef, 3>& local) {
  if (!t.has_local) return ast;
  UOps g, l;
  for (auto& u : ast->toposort()) {
    if (u->op != Ops::RANGE) continue;
    AxisType k = range_kind(u.get());
    TG_CHECK(k != AxisType::THREAD, TG_ERROR_INTERNAL, "gpudims: a THREAD range on GPU target " + t.device);
    if (k == AxisType::GLOBAL) g.push_back(u);
    if (k == AxisType::LOCAL || k == AxisType::GROUP_REDUCE || k == AxisType::WARP) l.push_back(u);  // a warp's path sorts last: x
  }
  auto by_path = [](const UOpRef& a, const UOpRef& b) { return range_path(a.get()) < range_path(b.get()); };
  std::sort(g.begin(), g.end(), by_path), std::sort(l.begin(), l.end(), by_path);
  UOpMap<UOpRef> subs;
  assign(g, t.global_max, "gidx", subs, global);
  assign(l, t.local_max, "lidx", subs, local);
  return subs.empty() ? ast : ast->substitute(subs);
}

}  // namespace tg
