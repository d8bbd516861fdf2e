#include "codegen/simplify.h"

#include <algorithm>
#include <unordered_set>

#include "uop/symbolic.h"

namespace tg {

namespace {

bool no_range(const UOpRef& u) {
  auto t = u->toposort();
  return std::none_of(t.begin(), t.end(), [](auto& x) { return x->op == Ops::RANGE; });
}
bool is_int(DType d) { return dtypes::is_int(d) && d.count == 1 && !d.ptr; }
Ops reduce_op(const UOp* red) { return Ops(std::get<int64_t>(red->arg)); }
UOpRef reduce_add(const UOpRef& x, UOps rngs) {
  rngs.insert(rngs.begin(), x);
  return UOp::make(Ops::REDUCE, x->dtype, std::move(rngs), int64_t(Ops::ADD));
}
// the nodes of `u` whose value depends on `r` (r included)
std::unordered_set<const UOp*> depending_on(const UOpRef& u, const UOpRef& r) {
  std::unordered_set<const UOp*> dep{r.get()};
  for (auto& x : u->toposort())
    if (std::any_of(x->src.begin(), x->src.end(), [&](auto& s) { return dep.count(s.get()); })) dep.insert(x.get());
  return dep;
}
// an int node's value range proves it doesn't wrap (compute_range gives up to the dtype's bounds when it could)
bool no_wrap(const UOpRef& u) {
  double lo = dtypes::min(u->dtype), hi = dtypes::max(u->dtype);
  return (lo <= -9.2e18 || double(u->vmin()) > lo) && (hi >= 9.2e18 ? u->vmax() < INT64_MAX : double(u->vmax()) < hi) && u->vmin() > INT64_MIN;
}
// ints representable exactly in float f (its mantissa bits)
int64_t exact_int_limit(DType f) { return f == dtypes::float64 ? int64_t(1) << 53 : f == dtypes::float32 ? int64_t(1) << 24 : 0; }

// the ranges a REDUCE's value doesn't use: ADD multiplies by their sizes, MAX ignores them
UOpRef reduce_unparented(const Match& m) {
  const UOp* red = m.root;
  Ops op = reduce_op(red);
  if ((op != Ops::ADD && op != Ops::MAX) || dtypes::is_bool(red->dtype)) return {};
  auto t = red->src[0]->toposort();
  UOps parented{red->src[0]}, unparented;
  // MAX over an empty range is its identity, not the value: only ranges known to run at least once go
  for (size_t i = 1; i < red->src.size(); i++)
    (std::find(t.begin(), t.end(), red->src[i]) != t.end() || (op == Ops::MAX && red->src[i]->src[0]->vmin() < 1) ? parented : unparented)
        .push_back(red->src[i]);
  if (unparented.empty()) return {};
  // a sum over an empty range is 0, not value * 0: the value may be NaN, or read a buffer that is empty
  if (op == Ops::ADD)
    for (auto& r : unparented)
      if (r->src[0]->vmax() < 1) return red->const_like(0);
  UOpRef ret = parented.size() > 1 ? red->replace_src(parented) : red->src[0];
  if (op == Ops::ADD)
    for (auto& r : unparented) {
      UOpRef n = r->src[0];
      ret = n->vmin() >= 1 ? ret * n->cast(ret->dtype) : (n->const_like(0) < n)->where(ret * n->cast(ret->dtype), ret->const_like(0));
    }
  return ret;
}

// sum over r in [0,N) of [lower <= r < upper] * val == clamp(min(upper,N) - max(lower,0), 0, N) * val
UOpRef range_count(const Match& m) {
  UOpRef r = m["r"], val = m["val"], n = r->src[0];
  if (!no_range(val) || dtypes::is_bool(val->dtype)) return {};
  const UOp *lower = m.get("lower"), *upper = m.get("upper");
  UOpRef hi = upper ? upper->ref()->minimum(n) : n, lo = lower ? lower->ref()->maximum(r->const_like(0)) : r->const_like(0);
  return (hi - lo)->maximum(r->const_like(0))->minimum(n)->cast(val->dtype) * val;
}

// sum over r of where(idx == r, expr, 0) == idx in [0,N) ? expr[r := idx] : 0; the loads expr makes through r get the
// same gate, so an index outside [0,N) reads nothing
UOpRef gated_load(const Match& m) {
  UOpRef r = m["r"], idx = m["idx"], expr = m["expr"];
  if (!no_range(idx) || !is_int(idx->dtype)) return {};
  // a cast of r compares one value per r only if it keeps every r (and an int idx never matches a fraction)
  if (const UOp* c = m.get("rc"); c && (!is_int(c->dtype) || double(r->src[0]->vmax()) - 1 > dtypes::max(c->dtype))) return {};
  UOpRef i = idx->cast(r->dtype), valid = (int64_t(-1) < i) & (i < r->src[0]);
  auto dep = depending_on(expr, r);
  UOpMap<UOpRef> gate;
  for (auto& x : expr->toposort())
    if (x->op == Ops::INDEX && dep.count(x.get())) gate[x] = x->replace_src({x->src[0], x->src[1], x->src.size() > 2 ? x->src[2] & valid : valid});
  return valid->where(expr->substitute(gate)->substitute({{r, i}}), expr->const_like(0));
}

// x+y <op> c with x the part that depends on the range: move y to the other side
UOpRef lift_add_cmp(const Match& m) {
  UOpRef x = m["x"], y = m["y"], c = m["c"];
  if (no_range(x)) std::swap(x, y);
  if (!is_int(x->dtype) || no_range(x) || !no_range(y) || !no_range(c)) return {};
  if (m.root->op != Ops::CMPLT) return x->alu(m.root->op, {c - y});  // == and != hold modulo 2^bits
  UOpRef d = c - y;
  return no_wrap(x + y) && no_wrap(d) ? x < d : UOpRef();
}

// The rules run on one REDUCE over one range, whose other inputs are opaque placeholders: they either sum the range
// away in closed form or leave a REDUCE behind (and then the attempt is dropped).
const PatternMatcher& pm_reduce_collapse() {
  static const PatternMatcher pm = [] {  // the rules are made once
    auto red = [](UPat body) { return UPat(Ops::REDUCE, {std::move(body), UPat::var("r")}).with_arg(int64_t(Ops::ADD)); };
    auto rng = UPat(Ops::RANGE, {}, "r");
    auto zero = UPat::const_(0);
    // idx == r (also through a cast of r), either operand order
    auto eq_r = [&](Ops op) {
      return std::vector<UPat>{UPat(op, {UPat::var("idx"), rng}), UPat(op, {UPat::var("idx"), UPat(Ops::CAST, {rng}, "rc")})};
    };
    std::vector<Rule> rules = {
        {UPat(Ops::REDUCE).any_len(), reduce_unparented},
        // lift x+y and x*y out of a compare against the range part
        {UPat(Ops::CMPLT, {UPat::var("x") + UPat::var("y"), UPat::var("c")}), lift_add_cmp},
        {UPat({Ops::CMPNE, Ops::CMPEQ}, {UPat::var("x") + UPat::var("y"), UPat::var("c")}), lift_add_cmp},
        {UPat(Ops::CMPLT, {UPat::var("x") * UPat::var("y"), UPat::var("c")}), [](const Match& m) -> UOpRef {
           UOpRef x = m["x"], y = m["y"], c = m["c"];  // x*y < c <=> x < ceil(c/y) for y > 0
           if (no_range(x)) std::swap(x, y);
           if (!is_int(y->dtype) || no_range(x) || !no_range(y) || !no_range(c) || y->vmin() <= 0 || !no_wrap(x * y)) return {};
           if (c->vmax() <= 0) return x < c / y;  // truncation is the ceiling for c <= 0
           return c->vmin() >= 0 && no_wrap(c + y) ? x < (c + y - 1) / y : UOpRef();
         }},
        // the range part goes left: y < x is !(x < y+1) for ints, and where(!c, a, b) is where(c, b, a)
        {UPat(Ops::CMPLT, {UPat::var("y"), UPat::var("x")}), [](const Match& m) -> UOpRef {
           UOpRef x = m["x"], y = m["y"];
           return is_int(x->dtype) && !no_range(x) && no_range(y) && no_wrap(y + 1) ? (x < y + 1)->logical_not() : UOpRef();
         }},
        {UPat(Ops::WHERE, {UPat(Ops::CMPNE, {UPat::var("c", dtypes::bool_), UPat::const_(1)}), UPat::var("a"), UPat::var("b")}),
         [](const Match& m) { return m["c"]->where(m["b"], m["a"]); }},
        // x <= y is (x < y) | (x == y): for ints, x < y+1
        {UPat(Ops::OR, {UPat(Ops::CMPLT, {UPat::var("x"), UPat::var("y")}).ordered(), UPat(Ops::CMPEQ, {UPat::var("x"), UPat::var("y")})}),
         [](const Match& m) -> UOpRef { return is_int(m["y"]->dtype) && no_wrap(m["y"] + 1) ? m["x"] < m["y"] + 1 : UOpRef(); }},
        // an int through a float that holds it exactly and back is itself (arange's float64 formula)
        {UPat(Ops::CAST, {UPat(Ops::CAST, {UPat::var("x")}, "f")}), [](const Match& m) -> UOpRef {
           UOpRef x = m["x"];
           int64_t lim = exact_int_limit(m["f"]->dtype);
           if (!is_int(m.root->dtype) || !is_int(x->dtype) || x->vmin() < -lim || x->vmax() > lim) return {};
           bool fits = double(x->vmin()) >= dtypes::min(m.root->dtype) && double(x->vmax()) <= dtypes::max(m.root->dtype);
           return fits ? x->cast(m.root->dtype) : UOpRef();
         }},
        // a bool through a number and back is itself (one_hot's int32 mask, cast to bool by gather)
        {UPat(Ops::CAST, {UPat(Ops::CAST, {UPat::var("x", dtypes::bool_)})}),
         [](const Match& m) -> UOpRef { return m.root->dtype == dtypes::bool_ ? m["x"] : UOpRef(); }},
        // a cast moves into the branches of a where with a constant one (the sum of a uint8 gather casts to uint32 first)
        {UPat(Ops::CAST, {UPat(Ops::WHERE, {UPat::var("s"), UPat::var("a"), UPat::var("b")})}), [](const Match& m) -> UOpRef {
           UOpRef a = m["a"], b = m["b"];
           if (a->op != Ops::CONST && b->op != Ops::CONST) return {};
           return m["s"]->where(a->cast(m.root->dtype), b->cast(m.root->dtype));
         }},
        // x * float(gate) == gate ? x : 0
        {UPat(Ops::MUL, {UPat::var("x"), UPat(Ops::CAST, {UPat::var("gate", dtypes::bool_)})}),
         [](const Match& m) { return m["gate"]->where(m["x"], m["x"]->const_like(0)); }},
        // the range-compare collapse
        {red(UPat(Ops::WHERE, {UPat(Ops::CMPLT, {rng, UPat::var("upper")}).ordered(), UPat::var("val"), zero})), range_count},
        {red(UPat(Ops::WHERE, {UPat(Ops::CMPLT, {rng, UPat::var("lower")}).ordered(), zero, UPat::var("val")})), range_count},
        {red(UPat(Ops::WHERE, {UPat(Ops::AND, {UPat(Ops::CMPNE, {UPat(Ops::CMPLT, {rng, UPat::var("lower")}).ordered(), UPat::const_(1)}),
                                                UPat(Ops::CMPLT, {rng, UPat::var("upper")}).ordered()}),
                               UPat::var("val"), zero})),
         range_count},
        // a gate the range doesn't touch moves out of the sum
        {red(UPat(Ops::WHERE, {UPat::var("g"), UPat::var("a"), zero})),
         [](const Match& m) { return no_range(m["g"]) ? m["g"]->where(reduce_add(m["a"], {m["r"]}), m["a"]->const_like(0)) : UOpRef(); }},
        {red(UPat(Ops::WHERE, {UPat::var("g"), zero, UPat::var("a")})),
         [](const Match& m) { return no_range(m["g"]) ? m["g"]->where(m["a"]->const_like(0), reduce_add(m["a"], {m["r"]})) : UOpRef(); }},
        {red(UPat(Ops::WHERE, {UPat(Ops::AND, {UPat::var("g"), UPat::var("h")}), UPat::var("a"), zero})), [](const Match& m) -> UOpRef {
           UOpRef a = m["a"], g = m["g"], h = m["h"];
           if (!no_range(g)) std::swap(g, h);
           return no_range(g) ? g->where(reduce_add(h->where(a, a->const_like(0)), {m["r"]}), a->const_like(0)) : UOpRef();
         }},
        // the sum of a sum is the sum of the sums
        {red(UPat::var("x") + UPat::var("y")), [](const Match& m) { return reduce_add(m["x"], {m["r"]}) + reduce_add(m["y"], {m["r"]}); }},
    };
    // the gated-load collapse: where(idx == r, expr, 0) and where(idx != r, 0, expr)
    for (auto& p : eq_r(Ops::CMPEQ)) rules.push_back({red(UPat(Ops::WHERE, {p, UPat::var("expr"), zero})), gated_load});
    for (auto& p : eq_r(Ops::CMPNE)) rules.push_back({red(UPat(Ops::WHERE, {p, zero, UPat::var("expr")})), gated_load});
    return PatternMatcher(std::move(rules), "reduce_collapse") + symbolic();
  }();
  return pm;
}

// Whether `u` reads memory at an index of the range and no int equality with the range could take it out: the rules
// remove a range from a load only as where(idx == r, load, 0) (or load * (idx == r)) -> load at idx, so such a sum has
// no closed form. Convolutions' and matmuls' sums are like this, and the rewrite is not tried for them.
bool opaque_loads(const UOpRef& u, const std::unordered_set<const UOp*>& dep) {
  bool load = false;
  std::vector<const UOp*> todo{u.get()};
  std::unordered_set<const UOp*> seen;
  while (!todo.empty()) {
    const UOp* x = todo.back();
    todo.pop_back();
    if (!dep.count(x) || !seen.insert(x).second) continue;
    if ((x->op == Ops::CMPEQ || x->op == Ops::CMPNE) && x->src[0]->dtype != dtypes::bool_) return false;
    if (x->op == Ops::INDEX || x->op == Ops::LOAD) {
      load = true;
      continue;
    }
    for (auto& s : x->src) todo.push_back(s.get());
  }
  return load;
}

// Sums `u` over `r` in closed form, or null. The inputs that don't depend on r become placeholders first (so the rules
// see only r's part, and other ranges can't leak in); the result must be free of r to count.
UOpRef collapse_range(const UOpRef& u, const UOpRef& r) {
  auto dep = depending_on(u, r);
  if (opaque_loads(u, dep)) return {};
  UOpMap<UOpRef> to_ph, back;
  for (auto& x : u->toposort()) {
    if (!dep.count(x.get())) continue;
    if (x->op == Ops::STORE || x->op == Ops::REDUCE) return {};
    for (auto& s : x->src) {
      if (dep.count(s.get()) || to_ph.count(s) || s->op == Ops::CONST || s->op == Ops::DEFINE_GLOBAL || s->op == Ops::DEFINE_LOCAL || s->op == Ops::DEFINE_VAR)
        continue;
      std::string name = "reduce_collapse_in" + std::to_string(to_ph.size());
      // an int keeps its value range, so the rules can still reason about it
      UOpRef ph = is_int(s->dtype) ? UOp::variable(name, s->vmin(), s->vmax(), s->dtype) : UOp::make(Ops::NOOP, s->dtype, {}, name);
      to_ph[s] = ph, back[ph] = s;
    }
  }
  UOpRef out = graph_rewrite(reduce_add(u->substitute(to_ph), {r}), pm_reduce_collapse());
  return no_range(out) ? out->substitute(back) : UOpRef();
}

// collapse the ranges of a sum that can be, keep the others
UOpRef collapse_reduce(const Match& m) {
  const UOp* red = m.root;
  if (reduce_op(red) != Ops::ADD) return {};
  UOpRef u = red->src[0];
  UOps kept{u};
  for (size_t i = 1; i < red->src.size(); i++) {
    UOpRef c = red->src[i]->op == Ops::RANGE ? collapse_range(u, red->src[i]) : UOpRef();
    if (c) u = c;
    else kept.push_back(red->src[i]);
  }
  if (kept.size() == red->src.size()) return {};
  kept[0] = u;
  return kept.size() == 1 ? u : red->replace_src(kept);
}

}  // namespace

UOpRef collapse_reduces(const UOpRef& ast) {
  static const PatternMatcher pm({{UPat(Ops::REDUCE).any_len(), collapse_reduce}, {UPat(Ops::REDUCE).any_len(), reduce_unparented}}, "collapse_reduces");
  return graph_rewrite(ast, pm, nullptr, false, "collapse reduces");
}

}  // namespace tg
