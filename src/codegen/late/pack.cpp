// PACK lowering: a marked input's reads go through a scratch array (DEFINE_LOCAL: on a CPU, the kernel's stack frame).
// The copy is its own loop nest over fresh ranges, a REDUCE of no value whose loops the linearizer opens where the copy's
// other dependencies are (inside the output loops the input uses, before those it doesn't), then a BARRIER that orders
// the reads after it. Loop ranges go outermost in the array and vector lanes innermost, so each step of the inner loop
// reads one contiguous run.
#include <algorithm>

#include "codegen/late/late.h"
#include "codegen/opt/postrange.h"

namespace tg {

namespace {
// how far one step of `r` moves the index `x` (-1: not a constant)
int64_t step_of(const UOpRef& x, const UOpRef& r) {
  UOpRef d = (x->substitute({{r, r + UOp::const_int(r->dtype, 1)}}) - x)->simplify();
  return d->op == Ops::CONST ? d->vmax() : -1;
}
}  // namespace

// The panel's ranges in the order of their addresses (by decreasing step in the input; ranges the index uses
// non-linearly outermost), so neighbouring work-items of the copy read neighbouring memory and write neighbouring banks;
// the array keeps that order, its innermost row padded to a multiple of 16 bytes plus 16, so that reads down a column
// (a tensor core fragment's rows, a register tile's columns) fall in different banks.
StagedPanel staged_panel(const UOpRef& ld) {
  const UOpRef& idx = ld->src[0];
  StagedPanel p;
  for (auto& r : idx->toposort())
    if (r->op == Ops::RANGE && range_kind(r.get()) == AxisType::REDUCE && (!p.step || range_path(r.get()) < range_path(p.step.get()))) p.step = r;
  UOps panel;
  std::vector<int64_t> stride;
  for (auto& r : idx->toposort())
    if (r->op == Ops::RANGE && range_kind(r.get()) != AxisType::GLOBAL && r != p.step) panel.push_back(r), stride.push_back(step_of(idx->src[1], r));
  std::vector<size_t> order(panel.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    auto key = [&](size_t i) { return std::make_pair(stride[i] < 0 ? INT64_MAX : stride[i], range_path(panel[i].get())); };
    return key(a) > key(b);
  });
  for (size_t i : order) p.ranges.push_back(panel[i]);
  int64_t isz = ld->dtype.itemsize(), n = 1;
  p.strides.resize(p.ranges.size());
  for (size_t i = p.ranges.size(); i-- > 0;) {
    p.strides[i] = n;
    int64_t sz = p.ranges[i]->src[0]->vmax();
    n *= sz, p.elems *= sz;
    if (i + 1 == p.ranges.size() && p.ranges.size() > 1 && sz * isz >= 32) n = (sz * isz + 15) / 16 * 16 / isz + 16 / isz;
  }
  p.size = n;
  return p;
}

namespace {
// GPU: the work-group's copy of a packed input's panel into local memory (staged_panel's layout). Every work-item takes
// elements t, t + T, ... of the panel (t its place in the work-group, T the work-group's size). A barrier before the
// copy keeps it from overwriting what the work-group still reads of the last stage, one after it makes the stage visible.
UOpRef stage_load(const UOpRef& ast, const UOpRef& ld, int64_t id) {
  const UOpRef& idx = ld->src[0];
  UOps group;
  for (auto& r : ast->toposort()) {
    AxisType k = r->op == Ops::RANGE ? range_kind(r.get()) : AxisType::GLOBAL;
    if (k == AxisType::LOCAL || k == AxisType::WARP || k == AxisType::GROUP_REDUCE) group.push_back(r);
  }
  std::sort(group.begin(), group.end(), [](const UOpRef& a, const UOpRef& b) { return range_path(a.get()) < range_path(b.get()); });
  auto [t, nt] = row_major(group);
  StagedPanel p = staged_panel(ld);
  const UOps& rs = p.ranges;
  auto at_of = [&](const UOps& coords) {
    UOpRef a = UOp::const_int(dtypes::index, 0);
    for (size_t i = 0; i < rs.size(); i++) a = a + coords[i] * UOp::const_int(dtypes::index, p.strides[i]);
    return a->simplify();
  };
  UOpRef buf = UOp::make(Ops::DEFINE_LOCAL, ld->dtype.ptr_to(p.size, AddrSpace::Local), {}, id);
  // the copy: element f = j * T + t of the panel, j over the work-item's share
  int64_t per = (p.elems + nt - 1) / nt;
  UOpRef j = UOp::make(Ops::RANGE, dtypes::index, {UOp::const_int(dtypes::index, per)}, std::vector<int64_t>{4, id, int64_t(AxisType::REDUCE)});
  UOpRef f = per > 1 ? (j * UOp::const_int(dtypes::index, nt) + t) : t;
  UOps coords(rs.size());
  UOpMap<UOpRef> to;
  int64_t inner = 1;
  for (size_t i = rs.size(); i-- > 0;) {
    int64_t sz = rs[i]->src[0]->vmax();
    UOpRef c = inner > 1 ? f / UOp::const_int(dtypes::index, inner) : f;
    if (i > 0) c = c % UOp::const_int(dtypes::index, sz);
    coords[i] = c->simplify(), to[rs[i]] = coords[i], inner *= sz;
  }
  UOpRef src_idx = idx->substitute(to);
  UOpRef valid = p.elems % nt != 0 ? (f < UOp::const_int(dtypes::index, p.elems))->simplify() : UOpRef();
  if (valid) {  // the last round of a panel the work-group doesn't divide: only the elements that exist
    UOps s = src_idx->src;
    if (s.size() > 2) s[2] = s[2] & valid;
    else s.push_back(valid);
    src_idx = src_idx->replace_src(s);
  }
  UOpRef read = UOp::make(Ops::LOAD, ld->dtype, {src_idx});
  UOps dst{buf, at_of(coords)};
  if (valid) dst.push_back(valid);
  UOps st{UOp::make(Ops::INDEX, buf->dtype, dst), read};
  if (p.step) st.push_back(UOp::make(Ops::BARRIER, dtypes::void_, {p.step}));  // the last stage's reads are done
  UOpRef copy = UOp::make(Ops::STORE, dtypes::void_, st);
  if (per > 1) copy = UOp::make(Ops::REDUCE, dtypes::void_, {copy, j}, int64_t(Ops::ADD));
  UOpRef barrier = UOp::make(Ops::BARRIER, dtypes::void_, {copy});
  return UOp::make(Ops::LOAD, ld->dtype, {UOp::make(Ops::INDEX, buf->dtype, {buf, at_of(rs)}), barrier});
}
}  // namespace

UOpRef lower_packs(const UOpRef& ast, const Target& target) {
  UOpMap<UOpRef> subs;
  int64_t id = 1000;  // apart from the group reduces' arrays (0, 1, ...)
  for (auto& ld : ast->toposort()) {
    if (ld->op != Ops::LOAD || !is_packed(ld)) continue;
    if (target.has_local) {
      subs[ld] = stage_load(ast, ld, id++);
      continue;
    }
    const UOpRef& idx = ld->src[0];
    auto lane = [](const UOpRef& r) { return range_kind(r.get()) == AxisType::UPCAST || range_kind(r.get()) == AxisType::UNROLL; };
    UOps panel;
    for (auto& r : idx->toposort())
      if (r->op == Ops::RANGE && range_kind(r.get()) != AxisType::GLOBAL) panel.push_back(r);
    std::sort(panel.begin(), panel.end(), [&](const UOpRef& a, const UOpRef& b) {
      return std::make_pair(lane(a), range_path(a.get())) < std::make_pair(lane(b), range_path(b.get()));
    });
    // the copy's ranges: the same sizes and kinds, paths extended so they are new (and sort beside the originals)
    UOpMap<UOpRef> fresh;
    UOps loops, copy_rngs;
    for (auto& r : panel) {
      auto arg = r->arg_ints();
      arg.insert(arg.end() - 1, {4, id});  // unique to this pack: two packs of the same ranges loop separately
      UOpRef c = UOp::make(Ops::RANGE, r->dtype, r->src, arg);
      fresh[r] = c, copy_rngs.push_back(c);
      if (!lane(r)) loops.push_back(c);
    }
    // the loops the read's gate depends on outermost (a conv's taps, for its padding): the gate is then computed once
    // per tap, not for every input channel (the pack of a 256-channel 14x14 conv's window 0.3 -> 0.03 ms)
    if (idx->src.size() > 2) {
      UOpRef gate = idx->src[2]->substitute(fresh);
      std::stable_partition(loops.begin(), loops.end(), [&](const UOpRef& c) { return depends_on(gate, c); });
    }
    auto [at, n] = row_major(panel);
    UOpRef buf = UOp::make(Ops::DEFINE_LOCAL, ld->dtype.ptr_to(n, AddrSpace::Local), {}, id++);
    UOpRef read = UOp::make(Ops::LOAD, ld->dtype, {idx->substitute(fresh)});
    UOpRef copy = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, buf->dtype, {buf, row_major(copy_rngs).first}), read});
    if (!loops.empty()) {
      UOps s{copy};
      s.insert(s.end(), loops.begin(), loops.end());
      copy = UOp::make(Ops::REDUCE, dtypes::void_, s, int64_t(Ops::ADD));
    }
    UOpRef barrier = UOp::make(Ops::BARRIER, dtypes::void_, {copy});
    subs[ld] = UOp::make(Ops::LOAD, ld->dtype, {UOp::make(Ops::INDEX, buf->dtype, {buf, at}), barrier});
  }
  return subs.empty() ? ast : ast->substitute(subs);
}

}  // namespace tg
