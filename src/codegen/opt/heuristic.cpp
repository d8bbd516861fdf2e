// Hand-written optimizations for when BEAM is off, tuned for CPUs: vectors as wide as the host's registers along the
// axis that is contiguous in memory, a register tile for reductions that reuse their inputs (matmul, convolution),
// several vector accumulators for reductions along contiguous memory, and THREAD across the cores.
#include <algorithm>

#include "codegen/opt/postrange.h"

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
    else if (depends_on(t, r)) return -1;
  }
  return s;
}

// whether `r` came from splitting the range whose path is `prefix`
static bool split_from(const UOpRef& r, const std::vector<int64_t>& prefix) {
  auto q = range_path(r.get());
  return q.size() > prefix.size() && std::equal(prefix.begin(), prefix.end(), q.begin());
}

// the inputs' LOADs in the current AST (a PACKed one carries its tag): actions rewrite it, so ask again after one
static UOps load_ops(const Scheduler& k) {
  UOps out;
  for (auto& u : k.ast->toposort())
    if (u->op == Ops::LOAD && u->src[0]->op == Ops::INDEX) out.push_back(u);
  return out;
}
// their accesses (the INDEX of each)
static UOps loads(const Scheduler& k) {
  UOps out;
  for (auto& u : load_ops(k)) out.push_back(u->src[0]);
  return out;
}

// the kernel's (last) STORE
static UOpRef store_of(const Scheduler& k) {
  UOpRef st;
  for (auto& s : k.ast->src)
    if (s->op == Ops::STORE) st = s;
  return st;
}

static bool attempt(Scheduler& k, const Opt& o) {
  try {
    k.apply_opt(o);
    return true;
  } catch (const OptError& e) {
    if (DEBUG >= 5) debug_log(5, "heuristic: %s rejected: %s\n", o.str().c_str(), e.what());
    return false;
  }
}

// a packed panel (PACK, unless TG_PACK=0) for each input read inside the reduce loop (a bias read once per tile gains
// nothing) and vector-loaded (or gathered with stride 2, or under `gathered` any stride) along `lanes_r`
static void pack_vector_inputs(Scheduler& k, const UOpRef& lanes_r, bool gathered) {
  if (!getenv_int("TG_PACK", 1)) return;
  for (size_t i = 0;; i++) {
    UOps ins = k.inputs();  // again after each PACK: it rewrites the AST
    if (i >= ins.size()) break;
    const UOpRef& ld = ins[i];
    bool in_loop = false, shared = false;
    for (int ax : k.axes_of({AxisType::REDUCE})) in_loop |= depends_on(ld->src[0], k.rngs()[size_t(ax)]);
    // a panel pays for its copy only when the register tile's other outputs read it too (a GEMV's weight rows
    // are each read by one output: copying them doubles the traffic of a kernel bound by it)
    for (int ax : k.axes_of({AxisType::UPCAST})) shared |= !depends_on(ld->src[0], k.rngs()[size_t(ax)]);
    // a stride-2 one too (a strided conv's window: its gathers done once by the copy; ResNet-18's 128-channel stride-2
    // conv 1.07 -> 0.64 ms), and under `gathered` any stride (x @ W.T's rows of W)
    int64_t st = stride_in(ld->src[0]->src[1], lanes_r);
    if (in_loop && shared && (st == 1 || st == 2 || (gathered && (st > 2 || st < 0)))) attempt(k, Opt{OptOps::PACK, int64_t(i), 0});
  }
}

// A reduce along memory that every input reads contiguously, with no such output axis (a convolution's weight gradient:
// the image window and the output's gradient both run along the output's columns, which are the reduce), vectorized
// w lanes wide along the reduce (`rpath` is its range before the split): a register tile of output axes, each one
// some vector-loaded input is broadcast along (another input depends on it), so every vector load serves several
// accumulators. At most half the vector registers hold accumulators: 8 of AVX2's 16, 16 of AVX-512's 32 (a conv's
// weight gradient, 8 output channels x 4 input channels of 8-wide vectors, runs 1.75x faster than with 8 x 2).
static bool reduce_tile(Scheduler& k, const std::vector<int64_t>& rpath, int64_t w, int64_t lanes) {
  auto vp = rpath;
  vp.push_back(1);
  UOpRef lanes_r;
  for (auto& x : k.rngs())
    if (range_path(x.get()) == vp) lanes_r = x;
  if (!lanes_r) return false;
  int64_t regs = getenv_int("TG_TILE_REGS", k.ren->target().vector_bytes >= 64 ? 16 : 8);
  int64_t budget = regs * lanes / w;
  UOpRef first_reused;  // the load the first axis reuses: the second axis reuses another
  std::vector<int64_t> first_path;  // and the second is another axis, not the rest of the first (a GEMV's rows)
  for (int round = 0; round < 2 && budget >= 2; round++) {
    int best = -1;
    int64_t best_amt = 0;
    UOpRef best_load;
    for (int ax : k.upcastable_dims()) {
      auto x = k.rngs()[size_t(ax)];
      if (range_kind(x.get()) != AxisType::GLOBAL || (round == 1 && split_from(x, first_path))) continue;
      UOpRef reused;
      bool used = false;
      for (auto& b : loads(k)) {
        int64_t sx = stride_in(b->src[1], x);
        if (stride_in(b->src[1], lanes_r) == 1 && sx == 0 && b != first_reused) reused = b;
        used |= sx != 0;
      }
      if (!reused || !used) continue;
      for (int64_t amt : {int64_t(8), int64_t(6), int64_t(5), int64_t(4), int64_t(3), int64_t(2)})
        if (amt <= budget && k.full_shape()[size_t(ax)] % amt == 0) {
          if (amt > best_amt) best = ax, best_amt = amt, best_load = reused;
          break;
        }
    }
    if (best < 0) break;
    auto path = range_path(k.rngs()[size_t(best)].get());
    if (!attempt(k, Opt{OptOps::UPCAST, best, best_amt})) break;
    budget /= best_amt, first_reused = best_load, first_path = path;
  }
  if (first_reused) pack_vector_inputs(k, lanes_r, false);  // PACK refuses a panel that no inner output loop would reuse
  return bool(first_reused);
}

// An input bigger than an L1 that every output axis indexes, so no output reuses what another read: it streams from
// memory (a GEMV's weights, which a decode step reads once each). A register tile of rows gains nothing from it and
// splits its one sequential stream into several, which the prefetchers follow worse (a decode GEMV over 37 MB ran 2x
// slower with 8 rows per tile than with 1, read row by row; one over 300 KB 2.8x)
static bool streamed(const Scheduler& k) {
  auto axes = k.axes_of({AxisType::GLOBAL});
  for (auto& b : loads(k)) {
    DType buf = b->src[0]->dtype;
    if (buf.addrspace != AddrSpace::Global || buf.size < 0 || buf.size * buf.base().itemsize() < (int64_t(1) << 16)) continue;
    bool all = true;
    for (int ax : axes) all &= k.full_shape()[size_t(ax)] == 1 || depends_on(b->src[1], k.rngs()[size_t(ax)]);
    if (all) return true;
  }
  return false;
}

// A GPU matmul (one reduce loop; two output axes, each broadcast by an input): a work-group of 16 x 8 work-items, each
// with an 8 x 8 register tile taken a work-group apart (a work-item's columns are 16 apart, so a warp's reads of a row
// are neighbours), both inputs staged in local memory 16 steps of the reduce at a time (PACK). TG_GPU_STAGE sets the
// steps (0: no staging, the plain tile below), TG_GPU_STAGE_TILE the tile (0: 8 on a GPU, none on an OpenCL CPU device;
// 1: no staging).
static bool staged_tile(Scheduler& k) {
  // an OpenCL device on CPU cores (warps of 1, PoCL) stages nothing unless TG_GPU_STAGE_TILE asks: its local memory is
  // the memory its caches already serve, and a staged 1024^3 matmul ran at half the plain kernel's speed there
  static const int64_t steps = getenv_int("TG_GPU_STAGE", 16), tile_env = getenv_int("TG_GPU_STAGE_TILE", 0);
  const int64_t tile = tile_env ? tile_env : k.ren->target().warp_size > 1 ? 8 : 1;
  auto reduces = k.axes_of({AxisType::REDUCE});
  if (steps <= 0 || tile <= 1 || k.reduceops().size() != 1 || reduces.size() != 1) return false;
  if (!k.full_shape()[size_t(reduces[0])] || k.full_shape()[size_t(reduces[0])] % steps != 0) return false;
  // the two output axes, innermost first, that some input is broadcast along
  UOps axes;
  for (int ax : k.axes_of({AxisType::GLOBAL})) {
    auto r = k.rngs()[size_t(ax)];
    bool reused = false;
    for (auto& b : loads(k)) reused |= stride_in(b->src[1], r) == 0;
    if (reused) axes.insert(axes.begin(), r);
  }
  if (axes.size() < 2) return false;
  static const int64_t ly = getenv_int("TG_GPU_STAGE_LY", 8);  // work-items along the rows (16 along the columns)
  const int64_t lx = 16;
  if (axes[0]->src[0]->op != Ops::CONST || axes[1]->src[0]->op != Ops::CONST || axes[0]->src[0]->vmax() % (lx * tile) != 0 ||
      axes[1]->src[0]->vmax() % (ly * tile) != 0)
    return false;
  Scheduler tk = k;
  try {
    // work-items first, then the tile from what is left: a work-item's outputs are a work-group apart
    UOpRef n = tk.apply_opt(Opt{OptOps::LOCAL, tk.axis_of(axes[0]), lx}).first;
    UOpRef m = tk.apply_opt(Opt{OptOps::LOCAL, tk.axis_of(axes[1]), ly}).first;
    tk.apply_opt(Opt{OptOps::UPCAST, tk.axis_of(n), tile});
    tk.apply_opt(Opt{OptOps::UPCAST, tk.axis_of(m), tile});
    int packed = 0;
    UOpRef red = k.rngs()[size_t(reduces[0])];  // (the inputs the reduce reads: a bias added after it is read once)
    UOps ins = k.inputs();
    for (size_t i = 0; i < ins.size(); i++)
      if (depends_on(ins[i]->src[0], red)) packed += attempt(tk, Opt{OptOps::PACK, int64_t(i), steps});
    if (!packed) return false;
  } catch (const OptError&) {
    return false;
  }
  k = tk;
  return true;
}

// GPUs (tinygrad's heuristics for targets with local memory): a reduce to few outputs grouped across a work-group, else
// a register tile for a reduce that reuses its inputs, then up to 128 work-items per work-group (at most 32 along an axis but the innermost, which gpudims puts on x, so
// neighbouring work-items touch neighbouring memory), then 4 outputs per work-item of an elementwise kernel.
static void gpu_optimizations(Scheduler& k) {
  const Target& t = k.ren->target();
  // tensor cores first (as tinygrad): TC on the first axis choice it takes, then M and N upcast so each fragment loaded
  // serves several WMMAs, and a few warps per work-group along N. TC=0 turns this off, TC_OPT and TC_SELECT as tinygrad.
  static const int64_t use_tc = getenv_int("TC", 1), tc_opt = getenv_int("TC_OPT", 0), tc_select = getenv_int("TC_SELECT", -1);
  static const int64_t tc_upcast = getenv_int("TG_TC_UPCAST", 5), tc_warps = getenv_int("TG_TC_WARPS", 4);  // the largest tried
  if (use_tc > 0 && !t.tensor_cores.empty() && (k.axes_of({AxisType::REDUCE, AxisType::GROUP_REDUCE}).size() == 1 || tc_opt >= 1))
    for (int axis = 0; axis < 3; axis++) {
      Scheduler tk = k;
      if (!attempt(tk, Opt{OptOps::TC, axis, 0, {tc_select, tc_opt, use_tc}})) continue;
      UOps axes = tk.tc_axes;
      for (size_t d : {size_t(1), size_t(0)})
        for (int64_t sz : {int64_t(5), int64_t(4), int64_t(3), int64_t(2)}) {
          if (sz > tc_upcast) continue;
          if (!axes[d]->src[0]->divides(sz) || tk.axis_of(axes[d]) >= int64_t(tk.shape_len())) continue;
          try {
            axes[d] = tk.apply_opt(Opt{OptOps::UPCAST, tk.axis_of(axes[d]), sz}).first;
          } catch (const OptError&) {
          }
          break;
        }
      for (int64_t sz : {int64_t(8), int64_t(4), int64_t(2)})
        if (sz <= tc_warps && axes[0]->src[0]->divides(sz) && tk.axis_of(axes[0]) < int64_t(tk.shape_len())) {
          attempt(tk, Opt{OptOps::LOCAL, tk.axis_of(axes[0]), sz});
          break;
        }
      static const int64_t tc_stage = getenv_int("TG_TC_STAGE", 0);  // PACK both inputs, this many steps per stage
      if (tc_stage > 0)
        for (int64_t i = 0; i < 2; i++) attempt(tk, Opt{OptOps::PACK, i, tc_stage});
      k = tk;
      return;
    }
  // a reduce to few outputs: split each across a work-group (tinygrad groups when at most 2048 outputs remain)
  int64_t outputs = 1, grouped = 1;
  for (int ax : k.axes_of({AxisType::GLOBAL})) outputs *= k.full_shape()[size_t(ax)];
  if (!k.reduceops().empty() && outputs <= 2048)
    for (int64_t sz : {int64_t(256), int64_t(64), int64_t(16)}) {
      bool done = false;
      for (int ax = 0; ax < 3 && !done; ax++) done = attempt(k, Opt{OptOps::GROUPTOP, ax, sz});
      if (done) {
        grouped = sz;
        break;
      }
    }
  if (grouped == 1 && staged_tile(k)) return;
  // a register tile: 4x4 outputs per work-item over the axes some input is broadcast along (a matmul's rows and
  // columns), so each loaded value serves 4 multiply-adds
  static const int64_t tile = getenv_int("TG_GPU_TILE", 4);
  std::vector<int64_t> first;  // the path of the first tiled axis: the second tile is another axis
  if (!k.reduceops().empty() && grouped == 1 && tile > 1)
    for (int round = 0; round < 2; round++) {
      int best = -1;
      for (int ax : k.upcastable_dims()) {
        auto r = k.rngs()[size_t(ax)];
        if (range_kind(r.get()) != AxisType::GLOBAL || k.full_shape()[size_t(ax)] % (tile * 8) != 0) continue;
        if (round == 1 && split_from(r, first)) continue;
        bool reused = false;
        for (auto& b : loads(k)) reused |= stride_in(b->src[1], r) == 0;
        if (reused) best = ax;  // the innermost such axis
      }
      if (best < 0) break;
      first = range_path(k.rngs()[size_t(best)].get());
      if (!attempt(k, Opt{OptOps::UPCAST, best, tile})) break;
    }
  int64_t budget = std::max<int64_t>(1, std::min<int64_t>(grouped > 1 ? 256 / grouped : 128, t.local_threads_max > 0 ? t.local_threads_max : 128));
  int locals = 0;
  static const int64_t local_x = getenv_int("TG_GPU_LOCAL_X", 128);  // the most work-items along the innermost axis
  auto globals = k.axes_of({AxisType::GLOBAL});
  for (size_t i = globals.size(); i-- > 0 && locals < 3 && budget > 1;) {
    int ax = globals[i];
    int64_t sz = k.full_shape()[size_t(ax)];
    for (int64_t l : {int64_t(128), int64_t(64), int64_t(32), int64_t(16), int64_t(8), int64_t(4), int64_t(2)}) {
      if ((locals > 0 && l > 32) || (locals == 0 && l > local_x)) continue;
      if (l > budget || sz % l != 0 || l > t.local_max[0]) continue;
      if (attempt(k, Opt{OptOps::LOCAL, ax, l})) budget /= l, locals++;
      break;
    }
  }
  // elementwise: a few outputs per work-item (more loads in flight), taken from what is left of the innermost axis
  // after its work-group split, so a work-group's loads of one lane are still neighbours in memory
  static const int64_t up = getenv_int("TG_GPU_UPCAST", 4);
  if (k.reduceops().empty() && up > 1) {  // (not after a GROUP: no upcasts with grouped reduces)
    auto g = k.axes_of({AxisType::GLOBAL});
    if (!g.empty() && k.full_shape()[size_t(g.back())] % up == 0 && k.full_shape()[size_t(g.back())] >= 64 * up) attempt(k, Opt{OptOps::UPCAST, g.back(), up});
  }
}

// The CPU's heuristics. `gathered`: an input may also be read with a long stride along the vector axis (x @ W.T: W's
// rows run along the reduce), provided the register tile then packs it (its gathers done once, by the panel's copy);
// false when that isn't what happened, and the caller runs them again without
static bool cpu_heuristics(Scheduler& k, bool gathered) {
  const Target& t = k.ren->target();
  auto attempt = [&](Opt o) { return tg::attempt(k, o); };
  UOpRef store = store_of(k);
  if (!store) return !gathered;
  int64_t lanes = std::clamp<int64_t>(t.vector_bytes / std::max(1, store->src[1]->dtype.itemsize()), 1, 16);
  auto index_of = [](const UOpRef& b) { return b->src[1]; };
  bool reduce = !k.reduceops().empty();

  // 1. vectors along the output axis that is contiguous in memory: as wide as a register, else half of it, else a quarter.
  // The axis is contiguous in the output, and contiguous or broadcast in every input: vector loads, not gathers
  auto vector_axis = [&](const Scheduler& s, int64_t w) {
    UOpRef st = store_of(s);
    for (int ax : s.upcastable_dims()) {
      auto r = s.rngs()[size_t(ax)];
      bool ok = stride_in(index_of(st->src[0]), r) == 1 && s.full_shape()[size_t(ax)] % w == 0;
      // inputs contiguous or broadcast along it; under a reduce also a short stride (a strided convolution's window):
      // gathered, but the register tile below reuses each one for a column of rows
      for (auto& b : loads(s)) {
        int64_t in = stride_in(index_of(b), r);
        ok &= in == 0 || in == 1 || (reduce && in > 1 && (in <= 4 || gathered)) || (reduce && gathered && in < 0);
      }
      if (ok) return ax;
    }
    return -1;
  };
  int vec_axis = vector_axis(k, lanes);
  if (gathered && !reduce) return false;
  // an elementwise kernel whose contiguous output axis no vector width divides (a 14x14 or 7x7 image's residual add):
  // merged with the axes outside it while every access stays linear, until some width divides it (MobileNetV2's
  // 96-channel 14x14 add 15 -> 2.4 us, scalar before)
  if (vec_axis < 0 && !reduce && lanes >= 4) {
    for (int64_t w : {lanes, lanes / 2, lanes / 4}) {
      Scheduler m = k;
      int ax = -1;
      for (int a : m.upcastable_dims())
        if (stride_in(index_of(store->src[0]), m.rngs()[size_t(a)]) == 1) ax = a;
      for (; ax > 0 && vector_axis(m, w) < 0 && tg::attempt(m, Opt{OptOps::MERGE, ax - 1, 0}); ax--) {
      }
      if (vector_axis(m, w) >= 0) {
        k = std::move(m);
        break;
      }
    }
    vec_axis = vector_axis(k, lanes);
  }
  // a reduce whose contiguous output axis the full width doesn't divide (a 56-wide image): merged with the axis outside
  // it (the image's rows) the width may divide it, and the reduce's inner loop amortizes the per-lane gates that brings
  if (vec_axis < 0 && reduce && lanes > 1)
    for (int ax : k.upcastable_dims()) {
      if (ax == 0 || stride_in(index_of(store->src[0]), k.rngs()[size_t(ax)]) != 1) continue;
      Scheduler m = k;
      if (!tg::attempt(m, Opt{OptOps::MERGE, ax - 1, 0})) continue;
      if ((vec_axis = vector_axis(m, lanes)) >= 0) {
        k = std::move(m);
        break;
      }
    }
  // the contiguous output axis padded (PADTO: gated lanes) to a multiple of w, merged first with the axis outside it where
  // that keeps the inputs' index linear; pays(size, padded size, merged) says whether the idle lanes are worth it
  int64_t reduce_work = 1;
  for (int ax : k.axes_of({AxisType::REDUCE})) reduce_work *= k.full_shape()[size_t(ax)];
  auto pad_axis = [&](int64_t w, auto pays) {
    for (int ax : k.upcastable_dims()) {
      if (stride_in(index_of(store->src[0]), k.rngs()[size_t(ax)]) != 1) continue;
      for (bool merge : {true, false}) {
        Scheduler m = k;
        // not for a short reduce (a depthwise conv's 9 taps, a pool's window): merged rows make each tap's padding gate a
        // per-lane x % width, a vector division per tap that the few taps don't amortize (MobileNetV2's 14x14 depthwise
        // convs ran at 2 GFLOP/s merged into 13 x 16 lanes; each row in 16 lanes, 2.4x faster)
        if (merge && reduce && reduce_work < 64) continue;
        if (merge && (ax == 0 || !tg::attempt(m, Opt{OptOps::MERGE, ax - 1, 0}))) continue;
        int pa = merge ? ax - 1 : ax;
        int64_t sz = m.full_shape()[size_t(pa)], padded = (sz + w - 1) / w * w;
        if (!pays(sz, padded, merge) || !tg::attempt(m, Opt{OptOps::PADTO, pa, w})) continue;
        if (int v = vector_axis(m, w); v >= 0) {
          k = std::move(m);
          return v;
        }
      }
    }
    return -1;
  };
  // full-width vectors, padded: merged rows if that adds at most a third; else, for a reduce with work enough per output
  // to be bound by its multiply-adds, a row of 20 or 24 (a 5x5 convolution's 24- or 28-wide image) in two 16-lane vectors
  // (62-75% busy) beats three or five of half the width: 1.25-1.3x faster forward and backward. (A depthwise or 1-channel
  // conv, bound by memory, does better with half-width vectors that waste nothing.)
  static const int64_t wide = getenv_int("TG_PAD_WIDE", 160);
  if (vec_axis < 0 && reduce && lanes > 1 && wide)
    vec_axis = pad_axis(lanes, [&](int64_t sz, int64_t padded, bool merge) {
      return merge ? padded * 3 <= sz * 4 : reduce_work >= 64 && padded * 100 <= sz * wide;
    });
  // (gathered) the buffers read with a long stride along the full-width vector axis, or with an index that isn't linear
  // in it (a strided conv's window over its merged rows)
  std::vector<UOpRef> long_strided;
  if (gathered) {
    if (vec_axis < 0) return false;
    for (auto& b : loads(k))
      if (int64_t st = stride_in(index_of(b), k.rngs()[size_t(vec_axis)]); st > 4 || st < 0) long_strided.push_back(b->src[0]);
    if (long_strided.empty()) return false;
  }
  if (vec_axis < 0 && lanes >= 4 && (vec_axis = vector_axis(k, lanes / 2)) >= 0) lanes /= 2;
  // still none (a 14- or 7-wide image, a strided window): padded to the full or half width if that adds at most a third
  // to the work, or to one full-width vector if a row fills more than half of it (a 10-wide image in 16 lanes): a
  // full-width register tile over a few idle lanes beats a narrow one, and both beat no vector axis
  if (vec_axis < 0 && reduce && lanes > 1)
    for (int64_t w : {lanes, lanes / 2}) {
      if (w < 4 || (vec_axis = pad_axis(w, [&](int64_t sz, int64_t padded, bool) {
                      return padded * 3 <= sz * 4 || (w == lanes && sz <= w && sz * 2 > w);
                    })) < 0)
        continue;
      lanes = w;
      break;
    }
  if (vec_axis < 0 && lanes >= 8 && (vec_axis = vector_axis(k, lanes / 4)) >= 0) lanes /= 4;
  UOpRef vr = vec_axis >= 0 ? k.rngs()[size_t(vec_axis)] : UOpRef();
  if (vec_axis >= 0 && lanes > 1 && attempt(Opt{OptOps::UPCAST, vec_axis, lanes})) {
    // 2. a register tile when a reduce reuses its inputs: another output axis some input doesn't depend on (its loads
    // are shared by the tile's rows), and a second vector of columns
    if (reduce) {
      // the tile's rows: an axis the vector-loaded inputs don't depend on, so each vector load serves every row (matmul's
      // m for B's rows, a convolution's output channels for its image rows)
      auto rngs = k.rngs();
      auto vp = range_path(vr.get());
      vp.push_back(1);  // the vector lanes' range
      UOpRef lanes_r;
      for (auto& r : rngs)
        if (range_path(r.get()) == vp) lanes_r = r;
      // An axis the reduce's own loads share, among them the vector-loaded ones: each vector load then serves every row
      // (a matmul's m, a conv's output channels). An epilogue's load (a gradient accumulated into the result, a residual)
      // is read once per output and must not rule such an axis out: conv2's input gradient with the old gradient added
      // took 190 ms instead of 35. Without one, any axis a load is broadcast along (every load counts): a depthwise
      // conv's channels, whose independent rows hide the multiply-add latency (MobileNetV2 2.4x faster than rows of y)
      auto pick_rows = [&](bool epilogue_too) {
        int best = -1;
        bool serves = false;
        for (int ax : k.upcastable_dims()) {
          auto r = rngs[size_t(ax)];
          if (range_kind(r.get()) != AxisType::GLOBAL || split_from(r, range_path(vr.get()))) continue;
          bool reused = false, serves_vectors = true;
          for (auto& b : loads(k)) {
            bool in_loop = false;
            for (int rax : k.axes_of({AxisType::REDUCE})) in_loop |= depends_on(b, k.rngs()[size_t(rax)]);
            if (!in_loop && !epilogue_too) continue;
            reused |= stride_in(index_of(b), r) == 0;
            if (lanes_r && stride_in(index_of(b), lanes_r) == 1) serves_vectors &= stride_in(index_of(b), r) == 0;
          }
          if (reused && (best < 0 || serves_vectors)) best = ax, serves = serves_vectors;
          if (reused && serves_vectors) break;
        }
        return std::make_pair(best, serves);
      };
      // k elements of a reduce adjacent in memory for each vector lane (a bfloat weight laid out (K/2, N, 2), bytes as
      // (K/4, N, 4)) where the target multiplies and adds such groups in one instruction (DOT2, DOT4): that reduce axis
      // unrolled whole, so each step loads lanes x k contiguous elements, which the instruction takes as they are. One
      // such axis a call (a fused product of two weights has one each), again until none is left: each unroll
      // rewrites the AST, so the loads are asked for again
      auto unroll_group = [&]() {
        for (auto& b : loads(k)) {
          Scalar s = b->src[0]->dtype.scalar;
          int64_t g = stride_in(index_of(b), lanes_r);
          bool has = (g == 2 && s == Scalar::BFloat16 && k.ren->native_op(Ops::DOT2, dtypes::float32)) ||
                     (g == 4 && (s == Scalar::UInt8 || s == Scalar::Int8) && k.ren->native_op(Ops::DOT4, dtypes::int32));
          auto un = k.unrollable_dims();
          for (size_t i = 0; has && i < un.size(); i++)
            if (k.full_shape()[size_t(un[i])] == g && stride_in(index_of(b), k.rngs()[size_t(un[i])]) == 1 &&
                attempt(Opt{OptOps::UNROLL, int64_t(i), g}))
              return true;
        }
        return false;
      };
      while (lanes_r && unroll_group()) {
      }
      rngs = k.rngs();
      auto [best, serves] = pick_rows(false);
      if (!serves) best = pick_rows(true).first;
      // 8 rows x 2 vectors: 16 accumulators, 2 vector loads and 8 broadcasts per step, within AVX-512's 32 registers.
      // A sliding window (a convolution's vector loads move by one element per tap, so nearly every one splits a cache
      // line, and pays for its mask where there is padding) makes vector loads dearer than broadcasts: 16 rows x 1
      // vector, half the vector loads per multiply-add
      bool window = false;
      for (auto& b : loads(k)) {
        if (lanes_r && stride_in(index_of(b), lanes_r) == 1)
          for (int ax : k.unrollable_dims()) window |= stride_in(index_of(b), k.rngs()[size_t(ax)]) == 1;
        window |= lanes_r && stride_in(index_of(b), lanes_r) > 1;  // a strided window's gathers: dearer still
      }
      // A window the rows share (a conv's image, read alike by every output channel of the tile) is packed below,
      // which makes its vector loads aligned and unmasked again: 8 x 2 (ResNet-18's 512-channel 7x7 conv 1.5 -> 1.26
      // ms, its 64-channel 56x56 one 1.13 -> 0.99). A window each row reads a part of (a depthwise conv's) keeps 16 x 1
      // Where no second vector fits (13 blocks of 16 lanes: a 14x14 image, merged and padded), 16 rows x 1 for it too
      // (ResNet-18's 256-channel 14x14 conv 1.66 -> 1.59 ms)
      auto rest = range_path(vr.get());  // the rest of the vector axis: its path is the split's more significant part
      rest.push_back(0);
      bool two = false;
      for (auto& r : k.rngs()) two |= range_path(r.get()) == rest && range_kind(r.get()) == AxisType::GLOBAL && r->src[0]->divides(2);
      window &= !serves || !two;
      int64_t rows = getenv_int("TG_TILE_ROWS", window ? 16 : 8);
      // only powers of two: a tile of 6 rows (192 lanes) left LLVM building every step's broadcasts lane by lane, through
      // the stack (any matmul with 6, 12 or 18 rows ran at 17 GFLOP/s; 4 rows of 36: 305)
      if (best >= 0)
        for (int64_t amt : {rows, int64_t(8), int64_t(4), int64_t(2)})
          if (amt > 1 && attempt(Opt{OptOps::UPCAST, best, amt})) break;
      int64_t cols = getenv_int("TG_TILE_VECS", window ? 1 : 2);
      auto rngs2 = k.rngs();
      for (size_t ax = 0; ax < rngs2.size() && cols > 1; ax++)
        if (range_path(rngs2[ax].get()) == rest && range_kind(rngs2[ax].get()) == AxisType::GLOBAL) attempt(Opt{OptOps::UPCAST, int64_t(ax), cols});
      // loop order: the column blocks outside the row tiles, so one block's panel of the vector-loaded input (K x 32
      // floats of B) stays in cache while every row tile streams past it
      if (best >= 0) {
        auto rngs3 = k.rngs();
        int m_ax = -1, n_ax = -1;
        for (int ax : k.axes_of({AxisType::GLOBAL})) {
          if (split_from(rngs3[size_t(ax)], range_path(rngs[size_t(best)].get()))) m_ax = ax;
          if (split_from(rngs3[size_t(ax)], range_path(vr.get()))) n_ax = ax;
        }
        if (m_ax >= 0 && n_ax > m_ax && getenv_int("TG_TILE_SWAP", 1)) attempt(Opt{OptOps::SWAP, m_ax, n_ax});
      }
      // the row blocks inside the other output loops a gathered input depends on (a strided conv's image rows, when its
      // row tiles are output channels): PACK can then copy its window once for every block of rows, where it refused
      // to copy it for each (ResNet-18's stride-2 convs: 512 channels 2.7 -> 1.1 ms, 256 1.4 -> 0.6, one core)
      if (best >= 0 && lanes_r) {
        auto rngs4 = k.rngs();
        int m_ax = -1, dep = -1;
        for (int ax : k.axes_of({AxisType::GLOBAL}))
          if (split_from(rngs4[size_t(ax)], range_path(rngs[size_t(best)].get()))) m_ax = ax;
        for (auto& b : loads(k))
          if (stride_in(index_of(b), lanes_r) == 2)
            for (int ax : k.axes_of({AxisType::GLOBAL}))
              if (ax > m_ax && k.full_shape()[size_t(ax)] > 1 && depends_on(index_of(b), rngs4[size_t(ax)])) dep = std::max(dep, ax);
        if (m_ax >= 0 && dep > m_ax) attempt(Opt{OptOps::SWAP, m_ax, dep});
      }
      // each vector-loaded input the row tiles share gets a packed panel (PACK): a matmul's K x 32 panel of B was 1024
      // rows 4 KB apart (a new page at every step of k, past any prefetcher), a convolution's image window was one
      // unaligned, masked load per tap; packed, every step reads one aligned contiguous run
      if (lanes_r) pack_vector_inputs(k, lanes_r, gathered);
    }
  } else if (reduce && lanes > 1) {
    // 3. a reduce along contiguous memory: vector accumulators, several of them to hide the add latency
    auto un = k.unrollable_dims();
    if (!un.empty()) {
      auto r = k.rngs()[size_t(un.back())];
      bool contiguous = false;
      for (auto& b : loads(k)) contiguous |= stride_in(index_of(b), r) == 1;
      int64_t sz = k.full_shape()[size_t(un.back())], w = lanes;
      auto rpath = range_path(r.get());
      while (w > 4 && sz % w != 0) w /= 2;
      // a short run (a 6x6 image's rows): one vector of all of it, padded (gated lanes) to a power of two, since 6-lane
      // groups of a register tile straddle the registers and every broadcast becomes a cross-register shuffle
      if (contiguous && sz % w != 0 && sz <= lanes && sz > 2) {
        w = 4;
        while (w < sz) w *= 2;
        if (!attempt(Opt{OptOps::PADTO, un.back(), w})) w = sz;
        sz = w;
      }
      // a run shorter than a register that an input continues along the next axis out (a quantized block's groups of 4
      // bytes, 8 groups to a block): that axis unrolled too, up to 32 elements, so the block's bytes are one vector load
      int64_t next = 1, pair = 1;
      if (un.size() >= 2 && w == sz && sz < lanes) {
        auto continues = [&](size_t at) {  // un[at]'s size if an input's run along r continues along it, else 1
          auto r2 = k.rngs()[size_t(un[at])];
          for (auto& b : loads(k))
            if (stride_in(index_of(b), r) == 1 && stride_in(index_of(b), r2) == sz && sz * k.full_shape()[size_t(un[at])] <= 32)
              return k.full_shape()[size_t(un[at])];
          return int64_t(1);
        };
        next = continues(un.size() - 2);
        // between them, a second axis of size 2 of the same integer sum (a Q4_0 block's two nibble halves, summed in
        // int32 before the float work): unrolled with the run, which then continues past it
        auto r2 = k.rngs()[size_t(un[un.size() - 2])];
        bool int_pair = false;
        for (auto& red : k.reduceops())
          if (dtypes::is_int(red->dtype) && std::find(red->src.begin() + 1, red->src.end(), r) != red->src.end() &&
              std::find(red->src.begin() + 1, red->src.end(), r2) != red->src.end())
            int_pair = true;
        if (next == 1 && un.size() >= 3 && int_pair && k.full_shape()[size_t(un[un.size() - 2])] == 2)
          if ((next = continues(un.size() - 3)) > 1) pair = 2;
      }
      if (contiguous && sz % w == 0 && attempt(Opt{OptOps::UNROLL, int64_t(un.size() - 1), w})) {
        if (pair > 1 && !attempt(Opt{OptOps::UNROLL, int64_t(k.unrollable_dims().size() - 1), pair})) next = 1;
        if (next > 1) attempt(Opt{OptOps::UNROLL, int64_t(k.unrollable_dims().size() - 1), next});
        // no input to reuse (a plain sum), or one streamed: several accumulators instead, for the add latency. A short
        // axis (a Q4_K block's 8 sub-blocks) is unrolled whole: what its elements share (their packed scales) is then
        // unpacked once per block, as constant lanes
        if ((streamed(k) || !reduce_tile(k, rpath, w, lanes)) && (w == lanes || next > 1)) {
          auto un2 = k.unrollable_dims();
          int64_t sz2 = un2.empty() ? 0 : k.full_shape()[size_t(un2.back())], whole = next > 1 && sz2 <= 8 ? sz2 : 0;
          for (int64_t a : {whole, w == lanes ? int64_t(4) : int64_t(2), int64_t(2)})
            if (a > 1 && attempt(Opt{OptOps::UNROLL, int64_t(un2.size() - 1), a})) break;
        }
      }
    }
  }

  // 4. the reduce loops that gates depend on (a convolution's taps, for its padding) outside those they don't (its input
  // channels): the gates are then computed once per run of the inner loop, not in every iteration. A packed input's
  // gates are computed by its copy, not in the loop, so where another input read in the loop outgrows a core's L2 (a
  // deep layer's weights), the taps stay inside, where those reads are contiguous (ResNet-18's 512-channel 7x7 conv
  // 2.9 -> 1.5 ms). Small weights stay in cache either way, and their conv kept the taps outside (a 32-channel 5x5
  // one ran 3.4x slower with them inside)
  if (reduce) {
    bool big = false;
    for (auto& u : load_ops(k)) {
      DType buf = u->src[0]->src[0]->dtype;
      big |= !is_packed(u) && buf.addrspace == AddrSpace::Global && buf.size * buf.base().itemsize() > kPackMaxBytes;
    }
    auto gated = [&](int ax) {
      auto r = k.rngs()[size_t(ax)];
      for (auto& u : load_ops(k))  // again after each SWAP: it makes new ranges
        if (!(big && is_packed(u)) && u->src[0]->src.size() > 2 && depends_on(u->src[0]->src[2], r)) return true;
      return false;
    };
    auto red = k.axes_of({AxisType::REDUCE});
    for (size_t i = 0; i < red.size(); i++) {
      if (gated(red[i])) continue;
      size_t j = red.size() - 1;  // the innermost gated axis goes where this ungated one is
      while (j > i && !gated(red[j])) j--;
      if (j > i && !attempt(Opt{OptOps::SWAP, red[i], red[j]})) break;
    }
  }

  // 3c. an elementwise transpose (no axis contiguous in both the output and the inputs: a dequantized weight written
  // transposed, a transposed copy): a tile of the output's contiguous axis and an input's, so the loads and the stores
  // are both vectors, the lanes exchanged in registers (an element per byte gathered and stored alone, a Q4_0 weight's
  // transposed dequantization ran at 9 GB/s). An output axis shorter than a vector that is whole in it (a weight
  // written as pairs of bfloats along its rows, (cols / 2, rows, 2)) is upcast whole with the axis that continues it
  // in the output, and the input's run then continues along the axis that extends the pair in the input (3.1 -> 1.85
  // ms for a 5632 x 2048 Q4_0 weight). An input axis shorter than a vector is upcast whole (a 3x3 conv weight's 9 taps
  // moved outermost for Winograd: scalar, it took O2's 22 ms to compile for a copy that runs once)
  if (!reduce && vec_axis < 0 && lanes > 1) {
    auto out_stride = [&](int ax) { return stride_in(index_of(store->src[0]), k.rngs()[size_t(ax)]); };
    auto size = [&](int ax) { return k.full_shape()[size_t(ax)]; };
    int out_ax = -1, short_ax = -1, in_ax = -1;
    for (int ax : k.upcastable_dims()) {
      if (out_stride(ax) == 1 && size(ax) % lanes == 0) out_ax = ax;
      if (out_stride(ax) == 1 && size(ax) > 1 && size(ax) < lanes && lanes % size(ax) == 0) short_ax = ax;
    }
    int64_t run = 1;  // the input's contiguous run inside the output's vector: along the short axis where it is whole
    if (out_ax < 0 && short_ax >= 0)
      for (int ax : k.upcastable_dims())
        if (out_stride(ax) == size(short_ax) && size(ax) % (lanes / size(short_ax)) == 0) {
          out_ax = ax;
          for (auto& b : loads(k))
            if (stride_in(index_of(b), k.rngs()[size_t(short_ax)]) == 1) run = size(short_ax);
        }
    if (out_ax >= 0 && out_stride(out_ax) == 1) short_ax = -1;
    for (int ax : k.upcastable_dims())
      for (auto& b : loads(k))
        if (ax != short_ax && stride_in(index_of(b), k.rngs()[size_t(ax)]) == run && out_stride(ax) != 1 &&
            (size(ax) % 8 == 0 || (size(ax) > 1 && size(ax) < 16)))
          in_ax = ax;
    if (out_ax >= 0 && in_ax >= 0) {
      auto in_path = range_path(k.rngs()[size_t(in_ax)].get());
      auto short_path = short_ax >= 0 ? range_path(k.rngs()[size_t(short_ax)].get()) : std::vector<int64_t>{};
      auto upcast_path = [&](const std::vector<int64_t>& path, int64_t amt) {
        auto rngs = k.rngs();
        for (size_t ax = 0; ax < rngs.size(); ax++)
          if (range_path(rngs[ax].get()) == path) return attempt(Opt{OptOps::UPCAST, int64_t(ax), amt});
        return false;
      };
      // with the short axis, a whole register of the output (16 rows of bfloat pairs, 64 bytes: 1.25x faster than 8)
      int64_t wide = std::clamp<int64_t>(t.vector_bytes / std::max(1, store->src[1]->dtype.itemsize()), 1, 32);
      int64_t w = short_ax >= 0 ? (size(out_ax) % (wide / size(short_ax)) == 0 ? wide : lanes) / size(short_ax) : lanes;
      int64_t whole = short_ax >= 0 ? size(short_ax) : 0;
      if (attempt(Opt{OptOps::UPCAST, out_ax, w}) && (!whole || upcast_path(short_path, whole))) {
        auto rngs = k.rngs();
        for (size_t ax = 0; ax < rngs.size(); ax++)
          if (range_path(rngs[ax].get()) == in_path) {
            int64_t sz = k.full_shape()[ax];
            attempt(Opt{OptOps::UPCAST, int64_t(ax), sz % 16 == 0 ? int64_t(16) : sz % 8 == 0 ? int64_t(8) : sz});
            break;
          }
      }
    }
  }

  // 5. THREAD across the cores, on the outermost output axis that divides, when there is work enough: 32K elements a
  // thread (at 128K, ResNet-18's 14x14-56x56 residual adds and Winograd copies ran on one core of two: the model 9.2 ->
  // 8.8 ms on 2 threads with them split; MobileNetV2 2.51 -> 2.44, an MLP's training steps 1083 -> 1134 a second)
  if (t.has_threads && t.global_max[0] > 1) {
    int64_t work = 1;
    for (auto s : k.full_shape()) work *= s;
    for (int64_t th = t.global_max[0]; th >= 2; th--) {
      if (work / (32 << 10) < th) continue;
      bool done = false;
      for (int ax : k.axes_of({AxisType::GLOBAL}))
        if (k.full_shape()[size_t(ax)] % th == 0) {
          done = attempt(Opt{OptOps::THREAD, ax, th});
          break;
        }
      if (done) break;
    }
  }
  // (gathered) every long-strided read packed, else this isn't the kernel's tile
  for (auto& u : load_ops(k))
    if (!is_packed(u) && std::find(long_strided.begin(), long_strided.end(), u->src[0]->src[0]) != long_strided.end()) return false;
  return true;
}

void hand_coded_optimizations(Scheduler& k) {
  if (k.ren->target().has_local) return gpu_optimizations(k);
  // a reduce whose output's contiguous axis an input reads with a long stride (x @ W.T, a Linear layer's weight): a
  // register tile along that axis over a packed copy of the input ran 4x faster than dot products along the reduce,
  // which stream the whole weight again for every block of rows (512 x 2048 @ (5632 x 2048).T: 106 -> 26 ms)
  if (Scheduler g = k; cpu_heuristics(g, true)) k = std::move(g);
  else cpu_heuristics(k, false);
}

}  // namespace tg
