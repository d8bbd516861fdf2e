#include "codegen/opt/postrange.h"

#include <algorithm>
#include <numeric>

#include "codegen/late/late.h"
#include "codegen/simplify.h"
#include "uop/symbolic.h"

namespace tg {

// where each axis type sorts among a kernel's axes (tinygrad's axis_to_pos)
static int axis_pos(AxisType t) {
  switch (t) {
    case AxisType::THREAD:
    case AxisType::GLOBAL: return 0;
    case AxisType::WARP: return 1;
    case AxisType::LOCAL:
    case AxisType::GROUP_REDUCE: return 2;
    case AxisType::UPCAST: return 3;
    case AxisType::REDUCE: return 4;
    case AxisType::UNROLL: return 5;
  }
  return 6;
}
static bool is_reduce_axis(AxisType t) { return t == AxisType::REDUCE || t == AxisType::UNROLL || t == AxisType::GROUP_REDUCE; }

UOps ranges_in(const UOpRef& u) {
  UOps out;
  for (auto& x : u->toposort())
    if (x->op == Ops::RANGE) out.push_back(x);
  return out;
}
bool depends_on(const UOpRef& u, const UOpRef& r) {
  auto t = u->toposort();
  return std::find(t.begin(), t.end(), r) != t.end();
}

// Under an access's gate its index is in bounds: a padded read `(x - 17) % 512` gated by `0 < ky+oy < 17, ...` is just
// `x - 17` there. The gate's clauses bound sums of terms; a MOD whose argument stays in [0, n) under them goes away,
// which leaves the index linear in the ranges (vector loads need that).
static UOpRef drop_mod_given_gate(const UOpRef& idx, const UOpRef& gate) {
  if (idx->op != Ops::MOD || idx->src[1]->op != Ops::CONST) return {};
  UOps clauses, terms;
  gate->split_uop(Ops::AND, clauses);
  idx->src[0]->split_uop(Ops::ADD, terms);
  std::vector<std::pair<UOpRef, std::pair<int64_t, int64_t>>> bound;  // X -> [lo, hi] from c < X and X < c
  for (auto& c : clauses) {
    if (c->op != Ops::CMPLT) continue;
    auto add = [&](const UOpRef& x, int64_t lo, int64_t hi) {
      for (auto& [k, b] : bound)
        if (k == x) return void(b = {std::max(b.first, lo), std::min(b.second, hi)});
      bound.push_back({x, {std::max(lo, x->vmin()), std::min(hi, x->vmax())}});
    };
    if (c->src[0]->op == Ops::CONST) add(c->src[1], c->src[0]->vmin() + 1, INT64_MAX);
    else if (c->src[1]->op == Ops::CONST) add(c->src[0], INT64_MIN, c->src[1]->vmin() - 1);
  }
  __int128 lo = 0, hi = 0;
  std::vector<bool> used(terms.size());
  for (auto& [x, b] : bound) {
    UOps xs;
    x->split_uop(Ops::ADD, xs);
    // every term of X appears in the index scaled by one factor f
    int64_t f = 0;
    std::vector<size_t> at;
    // a term as (its variable part, its constant factor): y*448 is (y, 448), so it matches X's y*2 with factor 224
    auto split = [](const UOpRef& u) -> std::pair<UOpRef, int64_t> {
      if (u->op == Ops::MUL && u->src[1]->op == Ops::CONST) return {u->src[0], u->src[1]->vmin()};
      return {u, 1};
    };
    for (auto& t : xs) {
      auto [tv, tc] = split(t);
      for (size_t i = 0; i < terms.size(); i++) {
        if (used[i]) continue;
        auto [iv, ic] = split(terms[i]);
        int64_t g = terms[i] == t ? 1 : terms[i]->op == Ops::MUL && terms[i]->src[0] == t && terms[i]->src[1]->op == Ops::CONST ? terms[i]->src[1]->vmin()
                  : iv == tv && tc > 0 && ic % tc == 0 ? ic / tc : 0;
        if (g && (f == 0 || g == f)) {
          f = g, at.push_back(i);
          break;
        }
      }
    }
    if (at.size() != xs.size() || f <= 0) continue;
    for (auto i : at) used[i] = true;
    lo += __int128(f) * b.first, hi += __int128(f) * b.second;
  }
  for (size_t i = 0; i < terms.size(); i++)
    if (!used[i]) lo += terms[i]->vmin(), hi += terms[i]->vmax();
  return lo >= 0 && hi < idx->src[1]->vmin() ? idx->src[0] : UOpRef();
}

UOpRef cleanup_ast(const UOpRef& ast) {
  static const PatternMatcher pm(
      {
          // a range of one iteration is the constant 0
          {UPat(Ops::RANGE, {UPat::cvar("c")}, "r"),
           [](const Match& m) { return m["c"]->vmax() == 1 ? UOp::const_int(m.root->dtype, 0) : UOpRef(); }},
          {UPat(Ops::INDEX, {UPat::var("b"), UPat(Ops::MOD, {}, "i"), UPat::var("g")}),
           [](const Match& m) -> UOpRef {
             UOpRef i = drop_mod_given_gate(m["i"], m["g"]);
             return i ? UOp::make(Ops::INDEX, m.root->dtype, {m["b"], i, m["g"]}) : UOpRef();
           }},
          // a gated load is already 0 where its gate is off
          {UPat(Ops::WHERE, {UPat::var("g"), UPat(Ops::LOAD, {UPat(Ops::INDEX, {UPat::var(), UPat::var(), UPat::var("g2")})}, "l"), UPat::const_(0)}),
           [](const Match& m) { return m["g"] == m["g2"] ? m["l"] : UOpRef(); }},
          // a REDUCE runs over the RANGEs its sources name, in path order; over none it is its value
          {UPat(Ops::REDUCE).any_len(),
           [](const Match& m) -> UOpRef {
             const UOp* r = m.root;
             bool clean = true;
             for (size_t i = 1; i < r->src.size(); i++) clean &= r->src[i]->op == Ops::RANGE;
             for (size_t i = 2; i < r->src.size() && clean; i++) clean &= range_path(r->src[i - 1].get()) < range_path(r->src[i].get());
             if (clean) return {};
             UOps rr;
             for (size_t i = 1; i < r->src.size(); i++)
               for (auto& x : ranges_in(r->src[i]))
                 if (std::find(rr.begin(), rr.end(), x) == rr.end()) rr.push_back(x);
             if (rr.empty()) return r->src[0];
             std::sort(rr.begin(), rr.end(), [](auto& a, auto& b) { return range_path(a.get()) < range_path(b.get()); });
             rr.insert(rr.begin(), r->src[0]);
             return r->replace_src(std::move(rr));
           }},
      },
      "cleanup_ast");
  static const PatternMatcher both = pm + symbolic();
  return graph_rewrite(ast, both, nullptr, false, "cleanup ast");
}

// the reduces are collapsed before any action splits their ranges (the rules see whole ranges)
Scheduler::Scheduler(UOpRef a, const Renderer& r) : ast(cleanup_ast(collapse_reduces(cleanup_ast(a)))), ren(&r) {}
void Scheduler::set_ast(const UOpRef& a) { ast = cleanup_ast(a); }

void Scheduler::refresh() const {
  if (cached_for_ == ast) return;
  topo_ = ast->toposort(), rngs_.clear();
  for (auto& u : topo_)
    if (u->op == Ops::RANGE && u->vmax() > 0) rngs_.push_back(u);
  std::sort(rngs_.begin(), rngs_.end(), [](const UOpRef& a, const UOpRef& b) {
    int pa = axis_pos(range_kind(a.get())), pb = axis_pos(range_kind(b.get()));
    return pa != pb ? pa < pb : range_path(a.get()) < range_path(b.get());
  });
  cached_for_ = ast;
}
UOps Scheduler::rngs() const {
  refresh();
  return rngs_;
}
std::vector<int64_t> Scheduler::full_shape() const {
  std::vector<int64_t> s;
  for (auto& r : rngs()) s.push_back(r->src[0]->vmax());
  return s;
}
std::vector<AxisType> Scheduler::axis_types() const {
  std::vector<AxisType> t;
  for (auto& r : rngs()) t.push_back(range_kind(r.get()));
  return t;
}
std::vector<int> Scheduler::axes_of(std::initializer_list<AxisType> types) const {
  std::vector<int> out;
  auto at = axis_types();
  for (size_t i = 0; i < at.size(); i++)
    if (std::find(types.begin(), types.end(), at[i]) != types.end()) out.push_back(int(i));
  return out;
}
static std::vector<int> const_dims(const Scheduler& k, std::initializer_list<AxisType> types) {
  auto r = k.rngs();
  std::vector<int> out;
  for (int i : k.axes_of(types))
    if (r[size_t(i)]->src[0]->op == Ops::CONST && r[size_t(i)]->src[0]->vmax() > 1) out.push_back(i);
  return out;
}
std::vector<int> Scheduler::upcastable_dims() const { return const_dims(*this, {AxisType::GLOBAL, AxisType::LOCAL}); }
std::vector<int> Scheduler::unrollable_dims() const { return const_dims(*this, {AxisType::GROUP_REDUCE, AxisType::REDUCE}); }
int64_t Scheduler::upcast_size() const {
  int64_t n = 1;
  auto fs = full_shape();
  for (int i : axes_of({AxisType::UPCAST, AxisType::UNROLL})) n *= fs[size_t(i)];
  return n;
}
UOps Scheduler::reduceops() const {
  refresh();
  UOps out;
  for (auto& u : topo_)
    if (u->op == Ops::REDUCE) out.push_back(u);
  return out;
}
UOps Scheduler::bufs() const {
  refresh();
  UOps out;
  for (auto& u : topo_)
    if (u->op == Ops::INDEX) out.push_back(u);
  return out;
}
UOps Scheduler::inputs() const {
  refresh();
  UOps out;
  for (auto& u : topo_)
    if (u->op == Ops::LOAD && u->src[0]->op == Ops::INDEX && u->src[0]->src[0]->op == Ops::DEFINE_GLOBAL) out.push_back(u);
  std::stable_sort(out.begin(), out.end(), [](const UOpRef& a, const UOpRef& b) {
    return std::get<int64_t>(a->src[0]->src[0]->arg) < std::get<int64_t>(b->src[0]->src[0]->arg);
  });
  return out;
}
std::vector<int64_t> Scheduler::output_shape() const {
  auto fs = full_shape();
  auto at = axis_types();
  for (size_t i = 0; i < fs.size(); i++)
    if (is_reduce_axis(at[i])) fs[i] = 1;
  return fs;
}
std::string Scheduler::name(const std::string& base) const {
  if (applied_opts.empty()) return base;
  std::string s = reduceops().empty() ? "E" : "r";
  for (auto& r : rngs()) s += "_" + std::to_string(r->src[0]->vmax());
  return s;
}

std::pair<UOpRef, UOpRef> Scheduler::shift_to(const UOpRef& rng, int64_t amount, AxisType t, bool top) {
  opt_check(amount >= 1, "amount " + std::to_string(amount) + " must be positive");
  UOpRef old_sz = rng->src[0]->divides(amount);
  opt_check(bool(old_sz), std::to_string(amount) + " can't divide " + rng->src[0]->render());
  auto path = range_path(rng.get());
  auto with = [&](int64_t last, AxisType kind) {
    std::vector<int64_t> a = path;
    a.push_back(last), a.push_back(int64_t(kind));
    return a;
  };
  UOpRef rest = UOp::make(Ops::RANGE, rng->dtype, {old_sz}, with(top ? 1 : 0, range_kind(rng.get())));
  UOpRef added = UOp::make(Ops::RANGE, rng->dtype, {UOp::const_int(rng->dtype, amount)}, with(top ? 0 : 1, t));
  UOpRef sub = top ? added * old_sz + rest : rest * amount + added;
  set_ast(ast->substitute({{rng, sub}}));
  return {rest, added};
}

int Scheduler::real_axis(const Opt& opt) const {
  if (opt.op == OptOps::TC || opt.op == OptOps::NOLOCALS || opt.op == OptOps::PACK) return -1;
  std::vector<int> dims;
  if (opt.op == OptOps::UNROLL) dims = unrollable_dims();
  else if (opt.op == OptOps::GROUP || opt.op == OptOps::GROUPTOP) dims = axes_of({AxisType::REDUCE});
  else {
    dims.resize(shape_len());
    std::iota(dims.begin(), dims.end(), 0);
  }
  opt_check(opt.axis >= 0 && size_t(opt.axis) < dims.size(),
            "invalid axis " + std::to_string(opt.axis) + " for " + std::string(optops_name(opt.op)) + " (" + std::to_string(dims.size()) + " eligible)");
  return dims[size_t(opt.axis)];
}

std::pair<UOpRef, UOpRef> Scheduler::apply_opt(const Opt& opt, bool append) {
  const Target& tg = ren->target();
  auto types = axis_types();
  if (opt.op == OptOps::NOLOCALS) {
    for (auto t : types) opt_check(t != AxisType::WARP && t != AxisType::LOCAL && t != AxisType::GROUP_REDUCE, "no locals can't have locals");
    dont_use_locals = true;
    if (append) applied_opts.push_back(opt);
    return {};
  }
  if (opt.op == OptOps::LOCAL || opt.op == OptOps::GROUP || opt.op == OptOps::GROUPTOP)
    opt_check(tg.has_local, std::string(optops_name(opt.op)) + " needs local memory, which target " + tg.device + " does not have");
  if (opt.op == OptOps::TC) {
    tc_axes = apply_tc(opt);
    if (append) applied_opts.push_back(opt);
    return {};
  }
  if (opt.op == OptOps::PACK) {
    pack(opt.axis, opt.arg);
    if (append) applied_opts.push_back(opt);
    return {};
  }
  int ax = real_axis(opt);
  UOpRef rng = rngs()[size_t(ax)];
  AxisType kind = range_kind(rng.get());
  std::pair<UOpRef, UOpRef> ret;
  auto reduces = reduceops();
  if (opt.op == OptOps::PADTO) {
    opt_check(rng->src[0]->op == Ops::CONST, "only pad const axes");
    opt_check(kind != AxisType::UPCAST && kind != AxisType::UNROLL, "cannot pad upcasted");
    opt_check(kind != AxisType::THREAD, "cannot pad thread");
    opt_check(opt.arg >= 1, "PADTO needs a positive multiple");
    int64_t sz = rng->src[0]->vmax(), new_sz = (sz + opt.arg - 1) / opt.arg * opt.arg;
    opt_check(sz > new_sz / 4, "pad adds more than quadruple the work");
    pad_to(rng, new_sz);
  } else if (opt.op == OptOps::SWAP) {
    auto all = rngs();
    opt_check(opt.arg >= 0 && size_t(opt.arg) < all.size(), "invalid swap axis " + std::to_string(opt.arg));
    UOpRef other = all[size_t(opt.arg)];
    // two globals (the order of the output loops) or two reduces (the order of the reduction loops: a gate that depends
    // only on the outer ones is computed once for every run of the inner loop)
    AxisType ok = range_kind(other.get());
    opt_check((kind == AxisType::GLOBAL && ok == AxisType::GLOBAL) || (kind == AxisType::REDUCE && ok == AxisType::REDUCE),
              "swap only for two globals or two reduces");
    opt_check(other != rng, "swap needs two different axes");
    // exchange the paths (the loop order); one substitution pass, so the two replacements don't meet
    UOpRef a2 = UOp::make(Ops::RANGE, rng->dtype, rng->src, other->arg), b2 = UOp::make(Ops::RANGE, other->dtype, other->src, rng->arg);
    set_ast(ast->substitute({{rng, a2}, {other, b2}}));
  } else if (opt.op == OptOps::MERGE) {
    auto all = rngs();
    opt_check(size_t(ax) + 1 < all.size(), "merge needs an axis after axis " + std::to_string(opt.axis));
    UOpRef inner = all[size_t(ax) + 1];
    opt_check(kind == AxisType::GLOBAL && range_kind(inner.get()) == AxisType::GLOBAL, "merge only for two globals");
    opt_check(rng->src[0]->op == Ops::CONST && inner->src[0]->op == Ops::CONST, "merge needs constant sizes");
    // (a, b) -> m = a*nb + b: a = m // nb, b = m % nb; where an index used a*nb + b the simplifier gives back m
    int64_t nb = inner->src[0]->vmax();
    UOpRef m = UOp::make(Ops::RANGE, rng->dtype, {UOp::const_int(rng->dtype, rng->src[0]->vmax() * nb)}, rng->arg);
    set_ast(ast->substitute({{rng, m / nb}, {inner, m % nb}}));
  } else {
    int64_t amt = opt.arg == 0 ? rng->src[0]->vmax() : opt.arg;
    opt_check(opt.arg != 0 || rng->src[0]->op == Ops::CONST, "arg 0 (the whole axis) needs a constant size");
    opt_check(amt >= 1, "amount must be positive, got " + std::to_string(amt));
    AxisType nt = AxisType::UPCAST;
    switch (opt.op) {
      case OptOps::UPCAST:
        opt_check(amt <= 16, "don't upcast more than 16");
        opt_check(kind == AxisType::GLOBAL || kind == AxisType::LOCAL, "upcast is for GLOBAL/LOCAL axes");
        break;
      case OptOps::UNROLL:
        nt = AxisType::UNROLL;
        opt_check(amt <= 32, "don't unroll more than 32");
        opt_check(kind == AxisType::REDUCE || kind == AxisType::GROUP_REDUCE, "unroll is for GROUP_REDUCE/REDUCE");
        break;
      case OptOps::LOCAL:
        nt = AxisType::LOCAL;
        opt_check(!dont_use_locals, "can't use locals");
        opt_check(kind == AxisType::GLOBAL, "local is for globals");
        break;
      case OptOps::THREAD: {
        nt = AxisType::THREAD;
        opt_check(tg.has_threads, "target " + tg.device + " does not support threads");
        opt_check(amt <= tg.global_max[0], "too many threads: " + std::to_string(amt) + " > " + std::to_string(tg.global_max[0]));
        for (auto t : types) opt_check(t != AxisType::THREAD, "already threaded");
        opt_check(kind == AxisType::GLOBAL, "thread is for globals");
        // every thread must write its own outputs: the axis must index every store
        for (auto& u : ast->src)
          if (u->op == Ops::STORE) opt_check(depends_on(u->src[0], rng), "can't thread an axis that some output doesn't use");
        break;
      }
      case OptOps::GROUP:
      case OptOps::GROUPTOP: {
        nt = AxisType::GROUP_REDUCE;
        for (auto& o : applied_opts) opt_check(o.op != OptOps::TC, "no grouping with tensor cores");
        opt_check(!dont_use_locals, "can't use locals");
        opt_check(kind == AxisType::REDUCE, "group is for reduce");
        for (auto& r : reduces) {
          if (std::find(r->src.begin() + 1, r->src.end(), rng) == r->src.end()) continue;
          for (auto& x : ranges_in(r))
            opt_check(std::find(r->src.begin() + 1, r->src.end(), x) != r->src.end() || !is_reduce_axis(range_kind(x.get())),
                      "cannot have a GROUP_REDUCE inside another reduce");
        }
        break;
      }
      default: break;
    }
    if (opt.op == OptOps::LOCAL || opt.op == OptOps::GROUP || opt.op == OptOps::GROUPTOP) {  // work-items in one work-group
      int64_t n = amt;
      auto fs = full_shape();
      for (int i : axes_of({AxisType::LOCAL, AxisType::GROUP_REDUCE, AxisType::WARP})) n *= fs[size_t(i)];
      opt_check(tg.local_threads_max <= 0 || n <= tg.local_threads_max,
                "a work-group of " + std::to_string(n) + " work-items exceeds " + tg.device + "'s " + std::to_string(tg.local_threads_max));
    }
    if (!reduces.empty() && (opt.op == OptOps::GROUP || opt.op == OptOps::GROUPTOP || !axes_of({AxisType::GROUP_REDUCE}).empty())) {
      int64_t sz = amt * reduces[0]->dtype.itemsize();
      auto fs = full_shape();
      for (int i : axes_of({AxisType::UPCAST, AxisType::WARP, AxisType::LOCAL, AxisType::GROUP_REDUCE})) sz *= fs[size_t(i)];
      opt_check(sz <= tg.shared_max, "exceeds maximum shared memory size: needs " + std::to_string(sz) + ", max " + std::to_string(tg.shared_max));
    }
    // the expander makes one lane per upcast element: keep kernels a compiler can take (an upcast reduce keeps a vector
    // accumulator, one scalar per lane where the target has no vectors)
    if (nt == AxisType::UPCAST || nt == AxisType::UNROLL) opt_check(upcast_size() * amt <= 1024, "more than 1024 upcast lanes");
    ret = shift_to(rng, amt, nt, opt.op == OptOps::GROUPTOP || opt.op == OptOps::THREAD);
  }
  if (append) applied_opts.push_back(opt);
  return ret;
}

// PACK: the input's reads, over the reduce and upcast ranges it uses (its panel), go to a scratch array filled once per
// iteration of the output loops it depends on; the output loops inside those, which it doesn't use, then read the
// panel from one contiguous block (a matmul's K x 32 panel of B, 1024 rows 4 KB apart before, 128 bytes apart after).
// Here the LOAD is only marked; lower_packs makes the copy after the other actions have shaped the loops.
void Scheduler::pack(int64_t input, int64_t steps) {
  const Target& tg = ren->target();
  UOps ins = inputs();
  std::string name = "input " + std::to_string(input);
  opt_check(input >= 0 && size_t(input) < ins.size(), "invalid " + name + " for PACK (" + std::to_string(ins.size()) + " loaded)");
  const UOpRef& ld = ins[size_t(input)];
  opt_check(!is_packed(ld), name + " is already packed");
  if (tg.has_local) return stage(input, name, steps);
  opt_check(steps == 0, "PACK's steps (" + std::to_string(steps) + ") stage a GPU's reduce: a CPU packs the whole panel (arg 0)");
  // a read's panel: the non-output ranges it uses (their product, in bytes), and the innermost output loop it uses
  auto panel_of = [&](const UOpRef& l, UOps& used) {
    std::pair<int64_t, std::vector<int64_t>> p{l->dtype.itemsize(), {}};
    used = ranges_in(l->src[0]);
    for (auto& r : used) {
      AxisType t = range_kind(r.get());
      if (t == AxisType::GLOBAL || t == AxisType::THREAD) p.second = std::max(p.second, range_path(r.get()));
      else {
        opt_check(r->src[0]->op == Ops::CONST, "pack needs constant sizes");
        opt_check(t != AxisType::LOCAL && t != AxisType::GROUP_REDUCE, "pack of a work-group's range");
        p.first *= r->src[0]->vmax();
      }
    }
    return p;
  };
  UOps used, other;
  auto [bytes, innermost] = panel_of(ld, used);
  // the reuse: the output loops nested inside those the read uses
  int64_t reuse = 1;
  for (auto& r : rngs())
    if (range_kind(r.get()) == AxisType::GLOBAL && std::find(used.begin(), used.end(), r) == used.end() && range_path(r.get()) > innermost)
      reuse *= r->src[0]->vmax();
  opt_check(reuse > 1, name + " is read once per iteration of the output loops: a packed copy would not be reused");
  for (auto& l : ins)  // the kernel's other packs share the stack
    if (is_packed(l)) bytes += panel_of(l, other).first;
  opt_check(bytes <= kPackMaxBytes, "panels of " + std::to_string(bytes) + " bytes exceed the " + std::to_string(kPackMaxBytes) +
                                        " a kernel's packs may take");
  set_ast(ast->substitute({{ld, ld->with_tag(kPackTag)}}));
}

// PACK on a GPU: the work-group stages what it reads of the input inside the input's outermost reduce loop (its step)
// in local memory, all its work-items copying together, once per step; `steps` > 1 first splits that many iterations
// off the step loop into a loop inside it, so each stage holds `steps` of them (a matmul's K by 16 per stage). The
// LOAD is marked here; lower_packs makes the copy and the barriers.
void Scheduler::stage(int64_t input, const std::string& name, int64_t steps) {
  const Target& tg = ren->target();
  UOpRef ld = inputs()[size_t(input)];
  UOpRef step = staged_panel(ld).step;
  opt_check(steps <= 1 || step, name + " is read in no reduce loop: nothing to split into stages");
  if (steps > 1) {
    // the other input of a matmul may have split the loop already: its inner part is this stage's too
    auto p = range_path(step.get());
    bool split = false;
    if (!p.empty() && p.back() == 0)
      for (auto& r : rngs()) {
        auto q = range_path(r.get());
        split |= range_kind(r.get()) == AxisType::REDUCE && q.size() == p.size() && std::equal(p.begin(), p.end() - 1, q.begin()) && q.back() == 1 &&
                 r->src[0]->vmax() == steps && depends_on(ld->src[0], r);
      }
    if (!split) {
      opt_check(step->src[0]->op == Ops::CONST && step->src[0]->vmax() % steps == 0 && step->src[0]->vmax() > steps,
                "PACK's " + std::to_string(steps) + " steps don't divide the reduce loop of " + step->src[0]->render());
      shift_to(step, steps, AxisType::REDUCE, false);
    }
  }
  UOpRef cur = inputs()[size_t(input)];  // the split rewrote the AST; the numbering stays
  StagedPanel panel = staged_panel(cur);
  for (auto& r : panel.ranges) {
    opt_check(r->src[0]->op == Ops::CONST, "pack needs constant sizes");
    opt_check(range_kind(r.get()) != AxisType::GROUP_REDUCE, "pack of a grouped reduce's range");
  }
  // some range of the work-group or a register tile's lane must leave the panel (a broadcast), or no two reads share a
  // staged element
  bool reused = false;
  for (auto& r : rngs()) {
    AxisType t = range_kind(r.get());
    reused |= (t == AxisType::LOCAL || t == AxisType::WARP || t == AxisType::UPCAST) && !depends_on(cur->src[0], r);
  }
  opt_check(reused, name + " is read by one work-item, once: staging it would not be reused");
  // the arrays, this one and the kernel's other staged inputs', as lower_packs lays them out with the ranges of now
  int64_t bytes = panel.size * cur->dtype.itemsize();
  for (auto& x : inputs())
    if (is_packed(x)) bytes += staged_panel(x).size * x->dtype.itemsize();
  opt_check(bytes <= tg.shared_max, "staged panels of " + std::to_string(bytes) + " bytes exceed " + tg.device + "'s local memory of " +
                                        std::to_string(tg.shared_max));
  set_ast(ast->substitute({{cur, cur->with_tag(kPackTag)}}));
}

// PADTO: the axis runs to new_sz; the extra iterations read nothing (gated loads), write nothing (gated stores) and
// add the reduce's identity.
void Scheduler::pad_to(const UOpRef& rng, int64_t new_sz) {
  int64_t sz = rng->src[0]->vmax();
  UOpRef nr = UOp::make(Ops::RANGE, rng->dtype, {UOp::const_int(rng->dtype, new_sz)}, rng->arg);
  UOpRef valid = nr < sz;
  UOpMap<UOpRef> gate, ident;
  for (auto& u : ast->toposort())
    if (u->op == Ops::INDEX && depends_on(u->src[1], rng)) {
      UOps s = u->src;
      UOpRef v = s.size() > 2 ? s[2] & valid : valid;
      s.resize(2), s.push_back(v);
      gate[u] = u->replace_src(s);
    }
  UOpRef out = ast->substitute(gate);
  for (auto& u : out->toposort())
    if (u->op == Ops::REDUCE && std::find(u->src.begin() + 1, u->src.end(), rng) != u->src.end()) {
      UOps s = u->src;
      s[0] = valid->where(s[0], UOp::const_(s[0]->dtype, reduce_identity(Ops(std::get<int64_t>(u->arg)), s[0]->dtype)));
      ident[u] = u->replace_src(s);
    }
  out = out->substitute(ident);
  set_ast(out->substitute({{rng, nr}}));
}

bool sequential_kernel(const UOpRef& ast) {
  return std::any_of(ast->src.begin(), ast->src.end(), [](const UOpRef& s) { return s->op == Ops::END; });
}

Scheduler optimize(const UOpRef& ast, const Renderer& ren, const std::vector<Opt>* opts) {
  Scheduler k(ast, ren);
  if (sequential_kernel(k.ast)) {
    if (opts && !opts->empty()) throw OptError("a kernel that runs its stores in order (a scatter) takes no actions");
    return k;
  }
  if (opts) {
    for (auto& o : *opts) k.apply_opt(o);
  } else if (!NOOPT) {
    hand_coded_optimizations(k);
  }
  return k;
}

}  // namespace tg
