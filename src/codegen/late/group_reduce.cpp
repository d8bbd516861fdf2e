// GROUP/GROUPTOP: a reduce split across a work-group. Each work-item reduces its share (the reduce's other ranges), puts
// the partial result in local memory at its slot (one per work-item and output lane: the kernel's LOCAL and UPCAST
// ranges and the group's), waits at a barrier, then reduces the group's partial results itself: every work-item of the
// group computes the same value and stores it to the same address.
#include <algorithm>

#include "codegen/late/late.h"
#include "codegen/opt/opt.h"

namespace tg {

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

}  // namespace tg
