// The expander. An UNROLL node wraps a vector whose lanes enumerate some upcast axes (arg: their numbers, in lane
// order, most significant first); rules push it from the RANGEs it starts at to the stores and reduces that end it.
// Its dtype is one lane's, so the scalar ops it passes through stay well-typed (SPEC=1) until they are expanded.
#include <algorithm>

#include "codegen/late/late.h"
#include "codegen/opt/opt.h"
#include "uop/symbolic.h"

namespace tg {

namespace {
struct Expander {
  std::vector<int64_t> sizes;  // per upcast axis number
  // lanes of the axes `from` (a subset of `to`) for each lane of `to`
  std::vector<int64_t> swizzle(const std::vector<int64_t>& from, const std::vector<int64_t>& to) const {
    int64_t n = 1;
    std::vector<char> kept(to.size());
    for (size_t i = 0; i < to.size(); i++) n *= sizes[size_t(to[i])], kept[i] = std::find(from.begin(), from.end(), to[i]) != from.end();
    std::vector<int64_t> out(static_cast<size_t>(n)), digit(to.size());
    for (int64_t l = 0; l < n; l++) {
      int64_t rem = l, src = 0;
      for (size_t i = to.size(); i-- > 0;) digit[i] = rem % sizes[size_t(to[i])], rem /= sizes[size_t(to[i])];
      for (size_t i = 0; i < to.size(); i++)
        if (kept[i]) src = src * sizes[size_t(to[i])] + digit[i];
      out[size_t(l)] = src;
    }
    return out;
  }
  int64_t count(const std::vector<int64_t>& axes) const {
    int64_t n = 1;
    for (auto a : axes) n *= sizes[size_t(a)];
    return n;
  }
  // a source as the vector of lanes over `axes`
  UOpRef widen(const UOpRef& s, const std::vector<int64_t>& axes) const {
    if (s->op == Ops::UNROLL) return gep(s->src[0], swizzle(s->arg_ints(), axes));
    int64_t n = count(axes);
    if (n == 1 || s->dtype == dtypes::void_) return s;  // an ordering source (a LOAD's BARRIER) has no lanes
    if (s->op == Ops::CONST) return s->replace_dtype(s->dtype.vec(int(n)));
    return UOp::make(Ops::VECTORIZE, s->dtype.vec(int(n)), UOps(size_t(n), s));
  }
  static std::vector<int64_t> axes_union(const UOps& src) {
    std::vector<int64_t> ax;
    for (auto& s : src)
      if (s->op == Ops::UNROLL)
        for (auto a : s->arg_ints())
          if (std::find(ax.begin(), ax.end(), a) == ax.end()) ax.push_back(a);
    std::sort(ax.begin(), ax.end());
    return ax;
  }
  static UOpRef wrap(const UOpRef& v, const std::vector<int64_t>& axes) {
    return axes.empty() ? v : UOp::make(Ops::UNROLL, v->dtype.scalar_of(), {v}, axes);
  }

  // an op over lanes: index arithmetic (and what reads it, INDEX included) one scalar per lane, values as vectors
  UOpRef expand_op(const UOp* n) const {
    auto ax = axes_union(n->src);
    if (ax.empty()) return {};
    int64_t cnt = count(ax);
    bool per_lane = n->dtype == dtypes::index || n->op == Ops::INDEX;
    for (auto& s : n->src) per_lane |= (s->op == Ops::UNROLL ? s->src[0]->dtype.scalar_of() : s->dtype) == dtypes::index;
    if (per_lane) {
      UOps srcs(n->src.size()), lanes;
      std::vector<std::vector<int64_t>> sw(n->src.size());  // each source's lane for each of ours
      for (size_t i = 0; i < n->src.size(); i++)
        if (n->src[i]->op == Ops::UNROLL) sw[i] = swizzle(n->src[i]->arg_ints(), ax);
      for (int64_t l = 0; l < cnt; l++) {
        for (size_t i = 0; i < n->src.size(); i++) {
          auto& s = n->src[i];
          srcs[i] = s->op == Ops::UNROLL ? lane_of(s->src[0], sw[i][size_t(l)]) : s;
        }
        lanes.push_back(n->replace_src(srcs));
      }
      DType vd = n->op == Ops::INDEX ? n->dtype : n->dtype.vec(int(cnt));
      return wrap(UOp::make(Ops::VECTORIZE, vd, lanes), ax);
    }
    UOps srcs;
    for (auto& s : n->src) srcs.push_back(widen(s, ax));
    return wrap(UOp::make(n->op, n->dtype.vec(int(cnt)), srcs, n->arg, n->tag), ax);
  }

  // a REDUCE over expanded axes: the accumulator holds every lane of its source; the unrolled lanes combine after
  UOpRef expand_reduce(const UOp* n) const {
    Ops rop = Ops(std::get<int64_t>(n->arg));
    UOps loops;
    std::vector<int64_t> red;
    for (size_t i = 1; i < n->src.size(); i++) {
      if (n->src[i]->op == Ops::RANGE) loops.push_back(n->src[i]);
      else
        for (auto a : n->src[i]->arg_ints()) red.push_back(a);
    }
    if (n->src[0]->op != Ops::UNROLL && red.empty()) return {};
    auto ax = axes_union({n->src[0]});
    for (auto a : red)
      if (std::find(ax.begin(), ax.end(), a) == ax.end()) ax.push_back(a);
    std::sort(ax.begin(), ax.end());
    UOpRef v = widen(n->src[0], ax);
    if (!loops.empty()) {
      loops.insert(loops.begin(), v);
      v = UOp::make(Ops::REDUCE, v->dtype, loops, n->arg);
    }
    std::vector<int64_t> out, kept;
    for (auto a : ax) (std::find(red.begin(), red.end(), a) == red.end() ? out : kept).push_back(a);
    if (kept.empty()) return wrap(v, out);
    int64_t nout = count(out), nred = count(kept);
    std::vector<int64_t> order = out;
    order.insert(order.end(), kept.begin(), kept.end());
    // position in ax-lane order of each lane of (out..., kept...) ordering
    std::vector<int64_t> pos(size_t(nout * nred));
    for (int64_t l = 0; l < nout * nred; l++) {
      int64_t rem = l;
      std::vector<int64_t> digit(order.size());
      for (size_t i = order.size(); i-- > 0;) digit[i] = rem % sizes[size_t(order[i])], rem /= sizes[size_t(order[i])];
      int64_t p = 0;
      for (auto a : ax) p = p * sizes[size_t(a)] + digit[size_t(std::find(order.begin(), order.end(), a) - order.begin())];
      pos[size_t(l)] = p;
    }
    // the unrolled lanes of each output, r-major: part r is lanes [r * nout, (r + 1) * nout)
    std::vector<int64_t> lanes;
    for (int64_t r = 0; r < nred; r++)
      for (int64_t o = 0; o < nout; o++) lanes.push_back(pos[size_t(o * nred + r)]);
    UOpRef cur = gep(v, lanes), acc;
    auto part = [&](const UOpRef& x, int64_t from, int64_t n) {
      std::vector<int64_t> l(size_t(n * nout));
      for (int64_t i = 0; i < n * nout; i++) l[size_t(i)] = from * nout + i;
      return gep(x, l);
    };
    // accumulators after their loop are added as a tree of vector ops, halves at a time (a GEMV's 64 lanes: 6 adds, not
    // a chain of 63, which took longer than the loop for a row of 2048). Without a loop (a reduce unrolled whole) an
    // integer sum stays a chain in lane order: its groups of 4 become DOT4s, each the next one's accumulator. A float
    // one adds parts 4q..4q+3 as a chain, all q at once (the pairs a DOT2 takes stay neighbours), and those groups'
    // sums as the tree (a GEMV whose row of 256 was unrolled whole added its 64 lanes as a chain of scalar
    // multiply-adds, 4x slower than the row's loads)
    bool tree = !loops.empty();
    if (!tree && dtypes::is_float(n->dtype) && nred > 4 && nred % 4 == 0) {
      int64_t q4 = nred / 4;
      UOpRef g;
      for (int64_t s = 0; s < 4; s++) {
        std::vector<int64_t> l;
        for (int64_t q = 0; q < q4; q++)
          for (int64_t o = 0; o < nout; o++) l.push_back((4 * q + s) * nout + o);
        g = g ? g->alu(rop, {gep(cur, l)}) : gep(cur, l);
      }
      cur = g, nred = q4, tree = true;
    }
    for (int64_t m = nred; tree && m > 2 && m % 2 == 0; m /= 2) cur = part(cur, 0, m / 2)->alu(rop, {part(cur, m / 2, m / 2)}), nred = m / 2;
    for (int64_t r = 0; r < nred; r++) acc = acc ? acc->alu(rop, {part(cur, r, 1)}) : part(cur, r, 1);
    return wrap(acc, out);
  }

  // WMMA(a, b, c, element ranges of A, of B, of C/D): each operand becomes the vector of its element ranges' lanes (most
  // significant first), one WMMA per lane of the other axes its operands use; the result's lanes are its elements
  UOpRef expand_wmma(const UOp* n) const {
    auto& g = n->arg_ints();
    if (g.size() != 7) return {};  // already expanded
    std::array<std::vector<int64_t>, 3> el;
    size_t at = 3;
    for (size_t i = 0; i < 3; i++)
      for (int64_t j = 0; j < g[4 + i]; j++, at++) {
        const UOpRef& r = n->src[at];
        TG_CHECK(r->op == Ops::UNROLL && r->arg_ints().size() == 1, TG_ERROR_INTERNAL, "expander: a WMMA's element range is not an upcast axis");
        el[i].push_back(r->arg_ints()[0]);
      }
    auto has = [](const std::vector<int64_t>& v, int64_t a) { return std::find(v.begin(), v.end(), a) != v.end(); };
    std::vector<int64_t> outer;  // the other axes: one WMMA per lane of them
    for (auto a : axes_union({n->src[0], n->src[1], n->src[2]}))
      if (!has(el[0], a) && !has(el[1], a) && !has(el[2], a)) outer.push_back(a);
    for (size_t i = 0; i < 3; i++)
      for (auto a : axes_union({n->src[i]}))
        TG_CHECK(has(el[i], a) || has(outer, a), TG_ERROR_INTERNAL, "expander: a WMMA operand varies along another operand's element axis");
    auto sorted_union = [](std::vector<int64_t> a, const std::vector<int64_t>& b) {
      a.insert(a.end(), b.begin(), b.end());
      std::sort(a.begin(), a.end());
      return a;
    };
    // lane of a vector over `axes` (sorted) for digits given by axis
    auto lane_at = [&](const std::vector<int64_t>& axes, const std::vector<int64_t>& digit) {
      int64_t l = 0;
      for (auto a : axes) l = l * sizes[size_t(a)] + digit[size_t(a)];
      return l;
    };
    // every assignment of digits to `axes`, the first most significant
    auto each = [&](const std::vector<int64_t>& axes, std::vector<int64_t>& digit, auto&& f) {
      for (int64_t l = 0; l < count(axes); l++) {
        int64_t rem = l;
        for (size_t i = axes.size(); i-- > 0;) digit[size_t(axes[i])] = rem % sizes[size_t(axes[i])], rem /= sizes[size_t(axes[i])];
        f(l);
      }
    };
    std::vector<int64_t> digit(sizes.size());
    std::array<UOpRef, 3> wide;
    std::array<std::vector<int64_t>, 3> wax;
    for (size_t i = 0; i < 3; i++) wax[i] = sorted_union(outer, el[i]), wide[i] = widen(n->src[i], wax[i]);
    UOps ws;
    each(outer, digit, [&](int64_t) {
      UOps ops;
      for (size_t i = 0; i < 3; i++) {
        std::vector<int64_t> lanes;
        each(el[i], digit, [&](int64_t) { lanes.push_back(lane_at(wax[i], digit)); });
        ops.push_back(gep(wide[i], lanes));
      }
      ws.push_back(UOp::make(Ops::WMMA, n->dtype.vec(int(count(el[2]))), ops, std::vector<int64_t>(g.begin(), g.begin() + 4)));
    });
    std::vector<int64_t> out = sorted_union(outer, el[2]);
    UOps lanes(size_t(count(out)));
    each(out, digit, [&](int64_t l) {
      int64_t e = 0;
      for (auto a : el[2]) e = e * sizes[size_t(a)] + digit[size_t(a)];
      lanes[size_t(l)] = lane_of(ws[size_t(outer.empty() ? 0 : lane_at(outer, digit))], e);
    });
    return wrap(lanes.size() == 1 ? lanes[0] : UOp::make(Ops::VECTORIZE, n->dtype.vec(int(lanes.size())), lanes), out);
  }

  // stores of a lane list: one STORE per lane, grouped into vector stores by the devectorizer
  UOpRef expand_store(const UOp* n) const {
    auto ax = axes_union(n->src);
    if (ax.empty()) return {};
    const UOpRef& idx = n->src[0];
    UOpRef val = widen(n->src[1], ax);
    UOps stores;
    auto isw = idx->op == Ops::UNROLL ? swizzle(idx->arg_ints(), ax) : std::vector<int64_t>(size_t(count(ax)), 0);
    for (int64_t l = 0; l < count(ax); l++) {
      UOpRef il = idx->op == Ops::UNROLL ? idx->src[0]->src[size_t(isw[size_t(l)])] : idx;
      stores.push_back(UOp::make(Ops::STORE, dtypes::void_, {il, lane_of(val, l)}));
    }
    return UOp::make(Ops::GROUP, dtypes::void_, stores);
  }
};
}  // namespace

UOpRef expand(const UOpRef& ast) {
  Expander ex;
  UOpMap<UOpRef> start;
  UOps ups;
  for (auto& u : ast->toposort())
    if (u->op == Ops::RANGE && (range_kind(u.get()) == AxisType::UPCAST || range_kind(u.get()) == AxisType::UNROLL)) ups.push_back(u);
  if (ups.empty()) return ast;
  std::sort(ups.begin(), ups.end(), [](auto& a, auto& b) { return range_path(a.get()) < range_path(b.get()); });
  for (size_t i = 0; i < ups.size(); i++) {
    int64_t n = ups[i]->src[0]->vmax();
    ex.sizes.push_back(n);
    UOps lanes;
    for (int64_t l = 0; l < n; l++) lanes.push_back(UOp::const_int(dtypes::index, l));
    start[ups[i]] = UOp::make(Ops::UNROLL, dtypes::index, {UOp::make(Ops::VECTORIZE, dtypes::index.vec(int(n)), lanes)},
                              std::vector<int64_t>{int64_t(i)});
  }
  static const PatternMatcher pm(
      {
          {UPat(Ops::REDUCE).any_len(), [](const Match& m) { return m.ctx<Expander>().expand_reduce(m.root); }},
          {UPat(Ops::STORE).any_len(), [](const Match& m) { return m.ctx<Expander>().expand_store(m.root); }},
          {UPat(Ops::WMMA).any_len(), [](const Match& m) { return m.ctx<Expander>().expand_wmma(m.root); }},
          {UPat(), [](const Match& m) -> UOpRef {
             const UOp* n = m.root;
             if (n->op == Ops::UNROLL || n->op == Ops::SINK || n->op == Ops::GROUP) return {};
             return m.ctx<Expander>().expand_op(n);
           }},
      },
      "expander");
  static const PatternMatcher with_sym = pm + symbolic();
  UOpRef out = graph_rewrite(ast->substitute(start), with_sym, &ex, false, "expander");
  for (auto& u : out->toposort())
    TG_CHECK(u->op != Ops::UNROLL, TG_ERROR_INTERNAL, "expander: an UNROLL reached " + std::string(op_name(u->op)) + "'s user unexpanded");
  return out;
}

}  // namespace tg
