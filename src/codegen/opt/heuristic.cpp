// Hand-written optimizations for when BEAM is off, tuned for CPUs: vectors as wide as the host's registers along the
// axis that is contiguous in memory, a register tile for reductions that reuse their inputs (matmul, convolution),
// several vector accumulators for reductions along contiguous memory, and THREAD across the cores.
#include <algorithm>

#include "codegen/opt/kernel.h"
#include "runtime/threadpool.h"

namespace tg {

// the constant stride of `r` in an index: 0 if the index doesn't use it, -1 if it isn't a plain multiple of it
static int64_t stride_in(const UOpRef& idx, const UOpRef& r) {
  UOps terms;
  idx->split_uop(Ops::ADD, terms);
  int64_t s = 0;
  for (auto& t : terms) {
    if (t == r) s += 1;
    else if (t->op == Ops::MUL && t->src[0] == r && t->src[1]->op == Ops::CONST) s += t->src[1]->vmax();
    else if (t->op == Ops::MUL && t->src[1] == r && t->src[0]->op == Ops::CONST) s += t->src[0]->vmax();
    else {
      auto topo = t->toposort();
      if (std::find(topo.begin(), topo.end(), r) != topo.end()) return -1;
    }
  }
  return s;
}

void hand_coded_optimizations(Scheduler& k) {
  const Target& t = k.ren->target();
  auto attempt = [&](Opt o) {
    try {
      k.apply_opt(o);
      return true;
    } catch (const OptError&) {
      return false;
    }
  };
  UOpRef store;
  for (auto& s : k.ast->src)
    if (s->op == Ops::STORE) store = s;
  if (!store) return;
  int64_t lanes = std::clamp<int64_t>(t.vector_bytes / std::max(1, store->src[1]->dtype.itemsize()), 1, 16);
  auto index_of = [](const UOpRef& b) { return b->src[1]; };
  auto loads = [&] {
    UOps out;
    for (auto& b : k.bufs())
      if (b != store->src[0]) out.push_back(b);
    return out;
  };
  bool reduce = !k.reduceops().empty();

  // 1. vectors along the output axis that is contiguous in memory
  int vec_axis = -1;
  for (int ax : k.upcastable_dims()) {
    auto r = k.rngs()[size_t(ax)];
    // contiguous in the output, and contiguous or broadcast in every input: vector loads, not gathers
    bool ok = stride_in(index_of(store->src[0]), r) == 1 && k.full_shape()[size_t(ax)] % lanes == 0;
    for (auto& b : loads()) ok &= stride_in(index_of(b), r) == 0 || stride_in(index_of(b), r) == 1;
    if (ok) vec_axis = ax;
  }
  UOpRef vr = vec_axis >= 0 ? k.rngs()[size_t(vec_axis)] : UOpRef();
  if (vec_axis >= 0 && lanes > 1 && attempt(Opt{OptOps::UPCAST, vec_axis, lanes})) {
    // 2. a register tile when a reduce reuses its inputs: another output axis some input doesn't depend on (its loads
    // are shared by the tile's rows), and a second vector of columns
    if (reduce) {
      auto rngs = k.rngs();
      int best = -1;
      for (int ax : k.upcastable_dims()) {
        auto r = rngs[size_t(ax)];
        bool reused = false;
        for (auto& b : loads()) reused |= stride_in(index_of(b), r) == 0;
        auto p = range_path(r.get()), vp = range_path(vr.get());
        bool from_vec = p.size() >= vp.size() && std::equal(vp.begin(), vp.end(), p.begin());
        if (reused && range_kind(r.get()) == AxisType::GLOBAL && !from_vec) best = ax;
      }
      int64_t rows = getenv_int("TG_TILE_ROWS", 4);
      if (best >= 0)
        for (int64_t amt : {rows, int64_t(4), int64_t(3), int64_t(2)})
          if (amt > 1 && attempt(Opt{OptOps::UPCAST, best, amt})) break;
      // the rest of the vector axis: its path is the split's more significant part
      auto rest = range_path(vr.get());
      rest.push_back(0);
      int64_t cols = getenv_int("TG_TILE_VECS", 2);
      auto rngs2 = k.rngs();
      for (size_t ax = 0; ax < rngs2.size() && cols > 1; ax++)
        if (range_path(rngs2[ax].get()) == rest && range_kind(rngs2[ax].get()) == AxisType::GLOBAL) attempt(Opt{OptOps::UPCAST, int64_t(ax), cols});
    }
  } else if (reduce && lanes > 1) {
    // 3. a reduce along contiguous memory: vector accumulators, several of them to hide the add latency
    auto un = k.unrollable_dims();
    if (!un.empty()) {
      auto r = k.rngs()[size_t(un.back())];
      bool contiguous = false;
      for (auto& b : loads()) contiguous |= stride_in(index_of(b), r) == 1;
      if (contiguous && attempt(Opt{OptOps::UNROLL, int64_t(un.size() - 1), lanes})) attempt(Opt{OptOps::UNROLL, int64_t(k.unrollable_dims().size() - 1), 4});
    }
  }

  // 4. THREAD across the cores, on the outermost output axis that divides, when there is work enough
  if (t.has_threads && t.global_max[0] > 1) {
    int64_t work = 1;
    for (auto s : k.full_shape()) work *= s;
    for (int64_t th = t.global_max[0]; th >= 2; th--) {
      if (work / (128 << 10) < th) continue;
      bool done = false;
      for (int ax : k.axes_of({AxisType::GLOBAL}))
        if (k.full_shape()[size_t(ax)] % th == 0) {
          done = attempt(Opt{OptOps::THREAD, ax, th});
          break;
        }
      if (done) break;
    }
  }
}

}  // namespace tg
