// gpudims: parallel ranges become ids. On a CPU a THREAD range is the kernel's core_id variable. On a GPU target the
// output loops are the launch grid: GLOBAL ranges become work-group ids and LOCAL ranges work-item ids (SPECIAL
// gidx/lidx), innermost range on x, so neighbouring work-items touch neighbouring memory. More ranges than the grid has
// dimensions, or a range past a dimension's limit, fold into fewer ids by division.
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

UOpRef lower_threads(const UOpRef& ast, int64_t* threads) {
  *threads = 1;
  for (auto& u : ast->toposort())
    if (u->op == Ops::RANGE && range_kind(u.get()) == AxisType::THREAD) {
      *threads = u->src[0]->vmax();
      return ast->substitute({{u, UOp::make(Ops::DEFINE_VAR, u->dtype, {}, VarArg{"core_id", 0, *threads - 1})}});
    }
  return ast;
}

}  // namespace tg
